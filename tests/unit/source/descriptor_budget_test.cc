#include "agent/source/descriptor_budget.h"

#include <sys/resource.h>

#include <algorithm>

#include <gtest/gtest.h>

namespace faultline {
namespace {

// A holder with `open` descriptors it can give back.
struct FakeHolder : DescriptorBudget::Holder {
  DescriptorBudget* budget = nullptr;
  int open = 0;
  bool ReleaseOne() override {
    if (open == 0) return false;
    --open;
    budget->Release();
    return true;
  }
};

TEST(DescriptorBudgetTest, AutoIsHalfTheLimitAndAConfiguredValueKeepsAReserve) {
  EXPECT_EQ(128u, DescriptorBudget::ForLimit(256, 0));
  EXPECT_EQ(100u, DescriptorBudget::ForLimit(256, 100));
  EXPECT_EQ(256u - DescriptorBudget::kReserve, DescriptorBudget::ForLimit(256, 1000));
  EXPECT_EQ(20u, DescriptorBudget::ForLimit(40, 1000));  // tiny limits: half
}

TEST(DescriptorBudgetTest, ASpentBudgetIsRefilledByClosingAnotherHoldersDescriptor) {
  DescriptorBudget budget(2);
  FakeHolder a;
  FakeHolder b;
  a.budget = b.budget = &budget;
  budget.Register(&a);
  budget.Register(&b);
  ASSERT_TRUE(budget.Acquire(&b));
  ++b.open;
  ASSERT_TRUE(budget.Acquire(&b));
  ++b.open;
  // a holds nothing to give back, so b does.
  EXPECT_TRUE(budget.Acquire(&a));
  ++a.open;
  EXPECT_EQ(1, b.open);
  EXPECT_EQ(2u, budget.in_use());
  budget.Unregister(&b);
  // With b gone and a's own descriptor given back first, a can still open one...
  EXPECT_TRUE(budget.Acquire(&a));
  EXPECT_EQ(0, a.open);
  // ...but nobody is left to give one back now.
  EXPECT_FALSE(budget.Acquire(&a));
  EXPECT_TRUE(budget.Acquire(&a, /*force=*/true));  // a rotated file still being drained
  EXPECT_EQ(3u, budget.in_use());
  budget.Unregister(&a);
}

TEST(DescriptorBudgetTest, TheSoftLimitIsRaisedToTheHardLimit) {
  rlimit before{};
  ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &before));
  rlimit lowered = before;
  lowered.rlim_cur = std::min<rlim_t>(before.rlim_max, 1024) / 2;
  ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lowered));
  const size_t raised = RaiseDescriptorLimit();
  rlimit after{};
  ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &after));
  EXPECT_EQ(after.rlim_cur, raised);
  EXPECT_GT(after.rlim_cur, lowered.rlim_cur);
  EXPECT_LE(after.rlim_cur, before.rlim_max);
  setrlimit(RLIMIT_NOFILE, &before);
}

}  // namespace
}  // namespace faultline

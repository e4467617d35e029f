// faultline: recognises known build and ML-training failures in logs. See README.md.
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "agent/cmd/cli.h"

namespace {

// A process started with descriptor 0, 1 or 2 closed would hand that number to the first file or
// socket it opens, and then read "stdin" from a log file or print the report into a socket. Each
// closed one gets /dev/null instead: a closed stdin reads as empty, closed output goes nowhere.
void ReserveStandardDescriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) continue;
    const int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null >= 0 && null != fd) {
      dup2(null, fd);
      close(null);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ReserveStandardDescriptors();
  return faultline::RunCli(std::vector<std::string>(argv + 1, argv + argc));
}

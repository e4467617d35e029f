// faultline: recognises known build and ML-training failures in logs. See README.md.
#include <string>
#include <vector>

#include "agent/app/cli.h"

int main(int argc, char** argv) {
  return faultline::RunCli(std::vector<std::string>(argv + 1, argv + argc));
}

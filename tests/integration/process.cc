// GCC 12 with optimisation reports a false -Wmaybe-uninitialized inside Beast 1.74's response
// parser (see tests/unit/http/http_server_test.cc); HttpGet below parses responses.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "tests/integration/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "agent/core/asio.h"

namespace faultline::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<char*> Argv(const std::vector<std::string>& args, std::vector<std::string>& storage,
                        const std::vector<std::string>& wrapper = {}) {
  storage = wrapper;
  storage.push_back(FAULTLINE_BINARY);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

std::string TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("faultline_it_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

Completed RunFaultline(const std::vector<std::string>& args, const std::string& stdin_text) {
  const std::string dir = TempDir("run");
  const std::string in_path = dir + "/stdin";
  const std::string out_path = dir + "/stdout";
  const std::string err_path = dir + "/stderr";
  std::ofstream(in_path, std::ios::binary) << stdin_text;
  std::vector<std::string> storage;
  std::vector<char*> argv = Argv(args, storage);
  const pid_t pid = fork();
  if (pid == 0) {
    const int in = open(in_path.c_str(), O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Completed c;
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.out = ReadFile(out_path);
  c.err = ReadFile(err_path);
  std::filesystem::remove_all(dir);
  return c;
}

Daemon::Daemon(const std::vector<std::string>& args, int max_open_files,
               const std::vector<std::string>& wrapper, const std::function<void()>& in_child) {
  stderr_path_ = TempDir("daemon") + "/stderr";
  std::vector<std::string> storage;
  std::vector<char*> argv = Argv(args, storage, wrapper);
  pid_ = fork();
  if (pid_ == 0) {
    const int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(err, 1);
    dup2(err, 2);
    if (max_open_files > 0) {
      const rlimit limit{static_cast<rlim_t>(max_open_files), static_cast<rlim_t>(max_open_files)};
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    if (in_child) in_child();
    execv(argv[0], argv.data());
    _exit(127);
  }
}

Daemon::~Daemon() {
  if (pid_ > 0) Stop(SIGKILL);
}

bool Daemon::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  return waitpid(pid_, &status, WNOHANG) == 0;
}

int Daemon::Stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Daemon::Stderr() const { return ReadFile(stderr_path_); }

Program::Program(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> storage = args;
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(out, 1);
    dup2(out, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
}

Program::~Program() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
}

int HttpGet(uint16_t port, const std::string& path, std::string* body) {
  namespace http = beast::http;
  try {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    http::request<http::empty_body> req{http::verb::get, path, 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(socket, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    *body = res.body();
    return static_cast<int>(res.result_int());
  } catch (const std::exception&) {
    return 0;
  }
}

int HttpPost(uint16_t port, const std::string& path, const std::string& bearer_token,
             std::string* body) {
  namespace http = beast::http;
  try {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    http::request<http::empty_body> req{http::verb::post, path, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!bearer_token.empty()) req.set(http::field::authorization, "Bearer " + bearer_token);
    http::write(socket, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    *body = res.body();
    return static_cast<int>(res.result_int());
  } catch (const std::exception&) {
    return 0;
  }
}

double Sample(const std::string& metrics, const std::string& series, double absent) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return absent;
}

namespace {

// Claims `port` for this process: an exclusive flock(2) on kPortLockDir/<port>.lock. The
// descriptor is left open on purpose, so the lock is held until this process exits, however it
// exits (the kernel drops it, kill -9 included); close-on-exec, so the agents a test starts do not
// hold it after the test is gone. False when another process holds it.
bool ClaimAcrossProcesses(uint16_t port) {
  static const bool dir_ready = [] {
    mkdir(kPortLockDir, 01777);  // sticky and open to all, as /tmp: any user's tests may run
    chmod(kPortLockDir, 01777);  // (umask took some bits off)
    return true;
  }();
  (void)dir_ready;
  const std::string path = std::string(kPortLockDir) + "/" + std::to_string(port) + ".lock";
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;
  }
  return true;
}

}  // namespace

void WithoutAsanQuarantine() {
#if defined(__SANITIZE_ADDRESS__)
  const char* options = std::getenv("ASAN_OPTIONS");
  const std::string value = std::string(options != nullptr ? options : "") +
                            ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
  setenv("ASAN_OPTIONS", value.c_str(), 1);
#endif
}

uint16_t FreePort() {
  // Below the kernel's ephemeral range: a port the kernel picked (bind to port 0) is the kind it
  // also gives to the next outgoing connection, which took one before the test's server bound it
  // (Prometheus: "bind: address already in use"). Random, so that test processes starting
  // together rarely try the same port first.
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  const int low = 10000;
  const int high = std::max(low + 1000, ephemeral_low);
  static std::mt19937 random(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  // A port is free until the agent binds it, so two calls before the agent starts could both
  // get it: a port is given once per process (`given`), and to one process at a time (its lock).
  static std::set<uint16_t> given;
  asio::io_context io;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const auto port =
        static_cast<uint16_t>(std::uniform_int_distribution<int>(low, high - 1)(random));
    if (!given.insert(port).second) continue;
    if (!ClaimAcrossProcesses(port)) continue;
    asio::ip::tcp::acceptor acceptor(io);
    boost::system::error_code ec;
    acceptor.open(asio::ip::tcp::v4(), ec);
    if (!ec) acceptor.bind({asio::ip::make_address("127.0.0.1"), port}, ec);
    if (!ec) return port;
  }
  throw std::runtime_error("FreePort: no free port claimed in 1000 tries");
}

}  // namespace faultline::testing

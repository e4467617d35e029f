#include "agent/daemon/config_watcher.h"

#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kMask = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                           IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

}  // namespace

ConfigWatcher::ConfigWatcher(asio::io_context& io, std::function<void()> on_change)
    : io_(io), on_change_(std::move(on_change)), settle_(io), buffer_(64 * 1024) {}

ConfigWatcher::~ConfigWatcher() {
  *alive_ = false;
  Stop();
}

void ConfigWatcher::Stop() {
  boost::system::error_code ignored;
  settle_.cancel(ignored);
  if (stream_ != nullptr) {
    stream_->close(ignored);  // closes fd_
    stream_.reset();
    fd_ = -1;
  }
  folders_.clear();
}

void ConfigWatcher::Watch(const std::string& config_file,
                          const std::vector<std::string>& rule_paths) {
  Stop();
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) {
    spdlog::warn("reload.watch: inotify unavailable ({}); reload with SIGHUP or POST /-/reload",
                 std::strerror(errno));
    return;
  }
  stream_ = std::make_unique<asio::posix::stream_descriptor>(io_, fd_);
  const fs::path config = fs::absolute(config_file).lexically_normal();
  config_name_ = config.filename().string();
  AddFolder(config.parent_path().string(), /*config_folder=*/true, /*rule_folder=*/false);
  for (const std::string& path : rule_paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      AddTree(path);
    } else {
      AddFolder(fs::path(path).parent_path().string(), false, true);
    }
  }
  Read();
}

void ConfigWatcher::AddFolder(const std::string& path, bool config_folder, bool rule_folder) {
  const int wd = inotify_add_watch(fd_, path.c_str(), kMask);
  if (wd < 0) {
    spdlog::warn("reload.watch: cannot watch {}: {}", path, std::strerror(errno));
    return;
  }
  Folder& folder = folders_[wd];  // the same folder twice gives the same descriptor
  folder.path = path;
  folder.config_folder = folder.config_folder || config_folder;
  folder.rule_folder = folder.rule_folder || rule_folder;
}

void ConfigWatcher::AddTree(const std::string& root) {
  AddFolder(root, false, true);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) AddFolder(it->path().string(), false, true);
  }
}

void ConfigWatcher::Read() {
  if (stream_ == nullptr) return;
  stream_->async_read_some(
      asio::buffer(buffer_), [this, alive = alive_](const boost::system::error_code& ec, size_t n) {
        if (ec || !*alive) return;
        size_t offset = 0;
        while (offset + sizeof(inotify_event) <= n) {
          const auto* event = reinterpret_cast<const inotify_event*>(buffer_.data() + offset);
          const std::string name = event->len > 0 ? std::string(event->name) : std::string();
          OnEvent(event->wd, event->mask, name);
          offset += sizeof(inotify_event) + event->len;
        }
        Read();
      });
}

void ConfigWatcher::OnEvent(int wd, uint32_t mask, const std::string& name) {
  if (mask & IN_Q_OVERFLOW) {
    Changed();  // events were lost: one of them may have been ours
    return;
  }
  const auto it = folders_.find(wd);
  if (it == folders_.end()) return;
  const Folder folder = it->second;
  if (mask & IN_IGNORED) {
    folders_.erase(it);
    return;
  }
  if (mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
    if (folder.rule_folder) Changed();
    return;
  }
  const bool is_dir = (mask & IN_ISDIR) != 0;
  bool relevant = false;
  if (folder.config_folder && (name == config_name_ || name.rfind("..", 0) == 0)) relevant = true;
  // Rules and the versions files beside them are both reloaded (rule_loader.h defines them).
  if (folder.rule_folder && (ClassifyRulePackFile(name) != RulePackFile::kOther || is_dir)) {
    relevant = true;
  }
  if (folder.rule_folder && is_dir && (mask & (IN_CREATE | IN_MOVED_TO))) {
    AddTree(folder.path + "/" + name);
  }
  if (relevant) Changed();
}

void ConfigWatcher::Changed() {
  settle_.expires_after(kSettle);
  settle_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) on_change_();
  });
}

}  // namespace faultline

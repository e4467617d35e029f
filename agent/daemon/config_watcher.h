// ConfigWatcher: `reload.watch: true`. Watches the config file and the rule folders with inotify
// and calls back once the files have been quiet for a moment after a change, so that an editor's
// save (write a temporary file, rename it over the old one) or a `git pull` of the rule pack is
// one reload, not ten.
//
// What counts as a change: in the config file's folder, a write, create, rename or delete of the
// config file itself, or of a name starting with ".." (a Kubernetes ConfigMap swaps its files
// through a `..data` link); in the rule folders and below, of any rule or versions file
// (ClassifyRulePackFile, rules/rule_loader.h: the loader's own definition), and folders
// created or removed there (which are watched or forgotten as they come and go). Temporary
// files of editors do not end in .yaml, so they do not count.
//
// Runs on the agent's loop; the callback is called there. Failures (no inotify, a watch refused)
// are logged once and leave reloads to SIGHUP and HTTP; nothing throws.
#ifndef FAULTLINE_DAEMON_CONFIG_WATCHER_H_
#define FAULTLINE_DAEMON_CONFIG_WATCHER_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/asio.h"

namespace faultline {

class ConfigWatcher {
 public:
  // Quiet time after the last event before the callback: an editor's save sequence and a
  // checkout's burst of files fit in it.
  static constexpr std::chrono::milliseconds kSettle{300};

  ConfigWatcher(asio::io_context& io, std::function<void()> on_change);
  ~ConfigWatcher();
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  // Watches `config_file` and every folder at or below `rule_paths` (a rule path that is a file
  // is watched through its folder), replacing what was watched before.
  void Watch(const std::string& config_file, const std::vector<std::string>& rule_paths);
  void Stop();

  size_t watched_folders() const { return folders_.size(); }

 private:
  struct Folder {
    std::string path;
    bool config_folder = false;  // holds the config file
    bool rule_folder = false;    // at or below a rule path
  };

  void AddFolder(const std::string& path, bool config_folder, bool rule_folder);
  void AddTree(const std::string& root);
  void Read();
  void OnEvent(int wd, uint32_t mask, const std::string& name);
  void Changed();

  asio::io_context& io_;
  const std::function<void()> on_change_;
  int fd_ = -1;
  std::unique_ptr<asio::posix::stream_descriptor> stream_;
  asio::steady_timer settle_;
  std::string config_name_;        // the config file's name in its folder
  std::map<int, Folder> folders_;  // by watch descriptor
  std::vector<char> buffer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace faultline

#endif  // FAULTLINE_DAEMON_CONFIG_WATCHER_H_

// Sources of `type: file`: one FileTailer per config entry (file_tailer.h has what it does). With
// a state store, the source resumes its files from the saved streams (file_resume.h) and hands
// its streams to every checkpoint (file_streams.h).
#include <chrono>
#include <map>
#include <tuple>

#include "agent/daemon/file_streams.h"
#include "agent/daemon/sources.h"
#include "agent/source/file_tailer.h"

namespace faultline {
namespace {

class FileSource : public Source, public FileResume, public FileStreamSet {
 public:
  FileSource(asio::io_context& io, std::string id, FileTailerOptions options,
             StreamConsumerFactory consumers, FileStreamHost* host)
      : id_(std::move(id)), host_(host), tailer_(io, WithResume(std::move(options)), consumers) {
    if (host_ == nullptr) return;
    for (const SavedStream& saved : host_->Saved(id_)) {
      saved_.emplace(Key{saved.mark.device, saved.mark.inode}, &saved);
    }
  }
  void Start() override {
    if (host_ != nullptr) host_->AddFileStreams(this);
    tailer_.Start();
  }
  void Stop() override {
    if (host_ != nullptr) {
      // Saved streams no file has claimed yet stay saved; the host's are replaced now.
      std::vector<SavedStream> streams;
      for (const auto& [key, saved] : saved_) streams.push_back(*saved);
      saved_.clear();
      CollectStreams(streams);
      host_->HandOver(id_, std::move(streams));
      frozen_ = true;
    }
    tailer_.Stop();
    if (host_ != nullptr) host_->RemoveFileStreams(this);
  }
  SourceStatus Status() const override { return tailer_.Status(); }
  std::string NotReadyReason() const override { return tailer_.Problem(); }

  // FileResume
  std::vector<FileMark> Unclaimed() const override {
    std::vector<FileMark> marks;
    for (const auto& [key, saved] : saved_) marks.push_back(saved->mark);
    return marks;
  }
  bool has_history() const override { return host_->HasHistory(id_); }
  int64_t checkpoint_time_ns() const override { return host_->CheckpointTimeNs(id_); }
  std::unique_ptr<StreamConsumer> Start(const std::string& path, uint64_t offset,
                                        const FileMark* resumed) override {
    const SavedStream* saved = nullptr;
    if (resumed != nullptr) {
      auto it = saved_.find(Key{resumed->device, resumed->inode});
      if (it != saved_.end()) {
        saved = it->second;
        saved_.erase(it);
      }
    }
    return host_->StartFileStream(id_, path, offset, saved, &frozen_);
  }
  void Forget(const FileMark& mark) override { saved_.erase(Key{mark.device, mark.inode}); }

  // FileStreamSet
  const std::string& source_id() const override { return id_; }
  uint64_t bytes_lost() const override { return tailer_.bytes_lost(); }
  void CollectFiles(std::vector<Metrics::FileSample>& out) const override {
    tailer_.ForEachFile([&](const FileTailer::FileView& file) {
      out.push_back(Metrics::FileSample{id_, file.path, file.size, file.offset, file.rotations,
                                        file.truncations});
    });
  }
  void CollectStreams(std::vector<SavedStream>& out) const override {
    tailer_.ForEachStream([&](const FileMark& mark, StreamConsumer& consumer) {
      SavedStream stream;
      stream.source_id = id_;
      stream.mark = mark;
      // Every consumer of this tailer was made by StartFileStream.
      stream.state = static_cast<const ResumableConsumer&>(consumer).State();
      stream.mark.resume_offset = stream.state.committed.offset;
      out.push_back(std::move(stream));
    });
  }

 private:
  using Key = std::tuple<uint64_t, uint64_t>;  // device, inode

  FileTailerOptions WithResume(FileTailerOptions options) {
    if (host_ != nullptr) options.resume = this;
    return options;
  }

  const std::string id_;
  FileStreamHost* const host_;
  std::map<Key, const SavedStream*> saved_;  // not claimed yet; owned by the host
  bool frozen_ = false;                      // handed over at Stop: the streams count no more
  FileTailer tailer_;
};

}  // namespace

std::unique_ptr<Source> BuildSource(const SourceContext& context, const FileSourceConfig& source) {
  FileTailerOptions options;
  options.patterns = source.paths;
  options.exclude = source.exclude;
  options.start_at_end = source.start_at == StartAt::kEnd;
  options.poll_interval = std::chrono::milliseconds(source.poll_interval_ms);
  options.rescan_interval = std::chrono::milliseconds(source.rescan_interval_ms);
  options.quiet_after = std::chrono::milliseconds(context.config.context_idle_flush_ms);
  options.rotate_wait = std::chrono::milliseconds(source.rotate_wait_ms);
  options.partial_flush_after = std::chrono::milliseconds(source.partial_flush_ms);
  options.descriptors = context.descriptors;
  return std::make_unique<FileSource>(context.io, source.id, std::move(options),
                                      context.consumers(source.id), context.file_streams);
}

}  // namespace faultline

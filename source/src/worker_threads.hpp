// The JSON Lines sink's threads: a fixed set that runs one piece of work per
// slot (the calling thread takes slot 0), which formats the rows of a write
// on several cores, and a file appender, which writes the lines to the file
// while the next ones are read and formatted.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kwire::checkpoint {
class AtomicFileWriter;
}

namespace kwire::source::detail {

class WorkerThreads {
 public:
  /// `threads` slots in all: the caller's and threads - 1 threads started
  /// here (none for 0 or 1).
  explicit WorkerThreads(unsigned threads);
  ~WorkerThreads();
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;

  unsigned size() const noexcept { return size_; }

  /// Runs work(slot) for every slot, slot 0 on the calling thread, and
  /// returns when all have returned. The exception of the lowest slot that
  /// threw is rethrown (after all slots are done). Not reentrant.
  void run(const std::function<void(unsigned slot)>& work);

 private:
  void loop(unsigned slot);

  unsigned size_;
  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(unsigned)>* work_ = nullptr;
  std::uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

/// Runs one piece of work at a time on a thread of its own while the caller
/// goes on.
class BackgroundTask {
 public:
  BackgroundTask();
  /// Waits for the work in progress.
  ~BackgroundTask();
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  /// Waits for the work in progress, then starts `work`. When the earlier
  /// work failed, its error is rethrown (once) and `work` is not started.
  void post(std::function<void()> work);
  /// Returns once the work in progress is done; rethrows its error (once).
  void wait();
  /// Returns once the work in progress is done; its error is kept for the
  /// next post() or wait().
  void settle() noexcept;
  /// settle(), then forgets the error.
  void reset() noexcept;

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable changed_;
  std::function<void()> work_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

/// Appends buffers to files on a thread of its own, in the order they were
/// given. At most kMaxQueued buffers wait; push() blocks beyond that.
class FileAppender {
 public:
  static constexpr std::size_t kMaxQueued = 4;
  FileAppender();
  /// Drops what waits and returns once the append in progress is done.
  ~FileAppender();
  FileAppender(const FileAppender&) = delete;
  FileAppender& operator=(const FileAppender&) = delete;

  /// Queues `data` to be appended to `file` (which must outlive the append:
  /// drain() or reset() first). `data` is taken; it comes back empty, with
  /// the capacity of a buffer already written when there is one. Rethrows
  /// the error of a failed append (checkpoint::CheckpointError), after which
  /// nothing more is appended until reset().
  void push(checkpoint::AtomicFileWriter& file, std::string& data);
  /// Returns once everything queued is appended; rethrows a failed append's error.
  void drain();
  /// Drops what waits, returns once the append in progress is done, and
  /// forgets any error.
  void reset();

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::pair<checkpoint::AtomicFileWriter*, std::string>> queue_;
  std::vector<std::string> spare_;  // written buffers, kept for their capacity
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace kwire::source::detail

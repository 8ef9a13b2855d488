// The JSON Lines sink's threads: formatting threads, which turn the rows of
// the sink's writes into lines on several cores, and a file appender, which
// writes the lines to the file while the next ones are read and formatted.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kwire/source/row.hpp"
#include "kwire/source/sink.hpp"

namespace kwire::checkpoint {
class AtomicFileWriter;
}

namespace kwire::source::detail {

/// Formats the rows of successive writes into lines on threads of its own
/// and hands the lines over in row order. Each write's rows are cut into
/// chunks; every thread takes the next chunk, of whichever write, whenever it
/// is free, so the rows of a write are formatted while the last chunks of the
/// write before it still are. At most `window` chunks are formatted ahead of
/// the first one not yet handed over.
class ChunkFormatter {
 public:
  /// Appends the lines of `rows` to `out` on thread `slot` (0..threads-1);
  /// returns how many rows it kept.
  using Format = std::function<std::int64_t(unsigned slot, std::span<const Row> rows, std::string& out)>;
  /// Takes the lines of the next chunk, in row order, on one thread at a
  /// time (it may swap in another buffer; it may block). Throws to fail.
  using Hand = std::function<void(std::string& lines)>;

  /// `threads` formatting threads (at least 1), a window of 2 chunks each.
  ChunkFormatter(unsigned threads, Format format, Hand hand);
  /// Drops what waits and joins the threads once their chunks are done.
  ~ChunkFormatter();
  ChunkFormatter(const ChunkFormatter&) = delete;
  ChunkFormatter& operator=(const ChunkFormatter&) = delete;

  unsigned threads() const noexcept { return static_cast<unsigned>(threads_.size()); }

  /// Writes whose rows may be read at once (Sink::kWritesBehind): the
  /// caller may read the next rows while the last two writes' are formatted.
  static constexpr std::uint64_t kWritesAhead = Sink::kWritesBehind;
  /// Queues `rows` (cut into chunks of `per_chunk` rows) and returns once
  /// the rows of every write before the last kWritesAhead (this one
  /// included) are formatted: the caller keeps `rows` alive until the
  /// kWritesAhead-th write() after it, or wait(), settle() or reset() returns. After
  /// a failure (a Format or Hand error), rethrows it once, drops everything
  /// queued (this write too) and hands nothing more over until then.
  void write(std::span<const Row> rows, std::size_t per_chunk);
  /// Returns once every queued row is formatted and handed over; rethrows a
  /// failure as write() does.
  void wait();
  /// Returns once no queued row is read any more; a failure is kept for the
  /// next write() or wait().
  void settle() noexcept;
  /// Drops what waits, returns once the chunks in progress are done, and
  /// forgets the failure and the count of kept rows.
  void reset() noexcept;
  /// Rows kept by Format since the last reset(), of the chunks done so far.
  std::int64_t kept() const;

 private:
  struct Write {
    std::span<const Row> rows;
    std::size_t per_chunk;
    std::uint64_t first;  // the sequence number of its first chunk
    std::uint64_t chunks;
  };
  void loop(unsigned slot);
  void hand_over(std::unique_lock<std::mutex>& lock);
  void fail(std::exception_ptr error);
  bool quiet() const { return busy_ == 0 && !handing_; }
  void rethrow_failure(std::unique_lock<std::mutex>& lock);
  void clear();

  Format format_;
  Hand hand_;
  mutable std::mutex mu_;
  std::condition_variable work_;  // formatters: a chunk to take
  std::condition_variable idle_;  // the caller: a write done, a failure, quiet()
  std::deque<Write> writes_;      // not yet handed over in full
  std::uint64_t queued_ = 0;      // chunks queued
  std::uint64_t next_ = 0;        // the next chunk to format
  std::uint64_t handed_ = 0;      // chunks handed over
  std::uint64_t writes_queued_ = 0;
  std::uint64_t writes_done_ = 0;
  std::vector<std::string> ready_;  // chunk i is formatted into ready_[i % window]
  std::vector<char> done_;          // ... and whether it is
  unsigned busy_ = 0;               // chunks being formatted
  bool handing_ = false;
  bool failed_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::int64_t kept_ = 0;
  std::vector<std::thread> threads_;
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

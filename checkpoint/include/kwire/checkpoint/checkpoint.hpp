// Streaming checkpoint: Spark-compatible offsets JSON and checkpoint folder.
//
// The folder layout matches Spark Structured Streaming's for a query with a
// single Kafka source, so a checkpoint written here reads like Spark's:
//
//   metadata       {"id":"<uuid v4>"}                      (created once)
//   offsets/N      v1\n{"batchWatermarkMs":0,"batchTimestampMs":T,"conf":{...}}\n<offsets JSON>
//                  (write-ahead log: the END offsets of batch N)
//   commits/N      v1\n{"nextBatchWatermarkMs":0}           (batch N completed)
//   sources/0/0    \0v1\n<offsets JSON>                     (initial offsets, written once)
//   .kwire.lock    pid of the process writing the checkpoint (kwire only;
//                  a hidden file Spark does not read)
//
// Every offset is the NEXT offset to read. Batch N reads [offsets/N-1, offsets/N)
// (for N == 0 the start is sources/0/0). All files are written atomically
// (temp file, fsync, rename, fsync folder) and log files are never overwritten.
// So a write that fails (ENOSPC, EFBIG, EIO: CheckpointError naming the file
// and the OS reason) or a process killed mid-write leaves the target file
// absent or unchanged, never partial; the temp file is deleted on failure, or
// by the next Checkpoint constructor after a kill.
//
// This layer does no networking: pure functions and file I/O only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace kwire::checkpoint {

/// topic -> partition -> offset (the next offset to read).
using PartitionOffsets = std::map<std::string, std::map<std::int32_t, std::int64_t>>;

/// Any checkpoint or offsets-JSON failure: malformed input, I/O error, conflicting write.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The "conf" map kwire writes in the metadata line of offsets/N: the SQL
/// settings Spark 4.2 records there (OffsetSeqMetadata.relevantSQLConfs in
/// sql/core, execution/streaming/OffsetSeq.scala) with the values of a
/// default Spark session (spark.sql.shuffle.partitions 200, the HDFS-backed
/// state store provider, state format versions 2, multipleWatermarkPolicy
/// min, ...). Spark reads these keys when it resumes a checkpoint; without
/// spark.sql.shuffle.partitions it cannot replay an uncommitted batch, and it
/// warns for every other missing key. 15 entries, names sorted, values as
/// Spark writes them (strings). Reading accepts a conf map with any keys, or
/// none.
const std::map<std::string, std::string>& spark_offset_log_conf();

/// Spark's offsets shape, compact and sorted: {"topic":{"0":123,"1":45}}.
std::string offsets_to_json(const PartitionOffsets& offsets);

/// Parses Spark's offsets JSON (key order does not matter). Offsets must be JSON
/// integers that fit in int64; partition keys must be decimal int32 strings.
/// Throws CheckpointError with Spark's text
///   Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got <input>
/// on any malformed input. Safe on arbitrary bytes.
PartitionOffsets offsets_from_json(std::string_view json);

/// Writes `content` to `path` atomically: a temp file in the same folder is
/// written, fsynced and renamed over `path`, then the folder is fsynced.
/// Replaces an existing file. Errors: CheckpointError naming the path and errno text.
void atomic_write_file(const std::filesystem::path& path, std::string_view content);

/// Deletes the temp files atomic_write_file and the Checkpoint writers leave
/// in `dir` when the process dies between creating and renaming one (names
/// ".<file>.<16 hex digits>.tmp"; other files are not touched). Only for a
/// folder with a single writer that is not writing right now. A missing
/// folder is fine. Errors: CheckpointError naming the file and errno text.
void remove_stale_temp_files(const std::filesystem::path& dir);

/// atomic_write_file for content that arrives in pieces: append() writes to a
/// temp file next to `path` (named as atomic_write_file's, so a process killed
/// mid-write leaves a file remove_stale_temp_files() deletes) through a buffer
/// of at most `buffer_bytes` (so memory does not grow with the file); commit()
/// writes the rest, fsyncs, renames the temp file over `path` and fsyncs the
/// folder; on Linux the kernel is asked to start writing the file out every
/// 8 MiB (sync_file_range), so that fsync does not wait for all of it at
/// once. A file that grows past `sync_bytes` (64 MiB by default) is also
/// made durable as it grows: a thread of the writer's own calls fdatasync
/// each time another `sync_bytes` have been written, while the writes go on,
/// so that commit()'s fsync has only the last part left to wait for (the
/// disk's work overlaps the writer's; the end of a batch is not held up by
/// flushing all of it). An error that thread meets fails commit(), naming
/// it. Until commit() `path` is untouched. abort(), or destruction without
/// commit(), deletes the temp file. Errors (ENOSPC, EFBIG, EIO...) throw
/// CheckpointError naming `path` and the OS reason, delete the temp file and
/// leave the writer aborted. Not thread-safe.
class AtomicFileWriter {
 public:
  static constexpr std::size_t kDefaultBufferBytes = std::size_t{1} << 20;     // 1 MiB
  static constexpr std::uint64_t kDefaultSyncBytes = std::uint64_t{64} << 20;  // 64 MiB

  /// Creates the temp file (CheckpointError when the folder is missing or not writable).
  explicit AtomicFileWriter(std::filesystem::path path, std::size_t buffer_bytes = kDefaultBufferBytes,
                            std::uint64_t sync_bytes = kDefaultSyncBytes);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void append(std::string_view data);
  /// Durable at `path` on return. Throws CheckpointError if aborted or already committed.
  void commit();
  /// Deletes the temp file; `path` stays as it was. Never throws.
  void abort() noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }
  const std::filesystem::path& temp_path() const noexcept { return tmp_; }
  /// Bytes appended so far (written or buffered).
  std::uint64_t size() const noexcept { return size_; }
  /// Bytes held in memory right now (at most buffer_bytes).
  std::size_t buffered() const noexcept { return buffer_.size(); }
  /// fdatasync calls the writer's thread has made so far (0 until the file
  /// passes `sync_bytes`).
  std::uint64_t background_syncs() const noexcept;

 private:
  struct Syncer;
  void flush();
  void write_through(std::string_view data);
  std::filesystem::path path_;
  std::filesystem::path tmp_;
  int fd_ = -1;
  std::string buffer_;
  std::size_t buffer_bytes_;
  std::uint64_t size_ = 0;
  std::uint64_t written_ = 0;         // bytes in the temp file
  std::uint64_t writeback_from_ = 0;  // where the writeback not yet asked for starts
  std::uint64_t sync_bytes_;
  std::uint64_t sync_asked_ = 0;    // bytes the syncer was last asked to make durable
  std::unique_ptr<Syncer> syncer_;  // started when the file passes sync_bytes_
};

/// Where a (re)started query continues.
struct ResumePoint {
  /// The batch id to run next (a replayed batch keeps its id).
  std::int64_t next_batch_id = 0;
  /// Set when the latest logged batch has no commit: it must run again with
  /// exactly the logged range [start, *replay_end).
  std::optional<std::int64_t> replay_batch;
  /// Start offsets of the next batch. Empty for a brand-new query without
  /// initial offsets: the caller resolves startingOffsets and calls
  /// write_initial_offsets().
  PartitionOffsets start;
  /// End offsets of the replayed batch (offsets/N); set iff replay_batch is set.
  std::optional<PartitionOffsets> replay_end;
};

/// How a Checkpoint opens its folder.
enum class Access {
  /// Creates the layout, takes the writer lock, may write files.
  read_write,
  /// Creates, locks, deletes and writes nothing (a view of the folder as it
  /// is; a missing folder reads as a brand-new query). Every write method
  /// throws CheckpointError.
  read_only,
};

/// A checkpoint folder for a query with one Kafka source. Not thread-safe; one
/// query (one process) owns a checkpoint folder at a time: a read_write
/// Checkpoint holds an exclusive advisory lock (flock(2) LOCK_EX on
/// <root>/.kwire.lock, which holds the owner's pid) until it is destroyed, so
/// a second writer, in this or another process, fails at once instead of
/// racing. The lock goes away with the process, so a killed run never leaves
/// a stale lock behind.
class Checkpoint {
 public:
  static constexpr int kDefaultMinBatchesToRetain = 100;
  /// Name of the lock file in the checkpoint folder.
  static constexpr std::string_view kLockFileName = ".kwire.lock";

  /// read_write: opens (creating if needed) the folder, takes the writer lock,
  /// creates its offsets/, commits/ and sources/0/ sub-folders and the
  /// metadata file with a fresh UUID v4 id, and removes temp files a killed
  /// writer left there (remove_stale_temp_files).
  /// read_only: only reads `metadata` if it exists (id() is empty otherwise).
  /// Errors: CheckpointError for an empty path; naming the path and the OS
  /// reason (e.g. a parent that is a regular file: "Not a directory"); or
  ///   checkpoint <root> is in use by another running query (pid N)
  /// when another read_write Checkpoint holds the lock.
  /// `min_batches_to_retain` (>= 1, as Spark's spark.sql.streaming.minBatchesToRetain):
  /// after writing batch N, offsets and commits files of batches < N - min are deleted.
  explicit Checkpoint(std::filesystem::path root, int min_batches_to_retain = kDefaultMinBatchesToRetain,
                      Access access = Access::read_write);
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  /// A read-only view (Access::read_only) of `root`.
  static Checkpoint open_read_only(std::filesystem::path root) {
    return Checkpoint(std::move(root), kDefaultMinBatchesToRetain, Access::read_only);
  }

  bool read_only() const { return access_ == Access::read_only; }

  const std::filesystem::path& root() const { return root_; }

  /// The query id stored in `metadata` (read, or created, by the constructor).
  std::string id() const { return id_; }

  /// Offsets persisted in sources/0/0, if any. Accepts Spark's current format
  /// (0x00, "v1\n", JSON) and the older one (optional 0x00 then JSON).
  std::optional<PartitionOffsets> initial_offsets() const;
  /// Persists initial offsets once. If sources/0/0 already exists it is kept
  /// (Spark ignores the starting options on restart); throws CheckpointError if
  /// the stored offsets differ from `offsets`.
  void write_initial_offsets(const PartitionOffsets& offsets);

  /// Highest batch id N for which offsets/N exists. Temp files and names that
  /// are not canonical decimal numbers are ignored. A corrupt file is not
  /// skipped here: reading it throws.
  std::optional<std::int64_t> latest_offsets_batch() const;
  /// Highest batch id N for which commits/N exists (same naming rules).
  std::optional<std::int64_t> latest_commit_batch() const;

  /// End offsets logged for `batch`. Throws CheckpointError (naming the file) if
  /// missing or corrupt; an offset below -2 (not a real offset, nor Spark's -2
  /// earliest / -1 latest) makes the file corrupt. The same rule holds for
  /// sources/0/0.
  PartitionOffsets read_offsets(std::int64_t batch) const;
  /// batchTimestampMs logged for `batch` (0 when absent from the metadata line).
  std::int64_t read_offsets_timestamp(std::int64_t batch) const;
  /// Write-ahead logs the END offsets of `batch`. Write-once: if offsets/N
  /// already exists with the same offsets it is left untouched (its original
  /// batchTimestampMs stays authoritative, as on a Spark replay); if it holds
  /// different offsets, throws CheckpointError. Then purges old batches.
  void write_offsets(std::int64_t batch, const PartitionOffsets& end, std::int64_t batch_timestamp_ms);

  /// True if commits/N exists. Throws CheckpointError if it exists but is corrupt.
  bool has_commit(std::int64_t batch) const;
  /// Marks `batch` as completed (idempotent). Then purges old batches.
  void write_commit(std::int64_t batch);

  /// Spark's restart rule:
  ///  - no offsets logged: next batch 0 from initial_offsets() (empty if none);
  ///  - latest logged N committed: next batch N+1 starting at offsets/N;
  ///  - latest logged N not committed: replay N over [offsets/N-1 (or
  ///    sources/0/0 when N == 0), offsets/N).
  /// Missing or corrupt files needed by the rule -> CheckpointError naming the file.
  ResumePoint resume() const;

 private:
  std::filesystem::path offsets_path(std::int64_t batch) const;
  std::filesystem::path commit_path(std::int64_t batch) const;
  std::filesystem::path initial_offsets_path() const;
  void purge(std::int64_t current_batch);
  void check_writable() const;
  void open_layout();

  std::filesystem::path root_;
  int min_batches_to_retain_;
  Access access_;
  int lock_fd_ = -1;  // open while the writer lock is held
  std::string id_;
};

}  // namespace kwire::checkpoint

// Rows of the Kafka source and the sinks they are written to.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/json_writer.hpp"
#include "kwire/source/row.hpp"

namespace kwire::checkpoint {
class AtomicFileWriter;
}

namespace kwire::source {

/// Invalid sink options or input columns: the Kafka sink's (Spark:
/// IllegalArgumentException or AnalysisException, with Spark's texts) and
/// the PostgreSQL sink's.
class SinkOptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// What a streaming query tells its sink about a batch before begin_batch:
/// a sink that stores the source position with its output (KafkaSink's
/// exactly-once mode) needs it. Batch queries and single range reads have
/// no checkpoint and never call prepare_batch.
struct BatchContext {
  std::string query_id;  // the checkpoint's query id (its `metadata` file)
  std::int64_t batch_id = 0;
  /// The batch's end offsets (next offset to read), as in offsets/N.
  checkpoint::PartitionOffsets end;
  /// The batch was logged by an earlier run (offsets/N, no commits/N) and runs again.
  bool replay = false;
};

/// Where a query's rows go. For exactly-once output the sink must be
/// idempotent per batch id: a batch may be started again with the same id and
/// the same rows after a crash, and a batch that failed (an exception between
/// begin_batch and commit_batch) is followed by begin_batch of its replay.
class Sink {
 public:
  virtual ~Sink() = default;
  /// Called by a streaming query before begin_batch (default: nothing).
  virtual void prepare_batch(const BatchContext& context) { (void)context; }
  virtual void begin_batch(std::int64_t batch_id) = 0;
  /// Rows of the current batch, in chunks (partition order within a chunk).
  virtual void write(std::span<const Row> rows) = 0;
  /// Make the batch durable. Returns how many rows the sink kept.
  virtual std::int64_t commit_batch(std::int64_t batch_id) = 0;
  /// True when write() may return while the sink still reads the rows (and
  /// the bytes they point into) on a thread of its own, so that the caller
  /// reads the next rows meanwhile. The caller then keeps them alive and
  /// unchanged until the sink's second write() after this one, or its
  /// begin_batch() or commit_batch(), returns, or until release_rows() does.
  /// An error of that work is rethrown by one of the next two write() calls
  /// or by commit_batch(). Default: false (write() is done with the rows
  /// when it returns).
  virtual bool writes_behind() const { return false; }
  /// How many of its latest write() calls' rows a sink that writes behind
  /// may still read when write() returns (this one included): the caller
  /// holds the rows of this many writes plus the one it reads next.
  static constexpr std::size_t kWritesBehind = 2;
  /// Returns once the sink reads no row of an earlier write() any more; an
  /// error of that work waits for a later write() or commit_batch().
  virtual void release_rows() noexcept {}
  /// Shown as the progress JSON's sink description.
  virtual std::string description() const { return "Sink"; }
};

/// Writes each batch to DIR/part-<batch id, 20 digits>.jsonl, atomically at
/// commit, so a replayed batch replaces its file with identical content. Each
/// line is a row written by a RecordJsonWriter (json_writer.hpp: Spark's
/// columns, timestamps as ISO-8601 strings in the writer's time zone, key and
/// value as text or base64), or by a custom formatter, which may also drop
/// rows.
///
/// The sink writes behind (writes_behind() is true) unless it was given a
/// single custom Formatter: write() hands the rows to the sink's threads and
/// returns once the rows of the write two before it are formatted, so the
/// next rows are read while these and the write before are formatted and
/// appended; commit_batch waits for them. The lines are made by several threads at once when the sink has
/// more than one formatting thread (the RecordJsonWriter's default:
/// default_format_threads()): the rows of each write are cut into chunks of
/// at most kRowsPerThread rows, each thread formats the next chunk, of this
/// write or the next, whenever it is free, and the chunks are written in row
/// order, so the file is the same as with one thread. A custom Formatter runs on the caller's
/// thread, one row at a time; formatters from a FormatterFactory (one per
/// thread) and the RecordJsonWriter run on the sink's threads.
///
/// Rows go to a temp file in DIR as they arrive, through a buffer of at most
/// `buffer_bytes` (default 1 MiB) plus the lines of at most 2 chunks per
/// formatting thread being formatted or waiting for the chunks before them,
/// and of at most 4 chunks waiting to be appended, so memory does not grow
/// with the batch;
/// commit_batch fsyncs the temp file, renames it to the part file and fsyncs
/// DIR (checkpoint::AtomicFileWriter). A batch that fails before its commit
/// deletes its temp file at the next begin_batch or when the sink is
/// destroyed; a killed process leaves ".part-<id>.jsonl.<16 hex>.tmp", which
/// the next JsonLinesSink on DIR deletes. The constructor creates DIR.
/// Errors: checkpoint::CheckpointError naming the file and the OS reason; a
/// formatter's exception is rethrown once every thread is done, by that
/// write() or, writing behind, by one of the next two write() calls or by
/// commit_batch().
class JsonLinesSink : public Sink {
 public:
  /// Appends the line for a row to `out` (without the newline) and returns
  /// true, or returns false to drop the row (then nothing it appended is kept).
  using Formatter = std::function<bool(std::string& out, const Row& row)>;
  /// Makes the formatter of one formatting thread (called once per thread,
  /// from the constructor).
  using FormatterFactory = std::function<Formatter()>;
  static constexpr std::size_t kDefaultBufferBytes = std::size_t{1} << 20;
  /// Rows of a chunk, the most one thread formats at a time.
  static constexpr std::size_t kRowsPerThread = 4096;
  /// Lines by `formatter`, on one thread, or by a default RecordJsonWriter
  /// (on default_format_threads() threads) when it is empty.
  explicit JsonLinesSink(std::filesystem::path dir, Formatter formatter = {},
                         std::size_t buffer_bytes = kDefaultBufferBytes);
  /// Lines by `writer`, on default_format_threads() threads.
  JsonLinesSink(std::filesystem::path dir, RecordJsonWriter writer, std::size_t buffer_bytes = kDefaultBufferBytes);
  /// Lines by formatters made by `factory`, on `threads` threads (at least 1).
  JsonLinesSink(std::filesystem::path dir, const FormatterFactory& factory, unsigned threads,
                std::size_t buffer_bytes = kDefaultBufferBytes);
  ~JsonLinesSink() override;
  void begin_batch(std::int64_t batch_id) override;
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t batch_id) override;
  bool writes_behind() const override;
  void release_rows() noexcept override;
  /// The default line for a row (RecordJsonWriter with default options).
  static std::string to_json(const Row& row);
  /// DIR/part-<batch id, 20 digits>.jsonl.
  std::filesystem::path part_path(std::int64_t batch_id) const;
  const std::filesystem::path& dir() const noexcept { return dir_; }
  /// Threads that format a write's lines.
  unsigned format_threads() const noexcept;
  /// The machine's cores (std::thread::hardware_concurrency), at most 4, at least 1.
  static unsigned default_format_threads();
  std::string description() const override { return "JsonLinesSink[" + dir_.string() + "]"; }

 private:
  struct Lines;  // the formatting threads, their formatters and lines
  void start_formatting();
  std::filesystem::path dir_;
  std::size_t buffer_bytes_;
  std::unique_ptr<Lines> lines_;
  std::unique_ptr<checkpoint::AtomicFileWriter> file_;  // the open batch
  std::int64_t batch_id_ = -1;
  std::int64_t kept_ = 0;
};

/// Writes rows to stdout as JSON lines (no exactly-once guarantee).
class ConsoleSink : public Sink {
 public:
  /// `formatter` as for JsonLinesSink (default: a default RecordJsonWriter).
  explicit ConsoleSink(JsonLinesSink::Formatter formatter = {}) : formatter_(std::move(formatter)) {}
  explicit ConsoleSink(RecordJsonWriter writer) : writer_(std::move(writer)) {}
  void begin_batch(std::int64_t) override { kept_ = 0; }
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t) override { return kept_; }
  std::string description() const override { return "ConsoleSink"; }

 private:
  JsonLinesSink::Formatter formatter_;
  RecordJsonWriter writer_;
  std::int64_t kept_ = 0;
};

/// Keeps nothing: counts the rows it is given (commit_batch returns the
/// batch's count). For plans and measurements.
class NullSink : public Sink {
 public:
  void begin_batch(std::int64_t) override { kept_ = 0; }
  void write(std::span<const Row> rows) override { kept_ += static_cast<std::int64_t>(rows.size()); }
  std::int64_t commit_batch(std::int64_t) override { return kept_; }
  std::string description() const override { return "NullSink"; }

 private:
  std::int64_t kept_ = 0;
};

}  // namespace kwire::source

// Rows of the Kafka source and the sinks they are written to.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/protocol/record_batch.hpp"

namespace kwire::checkpoint {
class AtomicFileWriter;
}

namespace kwire::source {

/// One row of the source, Spark's schema: key, value, topic, partition, offset,
/// timestamp (ms), timestampType (-1 none, 0 CreateTime, 1 LogAppendTime), and
/// headers (only with includeHeaders=true; nullptr when the record has none).
/// Views are valid only during the Sink::write call that receives them.
struct Row {
  std::optional<protocol::ByteSpan> key;
  std::optional<protocol::ByteSpan> value;
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp = -1;
  std::int8_t timestamp_type = -1;
  const std::vector<protocol::RecordHeader>* headers = nullptr;

  std::string_view key_string() const {
    return key ? std::string_view(reinterpret_cast<const char*>(key->data()), key->size()) : std::string_view();
  }
  std::string_view value_string() const {
    return value ? std::string_view(reinterpret_cast<const char*>(value->data()), value->size()) : std::string_view();
  }
};

/// Where a query's rows go. For exactly-once output the sink must be
/// idempotent per batch id: a batch may be started again with the same id and
/// the same rows after a crash, and a batch that failed (an exception between
/// begin_batch and commit_batch) is followed by begin_batch of its replay.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void begin_batch(std::int64_t batch_id) = 0;
  /// Rows of the current batch, in chunks (partition order within a chunk).
  virtual void write(std::span<const Row> rows) = 0;
  /// Make the batch durable. Returns how many rows the sink kept.
  virtual std::int64_t commit_batch(std::int64_t batch_id) = 0;
  /// Shown as the progress JSON's sink description.
  virtual std::string description() const { return "Sink"; }
};

/// Writes each batch to DIR/part-<batch id, 20 digits>.jsonl, atomically at
/// commit, so a replayed batch replaces its file with identical content. Each
/// line is a JSON object with Spark's columns (key and value as strings, as
/// CAST(... AS STRING) gives them). A filter and a custom formatter can be given.
///
/// Rows go to a temp file in DIR as they arrive, through a buffer of at most
/// `buffer_bytes` (default 1 MiB), so memory does not grow with the batch;
/// commit_batch fsyncs the temp file, renames it to the part file and fsyncs
/// DIR (checkpoint::AtomicFileWriter). A batch that fails before its commit
/// deletes its temp file at the next begin_batch or when the sink is
/// destroyed; a killed process leaves ".part-<id>.jsonl.<16 hex>.tmp", which
/// the next JsonLinesSink on DIR deletes. The constructor creates DIR.
/// Errors: checkpoint::CheckpointError naming the file and the OS reason.
class JsonLinesSink : public Sink {
 public:
  /// Returns the line to write for a row (without the newline), or nullopt to drop it.
  using Formatter = std::function<std::optional<std::string>(const Row&)>;
  static constexpr std::size_t kDefaultBufferBytes = std::size_t{1} << 20;
  explicit JsonLinesSink(std::filesystem::path dir, Formatter formatter = {},
                         std::size_t buffer_bytes = kDefaultBufferBytes);
  ~JsonLinesSink() override;
  void begin_batch(std::int64_t batch_id) override;
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t batch_id) override;
  /// The default line for a row.
  static std::string to_json(const Row& row);
  /// Appends the default line for a row to `out` (no newline).
  static void append_json(std::string& out, const Row& row);
  /// DIR/part-<batch id, 20 digits>.jsonl.
  std::filesystem::path part_path(std::int64_t batch_id) const;
  const std::filesystem::path& dir() const noexcept { return dir_; }
  std::string description() const override { return "JsonLinesSink[" + dir_.string() + "]"; }

 private:
  std::filesystem::path dir_;
  Formatter formatter_;
  std::size_t buffer_bytes_;
  std::unique_ptr<checkpoint::AtomicFileWriter> file_;  // the open batch
  std::int64_t batch_id_ = -1;
  std::string line_;  // reused for each row
  std::int64_t kept_ = 0;
};

/// Writes rows to stdout as JSON lines (no exactly-once guarantee).
class ConsoleSink : public Sink {
 public:
  /// `formatter` as for JsonLinesSink (default: JsonLinesSink::to_json).
  explicit ConsoleSink(JsonLinesSink::Formatter formatter = {}) : formatter_(std::move(formatter)) {}
  void begin_batch(std::int64_t) override { kept_ = 0; }
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t) override { return kept_; }
  std::string description() const override { return "ConsoleSink"; }

 private:
  JsonLinesSink::Formatter formatter_;
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

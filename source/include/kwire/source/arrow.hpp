// Records as Arrow record batches through the Arrow C Data Interface, without
// the Arrow C++ library.
//
// The three ABI structs below are those of Arrow's format specification ("The
// Arrow C data interface" and "The Arrow C stream interface"), guarded by the
// macros the specification names so that a program which also includes
// Arrow's own abi.h gets one definition. Anything that imports the C Data
// Interface (pyarrow, polars, DuckDB, nanoarrow, Arrow C++) takes the batches
// without copying them.
//
// Schema of a Kafka batch, as Spark's Kafka source (KafkaRecordToRowConverter)
// declares it, every field nullable as in Spark:
//   key            binary        ("z")  null for a null key, empty for an empty one
//   value          binary        ("z")  null for a null value (tombstone)
//   topic          utf8          ("u")
//   partition      int32         ("i")
//   offset         int64         ("l")
//   timestamp      timestamp[us, tz=UTC] ("tsu:UTC"); Kafka's ms x 1000
//                  (Spark's TimestampType precision); -1 ms (no timestamp)
//                  gives -1000 us, as Spark's conversion does
//   timestampType  int32         ("i")  -1 none, 0 CreateTime, 1 LogAppendTime
//   headers        list<struct<key: utf8, value: binary>> ("+l" of "+s"), only
//                  with includeHeaders; null for a record without headers (as
//                  Spark), a header's value null when Kafka's is null
//
// A batch is exported as a struct array ("+s") whose children are the
// columns: the form the C Data Interface uses for a record batch. Every
// exported array and schema owns its memory; its release callback frees it
// (children released with their parent unless moved out first, as the
// specification allows). Buffers are 8-byte aligned; a validity bitmap is
// exported only when a column has nulls. Offsets are int32: a builder keeps
// one batch under 2 GiB of key, value or header bytes (ArrowError
// otherwise; the batch sinks below start a new batch well before).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kwire/client/records.hpp"
#include "kwire/source/sink.hpp"
#include "kwire/source/value_format.hpp"

extern "C" {

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  // Array type description
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  // Release callback
  void (*release)(struct ArrowSchema*);
  // Opaque producer-specific data
  void* private_data;
};

struct ArrowArray {
  // Array data description
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  // Release callback
  void (*release)(struct ArrowArray*);
  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_DATA_INTERFACE

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  // Callbacks providing stream functionality
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);

  // Release callback
  void (*release)(struct ArrowArrayStream*);

  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_STREAM_INTERFACE

}  // extern "C"

namespace kwire::source {

class BatchQuery;
struct BatchQueryPlan;
struct BatchReadResult;

/// A batch that cannot be exported (a column over 2 GiB).
class ArrowError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An exported record batch, owned: releases it when destroyed unless moved out.
class ArrowBatch {
 public:
  ArrowBatch() noexcept;
  ~ArrowBatch();
  ArrowBatch(ArrowBatch&& other) noexcept;
  ArrowBatch& operator=(ArrowBatch&& other) noexcept;
  ArrowBatch(const ArrowBatch&) = delete;
  ArrowBatch& operator=(const ArrowBatch&) = delete;

  ArrowArray& array() noexcept { return array_; }
  const ArrowArray& array() const noexcept { return array_; }
  std::int64_t rows() const noexcept { return array_.release ? array_.length : 0; }
  /// Moves the array into `out` (which must be released or uninitialised);
  /// this object is then empty.
  void move_to(ArrowArray* out) noexcept;

 private:
  ArrowArray array_;
};

/// A deep copy of `schema` (format, name, flags, children; metadata and
/// dictionaries are not copied: kwire's schemas have none) into `out`.
void copy_schema(const ArrowSchema& schema, ArrowSchema* out);

/// Exports Spark's Kafka schema (see the top of this file) into `out`.
void export_kafka_schema(bool include_headers, ArrowSchema* out);

/// Builds record batches with Spark's Kafka schema, row by row.
class KafkaBatchBuilder {
 public:
  explicit KafkaBatchBuilder(bool include_headers);
  ~KafkaBatchBuilder();
  KafkaBatchBuilder(KafkaBatchBuilder&&) noexcept;
  KafkaBatchBuilder& operator=(KafkaBatchBuilder&&) noexcept;

  bool include_headers() const noexcept { return include_headers_; }
  void append(const Row& row);
  void append(const client::ConsumerRecord& record);
  /// Makes room for `rows` rows whose keys, values and topics hold about
  /// `key_bytes`, `value_bytes` and `topic_bytes` in all (headers aside), so
  /// a batch is not grown by doubling, each step a copy. Room only: nothing
  /// is written, and untouched room costs no resident memory.
  void reserve(std::int64_t rows, std::size_t key_bytes, std::size_t value_bytes, std::size_t topic_bytes);
  /// Rows appended since the last finish().
  std::int64_t rows() const noexcept;
  /// Bytes held by the batch being built (all buffers).
  std::size_t bytes() const noexcept;
  /// The batch built so far (possibly empty); the builder starts over.
  /// Throws ArrowError when a binary column passed 2 GiB.
  ArrowBatch finish();

 private:
  struct Columns;
  bool include_headers_;
  std::unique_ptr<Columns> columns_;
};

/// Builds record batches of decoded values (from_json, value_format.hpp):
/// one column per schema column, then `_corrupt_record` (utf8, null unless
/// the value was malformed). Types: STRING utf8, TINYINT int8, SMALLINT
/// int16, INT int32, BIGINT int64, FLOAT float32, DOUBLE float64, BOOLEAN
/// bool, TIMESTAMP timestamp[us, tz=UTC]; every column nullable.
class DecodedBatchBuilder {
 public:
  explicit DecodedBatchBuilder(Schema schema);
  ~DecodedBatchBuilder();
  DecodedBatchBuilder(DecodedBatchBuilder&&) noexcept;
  DecodedBatchBuilder& operator=(DecodedBatchBuilder&&) noexcept;

  const Schema& schema() const noexcept { return schema_; }
  void append(const DecodedValue& value);
  std::int64_t rows() const noexcept;
  std::size_t bytes() const noexcept;
  void export_schema(ArrowSchema* out) const;
  ArrowBatch finish();

 private:
  struct Columns;
  Schema schema_;
  std::unique_ptr<Columns> columns_;
};

/// Thrown by ArrowSink::write when its interrupt check says stop.
class ReadInterrupted : public std::runtime_error {
 public:
  ReadInterrupted() : std::runtime_error("read interrupted") {}
};

/// Returns true when a read should stop (checked once per chunk of rows).
using InterruptCheck = std::function<bool()>;

/// A Sink that turns each query batch into Arrow record batches with the
/// Kafka schema, a new one every `max_rows` rows or once `max_bytes` are held.
/// With an interrupt check, write() throws ReadInterrupted when it returns
/// true (so a long read can be stopped from another thread).
class ArrowSink : public Sink {
 public:
  static constexpr std::int64_t kDefaultMaxRows = 1 << 16;
  static constexpr std::size_t kDefaultMaxBytes = std::size_t{64} << 20;
  explicit ArrowSink(bool include_headers, std::int64_t max_rows = kDefaultMaxRows,
                     std::size_t max_bytes = kDefaultMaxBytes, InterruptCheck interrupt = {});
  void begin_batch(std::int64_t batch_id) override;
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t batch_id) override;
  std::string description() const override { return "ArrowSink"; }

  /// The record batches of the last committed batch; the sink keeps none.
  std::vector<ArrowBatch> take_batches();

 private:
  KafkaBatchBuilder builder_;
  std::int64_t max_rows_;
  std::size_t max_bytes_;
  InterruptCheck interrupt_;
  std::vector<ArrowBatch> batches_;
  std::int64_t rows_ = 0;
  bool sized_ = false;  // the builder has room for a batch like the first rows
};

/// Exports `batches` (of the schema in `schema`, which is moved) as a stream
/// into `out`. The stream owns both; get_next hands out each batch once, then
/// a released array (end of stream).
void export_stream(ArrowSchema* schema, std::vector<ArrowBatch> batches, ArrowArrayStream* out);

/// Reads `plan` with `query` (BatchQuery::read, so its errors) into Arrow and
/// exports the result as a stream of record batches with the Kafka schema
/// (includeHeaders as in the query's options). The whole result is read
/// before this returns. `result`, when given, receives the read's counters;
/// `interrupt` as for ArrowSink (ReadInterrupted, nothing exported).
/// A plan of 200,000 offsets or more is read by up to 4 readers at once (one
/// per core, one per 100,000 offsets; BatchQuery::read with sinks), each
/// partition's lower part first in the stream; smaller plans by one reader.
void export_batch_query(BatchQuery& query, const BatchQueryPlan& plan, ArrowArrayStream* out,
                        BatchReadResult* result = nullptr, const InterruptCheck& interrupt = {});

}  // namespace kwire::source

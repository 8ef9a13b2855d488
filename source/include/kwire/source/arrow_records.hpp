// Records to produce, read from Arrow record batches (the C Data Interface)
// with the columns of Spark's Kafka sink (KafkaWriter):
//   topic      string (utf8 / large_utf8); required unless a topic is given,
//              which then overrides the column (Spark's `topic` option)
//   key        string or binary (utf8, large_utf8, binary, large_binary, or
//              null); optional: a null key when absent
//   value      string or binary; required; null = a tombstone
//   partition  int32; optional: null or absent = the producer's partitioner
//   headers    list<struct<key: string, value: binary>>; optional
// Other columns are ignored (Spark ignores them too). Rows are read in place:
// no copy of keys and values is made before the producer's own.
//
// Errors: ArrowRecordSchemaError (a std::invalid_argument) naming the column
// and what it must be, at construction; ArrowRecordError for a row that
// cannot be sent (a null topic with no topic given, a header with a null
// key, an array that does not match its schema).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "kwire/client/producer.hpp"
#include "kwire/source/arrow.hpp"

namespace kwire::source {

class ArrowRecordSchemaError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class ArrowRecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ArrowRecordReader {
 public:
  /// `schema`: a record batch's (a struct, "+s"). `topic`: every row goes
  /// there (overriding a topic column). Throws ArrowRecordSchemaError.
  ArrowRecordReader(const ArrowSchema& schema, std::optional<std::string> topic);

  /// Calls `emit` once per row of `batch` (an array of the schema), in order,
  /// with views into the batch valid during the call. Returns the row count.
  std::int64_t for_each(const ArrowArray& batch,
                        const std::function<void(const client::ProducerRecordView&)>& emit) const;

 private:
  enum class Bytes { none, narrow, wide, null };  // absent, 32-bit offsets, 64-bit offsets, the null type
  std::optional<std::string> topic_;
  int topic_col_ = -1, key_col_ = -1, value_col_ = -1, partition_col_ = -1, headers_col_ = -1;
  Bytes topic_kind_ = Bytes::none, key_kind_ = Bytes::none, value_kind_ = Bytes::none;
  Bytes header_key_kind_ = Bytes::none, header_value_kind_ = Bytes::none;
  bool headers_wide_ = false;    // large_list
  bool partition_null_ = false;  // a partition column of the null type
  std::int64_t columns_ = 0;
};

}  // namespace kwire::source

// What the readers of encoded values (Avro, Protobuf) share: the rows of a
// record batch with Spark's Kafka columns, and Spark's parse modes for a
// malformed value.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kwire/source/arrow.hpp"

namespace kwire::source::value_rows {

using ValueFn = std::function<void(std::optional<std::span<const std::uint8_t>> value, std::string_view topic,
                                   std::int32_t partition, std::int64_t offset)>;

/// Calls `fn` per row of `batch` (a struct "+s" whose children include
/// `column` ("value" or "key"), binary or utf8, 32- or 64-bit offsets;
/// `topic`, `partition` and `offset` when present, else "", -1 and the row
/// number). Throws ArrowRecordSchemaError without a usable column; `caller`
/// names the function in the message.
void for_each_value(const ArrowSchema& schema, const ArrowArray& batch, const char* caller, std::string_view column,
                    const ValueFn& fn);

/// The "column" option of the value formats: "value" or "key" (kwire's: the
/// Kafka column read or written). Throws client::ConfigError.
std::string parse_column(const std::string& format, const std::string& value);

/// Spark's modes for a malformed value: FAILFAST throws AvroDecodeError
/// (avro.hpp) with Spark's text and the record; PERMISSIVE counts it and
/// logs the first one (the caller appends the row of nulls).
class MalformedValues {
 public:
  explicit MalformedValues(bool permissive, std::string format) : permissive_(permissive), format_(std::move(format)) {}
  void report(const std::string& why, std::string_view topic, std::int32_t partition, std::int64_t offset);
  std::int64_t count() const noexcept { return count_; }
  /// The first malformed value since construction or the last mark().
  const std::string& first() const noexcept { return first_; }
  void mark() noexcept {
    mark_ = count_;
    first_.clear();
  }

 private:
  bool permissive_;
  std::string format_;  // "Avro", "Protobuf": named in the warning
  std::int64_t count_ = 0;
  std::int64_t mark_ = 0;
  std::string first_;
};

}  // namespace kwire::source::value_rows

// The value readers' shared pieces (value_rows.hpp).
#include "value_rows.hpp"

#include <fmt/format.h>

#include "kwire/source/arrow_records.hpp"
#include "kwire/source/avro.hpp"
#include "kwire/source/warnings.hpp"

namespace kwire::source::value_rows {

namespace {

constexpr std::string_view kFailFast =
    "Malformed records are detected in record parsing. Current parse Mode: FAILFAST. To process malformed records "
    "as null result, try setting the option 'mode' as 'PERMISSIVE'.";

// A column of a record batch: its format, array, and the row's validity.
struct BatchColumn {
  std::string_view format;
  const ArrowArray* array = nullptr;
  std::int64_t base = 0;  // the parent struct's offset (a sliced batch)

  bool valid(std::int64_t row) const {
    if (array->null_count == 0 || array->n_buffers < 1 || !array->buffers[0]) return true;
    const auto* bits = static_cast<const std::uint8_t*>(array->buffers[0]);
    const std::int64_t i = row + base + array->offset;
    return bits[i >> 3] & (1u << (i & 7));
  }
  // binary / utf8 (z, u: int32 offsets; Z, U: int64 offsets).
  std::optional<std::span<const std::uint8_t>> bytes(std::int64_t row) const {
    if (!valid(row)) return std::nullopt;
    const std::int64_t i = row + base + array->offset;
    const auto* data = static_cast<const std::uint8_t*>(array->buffers[2]);
    std::int64_t begin = 0, end = 0;
    if (format == "z" || format == "u") {
      const auto* o = static_cast<const std::int32_t*>(array->buffers[1]);
      begin = o[i], end = o[i + 1];
    } else {
      const auto* o = static_cast<const std::int64_t*>(array->buffers[1]);
      begin = o[i], end = o[i + 1];
    }
    if (begin < 0 || end < begin) throw ArrowRecordError("Arrow batch: bad offsets in the value column");
    return std::span<const std::uint8_t>(data + begin, static_cast<std::size_t>(end - begin));
  }
  template <class T>
  T number(std::int64_t row) const {
    return valid(row) ? static_cast<const T*>(array->buffers[1])[row + base + array->offset] : T{-1};
  }
};

}  // namespace

std::string parse_column(const std::string& format, const std::string& value) {
  if (value != "value" && value != "key")
    throw client::ConfigError(fmt::format("{} option column: \"{}\" is not value or key", format, value));
  return value;
}

void for_each_value(const ArrowSchema& schema, const ArrowArray& batch, const char* caller, std::string_view column,
                    const ValueFn& fn) {
  std::optional<BatchColumn> value, topic, partition, offset;
  for (std::int64_t i = 0; i < schema.n_children && i < batch.n_children; ++i) {
    const std::string_view name = schema.children[i]->name ? schema.children[i]->name : "";
    const BatchColumn col{schema.children[i]->format ? schema.children[i]->format : "", batch.children[i],
                          batch.offset};
    if (!col.array || col.array->length < batch.offset + batch.length)
      throw ArrowRecordSchemaError(fmt::format("{}: column '{}' is shorter than the batch", caller, name));
    const bool text = col.format == "z" || col.format == "u" || col.format == "Z" || col.format == "U";
    if (name == column && text) value = col;
    if (name == "topic" && (col.format == "u" || col.format == "U")) topic = col;
    if (name == "partition" && col.format == "i") partition = col;
    if (name == "offset" && col.format == "l") offset = col;
  }
  if (!value)
    throw ArrowRecordSchemaError(
        fmt::format("{}: the batch has no {} column of binary or string type", caller, column));
  for (std::int64_t row = 0; row < batch.length; ++row) {
    std::string_view t;
    if (topic) {
      if (auto b = topic->bytes(row)) t = std::string_view(reinterpret_cast<const char*>(b->data()), b->size());
    }
    fn(value->bytes(row), t, partition ? partition->number<std::int32_t>(row) : -1,
       offset ? offset->number<std::int64_t>(row) : row);
  }
}

void MalformedValues::report(const std::string& why, std::string_view topic, std::int32_t partition,
                             std::int64_t offset) {
  const std::string where = fmt::format("{}-{} offset {}: {}", topic, partition, offset, why);
  if (!permissive_)
    throw AvroDecodeError(fmt::format("{} Record {}", kFailFast, where), std::string(topic), partition, offset);
  if (count_ == mark_) first_ = where;
  if (count_++ == 0) {
    log_warning(
        fmt::format("{} value read as a row of nulls (mode PERMISSIVE): {}; later malformed values are "
                    "counted, not logged",
                    format_, where));
  }
}

}  // namespace kwire::source::value_rows

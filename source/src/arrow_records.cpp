// ArrowRecordReader (see arrow_records.hpp).
#include "kwire/source/arrow_records.hpp"

#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace kwire::source {

namespace {

std::string_view format_of(const ArrowSchema& s) { return s.format ? s.format : ""; }

// Spark's name for an Arrow type, for error messages.
std::string type_name(const ArrowSchema& s) {
  const auto f = format_of(s);
  if (f == "u" || f == "U") return "string";
  if (f == "z" || f == "Z") return "binary";
  if (f == "i") return "int";
  if (f == "l") return "bigint";
  if (f == "s") return "smallint";
  if (f == "c") return "tinyint";
  if (f == "b") return "boolean";
  if (f == "g") return "double";
  if (f == "f") return "float";
  if (f == "n") return "void";
  if (f == "+s") return "struct";
  if (f == "+l" || f == "+L") return "array";
  return std::string("arrow type '") + std::string(f) + "'";
}

bool is_string(std::string_view f) { return f == "u" || f == "U"; }
bool is_binary(std::string_view f) { return f == "z" || f == "Z"; }

bool valid(const ArrowArray& a, std::int64_t i) {
  if (a.null_count == 0 || a.n_buffers < 1 || !a.buffers[0]) return true;
  const auto* bits = static_cast<const std::uint8_t*>(a.buffers[0]);
  const std::int64_t j = i + a.offset;
  return (bits[j >> 3] >> (j & 7)) & 1;
}

// The bytes of element `i` (before the array's own offset) of a string or
// binary array: 32-bit offsets when !wide, 64-bit when wide.
std::string_view bytes_at(const ArrowArray& a, std::int64_t i, bool wide) {
  const std::int64_t j = i + a.offset;
  const auto* data = static_cast<const char*>(a.buffers[2]);
  std::int64_t begin, end;
  if (wide) {
    const auto* off = static_cast<const std::int64_t*>(a.buffers[1]);
    begin = off[j];
    end = off[j + 1];
  } else {
    const auto* off = static_cast<const std::int32_t*>(a.buffers[1]);
    begin = off[j];
    end = off[j + 1];
  }
  if (end < begin) throw ArrowRecordError("an Arrow string or binary array has decreasing offsets");
  return std::string_view(data ? data + begin : "", static_cast<std::size_t>(end - begin));
}

void check_buffers(const ArrowArray& a, std::int64_t want, const std::string& column) {
  if (a.n_buffers != want)
    throw ArrowRecordError(
        fmt::format("column '{}': its array has {} buffers where {} were expected", column, a.n_buffers, want));
}

}  // namespace

ArrowRecordReader::ArrowRecordReader(const ArrowSchema& schema, std::optional<std::string> topic)
    : topic_(std::move(topic)) {
  if (format_of(schema) != "+s")
    throw ArrowRecordSchemaError("records to produce must be a record batch (an Arrow struct), not " +
                                 type_name(schema));
  columns_ = schema.n_children;
  auto bytes_kind = [&](const ArrowSchema& c, const char* name, bool binary_ok) {
    const auto f = format_of(c);
    if (f == "u" || (binary_ok && f == "z")) return Bytes::narrow;
    if (f == "U" || (binary_ok && f == "Z")) return Bytes::wide;
    if (f == "n") return Bytes::null;
    throw ArrowRecordSchemaError(fmt::format("{} attribute unsupported type {}. {} must be a(n) {}", name, type_name(c),
                                             name, binary_ok ? "string or binary" : "string"));
  };
  for (std::int64_t i = 0; i < schema.n_children; ++i) {
    const ArrowSchema& c = *schema.children[i];
    const std::string_view name = c.name ? c.name : "";
    if (c.dictionary)
      throw ArrowRecordSchemaError(fmt::format("{} attribute is dictionary-encoded: decode it first", name));
    const int col = static_cast<int>(i);
    for (std::int64_t j = 0; j < i; ++j)
      if (name == std::string_view(schema.children[j]->name ? schema.children[j]->name : "") &&
          (name == "topic" || name == "key" || name == "value" || name == "partition" || name == "headers"))
        throw ArrowRecordSchemaError(
            fmt::format("Reference `{}` is ambiguous: the records have more than one column named '{}'", name, name));
    if (name == "topic") {
      topic_col_ = col;
      topic_kind_ = bytes_kind(c, "topic", false);
    } else if (name == "key") {
      key_col_ = col;
      key_kind_ = bytes_kind(c, "key", true);
    } else if (name == "value") {
      value_col_ = col;
      value_kind_ = bytes_kind(c, "value", true);
    } else if (name == "partition") {
      partition_col_ = col;
      partition_null_ = format_of(c) == "n";
      if (format_of(c) != "i" && !partition_null_)
        throw ArrowRecordSchemaError(
            fmt::format("partition attribute unsupported type {}. partition must be a(n) int", type_name(c)));
    } else if (name == "headers") {
      headers_col_ = col;
      const auto f = format_of(c);
      const ArrowSchema* entry = (f == "+l" || f == "+L") && c.n_children == 1 ? c.children[0] : nullptr;
      const ArrowSchema* hk = nullptr;
      const ArrowSchema* hv = nullptr;
      if (entry && format_of(*entry) == "+s" && entry->n_children == 2) {
        hk = entry->children[0];
        hv = entry->children[1];
      }
      if (!hk || !hv || std::string_view(hk->name ? hk->name : "") != "key" ||
          std::string_view(hv->name ? hv->name : "") != "value" || !is_string(format_of(*hk)) ||
          !(is_binary(format_of(*hv)) || is_string(format_of(*hv))))
        throw ArrowRecordSchemaError(fmt::format(
            "headers attribute unsupported type {}. headers must be a(n) array<struct<key:string,value:binary>>",
            type_name(c)));
      headers_wide_ = f == "+L";
      header_key_kind_ = format_of(*hk) == "U" ? Bytes::wide : Bytes::narrow;
      const auto vf = format_of(*hv);
      header_value_kind_ = vf == "Z" || vf == "U" ? Bytes::wide : Bytes::narrow;
    }
  }
  if (value_col_ < 0) throw ArrowRecordSchemaError("Required attribute 'value' not found");
  if (!topic_ && topic_col_ < 0)
    throw ArrowRecordSchemaError(
        "topic option required when no 'topic' attribute is present. Use the topic option for setting a topic.");
}

std::int64_t ArrowRecordReader::for_each(const ArrowArray& batch,
                                         const std::function<void(const client::ProducerRecordView&)>& emit) const {
  if (batch.n_children != columns_)
    throw ArrowRecordError(fmt::format("the batch has {} columns where its schema has {}", batch.n_children, columns_));
  const ArrowArray* topic = topic_col_ >= 0 && !topic_ ? batch.children[topic_col_] : nullptr;
  const ArrowArray* key = key_col_ >= 0 && key_kind_ != Bytes::null ? batch.children[key_col_] : nullptr;
  const ArrowArray* value = value_kind_ != Bytes::null ? batch.children[value_col_] : nullptr;
  const ArrowArray* partition = partition_col_ >= 0 ? batch.children[partition_col_] : nullptr;
  const ArrowArray* headers = headers_col_ >= 0 ? batch.children[headers_col_] : nullptr;
  const ArrowArray* entries = nullptr;
  const ArrowArray* hkeys = nullptr;
  const ArrowArray* hvalues = nullptr;
  if (topic) check_buffers(*topic, 3, "topic");
  if (key) check_buffers(*key, 3, "key");
  if (value) check_buffers(*value, 3, "value");
  if (partition_null_) partition = nullptr;
  if (partition) check_buffers(*partition, 2, "partition");
  if (headers) {
    check_buffers(*headers, 2, "headers");
    if (headers->n_children != 1 || headers->children[0]->n_children != 2)
      throw ArrowRecordError("column 'headers': its array does not match its schema");
    entries = headers->children[0];
    hkeys = entries->children[0];
    hvalues = entries->children[1];
    check_buffers(*hkeys, 3, "headers.key");
    check_buffers(*hvalues, 3, "headers.value");
  }
  for (const ArrowArray* c : {topic, key, value, partition, headers})
    if (c && c->length < batch.offset + batch.length)
      throw ArrowRecordError("a column of the batch is shorter than the batch");
  std::vector<protocol::RecordHeader> row_headers;
  const std::int64_t n = batch.length;
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = r + batch.offset;  // a struct's offset applies to its children
    client::ProducerRecordView v;
    if (topic_) {
      v.topic = *topic_;
    } else {
      if (!valid(*topic, i))
        throw ArrowRecordError(
            "The Kafka message data sent to the producer contains a null topic. Use the "
            "`topic` option for setting a default topic.");
      v.topic = bytes_at(*topic, i, topic_kind_ == Bytes::wide);
    }
    auto span_of = [](std::string_view s) {
      return protocol::ByteSpan(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
    };
    if (key && valid(*key, i)) v.key = span_of(bytes_at(*key, i, key_kind_ == Bytes::wide));
    if (value && valid(*value, i)) v.value = span_of(bytes_at(*value, i, value_kind_ == Bytes::wide));
    if (partition && valid(*partition, i))
      v.partition = static_cast<const std::int32_t*>(partition->buffers[1])[i + partition->offset];
    row_headers.clear();
    if (headers && valid(*headers, i)) {
      const std::int64_t j = i + headers->offset;
      std::int64_t begin, end;
      if (headers_wide_) {
        const auto* off = static_cast<const std::int64_t*>(headers->buffers[1]);
        begin = off[j];
        end = off[j + 1];
      } else {
        const auto* off = static_cast<const std::int32_t*>(headers->buffers[1]);
        begin = off[j];
        end = off[j + 1];
      }
      for (std::int64_t h = begin; h < end; ++h) {
        const std::int64_t e = h + entries->offset;  // the entry struct's offset applies to key and value
        if (!valid(*entries, h) || !valid(*hkeys, e)) throw ArrowRecordError("a header with a null key cannot be sent");
        protocol::RecordHeader rh;
        rh.key = std::string(bytes_at(*hkeys, e, header_key_kind_ == Bytes::wide));
        if (valid(*hvalues, e)) {
          const auto s = bytes_at(*hvalues, e, header_value_kind_ == Bytes::wide);
          rh.value = protocol::Bytes(s.begin(), s.end());
        }
        row_headers.push_back(std::move(rh));
      }
    }
    v.headers = row_headers;
    emit(v);
  }
  return n;
}

}  // namespace kwire::source

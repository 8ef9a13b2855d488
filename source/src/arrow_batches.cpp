// Record batches with Spark's Kafka schema and with decoded value columns,
// the Arrow sink and the batch query's stream export (arrow.hpp).
#include <algorithm>
#include <memory>
#include <thread>
#include <variant>

#include "arrow_detail.hpp"
#include "kwire/source/batch.hpp"

namespace kwire::source {

using arrow_detail::BinaryColumn;
using arrow_detail::BoolColumn;
using arrow_detail::FixedColumn;
using arrow_detail::OwnedArray;
using arrow_detail::OwnedField;

namespace {

constexpr std::int64_t kMicrosPerMilli = 1000;

OwnedField kafka_field(bool include_headers) {
  OwnedField batch{"+s", "", false, {}};
  batch.children = {{"z", "key", true, {}},          {"z", "value", true, {}},  {"u", "topic", true, {}},
                    {"i", "partition", true, {}},    {"l", "offset", true, {}}, {"tsu:UTC", "timestamp", true, {}},
                    {"i", "timestampType", true, {}}};
  if (include_headers) {
    OwnedField entry{"+s", "element", true, {{"u", "key", true, {}}, {"z", "value", true, {}}}};
    batch.children.push_back({"+l", "headers", true, {std::move(entry)}});
  }
  return batch;
}

std::optional<std::span<const std::uint8_t>> as_span(const std::optional<protocol::ByteSpan>& b) {
  if (!b) return std::nullopt;
  return std::span<const std::uint8_t>(b->data(), b->size());
}

}  // namespace

void export_kafka_schema(bool include_headers, ArrowSchema* out) {
  arrow_detail::export_field(kafka_field(include_headers), out);
}

// ---- KafkaBatchBuilder ----

struct KafkaBatchBuilder::Columns {
  BinaryColumn key, value, topic;
  FixedColumn<std::int32_t> partition;
  FixedColumn<std::int64_t> offset;
  FixedColumn<std::int64_t> timestamp;
  FixedColumn<std::int32_t> timestamp_type;
  // headers: list offsets (int32) + validity, then the entries' key and value.
  arrow_detail::Validity header_validity;
  arrow_detail::Buffer header_offsets;
  BinaryColumn header_key, header_value;
  std::int64_t header_entries = 0;
  std::int64_t rows = 0;

  Columns() { arrow_detail::push_value<std::int32_t>(header_offsets, 0); }

  /// After the columns were taken: the headers' list starts over (the other
  /// columns start over in take(), keeping their sizes as the next room).
  void restart() {
    header_offsets = {};
    arrow_detail::push_value<std::int32_t>(header_offsets, 0);
    header_entries = 0;
    rows = 0;
  }

  void append(std::optional<std::span<const std::uint8_t>> k, std::optional<std::span<const std::uint8_t>> v,
              std::string_view t, std::int32_t p, std::int64_t o, std::int64_t ts, std::int8_t tst,
              const std::vector<protocol::RecordHeader>* headers, bool include_headers) {
    key.append(k);
    value.append(v);
    topic.append(t);
    partition.append(p);
    offset.append(o);
    timestamp.append(ts * kMicrosPerMilli);
    timestamp_type.append(static_cast<std::int32_t>(tst));
    if (include_headers) {
      const bool present = headers != nullptr && !headers->empty();
      header_validity.append(present);
      if (present) {
        for (const protocol::RecordHeader& h : *headers) {
          header_key.append(std::string_view(h.key));
          if (h.value) {
            header_value.append(std::span<const std::uint8_t>(h.value->data(), h.value->size()));
          } else {
            header_value.append_null();
          }
          ++header_entries;
        }
        if (header_entries > INT32_MAX) throw ArrowError("Arrow export: more than 2^31 headers in one record batch");
      }
      arrow_detail::push_value<std::int32_t>(header_offsets, static_cast<std::int32_t>(header_entries));
    }
    ++rows;
  }

  std::size_t bytes() const {
    return key.bytes() + value.bytes() + topic.bytes() + partition.bytes() + offset.bytes() + timestamp.bytes() +
           timestamp_type.bytes() + header_offsets.size() + header_key.bytes() + header_value.bytes();
  }
};

KafkaBatchBuilder::KafkaBatchBuilder(bool include_headers)
    : include_headers_(include_headers), columns_(std::make_unique<Columns>()) {}
KafkaBatchBuilder::~KafkaBatchBuilder() = default;
KafkaBatchBuilder::KafkaBatchBuilder(KafkaBatchBuilder&&) noexcept = default;
KafkaBatchBuilder& KafkaBatchBuilder::operator=(KafkaBatchBuilder&&) noexcept = default;

void KafkaBatchBuilder::append(const Row& row) {
  columns_->append(as_span(row.key), as_span(row.value), row.topic, row.partition, row.offset, row.timestamp,
                   row.timestamp_type, row.headers, include_headers_);
}

void KafkaBatchBuilder::append(const client::ConsumerRecord& r) {
  columns_->append(as_span(r.key), as_span(r.value), r.topic ? std::string_view(*r.topic) : std::string_view(),
                   r.partition, r.offset, r.timestamp, r.timestamp_type, r.headers, include_headers_);
}

void KafkaBatchBuilder::reserve(std::int64_t rows, std::size_t key_bytes, std::size_t value_bytes,
                                std::size_t topic_bytes) {
  if (rows <= 0) return;
  Columns& c = *columns_;
  const auto n = static_cast<std::size_t>(rows);
  c.key.reserve(n, key_bytes);
  c.value.reserve(n, value_bytes);
  c.topic.reserve(n, topic_bytes);
  c.partition.reserve(n);
  c.offset.reserve(n);
  c.timestamp.reserve(n);
  c.timestamp_type.reserve(n);
}

std::int64_t KafkaBatchBuilder::rows() const noexcept { return columns_->rows; }
std::size_t KafkaBatchBuilder::bytes() const noexcept { return columns_->bytes(); }

ArrowBatch KafkaBatchBuilder::finish() {
  Columns& c = *columns_;
  OwnedArray batch;
  batch.length = c.rows;
  batch.buffers.emplace_back();  // the struct's validity: none
  batch.children.push_back(c.key.take());
  batch.children.push_back(c.value.take());
  batch.children.push_back(c.topic.take());
  batch.children.push_back(c.partition.take());
  batch.children.push_back(c.offset.take());
  batch.children.push_back(c.timestamp.take());
  batch.children.push_back(c.timestamp_type.take());
  if (include_headers_) {
    OwnedArray entries;
    entries.length = c.header_entries;
    entries.buffers.emplace_back();
    entries.children.push_back(c.header_key.take());
    entries.children.push_back(c.header_value.take());
    OwnedArray list;
    list.length = c.rows;
    list.null_count = c.header_validity.null_count();
    list.buffers.push_back(c.header_validity.take());
    list.buffers.push_back(std::move(c.header_offsets));
    list.children.push_back(std::move(entries));
    batch.children.push_back(std::move(list));
  }
  c.restart();
  ArrowBatch out;
  arrow_detail::export_array(std::move(batch), &out.array());
  return out;
}

// ---- DecodedBatchBuilder ----

namespace {

using AnyColumn =
    std::variant<BinaryColumn, FixedColumn<std::int8_t>, FixedColumn<std::int16_t>, FixedColumn<std::int32_t>,
                 FixedColumn<std::int64_t>, FixedColumn<float>, FixedColumn<double>, BoolColumn>;

AnyColumn make_column(ColumnType type) {
  switch (type) {
    case ColumnType::string: return BinaryColumn();
    case ColumnType::int8: return FixedColumn<std::int8_t>();
    case ColumnType::int16: return FixedColumn<std::int16_t>();
    case ColumnType::int32: return FixedColumn<std::int32_t>();
    case ColumnType::int64: return FixedColumn<std::int64_t>();
    case ColumnType::timestamp: return FixedColumn<std::int64_t>();
    case ColumnType::float32: return FixedColumn<float>();
    case ColumnType::float64: return FixedColumn<double>();
    case ColumnType::boolean: return BoolColumn();
  }
  return BinaryColumn();
}

const char* format_of(ColumnType type) {
  switch (type) {
    case ColumnType::string: return "u";
    case ColumnType::int8: return "c";
    case ColumnType::int16: return "s";
    case ColumnType::int32: return "i";
    case ColumnType::int64: return "l";
    case ColumnType::timestamp: return "tsu:UTC";
    case ColumnType::float32: return "f";
    case ColumnType::float64: return "g";
    case ColumnType::boolean: return "b";
  }
  return "u";
}

template <class T>
std::optional<T> integer_cell(const Cell& cell) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return static_cast<T>(*i);
  return std::nullopt;
}

}  // namespace

struct DecodedBatchBuilder::Columns {
  std::vector<AnyColumn> columns;
  BinaryColumn corrupt;
  std::int64_t rows = 0;
};

DecodedBatchBuilder::DecodedBatchBuilder(Schema schema)
    : schema_(std::move(schema)), columns_(std::make_unique<Columns>()) {
  for (const Column& c : schema_.columns) columns_->columns.push_back(make_column(c.type));
}
DecodedBatchBuilder::~DecodedBatchBuilder() = default;
DecodedBatchBuilder::DecodedBatchBuilder(DecodedBatchBuilder&&) noexcept = default;
DecodedBatchBuilder& DecodedBatchBuilder::operator=(DecodedBatchBuilder&&) noexcept = default;

void DecodedBatchBuilder::append(const DecodedValue& value) {
  for (std::size_t i = 0; i < schema_.columns.size(); ++i) {
    const Cell empty;
    const Cell& cell = i < value.cells.size() ? value.cells[i] : empty;
    const ColumnType type = schema_.columns[i].type;
    AnyColumn& column = columns_->columns[i];
    if (auto* b = std::get_if<BinaryColumn>(&column)) {
      if (const auto* s = std::get_if<std::string>(&cell)) {
        b->append(std::string_view(*s));
      } else {
        b->append_null();
      }
    } else if (auto* c8 = std::get_if<FixedColumn<std::int8_t>>(&column)) {
      c8->append(integer_cell<std::int8_t>(cell));
    } else if (auto* c16 = std::get_if<FixedColumn<std::int16_t>>(&column)) {
      c16->append(integer_cell<std::int16_t>(cell));
    } else if (auto* c32 = std::get_if<FixedColumn<std::int32_t>>(&column)) {
      c32->append(integer_cell<std::int32_t>(cell));
    } else if (auto* c64 = std::get_if<FixedColumn<std::int64_t>>(&column)) {
      std::optional<std::int64_t> v = integer_cell<std::int64_t>(cell);
      if (v && type == ColumnType::timestamp) *v *= kMicrosPerMilli;
      c64->append(v);
    } else if (auto* f = std::get_if<FixedColumn<float>>(&column)) {
      const auto* d = std::get_if<double>(&cell);
      f->append(d ? std::optional<float>(static_cast<float>(*d)) : std::nullopt);
    } else if (auto* g = std::get_if<FixedColumn<double>>(&column)) {
      const auto* d = std::get_if<double>(&cell);
      g->append(d ? std::optional<double>(*d) : std::nullopt);
    } else if (auto* bo = std::get_if<BoolColumn>(&column)) {
      const auto* v = std::get_if<bool>(&cell);
      bo->append(v ? std::optional<bool>(*v) : std::nullopt);
    }
  }
  if (value.corrupt_record) {
    columns_->corrupt.append(std::string_view(*value.corrupt_record));
  } else {
    columns_->corrupt.append_null();
  }
  ++columns_->rows;
}

std::int64_t DecodedBatchBuilder::rows() const noexcept { return columns_->rows; }

std::size_t DecodedBatchBuilder::bytes() const noexcept {
  std::size_t n = columns_->corrupt.bytes();
  for (const AnyColumn& c : columns_->columns) n += std::visit([](const auto& col) { return col.bytes(); }, c);
  return n;
}

void DecodedBatchBuilder::export_schema(ArrowSchema* out) const {
  OwnedField batch{"+s", "", false, {}};
  for (const Column& c : schema_.columns) batch.children.push_back({format_of(c.type), c.name, true, {}});
  batch.children.push_back({"u", std::string(JsonValueDecoder::kCorruptRecordColumn), true, {}});
  arrow_detail::export_field(batch, out);
}

ArrowBatch DecodedBatchBuilder::finish() {
  OwnedArray batch;
  batch.length = columns_->rows;
  batch.buffers.emplace_back();
  for (AnyColumn& c : columns_->columns) {
    batch.children.push_back(std::visit([](auto& col) { return col.take(); }, c));
  }
  batch.children.push_back(columns_->corrupt.take());
  columns_->rows = 0;
  ArrowBatch out;
  arrow_detail::export_array(std::move(batch), &out.array());
  return out;
}

// ---- ArrowSink ----

ArrowSink::ArrowSink(bool include_headers, std::int64_t max_rows, std::size_t max_bytes, InterruptCheck interrupt)
    : builder_(include_headers),
      max_rows_(max_rows > 0 ? max_rows : 1),
      max_bytes_(max_bytes),
      interrupt_(std::move(interrupt)) {}

void ArrowSink::begin_batch(std::int64_t) {
  builder_ = KafkaBatchBuilder(builder_.include_headers());
  sized_ = false;
  batches_.clear();
  rows_ = 0;
}

void ArrowSink::write(std::span<const Row> rows) {
  if (interrupt_ && interrupt_()) throw ReadInterrupted();
  if (!sized_ && !rows.empty()) {
    // The first rows give the builder its room for a whole batch (the
    // builder keeps each batch's size as the next one's room).
    sized_ = true;
    const std::size_t sample = std::min<std::size_t>(rows.size(), 1024);
    std::size_t key = 0, value = 0, topic = 0;
    for (const Row& r : rows.first(sample)) {
      key += r.key ? r.key->size() : 0;
      value += r.value ? r.value->size() : 0;
      topic += r.topic.size();
    }
    const std::size_t per_row = (key + value + topic) / sample + 25;  // + offsets, partition, offset, timestamps
    const auto batch_rows = static_cast<std::int64_t>(
        std::min<std::size_t>(static_cast<std::size_t>(max_rows_), std::max<std::size_t>(max_bytes_ / per_row, 1)));
    const auto scale = [&](std::size_t bytes) { return bytes * static_cast<std::size_t>(batch_rows) / sample; };
    builder_.reserve(batch_rows, scale(key), scale(value), scale(topic));
  }
  for (const Row& row : rows) {
    builder_.append(row);
    // The byte budget is summed every 64 rows, or after a row of 64 KiB or more.
    const bool check_bytes = (builder_.rows() & 63) == 0 || (row.value && row.value->size() >= (64u << 10)) ||
                             (row.key && row.key->size() >= (64u << 10));
    if (builder_.rows() >= max_rows_ || (check_bytes && builder_.bytes() >= max_bytes_))
      batches_.push_back(builder_.finish());
  }
  rows_ += static_cast<std::int64_t>(rows.size());
}

std::int64_t ArrowSink::commit_batch(std::int64_t) {
  if (builder_.rows() > 0) batches_.push_back(builder_.finish());
  return rows_;
}

std::vector<ArrowBatch> ArrowSink::take_batches() { return std::exchange(batches_, {}); }

void export_batch_query(BatchQuery& query, const BatchQueryPlan& plan, ArrowArrayStream* out, BatchReadResult* result,
                        const InterruptCheck& interrupt) {
  const bool headers = query.options().include_headers;
  std::int64_t offsets = 0;
  for (const OffsetRange& r : plan.ranges) offsets += r.size();
  // Decoding and building the columns is the bound of a large read, not the
  // broker: more readers use more cores.
  constexpr std::int64_t kOffsetsPerReader = 100'000;
  constexpr std::int64_t kMaxReaders = 4;
  const std::int64_t readers =
      std::clamp<std::int64_t>(std::min<std::int64_t>(offsets / kOffsetsPerReader,
                                                      static_cast<std::int64_t>(std::thread::hardware_concurrency())),
                               1, kMaxReaders);
  std::vector<std::unique_ptr<ArrowSink>> sinks;
  std::vector<Sink*> sink_ptrs;
  for (std::int64_t j = 0; j < readers; ++j) {
    sinks.push_back(
        std::make_unique<ArrowSink>(headers, ArrowSink::kDefaultMaxRows, ArrowSink::kDefaultMaxBytes, interrupt));
    sink_ptrs.push_back(sinks.back().get());
  }
  BatchReadResult r = query.read(plan, std::span<Sink* const>(sink_ptrs));
  if (result != nullptr) *result = r;
  std::vector<ArrowBatch> batches;
  for (auto& sink : sinks)
    for (ArrowBatch& b : sink->take_batches()) batches.push_back(std::move(b));
  ArrowSchema schema;
  export_kafka_schema(headers, &schema);
  export_stream(&schema, std::move(batches), out);
}

}  // namespace kwire::source

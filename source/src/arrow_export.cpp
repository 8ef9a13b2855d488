// The Arrow C Data Interface export: owned arrays and schemas with their
// release callbacks, ArrowBatch, the column builders and the stream.
#include <utility>

#include "arrow_detail.hpp"

namespace kwire::source {
namespace arrow_detail {
namespace {

// Handed out for empty buffers, so no exported data or offsets pointer is null.
alignas(8) const std::uint8_t kEmpty[8] = {};

struct ArrayPrivate {
  OwnedArray array;
  std::vector<const void*> buffer_ptrs;
  std::vector<ArrowArray*> child_ptrs;
};

void release_array(ArrowArray* array) {
  if (array == nullptr || array->release == nullptr) return;
  auto* priv = static_cast<ArrayPrivate*>(array->private_data);
  for (ArrowArray* child : priv->child_ptrs) {
    if (child->release != nullptr) child->release(child);
    delete child;
  }
  delete priv;
  array->release = nullptr;
  array->private_data = nullptr;
}

struct SchemaPrivate {
  std::string format;
  std::string name;
  std::vector<ArrowSchema*> child_ptrs;
};

void release_schema(ArrowSchema* schema) {
  if (schema == nullptr || schema->release == nullptr) return;
  auto* priv = static_cast<SchemaPrivate*>(schema->private_data);
  for (ArrowSchema* child : priv->child_ptrs) {
    if (child->release != nullptr) child->release(child);
    delete child;
  }
  delete priv;
  schema->release = nullptr;
  schema->private_data = nullptr;
}

}  // namespace

void export_array(OwnedArray&& array, ArrowArray* out) {
  auto priv = std::make_unique<ArrayPrivate>();
  priv->array = std::move(array);
  OwnedArray& a = priv->array;
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    if (i == 0 && a.buffers[0].empty()) {
      priv->buffer_ptrs.push_back(nullptr);  // no nulls: no validity bitmap
    } else {
      priv->buffer_ptrs.push_back(a.buffers[i].empty() ? kEmpty : a.buffers[i].data());
    }
  }
  priv->child_ptrs.reserve(a.children.size());
  for (OwnedArray& child : a.children) {
    auto c = std::make_unique<ArrowArray>();
    export_array(std::move(child), c.get());
    priv->child_ptrs.push_back(c.release());
  }
  out->length = a.length;
  out->null_count = a.null_count;
  out->offset = 0;
  out->n_buffers = static_cast<std::int64_t>(priv->buffer_ptrs.size());
  out->n_children = static_cast<std::int64_t>(priv->child_ptrs.size());
  out->buffers = priv->buffer_ptrs.empty() ? nullptr : priv->buffer_ptrs.data();
  out->children = priv->child_ptrs.empty() ? nullptr : priv->child_ptrs.data();
  out->dictionary = nullptr;
  out->release = release_array;
  out->private_data = priv.release();
}

void export_field(const OwnedField& field, ArrowSchema* out) {
  auto priv = std::make_unique<SchemaPrivate>();
  priv->format = field.format;
  priv->name = field.name;
  priv->child_ptrs.reserve(field.children.size());
  for (const OwnedField& child : field.children) {
    auto c = std::make_unique<ArrowSchema>();
    export_field(child, c.get());
    priv->child_ptrs.push_back(c.release());
  }
  out->format = priv->format.c_str();
  out->name = priv->name.c_str();
  out->metadata = nullptr;
  out->flags = field.nullable ? ARROW_FLAG_NULLABLE : 0;
  out->n_children = static_cast<std::int64_t>(priv->child_ptrs.size());
  out->children = priv->child_ptrs.empty() ? nullptr : priv->child_ptrs.data();
  out->dictionary = nullptr;
  out->release = release_schema;
  out->private_data = priv.release();
}

OwnedField field_of(const ArrowSchema& schema) {
  OwnedField f;
  f.format = schema.format ? schema.format : "";
  f.name = schema.name ? schema.name : "";
  f.nullable = (schema.flags & ARROW_FLAG_NULLABLE) != 0;
  for (std::int64_t i = 0; i < schema.n_children; ++i) f.children.push_back(field_of(*schema.children[i]));
  return f;
}

void Validity::materialize() {
  bits_.reserve(static_cast<std::size_t>(length_ / 4 + 64));
  bits_.assign(static_cast<std::size_t>(length_ / 8), 0xFF);
  // A partial last byte: its valid rows set, the bits past them clear.
  if ((length_ & 7) != 0) bits_.push_back(static_cast<std::uint8_t>((1u << (length_ & 7)) - 1));
}

Buffer Validity::take() {
  Buffer out;
  if (nulls_ > 0) out = std::move(bits_);
  bits_ = {};
  length_ = 0;
  nulls_ = 0;
  return out;
}

void BinaryColumn::too_large() { throw ArrowError("Arrow export: a binary column of one record batch passed 2 GiB"); }

OwnedArray BinaryColumn::take() {
  OwnedArray a;
  a.length = length_;
  a.null_count = validity_.null_count();
  a.buffers.push_back(validity_.take());
  const std::size_t offsets_size = offsets_.size();
  const std::size_t data_size = data_.size();
  a.buffers.push_back(std::move(offsets_));
  a.buffers.push_back(std::move(data_));
  // The next batch is sized like this one: room made once, not grown by
  // doubling (each step a copy). Untouched room costs no resident memory.
  offsets_ = {};
  data_ = {};
  offsets_.reserve(offsets_size);
  data_.reserve(data_size);
  push_value<std::int32_t>(offsets_, 0);
  length_ = 0;
  return a;
}

void BoolColumn::append(std::optional<bool> value) {
  validity_.append(value.has_value());
  if ((length_ & 7) == 0) bits_.push_back(0);
  if (value.value_or(false)) bits_.back() = static_cast<std::uint8_t>(bits_.back() | (1u << (length_ & 7)));
  ++length_;
}

OwnedArray BoolColumn::take() {
  OwnedArray a;
  a.length = length_;
  a.null_count = validity_.null_count();
  a.buffers.push_back(validity_.take());
  a.buffers.push_back(std::move(bits_));
  bits_ = {};
  length_ = 0;
  return a;
}

}  // namespace arrow_detail

void copy_schema(const ArrowSchema& schema, ArrowSchema* out) {
  arrow_detail::export_field(arrow_detail::field_of(schema), out);
}

// ---- ArrowBatch ----

ArrowBatch::ArrowBatch() noexcept : array_{} { array_.release = nullptr; }

ArrowBatch::~ArrowBatch() {
  if (array_.release != nullptr) array_.release(&array_);
}

ArrowBatch::ArrowBatch(ArrowBatch&& other) noexcept : array_(other.array_) { other.array_.release = nullptr; }

ArrowBatch& ArrowBatch::operator=(ArrowBatch&& other) noexcept {
  if (this != &other) {
    if (array_.release != nullptr) array_.release(&array_);
    array_ = other.array_;
    other.array_.release = nullptr;
  }
  return *this;
}

void ArrowBatch::move_to(ArrowArray* out) noexcept {
  *out = array_;
  array_.release = nullptr;
}

// ---- Stream ----

namespace {

struct StreamPrivate {
  arrow_detail::OwnedField schema;
  std::vector<ArrowBatch> batches;
  std::size_t next = 0;
  std::string error;
};

int stream_get_schema(ArrowArrayStream* stream, ArrowSchema* out) {
  auto* priv = static_cast<StreamPrivate*>(stream->private_data);
  try {
    arrow_detail::export_field(priv->schema, out);
    return 0;
  } catch (const std::exception& e) {
    priv->error = e.what();
    return 12;  // ENOMEM
  }
}

int stream_get_next(ArrowArrayStream* stream, ArrowArray* out) {
  auto* priv = static_cast<StreamPrivate*>(stream->private_data);
  if (priv->next < priv->batches.size()) {
    priv->batches[priv->next++].move_to(out);
  } else {
    *out = ArrowArray{};
    out->release = nullptr;  // end of stream
  }
  return 0;
}

const char* stream_get_last_error(ArrowArrayStream* stream) {
  auto* priv = static_cast<StreamPrivate*>(stream->private_data);
  return priv->error.empty() ? nullptr : priv->error.c_str();
}

void stream_release(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) return;
  delete static_cast<StreamPrivate*>(stream->private_data);
  stream->release = nullptr;
  stream->private_data = nullptr;
}

}  // namespace

void export_stream(ArrowSchema* schema, std::vector<ArrowBatch> batches, ArrowArrayStream* out) {
  auto priv = std::make_unique<StreamPrivate>();
  priv->schema = arrow_detail::field_of(*schema);
  if (schema->release != nullptr) schema->release(schema);
  priv->batches = std::move(batches);
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_get_last_error;
  out->release = stream_release;
  out->private_data = priv.release();
}

namespace arrow_detail {

ArrowBatch value_batch(BinaryColumn&& values, std::int64_t length) {
  OwnedArray out;
  out.length = length;
  out.buffers.emplace_back();
  out.children.push_back(values.take());
  ArrowBatch result;
  export_array(std::move(out), &result.array());
  return result;
}

void export_value_schema(ArrowSchema* out) { export_field({"+s", "", false, {{"z", "value", true, {}}}}, out); }

}  // namespace arrow_detail

}  // namespace kwire::source

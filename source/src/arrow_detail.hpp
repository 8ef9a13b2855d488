// Owned Arrow arrays and schemas and the column builders behind arrow.hpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kwire/source/arrow.hpp"

namespace kwire::source::arrow_detail {

/// std::allocator, except that a value-initialized element (what resize()
/// adds) is left uninitialized: the column builders grow a buffer and then
/// write every byte they added, so zeroing them first would be a second pass.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() noexcept = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// A buffer of bytes; std::vector's allocation is aligned for any scalar (16
/// bytes on the platforms kwire builds for), which covers Arrow's 8. resize()
/// leaves the bytes it adds uninitialized: write them.
using Buffer = std::vector<std::uint8_t, UninitializedAllocator<std::uint8_t>>;

template <class T>
void push_value(Buffer& buffer, T value) {
  const std::size_t n = buffer.size();
  buffer.resize(n + sizeof(T));
  std::memcpy(buffer.data() + n, &value, sizeof(T));
}

/// An array whose memory is owned; exported (moved) into an ArrowArray.
struct OwnedArray {
  std::int64_t length = 0;
  std::int64_t null_count = 0;
  /// One per buffer of the layout; buffers[0] is the validity bitmap (an
  /// empty one is exported as null, as allowed when null_count is 0).
  std::vector<Buffer> buffers;
  std::vector<OwnedArray> children;
};

/// A field: format string, name, nullability, children.
struct OwnedField {
  std::string format;
  std::string name;
  bool nullable = true;
  std::vector<OwnedField> children;
};

void export_array(OwnedArray&& array, ArrowArray* out);
void export_field(const OwnedField& field, ArrowSchema* out);
/// The field an ArrowSchema describes (format, name, flags, children;
/// metadata and dictionaries are not kept).
OwnedField field_of(const ArrowSchema& schema);

/// A validity bitmap being built. No bitmap is written until the first
/// null: a column without nulls costs one counter per row, and is exported
/// without a bitmap (allowed when null_count is 0).
class Validity {
 public:
  void append(bool valid) {
    if (valid && nulls_ == 0) {
      ++length_;
      return;
    }
    if (nulls_ == 0) materialize();
    if ((length_ & 7) == 0) bits_.push_back(0);
    if (valid) {
      bits_.back() = static_cast<std::uint8_t>(bits_.back() | (1u << (length_ & 7)));
    } else {
      ++nulls_;
    }
    ++length_;
  }
  std::int64_t null_count() const noexcept { return nulls_; }
  std::size_t bytes() const noexcept { return static_cast<std::size_t>((length_ + 7) / 8); }
  /// The bitmap, empty when there was no null; the builder starts over.
  Buffer take();

 private:
  /// The bitmap of the length_ valid rows so far, before the first null.
  void materialize();

  Buffer bits_;
  std::int64_t length_ = 0;
  std::int64_t nulls_ = 0;
};

/// binary / utf8 with int32 offsets.
class BinaryColumn {
 public:
  BinaryColumn() { push_value<std::int32_t>(offsets_, 0); }
  void append(std::optional<std::span<const std::uint8_t>> value) {
    validity_.append(value.has_value());
    if (value && !value->empty()) {
      if (data_.size() + value->size() > static_cast<std::size_t>(INT32_MAX)) too_large();
      data_.insert(data_.end(), value->begin(), value->end());
    }
    push_value<std::int32_t>(offsets_, static_cast<std::int32_t>(data_.size()));
    ++length_;
  }
  void append(std::string_view value) {
    append(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(value.data()), value.size()));
  }
  void append_null() { append(std::optional<std::span<const std::uint8_t>>()); }
  /// Room for `rows` more values of `bytes` in all.
  void reserve(std::size_t rows, std::size_t bytes) {
    offsets_.reserve(offsets_.size() + rows * sizeof(std::int32_t));
    data_.reserve(data_.size() + bytes);
  }
  std::size_t bytes() const noexcept { return validity_.bytes() + offsets_.size() + data_.size(); }
  OwnedArray take();

 private:
  [[noreturn]] static void too_large();

  Validity validity_;
  Buffer offsets_;
  Buffer data_;
  std::int64_t length_ = 0;
};

/// A fixed-width primitive column (T = int8..int64, float, double).
template <class T>
class FixedColumn {
 public:
  void append(std::optional<T> value) {
    validity_.append(value.has_value());
    push_value<T>(data_, value.value_or(T{}));
    ++length_;
  }
  /// Room for `rows` more values.
  void reserve(std::size_t rows) { data_.reserve(data_.size() + rows * sizeof(T)); }
  std::size_t bytes() const noexcept { return validity_.bytes() + data_.size(); }
  OwnedArray take() {
    OwnedArray a;
    a.length = length_;
    a.null_count = validity_.null_count();
    a.buffers.push_back(validity_.take());
    const std::size_t size = data_.size();
    a.buffers.push_back(std::move(data_));
    data_ = {};
    data_.reserve(size);  // the next batch is sized like this one
    length_ = 0;
    return a;
  }

 private:
  Validity validity_;
  Buffer data_;
  std::int64_t length_ = 0;
};

/// A boolean column (bit-packed values).
class BoolColumn {
 public:
  void append(std::optional<bool> value);
  std::size_t bytes() const noexcept { return validity_.bytes() + bits_.size(); }
  OwnedArray take();

 private:
  Validity validity_;
  Buffer bits_;
  std::int64_t length_ = 0;
};

/// The encoders' output (to_avro, to_protobuf): a batch of one binary
/// column `value` holding `values` (`length` rows), and its schema.
ArrowBatch value_batch(BinaryColumn&& values, std::int64_t length);
void export_value_schema(ArrowSchema* out);

}  // namespace kwire::source::arrow_detail

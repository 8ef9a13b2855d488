// Arrow column builders for decoded Avro values (avro.hpp): one tree of
// columns shaped as Spark's type of the reader schema, with marks to take
// back a row that failed half-way.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "arrow_detail.hpp"
#include "avro_schema.hpp"

namespace kwire::source::avro_detail {

enum class Kind {
  null,
  boolean,
  int32,
  int64,
  float32,
  float64,
  binary,
  utf8,
  date32,
  ts_utc,
  ts_ntz,
  duration_us,
  decimal,
  list,
  map,
  strct
};

struct Col {
  Kind kind = Kind::null;
  std::string name;
  bool nullable = true;
  int precision = 0, scale = 0;  // decimal
  std::int64_t ts_factor = 1;    // timestamps: microseconds per unit of the reader's logical type

  std::int64_t length = 0;
  std::int64_t nulls = 0;
  arrow_detail::Buffer validity;  // one bit per row
  arrow_detail::Buffer values;    // fixed-width values, bool bits, binary bytes
  arrow_detail::Buffer offsets;   // binary, list, map: int32 offsets
  std::vector<Col> children;      // list: element; map: entries (struct of key, value); struct: fields

  void set_bit(arrow_detail::Buffer& bits, std::int64_t i, bool on) {
    if ((i & 7) == 0) bits.push_back(0);
    if (on) bits.back() = static_cast<std::uint8_t>(bits.back() | (1u << (i & 7)));
  }
  /// Records one more row's validity (the value itself is appended by the caller).
  void valid(bool is_valid) {
    set_bit(validity, length, is_valid);
    if (!is_valid) ++nulls;
    ++length;
  }
  template <class T>
  void push(T v) {
    arrow_detail::push_value<T>(values, v);
    valid(true);
  }
  void push_bool(bool v) {
    set_bit(values, length, v);
    valid(true);
  }
  void end_offset(std::int64_t end) { arrow_detail::push_value<std::int32_t>(offsets, static_cast<std::int32_t>(end)); }
  std::int32_t last_offset() const {
    std::int32_t v;
    std::memcpy(&v, offsets.data() + offsets.size() - 4, 4);
    return v;
  }
  /// Appends a null (struct: null in every child too, as Arrow needs the
  /// children as long as their parent).
  void append_null();
  void reset();
  std::size_t bytes() const;
  arrow_detail::OwnedField field() const;
  arrow_detail::OwnedArray take();
};

/// The column tree of a reader node (Spark's type of it, see avro.hpp).
/// Union members are member0..N, or, with `union_prefix` (Spark's
/// enableStableIdentifiersForUnionType), <prefix><type name>. Throws
/// AvroSchemaError for a type Spark has none for, or two members whose
/// stable names differ only in case.
Col make_col(const Node& node, const std::string& name, const std::string* union_prefix = nullptr);

/// A column's sizes, to take a failed row back.
struct Mark {
  Col* col;
  std::int64_t length, nulls;
  std::size_t validity, values, offsets;
};

/// Every column of the tree, parents first.
void collect(Col& col, std::vector<Col*>& out);
void save(const std::vector<Col*>& cols, std::vector<Mark>& marks);
void restore(const std::vector<Mark>& marks);

}  // namespace kwire::source::avro_detail

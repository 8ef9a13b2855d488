// Arrow column builders for decoded Avro values (avro_columns.hpp).
#include "avro_columns.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kwire/source/avro.hpp"

namespace kwire::source::avro_detail {

namespace {

std::size_t width(Kind k) {
  switch (k) {
    case Kind::int32:
    case Kind::float32:
    case Kind::date32: return 4;
    case Kind::int64:
    case Kind::float64:
    case Kind::ts_utc:
    case Kind::ts_ntz:
    case Kind::duration_us: return 8;
    case Kind::decimal: return 16;
    default: return 0;
  }
}

bool has_offsets(Kind k) { return k == Kind::binary || k == Kind::utf8 || k == Kind::list || k == Kind::map; }

void trim_bits(arrow_detail::Buffer& bits, std::int64_t length) {
  bits.resize(static_cast<std::size_t>((length + 7) / 8));
  if (length & 7) bits.back() = static_cast<std::uint8_t>(bits.back() & ((1u << (length & 7)) - 1));
}

Col leaf(Kind k, const std::string& name) {
  Col c;
  c.kind = k;
  c.name = name;
  if (has_offsets(k)) c.end_offset(0);
  return c;
}

}  // namespace

namespace {

// Avro's name of a union branch, as Spark's stable identifiers use it: a
// named type's name without its namespace, else the type's own name.
std::string branch_name(const Node& n) {
  if (n.type == Type::record || n.type == Type::enumeration || n.type == Type::fixed) {
    const auto dot = n.name.rfind('.');
    return dot == std::string::npos ? n.name : n.name.substr(dot + 1);
  }
  switch (n.type) {
    case Type::null: return "null";
    case Type::boolean: return "boolean";
    case Type::int_: return "int";
    case Type::long_: return "long";
    case Type::float_: return "float";
    case Type::double_: return "double";
    case Type::bytes: return "bytes";
    case Type::string: return "string";
    case Type::array: return "array";
    case Type::map: return "map";
    default: return "union";
  }
}

}  // namespace

Col make_col(const Node& n, const std::string& name, const std::string* union_prefix) {
  switch (n.type) {
    case Type::null: return leaf(Kind::null, name);
    case Type::boolean: return leaf(Kind::boolean, name);
    case Type::int_: return leaf(n.logical == Logical::date ? Kind::date32 : Kind::int32, name);
    case Type::long_: {
      Kind k = Kind::int64;
      std::int64_t factor = 1;
      switch (n.logical) {
        case Logical::timestamp_millis: k = Kind::ts_utc, factor = 1000; break;
        case Logical::timestamp_micros: k = Kind::ts_utc; break;
        case Logical::local_timestamp_millis: k = Kind::ts_ntz, factor = 1000; break;
        case Logical::local_timestamp_micros: k = Kind::ts_ntz; break;
        default: break;
      }
      Col c = leaf(k, name);
      c.ts_factor = factor;
      return c;
    }
    case Type::float_: return leaf(Kind::float32, name);
    case Type::double_: return leaf(Kind::float64, name);
    case Type::bytes:
    case Type::fixed: {
      if (n.logical != Logical::decimal) return leaf(Kind::binary, name);
      if (n.precision > 38)
        throw AvroSchemaError(
            fmt::format("Avro schema: column \"{}\" is a decimal of precision {}, over Spark's 38", name, n.precision));
      Col c = leaf(Kind::decimal, name);
      c.precision = n.precision;
      c.scale = n.scale;
      return c;
    }
    case Type::string:
    case Type::enumeration: return leaf(Kind::utf8, name);
    case Type::record: {
      Col c = leaf(Kind::strct, name);
      for (const Field& f : n.fields) c.children.push_back(make_col(*f.type, f.name, union_prefix));
      return c;
    }
    case Type::array: {
      Col c = leaf(Kind::list, name);
      c.children.push_back(make_col(*n.items, "element", union_prefix));
      return c;
    }
    case Type::map: {
      Col c = leaf(Kind::map, name);
      Col entries = leaf(Kind::strct, "entries");
      entries.nullable = false;
      Col key = leaf(Kind::utf8, "key");
      key.nullable = false;
      entries.children.push_back(std::move(key));
      entries.children.push_back(make_col(*n.items, "value", union_prefix));
      c.children.push_back(std::move(entries));
      return c;
    }
    case Type::union_: {
      std::vector<const Node*> non_null;
      for (const Node* b : n.branches)
        if (b->type != Type::null) non_null.push_back(b);
      if (non_null.empty()) return leaf(Kind::null, name);
      if (non_null.size() == 1) return make_col(*non_null[0], name, union_prefix);
      if (non_null.size() == 2) {
        const Type a = non_null[0]->type, b = non_null[1]->type;
        if ((a == Type::int_ && b == Type::long_) || (a == Type::long_ && b == Type::int_))
          return leaf(Kind::int64, name);
        if ((a == Type::float_ && b == Type::double_) || (a == Type::double_ && b == Type::float_))
          return leaf(Kind::float64, name);
      }
      Col c = leaf(Kind::strct, name);
      std::vector<std::string> seen;  // stable names, lower case
      for (std::size_t i = 0; i < non_null.size(); ++i) {
        std::string member = fmt::format("member{}", i);
        if (union_prefix) {
          const std::string type = branch_name(*non_null[i]);
          std::string lower;
          for (const char ch : type) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          if (std::find(seen.begin(), seen.end(), lower) != seen.end())
            throw AvroSchemaError(fmt::format(
                "Cannot generate stable identifier for Avro union type due to name conflict of type name {}", type));
          seen.push_back(lower);
          member = *union_prefix + type;
        }
        c.children.push_back(make_col(*non_null[i], member, union_prefix));
      }
      return c;
    }
  }
  return leaf(Kind::null, name);
}

void Col::append_null() {
  switch (kind) {
    case Kind::null: break;
    case Kind::boolean: set_bit(values, length, false); break;
    case Kind::binary:
    case Kind::utf8:
    case Kind::list:
    case Kind::map: end_offset(last_offset()); break;
    case Kind::strct:
      for (Col& c : children) c.append_null();
      break;
    default: values.insert(values.end(), width(kind), std::uint8_t{0}); break;
  }
  valid(false);
}

void Col::reset() {
  length = nulls = 0;
  validity.clear();
  values.clear();
  offsets.clear();
  if (has_offsets(kind)) end_offset(0);
  for (Col& c : children) c.reset();
}

std::size_t Col::bytes() const {
  std::size_t n = validity.size() + values.size() + offsets.size();
  for (const Col& c : children) n += c.bytes();
  return n;
}

arrow_detail::OwnedField Col::field() const {
  std::string format;
  switch (kind) {
    case Kind::null: format = "n"; break;
    case Kind::boolean: format = "b"; break;
    case Kind::int32: format = "i"; break;
    case Kind::int64: format = "l"; break;
    case Kind::float32: format = "f"; break;
    case Kind::float64: format = "g"; break;
    case Kind::binary: format = "z"; break;
    case Kind::utf8: format = "u"; break;
    case Kind::date32: format = "tdD"; break;
    case Kind::ts_utc: format = "tsu:UTC"; break;
    case Kind::ts_ntz: format = "tsu:"; break;
    case Kind::duration_us: format = "tDu"; break;
    case Kind::decimal: format = fmt::format("d:{},{}", precision, scale); break;
    case Kind::list: format = "+l"; break;
    case Kind::map: format = "+m"; break;
    case Kind::strct: format = "+s"; break;
  }
  arrow_detail::OwnedField f{format, name, nullable, {}};
  for (const Col& c : children) f.children.push_back(c.field());
  return f;
}

arrow_detail::OwnedArray Col::take() {
  arrow_detail::OwnedArray a;
  a.length = length;
  a.null_count = nulls;
  if (kind != Kind::null) {
    if (nulls > 0) {
      trim_bits(validity, length);
      a.buffers.push_back(std::move(validity));
    } else {
      a.buffers.emplace_back();
    }
    if (has_offsets(kind)) a.buffers.push_back(std::move(offsets));
    if (kind != Kind::list && kind != Kind::map && kind != Kind::strct) a.buffers.push_back(std::move(values));
  }
  for (Col& c : children) a.children.push_back(c.take());
  validity = {};
  values = {};
  offsets = {};
  length = nulls = 0;
  if (has_offsets(kind)) end_offset(0);
  return a;
}

void collect(Col& col, std::vector<Col*>& out) {
  out.push_back(&col);
  for (Col& c : col.children) collect(c, out);
}

void save(const std::vector<Col*>& cols, std::vector<Mark>& marks) {
  marks.resize(cols.size());
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const Col& c = *cols[i];
    marks[i] = {cols[i], c.length, c.nulls, c.validity.size(), c.values.size(), c.offsets.size()};
  }
}

void restore(const std::vector<Mark>& marks) {
  for (const Mark& m : marks) {
    Col& c = *m.col;
    c.length = m.length;
    c.nulls = m.nulls;
    trim_bits(c.validity, m.length);
    if (c.kind == Kind::boolean) {
      trim_bits(c.values, m.length);
    } else {
      c.values.resize(m.values);
    }
    c.offsets.resize(m.offsets);
  }
}

}  // namespace kwire::source::avro_detail

// AvroDecoder (avro.hpp): a writer schema resolved against the reader schema
// into a tree of actions, run over each value's bytes straight into the
// reader's Arrow columns.
#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <simdjson.h>

#include "avro_columns.hpp"
#include "avro_schema.hpp"
#include "kwire/source/avro.hpp"

namespace kwire::source {

using namespace avro_detail;

namespace {

enum class Op : std::uint8_t {
  skip,  // a writer value the reader does not have
  null,  // writer null: a null in the column
  boolean,
  int32,         // writer int, written as the column's kind
  int64,         // writer long
  float32,       // writer float
  float64,       // writer double
  bytes,         // writer bytes or string: binary, utf8 or decimal
  fixed,         // writer fixed: binary or decimal
  enumeration,   // writer enum: the reader's symbol
  record,        // children: one per writer field, then the reader's defaults
  array,         // children[0]: the items
  map,           // children[0]: the values
  writer_union,  // children: one per writer branch
  member,        // a reader union kept as a struct: children[0] fills member `member`
  fill_default,  // children[0] run over `bytes`
  error,         // a writer branch the reader cannot take: the row is malformed
};

struct Action {
  Op op = Op::skip;
  Col* col = nullptr;
  const Node* writer = nullptr;
  std::vector<Action> children;
  std::vector<std::int32_t> enum_map;  // writer symbol -> reader symbol (-1: none)
  const std::vector<std::string>* symbols = nullptr;
  std::string bytes;  // fill_default: the encoded default; error: the message
  std::size_t member = 0;
  std::int64_t item_cost = 1;  // array, map: the columns one item writes, at least (Reader::block)
};

struct Malformed {
  std::string why;
};

[[noreturn]] void malformed(std::string why) { throw Malformed{std::move(why)}; }
[[noreturn]] void schema_fail(const std::string& why) { throw AvroSchemaError("Avro schema resolution: " + why); }

std::string type_name(const Node& n) {
  static const char* const names[] = {"null",   "boolean", "int",  "long",  "float", "double", "bytes",
                                      "string", "record",  "enum", "array", "map",   "union",  "fixed"};
  std::string s = names[static_cast<int>(n.type)];
  if (!n.name.empty()) s += " " + n.name;
  return s;
}

bool names_match(const Node& w, const Node& r) {
  if (short_name(w.name) == short_name(r.name)) return true;
  for (const std::string& a : r.aliases)
    if (a == w.name || short_name(a) == short_name(w.name)) return true;
  return false;
}

// The specification's "match" of a writer and a reader schema (neither a union).
bool matches(const Node& w, const Node& r, bool exact) {
  if (w.type == r.type) {
    switch (w.type) {
      case Type::record:
      case Type::enumeration: return names_match(w, r);
      case Type::fixed: return names_match(w, r) && w.size == r.size;
      default: return true;
    }
  }
  if (exact) return false;
  switch (w.type) {
    case Type::int_: return r.type == Type::long_ || r.type == Type::float_ || r.type == Type::double_;
    case Type::long_: return r.type == Type::float_ || r.type == Type::double_;
    case Type::float_: return r.type == Type::double_;
    case Type::string: return r.type == Type::bytes;
    case Type::bytes: return r.type == Type::string;
    default: return false;
  }
}

// How a reader union is shaped in Spark (avro.hpp): one column, or a struct of members.
std::vector<const Node*> non_null_branches(const Node& u) {
  std::vector<const Node*> out;
  for (const Node* b : u.branches)
    if (b->type != Type::null) out.push_back(b);
  return out;
}

bool kept_as_members(const Node& u) {
  const auto nn = non_null_branches(u);
  if (nn.size() < 2) return false;
  if (nn.size() == 2) {
    const Type a = nn[0]->type, b = nn[1]->type;
    if ((a == Type::int_ && b == Type::long_) || (a == Type::long_ && b == Type::int_)) return false;
    if ((a == Type::float_ && b == Type::double_) || (a == Type::double_ && b == Type::float_)) return false;
  }
  return true;
}

// The columns of a column's tree (itself included).
std::int64_t col_count(const Col& c) {
  std::int64_t n = 1;
  for (const Col& child : c.children) n += col_count(child);
  return n;
}

Action skip(const Node& w) {
  Action a;
  a.op = Op::skip;
  a.writer = &w;
  return a;
}

Action resolve(const Node& w, const Node& r, Col* col);

Action resolve_record(const Node& w, const Node& r, Col* col) {
  Action a;
  a.op = Op::record;
  a.col = col;
  a.writer = &w;
  std::vector<bool> filled(r.fields.size(), false);
  for (const Field& wf : w.fields) {
    // By name, then by a reader field's alias (an alias never takes a field
    // that the writer has under the reader's own name).
    std::size_t found = r.fields.size();
    for (std::size_t i = 0; i < r.fields.size() && found == r.fields.size(); ++i)
      if (r.fields[i].name == wf.name) found = i;
    for (std::size_t i = 0; i < r.fields.size() && found == r.fields.size(); ++i)
      for (const std::string& alias : r.fields[i].aliases)
        if (alias == wf.name) found = i;
    if (found == r.fields.size() || filled[found]) {
      a.children.push_back(skip(*wf.type));
      continue;
    }
    filled[found] = true;
    try {
      a.children.push_back(resolve(*wf.type, *r.fields[found].type, &col->children[found]));
    } catch (const AvroSchemaError& e) {
      schema_fail(fmt::format("field \"{}.{}\": {}", r.name, r.fields[found].name, e.what()));
    }
  }
  for (std::size_t i = 0; i < r.fields.size(); ++i) {
    if (filled[i]) continue;
    const Field& rf = r.fields[i];
    if (!rf.default_json)
      schema_fail(fmt::format("field \"{}.{}\" is not in the writer's schema and has no default", r.name, rf.name));
    Action d;
    d.op = Op::fill_default;
    d.bytes = encode_default(*rf.type, *rf.default_json);
    d.children.push_back(resolve(*rf.type, *rf.type, &col->children[i]));
    a.children.push_back(std::move(d));
  }
  return a;
}

Action resolve(const Node& w, const Node& r, Col* col) {
  if (w.type == Type::union_) {
    Action a;
    a.op = Op::writer_union;
    a.writer = &w;
    for (const Node* b : w.branches) {
      try {
        a.children.push_back(resolve(*b, r, col));
      } catch (const AvroSchemaError& e) {
        Action err;
        err.op = Op::error;
        err.bytes = fmt::format("the writer's union branch {} does not fit the reader's {} ({})", type_name(*b),
                                type_name(r), e.what());
        a.children.push_back(std::move(err));
      }
    }
    return a;
  }
  if (r.type == Type::union_) {
    if (w.type == Type::null) {
      for (const Node* b : r.branches)
        if (b->type == Type::null) {
          Action a;
          a.op = Op::null;
          a.col = col;
          return a;
        }
      schema_fail(fmt::format("null does not fit the reader's union {}", spark_type(r)));
    }
    const auto nn = non_null_branches(r);
    // The same named type first (as Java's bestBranch): in [a.R, b.R] both
    // records match "R" by their unqualified names.
    std::size_t k = nn.size();
    for (std::size_t i = 0; i < nn.size() && k == nn.size(); ++i)
      if (!w.name.empty() && w.name == nn[i]->name && matches(w, *nn[i], true)) k = i;
    for (std::size_t i = 0; i < nn.size() && k == nn.size(); ++i)
      if (matches(w, *nn[i], true)) k = i;
    for (std::size_t i = 0; i < nn.size() && k == nn.size(); ++i)
      if (matches(w, *nn[i], false)) k = i;
    if (k == nn.size()) schema_fail(fmt::format("no branch of the reader's union takes the writer's {}", type_name(w)));
    if (!kept_as_members(r)) return resolve(w, *nn[k], col);
    Action a;
    a.op = Op::member;
    a.col = col;
    a.member = k;
    a.children.push_back(resolve(w, *nn[k], &col->children[k]));
    return a;
  }
  if (!matches(w, r, false))
    schema_fail(fmt::format("the writer's {} cannot be read as the reader's {}", type_name(w), type_name(r)));
  Action a;
  a.col = col;
  a.writer = &w;
  switch (w.type) {
    case Type::null: a.op = Op::null; break;
    case Type::boolean: a.op = Op::boolean; break;
    case Type::int_: a.op = Op::int32; break;
    case Type::long_: a.op = Op::int64; break;
    case Type::float_: a.op = Op::float32; break;
    case Type::double_: a.op = Op::float64; break;
    case Type::bytes:
    case Type::string: a.op = Op::bytes; break;
    case Type::fixed: a.op = Op::fixed; break;
    case Type::enumeration: {
      a.op = Op::enumeration;
      a.symbols = &r.symbols;
      for (const std::string& s : w.symbols) {
        std::int32_t to = -1;
        for (std::size_t i = 0; i < r.symbols.size(); ++i)
          if (r.symbols[i] == s) to = static_cast<std::int32_t>(i);
        if (to < 0 && r.enum_default) {
          for (std::size_t i = 0; i < r.symbols.size(); ++i)
            if (r.symbols[i] == *r.enum_default) to = static_cast<std::int32_t>(i);
        }
        a.enum_map.push_back(to);
      }
      break;
    }
    case Type::record: return resolve_record(w, r, col);
    case Type::array:
      a.op = Op::array;
      a.children.push_back(resolve(*w.items, *r.items, &col->children[0]));
      a.item_cost = std::max(w.items->types, col_count(col->children[0]));
      break;
    case Type::map:
      a.op = Op::map;
      a.children.push_back(resolve(*w.items, *r.items, &col->children[0].children[1]));
      a.item_cost = std::max(w.items->types, col_count(col->children[0]));
      break;
    case Type::union_: break;  // handled above
  }
  return a;
}

// The fewest bytes a value of `n` takes (0 for null and empty records): bounds item counts.
std::int64_t min_size(const Node& n) { return n.min_bytes; }

// Items that take no bytes (nulls, empty records) are not bounded by the
// value's size: at most this many of their values (items times the types in
// one) in one value.
constexpr std::int64_t kMaxEmptyItems = std::int64_t{1} << 20;

class Reader {
 public:
  Reader(const std::uint8_t* p, const std::uint8_t* end) : p_(p), end_(end) {}

  std::int64_t read_long() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) malformed("the value ends inside a number");
      const std::uint8_t b = *p_++;
      if (shift == 63 && b > 1) malformed("a long takes more than 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
    }
    malformed("a long takes more than 10 bytes");
  }
  std::int32_t read_int() {
    const std::int64_t v = read_long();
    if (v < INT32_MIN || v > INT32_MAX) malformed(fmt::format("int {} is out of range", v));
    return static_cast<std::int32_t>(v);
  }
  std::span<const std::uint8_t> take(std::int64_t n) {
    if (n < 0) malformed(fmt::format("negative length {}", n));
    if (n > end_ - p_) malformed(fmt::format("a length of {} bytes runs past the value's end", n));
    std::span<const std::uint8_t> s(p_, static_cast<std::size_t>(n));
    p_ += n;
    return s;
  }
  std::span<const std::uint8_t> take_bytes() { return take(read_long()); }
  template <class T>
  T read_fixed() {
    T v;
    const auto s = take(sizeof(T));
    std::memcpy(&v, s.data(), sizeof(T));
    return v;
  }
  std::int64_t remaining() const { return end_ - p_; }

  // The number of items in the next block (0: the end), with the block's
  // byte size skipped when the writer gave one. An item takes item_min
  // bytes at least and costs item_cost values.
  std::int64_t block(std::int64_t item_min, std::int64_t item_cost) {
    std::int64_t count = read_long();
    if (count < 0) {
      if (count == std::numeric_limits<std::int64_t>::min()) malformed("bad block count");
      count = -count;
      (void)read_long();
    }
    if (item_min > 0 && count > remaining() / item_min)
      malformed(fmt::format("a block of {} items is longer than the value", count));
    if (item_min == 0) {
      // Checked before adding: count may be up to 2^63 - 1.
      if (count > (kMaxEmptyItems - empty_items_) / item_cost)
        malformed(fmt::format("more than {} values in items that take no bytes in one value", kMaxEmptyItems));
      empty_items_ += count * item_cost;
    }
    return count;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  std::int64_t empty_items_ = 0;
};

void skip_value(const Node& n, Reader& in) {
  switch (n.type) {
    case Type::null: return;
    case Type::boolean: (void)in.take(1); return;
    case Type::int_:
    case Type::long_:
    case Type::enumeration: (void)in.read_long(); return;
    case Type::float_: (void)in.take(4); return;
    case Type::double_: (void)in.take(8); return;
    case Type::bytes:
    case Type::string: (void)in.take_bytes(); return;
    case Type::fixed: (void)in.take(n.size); return;
    case Type::record:
      for (const Field& f : n.fields) skip_value(*f.type, in);
      return;
    case Type::array:
    case Type::map: {
      const std::int64_t item_min = min_size(*n.items) + (n.type == Type::map ? 1 : 0);
      while (std::int64_t count = in.block(item_min, n.items->types)) {
        for (std::int64_t i = 0; i < count; ++i) {
          if (n.type == Type::map) (void)in.take_bytes();
          skip_value(*n.items, in);
        }
      }
      return;
    }
    case Type::union_: {
      const std::int64_t i = in.read_long();
      if (i < 0 || i >= static_cast<std::int64_t>(n.branches.size()))
        malformed(fmt::format("union index {} out of range", i));
      skip_value(*n.branches[static_cast<std::size_t>(i)], in);
      return;
    }
  }
}

void check_offset(std::int64_t end) {
  if (end > INT32_MAX) throw ArrowError("Arrow export: a column of one record batch passed 2^31 items or bytes");
}

// True when every byte is below 0x80 (ASCII, so valid UTF-8): eight bytes
// per step, which for the short strings of most records beats a call to the
// full validator.
bool all_ascii(std::span<const std::uint8_t> s) {
  std::size_t i = 0;
  std::uint64_t bits = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, s.data() + i, 8);
    bits |= word;
  }
  for (; i < s.size(); ++i) bits |= s[i];
  return (bits & 0x8080808080808080ULL) == 0;
}

void put_bytes(Col& c, std::span<const std::uint8_t> s) {
  if (c.kind == Kind::utf8 && !all_ascii(s) &&
      !simdjson::validate_utf8(reinterpret_cast<const char*>(s.data()), s.size()))
    malformed("a string is not valid UTF-8");
  if (c.kind == Kind::decimal) {
    // Big-endian two's complement -> 16 little-endian bytes.
    if (s.size() > 16) {
      const std::uint8_t sign = (s[0] & 0x80) ? 0xff : 0;
      for (std::size_t i = 0; i < s.size() - 16; ++i)
        if (s[i] != sign) malformed("a decimal does not fit in 128 bits");
      if (((s[s.size() - 16] ^ sign) & 0x80)) malformed("a decimal does not fit in 128 bits");
      s = s.subspan(s.size() - 16);
    }
    std::uint8_t le[16];
    const std::uint8_t fill = (!s.empty() && (s[0] & 0x80)) ? 0xff : 0;
    std::memset(le, fill, 16);
    for (std::size_t i = 0; i < s.size(); ++i) le[i] = s[s.size() - 1 - i];
    c.values.insert(c.values.end(), le, le + 16);
    c.valid(true);
    return;
  }
  check_offset(static_cast<std::int64_t>(c.values.size() + s.size()));
  c.values.insert(c.values.end(), s.begin(), s.end());
  c.end_offset(static_cast<std::int64_t>(c.values.size()));
  c.valid(true);
}

void put_long(Col& c, std::int64_t v) {
  switch (c.kind) {
    case Kind::int32:
    case Kind::date32: c.push<std::int32_t>(static_cast<std::int32_t>(v)); return;
    case Kind::float32: c.push<float>(static_cast<float>(v)); return;
    case Kind::float64: c.push<double>(static_cast<double>(v)); return;
    case Kind::ts_utc:
    case Kind::ts_ntz: {
      std::int64_t us = 0;
      if (__builtin_mul_overflow(v, c.ts_factor, &us)) malformed(fmt::format("timestamp {} overflows", v));
      c.push<std::int64_t>(us);
      return;
    }
    default: c.push<std::int64_t>(v); return;
  }
}

void run(const Action& a, Reader& in) {
  // Null for the ops that write no column of their own (skip, writer_union,
  // fill_default, error): only dereferenced by the others.
  Col* const c = a.col;
  switch (a.op) {
    case Op::skip: skip_value(*a.writer, in); return;
    case Op::null: c->append_null(); return;
    case Op::boolean: c->push_bool(in.take(1)[0] == 1); return;
    case Op::int32: put_long(*c, in.read_int()); return;
    case Op::int64: put_long(*c, in.read_long()); return;
    case Op::float32: {
      const float f = in.read_fixed<float>();
      if (c->kind == Kind::float64) c->push<double>(f);
      else c->push<float>(f);
      return;
    }
    case Op::float64: c->push<double>(in.read_fixed<double>()); return;
    case Op::bytes: put_bytes(*c, in.take_bytes()); return;
    case Op::fixed: put_bytes(*c, in.take(a.writer->size)); return;
    case Op::enumeration: {
      const std::int64_t i = in.read_long();
      if (i < 0 || i >= static_cast<std::int64_t>(a.enum_map.size()))
        malformed(fmt::format("enum index {} out of range", i));
      const std::int32_t to = a.enum_map[static_cast<std::size_t>(i)];
      if (to < 0)
        malformed(fmt::format("symbol \"{}\" is not in the reader's enum, which has no default",
                              a.writer->symbols[static_cast<std::size_t>(i)]));
      const std::string& s = (*a.symbols)[static_cast<std::size_t>(to)];
      put_bytes(*c, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
      return;
    }
    case Op::record:
      for (const Action& f : a.children) run(f, in);
      c->valid(true);
      return;
    case Op::array: {
      Col& items = c->children[0];
      const std::int64_t item_min = min_size(*a.writer->items);
      while (std::int64_t count = in.block(item_min, a.item_cost)) {
        for (std::int64_t i = 0; i < count; ++i) run(a.children[0], in);
      }
      check_offset(items.length);
      c->end_offset(items.length);
      c->valid(true);
      return;
    }
    case Op::map: {
      Col& entries = c->children[0];
      Col& keys = entries.children[0];
      const std::int64_t item_min = min_size(*a.writer->items) + 1;
      while (std::int64_t count = in.block(item_min, a.item_cost)) {
        for (std::int64_t i = 0; i < count; ++i) {
          put_bytes(keys, in.take_bytes());
          run(a.children[0], in);
          entries.valid(true);
        }
      }
      check_offset(entries.length);
      c->end_offset(entries.length);
      c->valid(true);
      return;
    }
    case Op::writer_union: {
      const std::int64_t i = in.read_long();
      if (i < 0 || i >= static_cast<std::int64_t>(a.children.size()))
        malformed(fmt::format("union index {} out of range", i));
      run(a.children[static_cast<std::size_t>(i)], in);
      return;
    }
    case Op::member:
      for (std::size_t k = 0; k < c->children.size(); ++k)
        if (k != a.member) c->children[k].append_null();
      run(a.children[0], in);
      c->valid(true);
      return;
    case Op::fill_default: {
      const auto* p = reinterpret_cast<const std::uint8_t*>(a.bytes.data());
      Reader d(p, p + a.bytes.size());
      run(a.children[0], d);
      return;
    }
    case Op::error: malformed(a.bytes);
  }
}

}  // namespace

// ---- AvroSchema ----

AvroSchema AvroSchema::parse(std::string_view json) {
  AvroSchema s;
  s.tree_ = parse_schema(json);
  return s;
}

std::string AvroSchema::spark_type() const { return avro_detail::spark_type(*tree_->root); }
const std::string& AvroSchema::json() const { return tree_->json; }

// ---- AvroDecoder ----

struct AvroDecoder::Impl {
  std::vector<std::shared_ptr<const Tree>> schemas;  // keeps the nodes the actions point to
  const Node* reader = nullptr;
  bool record_root = false;
  Col root;
  std::vector<Col*> cols;
  std::vector<Mark> marks;
  std::vector<Action> writers;
};

AvroDecoder::AvroDecoder(const AvroSchema& reader, std::optional<std::string> union_prefix)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.schemas.push_back(reader.tree_);
  m.reader = m.schemas.back()->root;
  m.record_root = m.reader->type == Type::record;
  const std::string* prefix = union_prefix ? &*union_prefix : nullptr;
  if (m.record_root) {
    m.root = make_col(*m.reader, "", prefix);
  } else {
    m.root.kind = Kind::strct;
    m.root.children.push_back(make_col(*m.reader, "value", prefix));
  }
  collect(m.root, m.cols);
  add_writer(reader);
}

AvroDecoder::~AvroDecoder() = default;
AvroDecoder::AvroDecoder(AvroDecoder&&) noexcept = default;
AvroDecoder& AvroDecoder::operator=(AvroDecoder&&) noexcept = default;

int AvroDecoder::add_writer(const AvroSchema& writer) {
  Impl& m = *impl_;
  m.schemas.push_back(writer.tree_);
  const Node& w = *m.schemas.back()->root;
  m.writers.push_back(resolve(w, *m.reader, m.record_root ? &m.root : &m.root.children[0]));
  return static_cast<int>(m.writers.size() - 1);
}

bool AvroDecoder::append(std::optional<std::span<const std::uint8_t>> value, int writer, std::string* error) {
  Impl& m = *impl_;
  if (writer < 0 || writer >= static_cast<int>(m.writers.size()))
    throw std::invalid_argument(fmt::format("AvroDecoder::append: no writer schema {}", writer));
  if (!value) {
    // A tombstone: a null row, as from_avro gives null for a null input.
    for (Col& c : m.root.children) c.append_null();
    m.root.valid(false);
    return true;
  }
  save(m.cols, m.marks);
  Reader in(value->data(), value->data() + value->size());
  try {
    run(m.writers[static_cast<std::size_t>(writer)], in);
    if (!m.record_root) m.root.valid(true);
    return true;
  } catch (Malformed& e) {
    restore(m.marks);
    append_null();
    if (error) *error = std::move(e.why);
    return false;
  } catch (...) {
    restore(m.marks);  // ArrowError: the batch keeps its rows whole
    throw;
  }
}

void AvroDecoder::append_null() {
  for (Col& c : impl_->root.children) c.append_null();
  impl_->root.valid(true);
}

std::int64_t AvroDecoder::rows() const noexcept { return impl_->root.length; }
std::size_t AvroDecoder::bytes() const noexcept { return impl_->root.bytes(); }

void AvroDecoder::export_schema(ArrowSchema* out) const { arrow_detail::export_field(impl_->root.field(), out); }

ArrowBatch AvroDecoder::finish() {
  ArrowBatch batch;
  arrow_detail::export_array(impl_->root.take(), &batch.array());
  return batch;
}

}  // namespace kwire::source

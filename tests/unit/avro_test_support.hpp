// Helpers of the Avro decoder tests (avro_test.cpp, avro_resolution_test.cpp):
// Avro's binary encoding by hand, and the cells of an exported Arrow batch
// rendered as text straight from its buffers (validity bitmaps, offsets,
// values), so that a test states every value it expects.
#pragma once

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/source/avro.hpp"

namespace kwire_avro_test {

using Bytes = std::vector<std::uint8_t>;
using kwire::source::ArrowBatch;
using kwire::source::AvroDecoder;
using kwire::source::AvroSchema;

// ---- Avro binary encoding ----

inline void put_long(Bytes& out, std::int64_t v) {
  std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<std::uint8_t>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(z));
}
inline void put_raw(Bytes& out, std::string_view s) { out.insert(out.end(), s.begin(), s.end()); }
inline void put_string(Bytes& out, std::string_view s) {
  put_long(out, static_cast<std::int64_t>(s.size()));
  put_raw(out, s);
}
template <class T>
void put_le(Bytes& out, T v) {
  std::uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

/// Builds a value from pieces: enc().l(1).s("x").bytes().
struct Enc {
  Bytes b;
  Enc& l(std::int64_t v) { return put_long(b, v), *this; }
  Enc& s(std::string_view v) { return put_string(b, v), *this; }
  Enc& raw(std::string_view v) { return put_raw(b, v), *this; }
  Enc& raw(std::initializer_list<std::uint8_t> v) { return b.insert(b.end(), v), *this; }
  Enc& f(float v) { return put_le(b, v), *this; }
  Enc& d(double v) { return put_le(b, v), *this; }
  Enc& boolean(bool v) { return b.push_back(v ? 1 : 0), *this; }
};
inline Enc enc() { return {}; }

// ---- rendering Arrow cells ----

inline std::string render_number(double v, bool is_float) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  const auto r =
      is_float ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)) : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

inline std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::string hex(std::span<const std::uint8_t> s) {
  static const char digits[] = "0123456789abcdef";
  std::string out = "0x";
  for (const std::uint8_t b : s) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

inline std::string int128_text(__int128 v, int scale) {
  const bool neg = v < 0;
  unsigned __int128 u = neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u != 0);
  if (scale > 0) {
    while (static_cast<int>(digits.size()) <= scale) digits.insert(digits.begin(), '0');
    digits.insert(digits.end() - scale, '.');
  }
  return neg ? "-" + digits : digits;
}

template <class T>
T load(const ArrowArray& a, int buffer, std::int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::uint8_t*>(a.buffers[buffer]) + i * static_cast<std::int64_t>(sizeof(T)),
              sizeof(T));
  return v;
}

inline bool bit(const void* bits, std::int64_t i) {
  return (static_cast<const std::uint8_t*>(bits)[i >> 3] >> (i & 7)) & 1;
}

inline bool is_valid(const ArrowSchema& s, const ArrowArray& a, std::int64_t i) {
  if (std::string_view(s.format) == "n") return false;
  if (a.null_count == 0) return true;
  return a.buffers[0] != nullptr && bit(a.buffers[0], i + a.offset);
}

/// One cell as text: null, true, 42, 1.5, "text", 0x0102 (binary), 1.50
/// (decimal), [1,2] (list), {"k":v} (map), {name:v} (struct).
inline std::string render(const ArrowSchema& s, const ArrowArray& a, std::int64_t row) {
  if (!is_valid(s, a, row)) return "null";
  const std::string_view f = s.format;
  const std::int64_t i = row + a.offset;
  if (f == "b") return bit(a.buffers[1], i) ? "true" : "false";
  if (f == "i" || f == "tdD") return std::to_string(load<std::int32_t>(a, 1, i));
  if (f == "l" || f.starts_with("tsu:")) return std::to_string(load<std::int64_t>(a, 1, i));
  if (f == "f") return render_number(load<float>(a, 1, i), true);
  if (f == "g") return render_number(load<double>(a, 1, i), false);
  if (f == "z" || f == "u") {
    const auto from = load<std::int32_t>(a, 1, i), to = load<std::int32_t>(a, 1, i + 1);
    const auto* p = static_cast<const std::uint8_t*>(a.buffers[2]) + from;
    if (f == "z") return hex({p, static_cast<std::size_t>(to - from)});
    return quote({reinterpret_cast<const char*>(p), static_cast<std::size_t>(to - from)});
  }
  if (f.starts_with("d:"))
    return int128_text(load<__int128>(a, 1, i), std::stoi(std::string(f.substr(f.find(',') + 1))));
  if (f == "+l" || f == "+m") {
    const auto from = load<std::int32_t>(a, 1, i), to = load<std::int32_t>(a, 1, i + 1);
    const ArrowSchema& cs = *s.children[0];
    const ArrowArray& ca = *a.children[0];
    std::string out = f == "+l" ? "[" : "{";
    for (std::int64_t k = from; k < to; ++k) {
      if (k > from) out += ",";
      if (f == "+l") {
        out += render(cs, ca, k);
      } else {
        out += render(*cs.children[0], *ca.children[0], k) + ":" + render(*cs.children[1], *ca.children[1], k);
      }
    }
    return out + (f == "+l" ? "]" : "}");
  }
  if (f == "+s") {
    std::string out = "{";
    for (std::int64_t c = 0; c < s.n_children; ++c) {
      if (c) out += ",";
      out += std::string(s.children[c]->name) + ":" + render(*s.children[c], *a.children[c], i);
    }
    return out + "}";
  }
  ADD_FAILURE() << "unexpected Arrow format " << f;
  return "?";
}

/// A finished batch with its schema, released on destruction.
struct Decoded {
  ArrowSchema schema{};
  ArrowBatch batch;

  Decoded() = default;
  Decoded(const Decoded&) = delete;
  Decoded& operator=(const Decoded&) = delete;
  ~Decoded() {
    if (schema.release) schema.release(&schema);
  }
  const ArrowArray& array() const { return batch.array(); }
  std::int64_t rows() const { return batch.array().length; }
  std::int64_t columns() const { return schema.n_children; }
  const ArrowSchema& field(std::int64_t c) const { return *schema.children[c]; }
  const ArrowArray& column(std::int64_t c) const { return *batch.array().children[c]; }
  std::string format(std::int64_t c) const { return field(c).format; }
  std::string cell(std::int64_t c, std::int64_t row) const { return render(field(c), column(c), row); }
  /// The whole row as a struct: {a:1,b:"x"}.
  std::string row(std::int64_t r) const { return render(schema, batch.array(), r); }
  /// Column `name`'s index, or -1.
  std::int64_t index(std::string_view name) const {
    for (std::int64_t c = 0; c < columns(); ++c)
      if (name == field(c).name) return c;
    return -1;
  }
  std::string cell(std::string_view name, std::int64_t row) const {
    const auto c = index(name);
    return c < 0 ? "<no column " + std::string(name) + ">" : cell(c, row);
  }
};

template <class Source>
void finish_into(Source& d, Decoded& out) {
  d.export_schema(&out.schema);
  out.batch = d.finish();
}

inline std::span<const std::uint8_t> view(const Bytes& b) { return {b.data(), b.size()}; }

/// The row of nulls a malformed value gives (PERMISSIVE): {a:null,b:null,...}.
inline std::string null_row(const Decoded& d) {
  std::string out = "{";
  for (std::int64_t c = 0; c < d.columns(); ++c) out += std::string(c ? "," : "") + d.field(c).name + ":null";
  return out + "}";
}

}  // namespace kwire_avro_test

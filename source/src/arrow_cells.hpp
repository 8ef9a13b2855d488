// Reading cells of Arrow C Data Interface arrays, for the encoders that walk
// a caller's record batch (to_avro, to_protobuf). An index is relative to
// the array: each function adds the array's own offset. A child's index is
// the parent's index plus the parent's offset (a struct), or an index from
// the parent's offsets buffer (list, map).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "kwire/source/arrow.hpp"

namespace kwire::source::arrow_cells {

// What an Arrow format string holds, as the encoders tell types apart.
enum class In : std::uint8_t {
  unsupported,
  null,
  boolean,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  f32,
  f64,
  utf8,
  large_utf8,
  binary,
  large_binary,
  decimal,
  date32,
  ts,        // timestamp of any unit and zone
  duration,  // duration of any unit
  list,
  large_list,
  map,
  strct
};

/// The kind of an Arrow format string; for timestamps and durations
/// `*unit_per_second` is set (1, 1000, 10^6, 10^9).
inline In in_kind(std::string_view f, std::int64_t* unit_per_second) {
  if (f == "n") return In::null;
  if (f == "b") return In::boolean;
  if (f == "c") return In::i8;
  if (f == "s") return In::i16;
  if (f == "i") return In::i32;
  if (f == "l") return In::i64;
  if (f == "C") return In::u8;
  if (f == "S") return In::u16;
  if (f == "I") return In::u32;
  if (f == "L") return In::u64;
  if (f == "f") return In::f32;
  if (f == "g") return In::f64;
  if (f == "u") return In::utf8;
  if (f == "U") return In::large_utf8;
  if (f == "z") return In::binary;
  if (f == "Z") return In::large_binary;
  if (f.starts_with("d:")) return In::decimal;
  if (f == "tdD") return In::date32;
  const bool ts = f.size() >= 4 && f.starts_with("ts") && f[3] == ':';
  const bool duration = f.size() == 3 && f.starts_with("tD");
  if (ts || duration) {
    switch (f[2]) {
      case 's': *unit_per_second = 1; break;
      case 'm': *unit_per_second = 1000; break;
      case 'u': *unit_per_second = 1000000; break;
      case 'n': *unit_per_second = 1000000000; break;
      default: return In::unsupported;
    }
    return ts ? In::ts : In::duration;
  }
  if (f == "+l") return In::list;
  if (f == "+L") return In::large_list;
  if (f == "+m") return In::map;
  if (f == "+s") return In::strct;
  return In::unsupported;
}

inline bool is_int(In k) { return k == In::i8 || k == In::i16 || k == In::i32 || k == In::u8 || k == In::u16; }
inline bool is_long(In k) { return is_int(k) || k == In::i64 || k == In::u32 || k == In::u64; }
inline bool is_text(In k) { return k == In::utf8 || k == In::large_utf8; }
inline bool is_bin(In k) { return k == In::binary || k == In::large_binary; }

inline bool valid(const ArrowArray& a, std::int64_t i) {
  if (a.null_count == 0 || a.n_buffers < 1 || !a.buffers[0]) return true;
  const auto* bits = static_cast<const std::uint8_t*>(a.buffers[0]);
  const std::int64_t j = i + a.offset;
  return bits[j >> 3] & (1u << (j & 7));
}

template <class T>
T at(const ArrowArray& a, std::int64_t i) {
  T v;
  std::memcpy(&v,
              static_cast<const std::uint8_t*>(a.buffers[1]) + (i + a.offset) * static_cast<std::int64_t>(sizeof(T)),
              sizeof(T));
  return v;
}

inline bool bit(const ArrowArray& a, std::int64_t i) {
  const std::int64_t j = i + a.offset;
  return (static_cast<const std::uint8_t*>(a.buffers[1])[j >> 3] >> (j & 7)) & 1;
}

/// [begin, end) of element i of a list, map or variable-length binary.
inline std::pair<std::int64_t, std::int64_t> range(const ArrowArray& a, std::int64_t i, bool large) {
  const std::int64_t j = i + a.offset;
  if (large) return {at<std::int64_t>(a, i), static_cast<const std::int64_t*>(a.buffers[1])[j + 1]};
  return {at<std::int32_t>(a, i), static_cast<const std::int32_t*>(a.buffers[1])[j + 1]};
}

inline std::string_view bytes(const ArrowArray& a, std::int64_t i, bool large) {
  auto [b, e] = range(a, i, large);
  return {static_cast<const char*>(a.buffers[2]) + b, static_cast<std::size_t>(e - b)};
}

}  // namespace kwire::source::arrow_cells

#include "kwire/protocol/bytes.hpp"

#include <limits>
#include <random>

namespace kwire::protocol {

bool Uuid::is_zero() const noexcept {
  for (auto b : bytes)
    if (b != 0) return false;
  return true;
}

std::string Uuid::to_base64() const {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve(22);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t n = (std::uint32_t(bytes[i]) << 16) | (std::uint32_t(bytes[i + 1]) << 8) | bytes[i + 2];
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    out.push_back(alphabet[(n >> 6) & 63]);
    out.push_back(alphabet[n & 63]);
  }
  // 16 = 5*3 + 1 remaining byte
  std::uint32_t n = std::uint32_t(bytes[15]) << 16;
  out.push_back(alphabet[(n >> 18) & 63]);
  out.push_back(alphabet[(n >> 12) & 63]);
  return out;
}

std::string Uuid::to_string() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(digits[bytes[i] >> 4]);
    out.push_back(digits[bytes[i] & 0x0f]);
  }
  return out;
}

Uuid Uuid::random() {
  std::random_device source;
  Uuid u;
  do {
    for (std::size_t i = 0; i < u.bytes.size(); i += 4) {
      const std::uint32_t word = source();
      for (std::size_t j = 0; j < 4; ++j) u.bytes[i + j] = static_cast<std::uint8_t>(word >> (8 * j));
    }
    u.bytes[6] = static_cast<std::uint8_t>((u.bytes[6] & 0x0f) | 0x40);  // version 4
    u.bytes[8] = static_cast<std::uint8_t>((u.bytes[8] & 0x3f) | 0x80);  // variant 10 (RFC 4122)
    // Base64 text starting with '-' (the top six bits all set but the last)
    // is what Kafka's own generator avoids, since it reads as a command-line option.
  } while ((u.bytes[0] >> 2) == 62);
  return u;
}

void Reader::fail(const char* what) noexcept {
  if (error_ == nullptr) {
    error_ = what;
    error_offset_ = pos_;
  }
}

std::uint16_t Reader::u16() noexcept {
  if (!need(2)) return 0;
  auto v = load_be16(data_.data() + pos_);
  pos_ += 2;
  return v;
}
std::int16_t Reader::i16() noexcept { return static_cast<std::int16_t>(u16()); }
std::uint32_t Reader::u32() noexcept {
  if (!need(4)) return 0;
  auto v = load_be32(data_.data() + pos_);
  pos_ += 4;
  return v;
}
std::int32_t Reader::i32() noexcept { return static_cast<std::int32_t>(u32()); }
std::int64_t Reader::i64() noexcept {
  if (!need(8)) return 0;
  auto v = load_be64(data_.data() + pos_);
  pos_ += 8;
  return static_cast<std::int64_t>(v);
}
double Reader::f64() noexcept {
  std::uint64_t bits = static_cast<std::uint64_t>(i64());
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}
bool Reader::boolean() noexcept { return i8() != 0; }
Uuid Reader::uuid() noexcept {
  Uuid u;
  auto s = take(16);
  if (s.size() == 16) std::memcpy(u.bytes.data(), s.data(), 16);
  return u;
}

// Varints the inline paths did not finish (three bytes or more, malformed, or
// at the end of the input). With enough bytes left the value is read without
// a bounds check per byte; anything malformed goes through the checked loop,
// which latches the same error at the same offset.
std::uint64_t Reader::uvarlong_long() noexcept {
  if (error_ == nullptr && data_.size() - pos_ >= 10) {
    const std::uint8_t* p = data_.data() + pos_;
    std::uint64_t result = 0;
    for (std::size_t i = 0; i < 9; ++i) {
      const std::uint64_t b = p[i];
      result |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        pos_ += i + 1;
        return result;
      }
    }
    if (p[9] <= 1) {  // the tenth byte holds bit 63 only
      pos_ += 10;
      return result | (std::uint64_t(p[9]) << 63);
    }
  }
  std::uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (!need(1)) return 0;
    std::uint8_t b = data_[pos_++];
    if (shift == 63 && (b & 0x7e) != 0) {
      fail("varlong overflows 64 bits");
      return 0;
    }
    result |= std::uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return result;
  }
  fail("varlong longer than 10 bytes");
  return 0;
}

std::uint32_t Reader::uvarint_long() noexcept {
  if (error_ == nullptr && data_.size() - pos_ >= 5) {
    const std::uint8_t* p = data_.data() + pos_;
    std::uint32_t result = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const std::uint32_t b = p[i];
      result |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        pos_ += i + 1;
        return result;
      }
    }
    if (p[4] < 0x10) {  // the fifth byte holds bits 28-31 only
      pos_ += 5;
      return result | (std::uint32_t(p[4]) << 28);
    }
  }
  std::uint32_t result = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (!need(1)) return 0;
    std::uint8_t b = data_[pos_++];
    if (shift == 28 && (b & 0x70) != 0) {
      fail("varint overflows 32 bits");
      return 0;
    }
    result |= std::uint32_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return result;
  }
  fail("varint longer than 5 bytes");
  return 0;
}

// Returns nullopt for null (when nullable) or on error; the caller
// distinguishes through ok().
std::optional<std::size_t> Reader::length_prefix(bool compact, bool nullable, bool wide) noexcept {
  std::int64_t len;
  if (compact) {
    std::uint32_t u = uvarint();
    if (!ok()) return std::nullopt;
    len = static_cast<std::int64_t>(u) - 1;
  } else {
    len = wide ? i32() : i16();
    if (!ok()) return std::nullopt;
  }
  if (len < 0) {
    if (len == -1 && nullable) return std::nullopt;
    fail(len == -1 ? "null where a value is required" : "negative length");
    return std::nullopt;
  }
  if (static_cast<std::uint64_t>(len) > remaining()) {
    fail("length exceeds remaining bytes");
    return std::nullopt;
  }
  return static_cast<std::size_t>(len);
}

std::string Reader::string(bool compact) {
  auto n = length_prefix(compact, false, false);
  if (!n) return {};
  auto s = take(*n);
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

std::optional<std::string> Reader::nullable_string(bool compact) {
  auto n = length_prefix(compact, true, false);
  if (!n) return std::nullopt;
  auto s = take(*n);
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

Bytes Reader::bytes(bool compact) {
  auto n = length_prefix(compact, false, true);
  if (!n) return {};
  auto s = take(*n);
  return Bytes(s.begin(), s.end());
}

std::optional<Bytes> Reader::nullable_bytes(bool compact) {
  auto n = length_prefix(compact, true, true);
  if (!n) return std::nullopt;
  auto s = take(*n);
  return Bytes(s.begin(), s.end());
}

std::optional<ByteSpan> Reader::nullable_bytes_view(bool compact) noexcept {
  auto n = length_prefix(compact, true, true);
  if (!n) return std::nullopt;
  return take(*n);
}

std::optional<std::size_t> Reader::array_length(bool compact, std::size_t min_element_size) noexcept {
  std::int64_t len;
  if (compact) {
    std::uint32_t u = uvarint();
    if (!ok()) return std::nullopt;
    len = static_cast<std::int64_t>(u) - 1;
  } else {
    len = i32();
    if (!ok()) return std::nullopt;
  }
  if (len < 0) {
    if (len != -1) fail("negative array length");
    return std::nullopt;
  }
  if (min_element_size == 0) min_element_size = 1;
  if (static_cast<std::uint64_t>(len) > remaining() / min_element_size) {
    fail("array length exceeds remaining bytes");
    return std::nullopt;
  }
  return static_cast<std::size_t>(len);
}

// ---------------------------------------------------------------- Writer

void Writer::raw(const void* p, std::size_t n) {
  count_ += n;
  if (out_ && n) {
    auto b = static_cast<const std::uint8_t*>(p);
    out_->insert(out_->end(), b, b + n);
  }
}
void Writer::i8(std::int8_t v) {
  ++count_;
  if (out_) out_->push_back(static_cast<std::uint8_t>(v));
}
void Writer::u16(std::uint16_t v) {
  std::uint8_t b[2] = {std::uint8_t(v >> 8), std::uint8_t(v)};
  raw(b, 2);
}
void Writer::i16(std::int16_t v) { u16(static_cast<std::uint16_t>(v)); }
void Writer::u32(std::uint32_t v) {
  std::uint8_t b[4] = {std::uint8_t(v >> 24), std::uint8_t(v >> 16), std::uint8_t(v >> 8), std::uint8_t(v)};
  raw(b, 4);
}
void Writer::i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
void Writer::i64(std::int64_t v) {
  auto u = static_cast<std::uint64_t>(v);
  std::uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = std::uint8_t(u >> (56 - 8 * i));
  raw(b, 8);
}
void Writer::f64(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  i64(static_cast<std::int64_t>(bits));
}
void Writer::uvarlong(std::uint64_t v) {
  std::uint8_t b[10];
  std::size_t n = 0;
  while (v >= 0x80) {
    b[n++] = std::uint8_t(v | 0x80);
    v >>= 7;
  }
  b[n++] = std::uint8_t(v);
  raw(b, n);
}
void Writer::uvarint(std::uint32_t v) { uvarlong(v); }
void Writer::varint(std::int32_t v) {
  uvarint((static_cast<std::uint32_t>(v) << 1) ^ static_cast<std::uint32_t>(v >> 31));
}
void Writer::varlong(std::int64_t v) {
  uvarlong((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}

void Writer::string(std::string_view s, bool compact) {
  if (compact) uvarint(static_cast<std::uint32_t>(s.size() + 1));
  else i16(static_cast<std::int16_t>(s.size()));
  raw(s.data(), s.size());
}
void Writer::nullable_string(const std::optional<std::string>& s, bool compact) {
  if (!s) {
    if (compact) uvarint(0);
    else i16(-1);
    return;
  }
  string(*s, compact);
}
void Writer::bytes(ByteSpan b, bool compact) {
  if (compact) uvarint(static_cast<std::uint32_t>(b.size() + 1));
  else i32(static_cast<std::int32_t>(b.size()));
  raw(b);
}
void Writer::nullable_bytes(const std::optional<ByteSpan>& b, bool compact) {
  if (!b) {
    if (compact) uvarint(0);
    else i32(-1);
    return;
  }
  bytes(*b, compact);
}
void Writer::records(const std::optional<ByteSpan>& b, bool compact) {
  if (!b || !gaps_ || !out_ || b->empty()) return nullable_bytes(b, compact);
  if (compact) uvarint(static_cast<std::uint32_t>(b->size() + 1));
  else i32(static_cast<std::int32_t>(b->size()));
  gaps_->push_back(Gap{out_->size(), *b});
  count_ += b->size();
}
void Writer::array_length(std::optional<std::size_t> n, bool compact) {
  if (compact) uvarint(n ? static_cast<std::uint32_t>(*n + 1) : 0u);
  else i32(n ? static_cast<std::int32_t>(*n) : -1);
}
void Writer::patch_u32(std::size_t at, std::uint32_t v) {
  if (!out_ || at + 4 > out_->size()) return;
  (*out_)[at] = std::uint8_t(v >> 24);
  (*out_)[at + 1] = std::uint8_t(v >> 16);
  (*out_)[at + 2] = std::uint8_t(v >> 8);
  (*out_)[at + 3] = std::uint8_t(v);
}
void Writer::patch_i32(std::size_t at, std::int32_t v) { patch_u32(at, static_cast<std::uint32_t>(v)); }

std::size_t uvarint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
std::size_t varint_size(std::int64_t v) noexcept {
  return uvarint_size((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}

}  // namespace kwire::protocol

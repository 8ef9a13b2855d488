// Byte-level reading and writing of Kafka protocol primitives.
//
// Rules follow the Kafka protocol guide ("Protocol Primitive Types"):
// big-endian fixed-width integers, zig-zag varint/varlong (as used in record
// batches v2), unsigned varints (KIP-482 compact lengths and tagged fields),
// classic strings/bytes/arrays with int16/int32 lengths, and compact forms with
// unsigned-varint (length + 1) prefixes where 0 means null.
//
// Reader is a "sticky error" reader: the first failure (short read, bad length,
// malformed varint) is latched together with the byte offset where it occurred,
// every later read returns a zero value, and callers check ok() once at the end.
// No read ever touches memory outside the span it was given, and no length read
// from the wire is used to allocate before it has been checked against the bytes
// that remain.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kwire::protocol {

using Bytes = std::vector<std::uint8_t>;
using ByteSpan = std::span<const std::uint8_t>;

/// A 128-bit UUID as Kafka encodes it (16 raw bytes, most significant first).
struct Uuid {
  std::array<std::uint8_t, 16> bytes{};
  bool is_zero() const noexcept;
  /// Kafka's textual form: URL-safe base64 without padding (22 characters).
  std::string to_base64() const;
  /// The canonical text form, as Java's UUID.toString() writes it: 36
  /// characters, lower-case hex digits in groups of 8-4-4-4-12 separated by
  /// '-', e.g. "1b4e28ba-2fa1-41d2-883f-0016d3cca427".
  std::string to_string() const;
  /// A random UUID of version 4, variant RFC 4122 (as Java's
  /// UUID.randomUUID()): 122 bits from std::random_device (the operating
  /// system's random source), the high nibble of byte 6 set to 4 and the top
  /// two bits of byte 8 to 10. Like Kafka's Uuid.randomUuid(), it never
  /// returns a UUID whose base64 form starts with '-'. Never zero. Throws
  /// std::system_error when no random source is available.
  static Uuid random();
  friend bool operator==(const Uuid&, const Uuid&) = default;
};

class Reader {
 public:
  Reader() = default;
  explicit Reader(ByteSpan data) noexcept : data_(data) {}

  bool ok() const noexcept { return error_ == nullptr; }
  /// Static description of the first failure, or nullptr.
  const char* error() const noexcept { return error_; }
  /// Byte offset at which the first failure happened.
  std::size_t error_offset() const noexcept { return error_offset_; }
  std::size_t offset() const noexcept { return pos_; }
  std::size_t remaining() const noexcept { return ok() ? data_.size() - pos_ : 0; }
  bool empty() const noexcept { return remaining() == 0; }
  ByteSpan data() const noexcept { return data_; }

  /// Latch an error (keeps the first one).
  void fail(const char* what) noexcept;

  std::int8_t i8() noexcept {
    if (!need(1)) return 0;
    return static_cast<std::int8_t>(data_.data()[pos_++]);
  }
  std::int16_t i16() noexcept;
  std::int32_t i32() noexcept;
  std::int64_t i64() noexcept;
  std::uint16_t u16() noexcept;
  std::uint32_t u32() noexcept;
  double f64() noexcept;
  bool boolean() noexcept;
  Uuid uuid() noexcept;

 private:
  // The inline part of uvarint()/uvarlong(): a one- or two-byte value at the
  // current position is read into `out`; false leaves everything else
  // (longer values, the end of input, a sticky error) to the checked path.
  template <class U>
  bool short_uvar(U& out) noexcept {
    if (error_ != nullptr || pos_ >= data_.size()) [[unlikely]]
      return false;
    const std::uint8_t* p = data_.data() + pos_;
    if (p[0] < 0x80) {
      ++pos_;
      out = p[0];
      return true;
    }
    if (data_.size() - pos_ >= 2 && p[1] < 0x80) {
      pos_ += 2;
      out = (U(p[0]) & 0x7f) | (U(p[1]) << 7);
      return true;
    }
    return false;
  }

 public:
  // Varints: one- and two-byte values (the usual lengths, deltas and counts
  // of record batches) decode inline; longer ones out of line.

  /// Unsigned LEB128 varint of at most 5 bytes (32 bits).
  std::uint32_t uvarint() noexcept {
    std::uint32_t v;
    return short_uvar(v) ? v : uvarint_long();
  }
  /// Unsigned LEB128 of at most 10 bytes (64 bits).
  std::uint64_t uvarlong() noexcept {
    std::uint64_t v;
    return short_uvar(v) ? v : uvarlong_long();
  }
  /// Zig-zag signed varint (int32) and varlong (int64).
  std::int32_t varint() noexcept {
    const std::uint32_t u = uvarint();
    return static_cast<std::int32_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  std::int64_t varlong() noexcept {
    const std::uint64_t u = uvarlong();
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }

  /// n raw bytes as a view into the underlying buffer (empty on failure).
  ByteSpan take(std::size_t n) noexcept {
    if (!need(n)) return {};
    const ByteSpan s(data_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  void skip(std::size_t n) noexcept { (void)take(n); }

  // Strings and byte blobs. `compact` selects the KIP-482 encoding.
  std::string string(bool compact);
  std::optional<std::string> nullable_string(bool compact);
  Bytes bytes(bool compact);
  std::optional<Bytes> nullable_bytes(bool compact);
  /// Length-prefixed bytes returned as a view; nullopt for null (-1 / 0).
  std::optional<ByteSpan> nullable_bytes_view(bool compact) noexcept;
  /// Array length: -1 (classic) or 0 (compact) yields nullopt. The length is
  /// checked against the bytes remaining assuming each element needs at least
  /// `min_element_size` bytes, so a hostile count cannot trigger a huge
  /// allocation.
  std::optional<std::size_t> array_length(bool compact, std::size_t min_element_size = 1) noexcept;

 private:
  bool need(std::size_t n) noexcept {
    if (error_ != nullptr) return false;
    if (data_.size() - pos_ < n) [[unlikely]] {
      fail("truncated input");
      return false;
    }
    return true;
  }
  std::uint32_t uvarint_long() noexcept;
  std::uint64_t uvarlong_long() noexcept;
  std::optional<std::size_t> length_prefix(bool compact, bool nullable, bool wide) noexcept;

  ByteSpan data_{};
  std::size_t pos_ = 0;
  const char* error_ = nullptr;
  std::size_t error_offset_ = 0;
};

/// Appends encoded primitives to a byte vector, or only counts them when
/// constructed without one (used to compute encoded sizes from the same code
/// path that encodes).
class Writer {
 public:
  Writer() noexcept = default;  // counting only
  explicit Writer(Bytes& out) noexcept : out_(&out) {}

  std::size_t size() const noexcept { return count_; }
  bool counting() const noexcept { return out_ == nullptr; }

  void raw(const void* p, std::size_t n);
  void raw(ByteSpan s) { raw(s.data(), s.size()); }
  void i8(std::int8_t v);
  void i16(std::int16_t v);
  void i32(std::int32_t v);
  void i64(std::int64_t v);
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void f64(double v);
  void boolean(bool v) { i8(v ? 1 : 0); }
  void uuid(const Uuid& u) { raw(u.bytes.data(), u.bytes.size()); }
  void uvarint(std::uint32_t v);
  void uvarlong(std::uint64_t v);
  void varint(std::int32_t v);
  void varlong(std::int64_t v);

  void string(std::string_view s, bool compact);
  void nullable_string(const std::optional<std::string>& s, bool compact);
  void bytes(ByteSpan b, bool compact);
  void nullable_bytes(const std::optional<ByteSpan>& b, bool compact);
  /// Array length prefix; nullopt writes null (-1 / 0).
  void array_length(std::optional<std::size_t> n, bool compact);

  /// Overwrite 4 bytes at `at` (for length/CRC back-patching). No-op when counting.
  void patch_i32(std::size_t at, std::int32_t v);
  void patch_u32(std::size_t at, std::uint32_t v);

  /// Bytes counted but left out of the buffer: they belong at offset `at` of
  /// it (before the byte there), for a gather write that sends them from
  /// where they are.
  struct Gap {
    std::size_t at = 0;
    ByteSpan bytes;
  };
  /// From now on RECORDS values (records()) are not copied: only their length
  /// goes into the buffer, and each is listed in `gaps`, in order. The buffer
  /// then holds the encoding with those bytes cut out; size() still counts them.
  void leave_out_records(std::vector<Gap>* gaps) noexcept { gaps_ = gaps; }
  /// A RECORDS value: nullable bytes, left out when leave_out_records() was called.
  void records(const std::optional<ByteSpan>& b, bool compact);

 private:
  Bytes* out_ = nullptr;
  std::size_t count_ = 0;
  std::vector<Gap>* gaps_ = nullptr;
};

/// Number of bytes an unsigned varint / zig-zag varint occupies.
std::size_t uvarint_size(std::uint64_t v) noexcept;
std::size_t varint_size(std::int64_t v) noexcept;

// Big-endian helpers for fixed offsets inside buffers.
inline std::uint32_t load_be32(const std::uint8_t* p) noexcept {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}
inline std::uint16_t load_be16(const std::uint8_t* p) noexcept {
  return std::uint16_t((std::uint16_t(p[0]) << 8) | std::uint16_t(p[1]));
}
inline std::uint64_t load_be64(const std::uint8_t* p) noexcept {
  return (std::uint64_t(load_be32(p)) << 32) | load_be32(p + 4);
}

}  // namespace kwire::protocol

#include "kwire/protocol/crc32c.hpp"

#include <zlib.h>

#include <array>
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define KWIRE_CRC32C_X86 1
#endif

namespace kwire::protocol {
namespace {

constexpr std::uint32_t kCastagnoliReflected = 0x82F63B78u;

// tables[0] is the classic byte-at-a-time table; tables[k][b] is the CRC of
// byte b followed by k zero bytes, which lets eight input bytes be folded in
// with eight independent lookups.
using SliceTables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr SliceTables make_tables() {
  SliceTables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kCastagnoliReflected : (c >> 1);
    t[0][b] = c;
  }
  for (std::uint32_t b = 0; b < 256; ++b) {
    for (std::size_t k = 1; k < 8; ++k) {
      const std::uint32_t prev = t[k - 1][b];
      t[k][b] = (prev >> 8) ^ t[0][prev & 0xffu];
    }
  }
  return t;
}

constexpr SliceTables kTables = make_tables();

inline std::uint64_t load_le64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Operates on the raw (non-inverted) register.
std::uint32_t portable_update(std::uint32_t c, const std::uint8_t* p, std::size_t n) noexcept {
  while (n >= 8) {
    const std::uint64_t w = load_le64(p) ^ c;
    c = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
        kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^ kTables[2][(w >> 40) & 0xff] ^
        kTables[1][(w >> 48) & 0xff] ^ kTables[0][(w >> 56) & 0xff];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xffu];
  return c;
}

#ifdef KWIRE_CRC32C_X86
__attribute__((target("sse4.2"))) std::uint32_t hardware_update(std::uint32_t c, const std::uint8_t* p,
                                                                std::size_t n) noexcept {
  // Align to 8 bytes so the wide loads below are aligned.
  while (n > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7u) != 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
#if defined(__x86_64__)
  std::uint64_t c64 = c;
  while (n >= 32) {
    std::uint64_t w[4];
    std::memcpy(w, p, sizeof w);
    c64 = _mm_crc32_u64(c64, w[0]);
    c64 = _mm_crc32_u64(c64, w[1]);
    c64 = _mm_crc32_u64(c64, w[2]);
    c64 = _mm_crc32_u64(c64, w[3]);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, sizeof w);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  c = static_cast<std::uint32_t>(c64);
#endif
  while (n >= 4) {
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    c = _mm_crc32_u32(c, w);
    p += 4;
    n -= 4;
  }
  while (n--) c = _mm_crc32_u8(c, *p++);
  return c;
}

bool detect_hardware() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#endif

const bool kHaveHardware =
#ifdef KWIRE_CRC32C_X86
    detect_hardware();
#else
    false;
#endif

}  // namespace

bool crc32c_hardware_available() noexcept { return kHaveHardware; }

std::uint32_t crc32c_portable(ByteSpan data, std::uint32_t crc) noexcept {
  return ~portable_update(~crc, data.data(), data.size());
}

std::uint32_t crc32c_hardware(ByteSpan data, std::uint32_t crc) noexcept {
#ifdef KWIRE_CRC32C_X86
  if (kHaveHardware) return ~hardware_update(~crc, data.data(), data.size());
#endif
  return crc32c_portable(data, crc);
}

std::uint32_t crc32c(ByteSpan data, std::uint32_t crc) noexcept { return crc32c_hardware(data, crc); }

std::uint32_t crc32_ieee(ByteSpan data, std::uint32_t crc) noexcept {
  uLong c = crc;
  const std::uint8_t* p = data.data();
  std::size_t n = data.size();
  constexpr std::size_t kChunk = std::numeric_limits<uInt>::max();
  while (n > 0) {
    const std::size_t take = n < kChunk ? n : kChunk;
    c = ::crc32(c, p, static_cast<uInt>(take));
    p += take;
    n -= take;
  }
  return static_cast<std::uint32_t>(c);
}

}  // namespace kwire::protocol

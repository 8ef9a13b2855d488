#include "kwire/protocol/crc32c.hpp"

#include <zlib.h>

#include <array>
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
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

// ---------------------------------------------------------- zero extension
//
// GF(2) polynomials modulo the Castagnoli polynomial in the reflected bit
// order CRC registers use (bit 31 holds the coefficient of x^0). Appending n
// zero bytes to a message multiplies its (raw, non-inverted) register by
// x^(8n), which is what merges the CRCs of adjacent blocks:
//   raw(c, A ++ B) = raw(c, A) * x^(8|B|) ^ raw(0, B).

constexpr std::uint32_t multiply_mod_p(std::uint32_t a, std::uint32_t b) noexcept {
  std::uint32_t product = 0;
  for (int i = 31; i >= 0; --i) {
    if ((a >> i) & 1u) product ^= b;
    b = (b & 1u) ? (b >> 1) ^ kCastagnoliReflected : (b >> 1);  // b *= x
  }
  return product;
}

// x^e modulo the polynomial.
constexpr std::uint32_t x_pow_mod_p(std::uint64_t e) noexcept {
  std::uint32_t result = 1u << 31;  // x^0
  std::uint32_t power = 1u << 30;   // x^1
  for (; e != 0; e >>= 1) {
    if (e & 1u) result = multiply_mod_p(result, power);
    power = multiply_mod_p(power, power);
  }
  return result;
}

// Per-stream block sizes of the three-stream loop: long blocks for large
// inputs, short ones so that record batches of a few KB also use all three.
constexpr std::size_t kLongBlock = 4096;
constexpr std::size_t kShortBlock = 256;

// Zero-extension tables: t[k][b] is byte b at position k of a register,
// shifted over `bytes` zero bytes; a register is shifted with four lookups.
using ShiftTable = std::array<std::array<std::uint32_t, 256>, 4>;

constexpr ShiftTable make_shift_table(std::size_t bytes) {
  ShiftTable t{};
  const std::uint32_t factor = x_pow_mod_p(8 * static_cast<std::uint64_t>(bytes));
  for (std::uint32_t k = 0; k < 4; ++k)
    for (std::uint32_t b = 0; b < 256; ++b) t[k][b] = multiply_mod_p(factor, b << (8 * k));
  return t;
}

constexpr ShiftTable kShiftLong = make_shift_table(kLongBlock);
constexpr ShiftTable kShiftLong2 = make_shift_table(2 * kLongBlock);
constexpr ShiftTable kShiftShort = make_shift_table(kShortBlock);
constexpr ShiftTable kShiftShort2 = make_shift_table(2 * kShortBlock);

inline std::uint32_t shift_by_table(const ShiftTable& t, std::uint32_t c) noexcept {
  return t[0][c & 0xffu] ^ t[1][(c >> 8) & 0xffu] ^ t[2][(c >> 16) & 0xffu] ^ t[3][c >> 24];
}

#ifdef KWIRE_CRC32C_X86
#if defined(__x86_64__)
// Carry-less multiplication of a register by K = x^(8n - 33) gives a 63-bit
// product; the crc32 instruction over it as 64 data bits multiplies by a
// further x^33 and reduces, leaving the register times x^(8n).
constexpr std::uint64_t clmul_constant(std::size_t bytes) noexcept {
  return x_pow_mod_p(8 * static_cast<std::uint64_t>(bytes) - 33);
}

__attribute__((target("sse4.2,pclmul"))) inline std::uint32_t shift_by_clmul(std::uint64_t k,
                                                                             std::uint32_t c) noexcept {
  const __m128i product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(static_cast<long long>(c)),
                                               _mm_cvtsi64_si128(static_cast<long long>(k)), 0x00);
  return static_cast<std::uint32_t>(_mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(product))));
}

inline std::uint64_t load_u64(const std::uint8_t* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// One round over 3 * kBlock bytes: three independent crc32 chains over the
// adjacent blocks A, B, C, merged as c0 * x^(16 kBlock) ^ c1 * x^(8 kBlock) ^ c2.
// Both instantiations carry the pclmul target so that they can inline the
// multiplication; the table one never executes a PCLMULQDQ instruction.
template <bool kClmul, std::size_t kBlock>
__attribute__((target("sse4.2,pclmul"))) inline std::uint64_t three_streams(std::uint64_t c0,
                                                                            const std::uint8_t* p) noexcept {
  std::uint64_t c1 = 0, c2 = 0;
  const std::uint8_t* const end = p + kBlock;
  do {
    c0 = _mm_crc32_u64(c0, load_u64(p));
    c1 = _mm_crc32_u64(c1, load_u64(p + kBlock));
    c2 = _mm_crc32_u64(c2, load_u64(p + 2 * kBlock));
    p += 8;
  } while (p != end);
  const auto r0 = static_cast<std::uint32_t>(c0), r1 = static_cast<std::uint32_t>(c1);
  if constexpr (kClmul) {
    constexpr std::uint64_t k2 = clmul_constant(2 * kBlock), k1 = clmul_constant(kBlock);
    return shift_by_clmul(k2, r0) ^ shift_by_clmul(k1, r1) ^ c2;
  } else {
    const ShiftTable& t2 = kBlock == kLongBlock ? kShiftLong2 : kShiftShort2;
    const ShiftTable& t1 = kBlock == kLongBlock ? kShiftLong : kShiftShort;
    return shift_by_table(t2, r0) ^ shift_by_table(t1, r1) ^ c2;
  }
}
#endif

// Operates on the raw (non-inverted) register.
template <bool kClmul>
__attribute__((target("sse4.2,pclmul"))) std::uint32_t hardware_update(std::uint32_t c, const std::uint8_t* p,
                                                                       std::size_t n) noexcept {
  // Align to 8 bytes so the wide loads below are aligned.
  while (n > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7u) != 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
#if defined(__x86_64__)
  std::uint64_t c64 = c;
  while (n >= 3 * kLongBlock) {
    c64 = three_streams<kClmul, kLongBlock>(c64, p);
    p += 3 * kLongBlock;
    n -= 3 * kLongBlock;
  }
  while (n >= 3 * kShortBlock) {
    c64 = three_streams<kClmul, kShortBlock>(c64, p);
    p += 3 * kShortBlock;
    n -= 3 * kShortBlock;
  }
  while (n >= 8) {
    c64 = _mm_crc32_u64(c64, load_u64(p));
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

#if defined(__x86_64__)
// ------------------------------------------------------------ folding
//
// Sixteen bytes X = H * x^64 ^ L (H the first eight bytes) fold forward over
// the D bytes that follow them into the block there: X * x^(8D) is congruent
// to H * x^(8D + 64) ^ L * x^(8D), two 64 x 32-bit carry-less products of at
// most 128 bits, so XORing them into that block leaves the CRC unchanged.
// With the constant x^(e - 33) a product is exactly H * x^e in the block's bit
// order (see shift_by_clmul). Four 64-byte accumulators fold 256 bytes at a
// time; at the end three fold into the fourth, whose 64 bytes give the CRC.

// Per 16-byte lane: the constant for H in the low half, for L in the high.
template <std::size_t kBytes>
__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i fold_constants() noexcept {
  constexpr auto h = static_cast<long long>(clmul_constant(kBytes + 8));
  constexpr auto l = static_cast<long long>(clmul_constant(kBytes));
  return _mm512_set_epi64(l, h, l, h, l, h, l, h);
}

// x folded forward by the constants' distance, XORed into y.
__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i fold_into(__m512i x, __m512i k, __m512i y) noexcept {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), y, 0x96);
}

// The raw register over n >= 512 bytes, all but the last n % 256 folded.
__attribute__((target("avx512f,vpclmulqdq,sse4.2"))) std::uint32_t folding_update(std::uint32_t c,
                                                                                  const std::uint8_t*& p,
                                                                                  std::size_t& n) noexcept {
  // The register enters as the message's first four bytes XORed with it.
  __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(c))));
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  p += 256;
  n -= 256;
  const __m512i k256 = fold_constants<256>();
  while (n >= 256) {
    x0 = fold_into(x0, k256, _mm512_loadu_si512(p));
    x1 = fold_into(x1, k256, _mm512_loadu_si512(p + 64));
    x2 = fold_into(x2, k256, _mm512_loadu_si512(p + 128));
    x3 = fold_into(x3, k256, _mm512_loadu_si512(p + 192));
    p += 256;
    n -= 256;
  }
  x3 = fold_into(x0, fold_constants<192>(), x3);
  x3 = fold_into(x1, fold_constants<128>(), x3);
  x3 = fold_into(x2, fold_constants<64>(), x3);
  alignas(64) std::uint8_t last[64];
  _mm512_store_si512(last, x3);
  std::uint64_t r = 0;
  for (std::size_t i = 0; i < 64; i += 8) r = _mm_crc32_u64(r, load_u64(last + i));
  return static_cast<std::uint32_t>(r);
}

// The VPCLMULQDQ path: folding for inputs of 512 bytes or more, the
// three-stream loop for the rest.
std::uint32_t folding_hardware_update(std::uint32_t c, const std::uint8_t* p, std::size_t n) noexcept {
  if (n >= 512) c = folding_update(c, p, n);
  return hardware_update<true>(c, p, n);
}
#endif

Crc32cPath detect_path() noexcept {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) return Crc32cPath::portable;
  if (!__builtin_cpu_supports("pclmul")) return Crc32cPath::sse42;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq")) return Crc32cPath::avx512_vpclmulqdq;
#endif
  return Crc32cPath::sse42_pclmul;
}
#endif

const Crc32cPath kBestPath =
#ifdef KWIRE_CRC32C_X86
    detect_path();
#else
    Crc32cPath::portable;
#endif

std::uint32_t update(Crc32cPath path, std::uint32_t c, const std::uint8_t* p, std::size_t n) noexcept {
  if (path > kBestPath) path = kBestPath;
#ifdef KWIRE_CRC32C_X86
#if defined(__x86_64__)
  if (path == Crc32cPath::avx512_vpclmulqdq) return folding_hardware_update(c, p, n);
#endif
  if (path == Crc32cPath::sse42_pclmul) return hardware_update<true>(c, p, n);
  if (path == Crc32cPath::sse42) return hardware_update<false>(c, p, n);
#endif
  return portable_update(c, p, n);
}

}  // namespace

Crc32cPath crc32c_path() noexcept { return kBestPath; }

bool crc32c_hardware_available() noexcept { return kBestPath != Crc32cPath::portable; }

std::uint32_t crc32c_portable(ByteSpan data, std::uint32_t crc) noexcept {
  return ~portable_update(~crc, data.data(), data.size());
}

std::uint32_t crc32c_via(Crc32cPath path, ByteSpan data, std::uint32_t crc) noexcept {
  return ~update(path, ~crc, data.data(), data.size());
}

std::uint32_t crc32c_hardware(ByteSpan data, std::uint32_t crc) noexcept {
  return crc32c_via(Crc32cPath::sse42_pclmul, data, crc);
}

std::uint32_t crc32c(ByteSpan data, std::uint32_t crc) noexcept {
  return ~update(kBestPath, ~crc, data.data(), data.size());
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t length_b) noexcept {
  // The inversions before and after cancel out: crc(a ++ b) = crc(a) * x^(8|b|) ^ crc(b).
  return multiply_mod_p(x_pow_mod_p(8 * static_cast<std::uint64_t>(length_b)), crc_a) ^ crc_b;
}

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

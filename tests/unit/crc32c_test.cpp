#include <gtest/gtest.h>

#include <random>
#include <string_view>

#include "kwire/protocol/crc32c.hpp"

using namespace kwire::protocol;

namespace {
ByteSpan span_of(std::string_view s) { return ByteSpan(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }

struct Impl {
  const char* name;
  std::uint32_t (*fn)(ByteSpan, std::uint32_t) noexcept;
};
const Impl kImpls[] = {{"dispatch", &crc32c}, {"portable", &crc32c_portable}, {"hardware", &crc32c_hardware}};
}  // namespace

TEST(Crc32c, CheckValue) {
  for (const auto& impl : kImpls) EXPECT_EQ(impl.fn(span_of("123456789"), 0), 0xE3069283u) << impl.name;
}

TEST(Crc32c, Rfc3720Vectors) {
  Bytes zeros(32, 0x00), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<std::uint8_t>(i);
    dec[i] = static_cast<std::uint8_t>(31 - i);
  }
  for (const auto& impl : kImpls) {
    EXPECT_EQ(impl.fn(zeros, 0), 0x8A9136AAu) << impl.name;
    EXPECT_EQ(impl.fn(ones, 0), 0x62A8AB43u) << impl.name;
    EXPECT_EQ(impl.fn(inc, 0), 0x46DD794Eu) << impl.name;
    EXPECT_EQ(impl.fn(dec, 0), 0x113FDB5Cu) << impl.name;
  }
}

TEST(Crc32c, EmptyInputKeepsValue) {
  for (const auto& impl : kImpls) {
    EXPECT_EQ(impl.fn(ByteSpan(), 0), 0u) << impl.name;
    EXPECT_EQ(impl.fn(ByteSpan(), 0xE3069283u), 0xE3069283u) << impl.name;
  }
}

TEST(Crc32c, ChainingEqualsWhole) {
  const std::string_view s = "123456789";
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    for (const auto& impl : kImpls) {
      const auto first = impl.fn(span_of(s.substr(0, cut)), 0);
      EXPECT_EQ(impl.fn(span_of(s.substr(cut)), first), 0xE3069283u) << impl.name << " cut " << cut;
    }
  }
}

TEST(Crc32c, HardwareAndPortableAgreeOnRandomData) {
  std::mt19937_64 rng(12345);
  Bytes data(1 << 16);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  std::uniform_int_distribution<std::size_t> off(0, 64), len(0, 5000);
  for (int i = 0; i < 500; ++i) {
    const std::size_t o = off(rng), n = len(rng);
    const ByteSpan s(data.data() + o, n);
    const std::uint32_t seed = static_cast<std::uint32_t>(rng());
    ASSERT_EQ(crc32c_hardware(s, seed), crc32c_portable(s, seed)) << "offset " << o << " length " << n;
    ASSERT_EQ(crc32c(s, 0), crc32c_portable(s, 0));
  }
  // Every short length and alignment.
  for (std::size_t o = 0; o < 16; ++o)
    for (std::size_t n = 0; n < 80; ++n)
      ASSERT_EQ(crc32c_hardware(ByteSpan(data.data() + o, n)), crc32c_portable(ByteSpan(data.data() + o, n)));
  // Whole buffer.
  EXPECT_EQ(crc32c_hardware(data), crc32c_portable(data));
}

// Every path against the portable one: each length 0..4096 (all the tails
// after 0 to 5 three-stream rounds of 768 bytes) from an unaligned start, and
// lengths around the 12 KB rounds with every start modulo 8.
TEST(Crc32c, EveryPathAgreesWithPortable) {
  std::mt19937_64 rng(777);
  Bytes data(3 * 3 * 4096 + 4096 + 64);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  const Crc32cPath paths[] = {Crc32cPath::portable, Crc32cPath::sse42, Crc32cPath::sse42_pclmul,
                              Crc32cPath::avx512_vpclmulqdq};
  for (const auto path : paths) {
    for (std::size_t n = 0; n <= 4096; ++n) {
      const ByteSpan s(data.data() + 3, n);
      ASSERT_EQ(crc32c_via(path, s, 0), crc32c_portable(s, 0)) << "path " << int(path) << " length " << n;
    }
    for (std::size_t o = 0; o < 8; ++o) {
      for (const std::size_t n : {std::size_t{767}, std::size_t{768}, std::size_t{769}, std::size_t{12287},
                                  std::size_t{12288}, std::size_t{12289}, std::size_t{12288 + 768 + 5},
                                  std::size_t{2 * 12288 + 3 * 768 + 7}, std::size_t{3 * 12288 + 4096}}) {
        const ByteSpan s(data.data() + o, n);
        const std::uint32_t seed = static_cast<std::uint32_t>(rng());
        ASSERT_EQ(crc32c_via(path, s, seed), crc32c_portable(s, seed))
            << "path " << int(path) << " offset " << o << " length " << n;
      }
    }
  }
  EXPECT_EQ(crc32c_hardware(data), crc32c_via(crc32c_path(), data));
}

// A large input through every path equals the portable CRC built up from
// 1000-byte pieces (the chaining rule of crc32c.hpp).
TEST(Crc32c, LongInputsMatchChunkedComputation) {
  Bytes big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 31 + (i >> 8));
  std::uint32_t chained = 0;
  for (std::size_t i = 0; i < big.size(); i += 1000) chained = crc32c_portable(ByteSpan(big).subspan(i, 1000), chained);
  EXPECT_EQ(crc32c(big), chained);
  EXPECT_EQ(crc32c_via(Crc32cPath::sse42, big), chained);
  EXPECT_EQ(crc32c_via(Crc32cPath::sse42_pclmul, big), chained);
  EXPECT_EQ(crc32c_via(Crc32cPath::avx512_vpclmulqdq, big), chained);
}

TEST(Crc32c, ReportsHardwareSupport) {
  // Informational: the agreement tests above only exercise SSE4.2 when present.
  RecordProperty("sse42", crc32c_hardware_available() ? "yes" : "no");
  RecordProperty("path", static_cast<int>(crc32c_path()));
  SUCCEED();
}

TEST(Crc32Ieee, KnownVectors) {
  EXPECT_EQ(crc32_ieee(span_of("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32_ieee(ByteSpan()), 0u);
  EXPECT_EQ(crc32_ieee(span_of("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
  EXPECT_EQ(crc32_ieee(span_of("56789"), crc32_ieee(span_of("1234"))), 0xCBF43926u);
}

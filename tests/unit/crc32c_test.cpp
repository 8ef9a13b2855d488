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

TEST(Crc32c, ReportsHardwareSupport) {
  // Informational: the agreement tests above only exercise SSE4.2 when present.
  RecordProperty("sse42", crc32c_hardware_available() ? "yes" : "no");
  SUCCEED();
}

TEST(Crc32Ieee, KnownVectors) {
  EXPECT_EQ(crc32_ieee(span_of("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32_ieee(ByteSpan()), 0u);
  EXPECT_EQ(crc32_ieee(span_of("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
  EXPECT_EQ(crc32_ieee(span_of("56789"), crc32_ieee(span_of("1234"))), 0xCBF43926u);
}

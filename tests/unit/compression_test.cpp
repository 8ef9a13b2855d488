#include <gtest/gtest.h>
#include <snappy.h>
#include <zstd.h>

#include <algorithm>
#include <random>
#include <string>

#include "kwire/protocol/compression.hpp"

using namespace kwire::protocol;

namespace {

const Compression kCodecs[] = {Compression::none, Compression::gzip, Compression::snappy, Compression::lz4,
                               Compression::zstd};
const Compression kRealCodecs[] = {Compression::gzip, Compression::snappy, Compression::lz4, Compression::zstd};

Bytes text(std::size_t n) {
  const std::string words = "kafka records compress well when they repeat; ";
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(words[i % words.size()] + (i / 4096) % 3);
  return b;
}

Bytes random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

Bytes of(std::string_view s) { return Bytes(s.begin(), s.end()); }

void append_be32(Bytes& b, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

Bytes raw_snappy(const Bytes& in) {
  std::string out;
  snappy::Compress(reinterpret_cast<const char*>(in.data()), in.size(), &out);
  return Bytes(out.begin(), out.end());
}

// snappy-java stream framing, built independently of the library code.
Bytes xerial(const std::vector<Bytes>& blocks) {
  Bytes b = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
  append_be32(b, 1);
  append_be32(b, 1);
  for (const auto& blk : blocks) {
    Bytes c(snappy::MaxCompressedLength(blk.size()));
    std::size_t n = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(blk.data()), blk.size(), reinterpret_cast<char*>(c.data()), &n);
    append_be32(b, static_cast<std::uint32_t>(n));
    b.insert(b.end(), c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return b;
}

}  // namespace

TEST(Compression, Names) {
  for (auto c : kCodecs) EXPECT_EQ(parse_compression(compression_name(c)), c);
  EXPECT_EQ(compression_name(Compression::none), "none");
  EXPECT_EQ(compression_name(Compression::gzip), "gzip");
  EXPECT_EQ(compression_name(Compression::snappy), "snappy");
  EXPECT_EQ(compression_name(Compression::lz4), "lz4");
  EXPECT_EQ(compression_name(Compression::zstd), "zstd");
  EXPECT_EQ(parse_compression("ZSTD"), Compression::zstd);
  EXPECT_EQ(parse_compression("brotli"), std::nullopt);
  EXPECT_EQ(parse_compression(""), std::nullopt);
  EXPECT_EQ(compression_name(static_cast<Compression>(7)), "unknown(7)");
  EXPECT_EQ(compression_from_attributes(0x13), Compression::lz4);  // other bits ignored
  EXPECT_EQ(compression_from_attributes(0x05), std::nullopt);
  EXPECT_EQ(static_cast<int>(Compression::zstd), 4);
}

TEST(Compression, RoundTripEveryCodec) {
  const std::vector<Bytes> inputs = {Bytes{}, of("x"), text(1000), text(300000), random_bytes(70000, 1)};
  for (auto c : kCodecs) {
    for (const auto& in : inputs) {
      Bytes packed, unpacked;
      compress(c, in, packed);
      decompress(c, packed, unpacked, in.size());
      EXPECT_EQ(unpacked, in) << compression_name(c) << " size " << in.size();
    }
  }
}

TEST(Compression, CompressesRepetitiveData) {
  const Bytes in = text(300000);
  for (auto c : kRealCodecs) {
    Bytes packed;
    compress(c, in, packed);
    EXPECT_LT(packed.size(), in.size() / 4) << compression_name(c);
  }
}

TEST(Compression, OutputFormats) {
  const Bytes in = text(100000);
  Bytes packed;
  compress(Compression::gzip, in, packed);
  ASSERT_GE(packed.size(), 2u);
  EXPECT_EQ(packed[0], 0x1f);
  EXPECT_EQ(packed[1], 0x8b);
  compress(Compression::snappy, in, packed);
  const Bytes magic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
  ASSERT_GE(packed.size(), magic.size());
  EXPECT_TRUE(std::equal(magic.begin(), magic.end(), packed.begin()));
  compress(Compression::lz4, in, packed);
  ASSERT_GE(packed.size(), 5u);
  EXPECT_EQ(packed[0], 0x04);  // LZ4 frame magic 0x184D2204, little-endian
  EXPECT_EQ(packed[3], 0x18);
  EXPECT_NE(packed[4] & 0x20, 0);  // FLG: block independence
  compress(Compression::zstd, in, packed);
  EXPECT_EQ(packed[0], 0x28);  // zstd magic 0xFD2FB528, little-endian
  EXPECT_EQ(packed[3], 0xFD);
}

TEST(Compression, ConcatenatedGzipMembers) {
  Bytes a, b, out;
  compress(Compression::gzip, of("hello "), a);
  compress(Compression::gzip, of("world"), b);
  Bytes both = a;
  both.insert(both.end(), b.begin(), b.end());
  decompress(Compression::gzip, both, out, 1000);
  EXPECT_EQ(out, of("hello world"));
  // Three members, the middle one empty.
  Bytes empty;
  compress(Compression::gzip, Bytes{}, empty);
  Bytes three = a;
  three.insert(three.end(), empty.begin(), empty.end());
  three.insert(three.end(), b.begin(), b.end());
  decompress(Compression::gzip, three, out, 1000);
  EXPECT_EQ(out, of("hello world"));
}

TEST(Compression, SnappyRawAndXerialFraming) {
  const Bytes part1 = text(40000), part2 = of("tail block"), part3 = random_bytes(5000, 2);
  Bytes whole = part1;
  whole.insert(whole.end(), part2.begin(), part2.end());
  whole.insert(whole.end(), part3.begin(), part3.end());

  Bytes out;
  decompress(Compression::snappy, xerial({part1, part2, part3}), out, whole.size());
  EXPECT_EQ(out, whole);

  decompress(Compression::snappy, raw_snappy(whole), out, whole.size());
  EXPECT_EQ(out, whole);

  // A framed stream with no blocks is empty data.
  decompress(Compression::snappy, xerial({}), out, 10);
  EXPECT_TRUE(out.empty());

  // Block length running past the end.
  Bytes bad = xerial({part2});
  bad[16 + 3] = 0x7f;
  EXPECT_THROW(decompress(Compression::snappy, bad, out, 1000), CompressionError);
  // Header cut short.
  Bytes shortened(bad.begin(), bad.begin() + 12);
  EXPECT_THROW(decompress(Compression::snappy, shortened, out, 1000), CompressionError);
}

TEST(Compression, Lz4ConcatenatedFrames) {
  Bytes a, b, out;
  compress(Compression::lz4, of("first,"), a);
  compress(Compression::lz4, of("second"), b);
  a.insert(a.end(), b.begin(), b.end());
  decompress(Compression::lz4, a, out, 100);
  EXPECT_EQ(out, of("first,second"));
}

TEST(Compression, ZstdFrameWithoutContentSize) {
  const Bytes in = text(200000);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  Bytes packed(ZSTD_compressBound(in.size()));
  ZSTD_outBuffer ob{packed.data(), packed.size(), 0};
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  std::size_t rc;
  do {
    rc = ZSTD_compressStream2(cctx, &ob, &ib, ZSTD_e_end);
    ASSERT_FALSE(ZSTD_isError(rc));
  } while (rc != 0);
  ZSTD_freeCCtx(cctx);
  packed.resize(ob.pos);
  ASSERT_EQ(ZSTD_getFrameContentSize(packed.data(), packed.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  Bytes out;
  decompress(Compression::zstd, packed, out, in.size());
  EXPECT_EQ(out, in);
}

TEST(Compression, BombGuard) {
  const Bytes zeros(4 << 20, 0);
  for (auto c : kCodecs) {
    Bytes packed, out;
    compress(c, zeros, packed);
    // Exactly the limit is fine.
    decompress(c, packed, out, zeros.size());
    EXPECT_EQ(out.size(), zeros.size());
    // One byte less is not.
    try {
      decompress(c, packed, out, zeros.size() - 1);
      ADD_FAILURE() << compression_name(c) << " accepted output over the limit";
    } catch (const CompressionError& e) {
      EXPECT_TRUE(e.limit_exceeded()) << e.what();
      EXPECT_EQ(e.codec(), c);
      EXPECT_NE(std::string(e.what()).find(compression_name(c)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
    }
    // A far smaller limit: the buffer never grows past it.
    EXPECT_THROW(decompress(c, packed, out, 1000), CompressionError) << compression_name(c);
  }
}

TEST(Compression, BombGuardOnXerialBlocks) {
  Bytes out;
  const Bytes framed = xerial({Bytes(30000, 'a'), Bytes(30000, 'b')});
  EXPECT_THROW(decompress(Compression::snappy, framed, out, 50000), CompressionError);
  decompress(Compression::snappy, framed, out, 60000);
  EXPECT_EQ(out.size(), 60000u);
}

TEST(Compression, CorruptInputThrowsTypedError) {
  const Bytes in = text(50000);
  for (auto c : kRealCodecs) {
    Bytes packed, out;
    compress(c, in, packed);
    // Truncated.
    Bytes cut(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(packed.size() / 2));
    try {
      decompress(c, cut, out, 1 << 20);
      ADD_FAILURE() << compression_name(c) << " accepted truncated data";
    } catch (const CompressionError& e) {
      EXPECT_EQ(e.codec(), c);
      EXPECT_FALSE(e.limit_exceeded());
    }
    // Garbage.
    const Bytes junk = random_bytes(1000, 7);
    EXPECT_THROW(decompress(c, junk, out, 1 << 20), CompressionError) << compression_name(c);
    // Empty input is not a valid stream for any real codec.
    EXPECT_THROW(decompress(c, Bytes{}, out, 1 << 20), CompressionError) << compression_name(c);
  }
}

TEST(Compression, OutputBufferIsReused) {
  const Bytes in = text(100000);
  for (auto c : kCodecs) {
    Bytes packed, out;
    compress(c, in, packed);
    decompress(c, packed, out, in.size());
    ASSERT_EQ(out, in);
    const auto* data = out.data();
    for (int i = 0; i < 3; ++i) {
      decompress(c, packed, out, in.size());
      EXPECT_EQ(out.data(), data) << compression_name(c) << " reallocated";
      EXPECT_EQ(out, in);
    }
  }
}

// decompress_reusing: the buffer is scratch space; only [0, n) is the result,
// its size never shrinks, and the limit holds however large it already is.
TEST(Compression, DecompressReusingWritesOverScratchSpace) {
  std::mt19937 rng(7);
  auto letters = [&](std::size_t n) {
    Bytes b(n);
    for (auto& c : b) c = static_cast<std::uint8_t>('a' + rng() % 8);
    return b;
  };
  for (auto codec : {Compression::gzip, Compression::snappy, Compression::lz4, Compression::zstd}) {
    SCOPED_TRACE(compression_name(codec));
    const Bytes big = letters(300'000), small = letters(5'000);
    Bytes big_packed, small_packed;
    compress(codec, big, big_packed);
    compress(codec, small, small_packed);
    Bytes scratch;
    const auto n1 = decompress_reusing(codec, big_packed, scratch, 1 << 20);
    ASSERT_EQ(n1, big.size());
    EXPECT_TRUE(std::equal(big.begin(), big.end(), scratch.begin()));
    const auto size_after_big = scratch.size();
    const auto n2 = decompress_reusing(codec, small_packed, scratch, 1 << 20);
    ASSERT_EQ(n2, small.size());
    EXPECT_TRUE(std::equal(small.begin(), small.end(), scratch.begin()));
    if (codec != Compression::snappy) {
      EXPECT_GE(scratch.size(), size_after_big);  // kept, not shrunk
    }
    // The limit applies even though the scratch space is larger than it.
    try {
      decompress_reusing(codec, big_packed, scratch, 100'000);
      FAIL() << "no error past max_output";
    } catch (const CompressionError& e) {
      EXPECT_TRUE(e.limit_exceeded()) << e.what();
    }
    EXPECT_EQ(decompress_reusing(codec, big_packed, scratch, big.size()), big.size());  // exactly the limit
    EXPECT_THROW(decompress_reusing(codec, ByteSpan(big_packed).first(big_packed.size() / 2), scratch, 1 << 20),
                 CompressionError);
  }
}

#include "kwire/protocol/compression.hpp"

#include <lz4frame.h>
#include <snappy.h>
#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <memory>

namespace kwire::protocol {
namespace {

constexpr std::size_t kMinGrowth = 64 * 1024;
constexpr std::size_t kMaxFirstGuess = 8u << 20;

// The snappy-java stream header: magic, then big-endian int32 version and
// int32 minimum compatible version.
constexpr std::uint8_t kXerialMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr std::size_t kXerialHeaderSize = 16;
constexpr std::int32_t kXerialVersion = 1;
constexpr std::int32_t kXerialCompatibleVersion = 1;
constexpr std::size_t kXerialBlockSize = 32 * 1024;  // snappy-java's default

[[noreturn]] void fail(Compression c, const std::string& what) { throw CompressionError(c, what); }

[[noreturn]] void too_large(Compression c, std::size_t max_output) {
  throw CompressionError(c, "decompressed data exceeds the limit of " + std::to_string(max_output) + " bytes", true);
}

// Output buffer management shared by the streaming decompressors. The buffer
// is allowed to grow to max_output + 1 bytes so that "exactly max_output" and
// "more than max_output" can be told apart.
class Sink {
 public:
  // reuse: `out` is scratch space from an earlier call; its bytes are written
  // over rather than cleared and zero-filled again, and finish() leaves its
  // size as it is (the result is out[0, used())).
  Sink(Bytes& out, Compression codec, std::size_t max_output, std::size_t input_size, bool reuse = false)
      : out_(out), codec_(codec), max_(max_output), reuse_(reuse) {
    limit_ = max_output == std::numeric_limits<std::size_t>::max() ? max_output : max_output + 1;
    // First guess: four times the input, at least 64 KiB, at most 8 MiB (the
    // buffer doubles from there as needed).
    std::size_t guess = input_size < kMaxFirstGuess / 4 ? input_size * 4 : kMaxFirstGuess;
    guess = std::min(std::max(guess, kMinGrowth), limit_);
    // Reuse capacity the buffer already has, but do not touch far more memory
    // than this input is likely to need.
    if (reuse_) {
      if (out_.size() < guess) out_.resize(guess);
      return;
    }
    const std::size_t kept = std::min(out_.capacity(), guess * 4);
    out_.clear();
    out_.resize(std::min(std::max(guess, kept), limit_));
  }
  std::size_t used() const noexcept { return used_; }
  std::uint8_t* free_begin() noexcept { return out_.data() + used_; }
  std::size_t free_size() const noexcept { return std::min(out_.size(), limit_) - used_; }
  void produced(std::size_t n) noexcept { used_ += n; }
  /// Makes room for more output or throws when the limit is reached.
  void ensure_room() {
    if (used_ < std::min(out_.size(), limit_)) return;
    if (used_ >= limit_) too_large(codec_, max_);
    const std::size_t grown = out_.size() > limit_ / 2 ? limit_ : std::max(out_.size() * 2, kMinGrowth);
    out_.resize(std::min(grown, limit_));
  }
  void finish() {
    if (used_ > max_) too_large(codec_, max_);
    if (!reuse_) out_.resize(used_);
  }

 private:
  Bytes& out_;
  Compression codec_;
  std::size_t max_;
  std::size_t limit_;
  std::size_t used_ = 0;
  bool reuse_;
};

// ------------------------------------------------------------------ gzip

void gzip_compress(ByteSpan in, Bytes& out) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail(Compression::gzip, "deflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, deflateEnd);
  if (in.size() > UINT_MAX) fail(Compression::gzip, "input too large");
  const std::size_t bound = deflateBound(&zs, static_cast<uLong>(in.size()));
  out.clear();
  out.resize(bound);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(std::min<std::size_t>(bound, UINT_MAX));
  const int rc = deflate(&zs, Z_FINISH);
  if (rc != Z_STREAM_END) fail(Compression::gzip, "deflate did not finish");
  out.resize(zs.total_out);
}

std::size_t gzip_decompress(ByteSpan in, Bytes& out, std::size_t max_output, bool reuse = false) {
  if (in.size() > UINT_MAX) fail(Compression::gzip, "input too large");
  Sink sink(out, Compression::gzip, max_output, in.size(), reuse);
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) fail(Compression::gzip, "inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  for (;;) {
    sink.ensure_room();
    const std::size_t room = std::min<std::size_t>(sink.free_size(), UINT_MAX);
    zs.next_out = sink.free_begin();
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    sink.produced(room - zs.avail_out);
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (the gzip format allows concatenation);
      // anything else after a complete member is ignored, as Java's
      // GZIPInputStream does.
      if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
        if (inflateReset(&zs) != Z_OK) fail(Compression::gzip, "inflateReset failed");
        continue;
      }
      break;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) continue;  // needs more room
    if (rc == Z_BUF_ERROR) fail(Compression::gzip, "truncated stream");
    fail(Compression::gzip, std::string("corrupt stream: ") + (zs.msg ? zs.msg : "inflate error"));
  }
  sink.finish();
  return sink.used();
}

// ---------------------------------------------------------------- snappy

void snappy_compress(ByteSpan in, Bytes& out) {
  out.clear();
  Writer w(out);
  w.raw(kXerialMagic, sizeof kXerialMagic);
  w.i32(kXerialVersion);
  w.i32(kXerialCompatibleVersion);
  std::size_t pos = 0;
  while (pos < in.size()) {
    const std::size_t n = std::min(kXerialBlockSize, in.size() - pos);
    const std::size_t at = out.size();
    out.resize(at + 4 + snappy::MaxCompressedLength(n));
    std::size_t written = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(in.data() + pos), n, reinterpret_cast<char*>(out.data() + at + 4),
                        &written);
    out.resize(at + 4 + written);
    Writer(out).patch_u32(at, static_cast<std::uint32_t>(written));
    pos += n;
  }
}

// Appends the raw snappy block `in` to out[used..]. Returns the new size.
std::size_t snappy_raw_block(ByteSpan in, Bytes& out, std::size_t used, std::size_t max_output) {
  std::size_t n = 0;
  if (!snappy::GetUncompressedLength(reinterpret_cast<const char*>(in.data()), in.size(), &n))
    fail(Compression::snappy, "corrupt block header");
  if (n > max_output || used > max_output - n) too_large(Compression::snappy, max_output);
  out.resize(used + n);
  if (!snappy::RawUncompress(reinterpret_cast<const char*>(in.data()), in.size(),
                             reinterpret_cast<char*>(out.data() + used)))
    fail(Compression::snappy, "corrupt block");
  return used + n;
}

void snappy_decompress(ByteSpan in, Bytes& out, std::size_t max_output) {
  out.clear();
  const bool framed =
      in.size() >= sizeof kXerialMagic && std::memcmp(in.data(), kXerialMagic, sizeof kXerialMagic) == 0;
  if (!framed) {
    snappy_raw_block(in, out, 0, max_output);
    return;
  }
  if (in.size() < kXerialHeaderSize) fail(Compression::snappy, "truncated snappy-java header");
  std::size_t pos = kXerialHeaderSize;
  std::size_t used = 0;
  while (pos < in.size()) {
    if (in.size() - pos < 4) fail(Compression::snappy, "truncated snappy-java block length");
    const std::uint32_t len = load_be32(in.data() + pos);
    pos += 4;
    if (len > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max()) || len > in.size() - pos)
      fail(Compression::snappy, "snappy-java block length " + std::to_string(len) + " exceeds the remaining " +
                                    std::to_string(in.size() - pos) + " bytes");
    used = snappy_raw_block(in.subspan(pos, len), out, used, max_output);
    pos += len;
  }
}

// ------------------------------------------------------------------- lz4

struct Lz4DctxDeleter {
  void operator()(LZ4F_dctx* d) const noexcept { LZ4F_freeDecompressionContext(d); }
};

// One decompression context per thread, dropped after an error: when a frame
// fails part-way, LZ4F_resetDecompressionContext() leaves some of its state
// behind (the content size announced in its header), and the next, valid
// frame is then rejected with ERROR_frameSize_wrong (liblz4 1.9.4).
std::unique_ptr<LZ4F_dctx, Lz4DctxDeleter>& lz4_dctx_slot() {
  thread_local std::unique_ptr<LZ4F_dctx, Lz4DctxDeleter> ctx;
  return ctx;
}

LZ4F_dctx* lz4_dctx() {
  auto& ctx = lz4_dctx_slot();
  if (!ctx) {
    LZ4F_dctx* d = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
      fail(Compression::lz4, "cannot create a decompression context");
    ctx.reset(d);
  }
  return ctx.get();
}

void lz4_compress(ByteSpan in, Bytes& out) {
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof prefs);
  // Kafka's Java reader decodes each block on its own, so blocks must not
  // reference earlier ones.
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  const std::size_t bound = LZ4F_compressFrameBound(in.size(), &prefs);
  out.clear();
  out.resize(bound);
  const std::size_t n = LZ4F_compressFrame(out.data(), bound, in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) fail(Compression::lz4, LZ4F_getErrorName(n));
  out.resize(n);
}

std::size_t lz4_decompress(ByteSpan in, Bytes& out, std::size_t max_output, bool reuse = false) {
  Sink sink(out, Compression::lz4, max_output, in.size(), reuse);
  LZ4F_dctx* d = lz4_dctx();
  LZ4F_resetDecompressionContext(d);
  const std::uint8_t* src = in.data();
  std::size_t left = in.size();
  try {
    for (;;) {
      sink.ensure_room();
      std::size_t dst_size = sink.free_size();
      std::size_t src_size = left;
      const std::size_t hint = LZ4F_decompress(d, sink.free_begin(), &dst_size, src, &src_size, nullptr);
      if (LZ4F_isError(hint)) fail(Compression::lz4, std::string("corrupt frame: ") + LZ4F_getErrorName(hint));
      sink.produced(dst_size);
      src += src_size;
      left -= src_size;
      if (hint == 0 && left == 0) break;  // last frame complete
      if (left == 0 && src_size == 0 && dst_size == 0 && sink.free_size() > 0)
        fail(Compression::lz4, "truncated frame");
    }
  } catch (...) {
    lz4_dctx_slot().reset();
    throw;
  }
  sink.finish();
  return sink.used();
}

// ------------------------------------------------------------------ zstd

struct ZstdDctxDeleter {
  void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
};

ZSTD_DCtx* zstd_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDctxDeleter> ctx;
  if (!ctx) {
    ctx.reset(ZSTD_createDCtx());
    if (!ctx) fail(Compression::zstd, "cannot create a decompression context");
  }
  return ctx.get();
}

void zstd_compress(ByteSpan in, Bytes& out) {
  const std::size_t bound = ZSTD_compressBound(in.size());
  out.clear();
  out.resize(bound);
  const std::size_t n = ZSTD_compress(out.data(), bound, in.data(), in.size(), 3);
  if (ZSTD_isError(n)) fail(Compression::zstd, ZSTD_getErrorName(n));
  out.resize(n);
}

std::size_t zstd_decompress(ByteSpan in, Bytes& out, std::size_t max_output, bool reuse = false) {
  Sink sink(out, Compression::zstd, max_output, in.size(), reuse);
  ZSTD_DCtx* d = zstd_dctx();
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  for (;;) {
    sink.ensure_room();
    ZSTD_outBuffer dst{sink.free_begin(), sink.free_size(), 0};
    const std::size_t rc = ZSTD_decompressStream(d, &dst, &src);
    if (ZSTD_isError(rc)) {
      ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
      fail(Compression::zstd, std::string("corrupt frame: ") + ZSTD_getErrorName(rc));
    }
    sink.produced(dst.pos);
    if (rc == 0 && src.pos == src.size) break;  // last frame complete
    if (src.pos == src.size && dst.pos < dst.size) {
      ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
      fail(Compression::zstd, "truncated frame");
    }
  }
  sink.finish();
  return sink.used();
}

}  // namespace

CompressionError::CompressionError(Compression codec, const std::string& what, bool limit_exceeded)
    : ProtocolError(compression_name(codec) + ": " + what), codec_(codec), limit_exceeded_(limit_exceeded) {}

std::string compression_name(Compression c) {
  switch (c) {
    case Compression::none: return "none";
    case Compression::gzip: return "gzip";
    case Compression::snappy: return "snappy";
    case Compression::lz4: return "lz4";
    case Compression::zstd: return "zstd";
  }
  return "unknown(" + std::to_string(static_cast<int>(c)) + ")";
}

std::optional<Compression> parse_compression(std::string_view name) noexcept {
  std::string lower(name.size(), '\0');
  std::transform(name.begin(), name.end(), lower.begin(),
                 [](char ch) { return (ch >= 'A' && ch <= 'Z') ? char(ch - 'A' + 'a') : ch; });
  if (lower == "none") return Compression::none;
  if (lower == "gzip") return Compression::gzip;
  if (lower == "snappy") return Compression::snappy;
  if (lower == "lz4") return Compression::lz4;
  if (lower == "zstd") return Compression::zstd;
  return std::nullopt;
}

std::optional<Compression> compression_from_attributes(int attributes) noexcept {
  const int codec = attributes & 0x07;
  if (codec > static_cast<int>(Compression::zstd)) return std::nullopt;
  return static_cast<Compression>(codec);
}

void compress(Compression codec, ByteSpan in, Bytes& out) {
  switch (codec) {
    case Compression::none: out.assign(in.begin(), in.end()); return;
    case Compression::gzip: return gzip_compress(in, out);
    case Compression::snappy: return snappy_compress(in, out);
    case Compression::lz4: return lz4_compress(in, out);
    case Compression::zstd: return zstd_compress(in, out);
  }
  fail(codec, "unsupported codec");
}

void decompress(Compression codec, ByteSpan in, Bytes& out, std::size_t max_output) {
  switch (codec) {
    case Compression::none:
      if (in.size() > max_output) too_large(codec, max_output);
      out.assign(in.begin(), in.end());
      return;
    case Compression::gzip: gzip_decompress(in, out, max_output); return;
    case Compression::snappy: return snappy_decompress(in, out, max_output);
    case Compression::lz4: lz4_decompress(in, out, max_output); return;
    case Compression::zstd: zstd_decompress(in, out, max_output); return;
  }
  fail(codec, "unsupported codec");
}

std::size_t decompress_reusing(Compression codec, ByteSpan in, Bytes& out, std::size_t max_output) {
  switch (codec) {
    case Compression::gzip: return gzip_decompress(in, out, max_output, true);
    case Compression::lz4: return lz4_decompress(in, out, max_output, true);
    case Compression::zstd: return zstd_decompress(in, out, max_output, true);
    case Compression::none:
    case Compression::snappy: break;
  }
  decompress(codec, in, out, max_output);
  return out.size();
}

std::uint8_t lz4_header_checksum(ByteSpan descriptor) noexcept {
  return static_cast<std::uint8_t>((XXH32(descriptor.data(), descriptor.size(), 0) >> 8) & 0xff);
}

void decompress_lz4_legacy_header(ByteSpan in, Bytes& out, std::size_t max_output) {
  // Frame: magic (4, 0x184D2204 little-endian), FLG, BD, [content size (8)],
  // [dictionary id (4)], header checksum (1).
  if (in.size() < 7 || in[0] != 0x04 || in[1] != 0x22 || in[2] != 0x4d || in[3] != 0x18)
    return decompress(Compression::lz4, in, out, max_output);
  const std::uint8_t flg = in[4];
  std::size_t descriptor_end = 6;  // FLG, BD
  if (flg & 0x08) descriptor_end += 8;
  if (flg & 0x01) descriptor_end += 4;
  if (in.size() <= descriptor_end) return decompress(Compression::lz4, in, out, max_output);
  const std::uint8_t standard = lz4_header_checksum(in.subspan(4, descriptor_end - 4));
  if (in[descriptor_end] == standard) return decompress(Compression::lz4, in, out, max_output);
  const std::uint8_t kafka_legacy = lz4_header_checksum(in.subspan(0, descriptor_end));
  if (in[descriptor_end] != kafka_legacy)
    throw CompressionError(Compression::lz4,
                           "frame header checksum matches neither the LZ4 standard nor Kafka's "
                           "pre-KIP-57 form");
  Bytes fixed(in.begin(), in.end());
  fixed[descriptor_end] = standard;
  decompress(Compression::lz4, ByteSpan(fixed), out, max_output);
}

}  // namespace kwire::protocol

// Legacy message sets (magic 0 and 1). The input does not hold the bytes
// directly: it drives a builder that writes well-formed messages (valid sizes
// and CRCs, real compressed wrappers, Kafka's old LZ4 header checksum, nested
// wrappers), then a few bytes of it are flipped. This reaches the wrapper and
// inner-set code that random bytes almost never get past the CRC to.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_common.hpp"
#include "kwire/protocol/compression.hpp"
#include "kwire/protocol/log_inspect.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace {

using namespace kwire::protocol;
using kwire::fuzz::Input;

constexpr std::size_t kCap = 1u << 20;

std::optional<Bytes> blob(Input& in, bool null) {
  if (null) return std::nullopt;
  auto s = in.take(in.u8() % 24);
  return Bytes(s.begin(), s.end());
}

// Kafka before KIP-57 computed the LZ4 header checksum over the magic number too.
void use_old_lz4_checksum(Bytes& frame) {
  if (frame.size() < 7) return;
  std::size_t end = 6;
  if (frame[4] & 0x08) end += 8;
  if (frame[4] & 0x01) end += 4;
  if (frame.size() <= end) return;
  frame[end] = lz4_header_checksum(ByteSpan(frame).subspan(0, end));
}

// One compressed wrapper holding 1-4 inner messages; `depth` > 0 nests wrappers.
void wrapper(Input& in, Bytes& out, std::int64_t offset, std::int8_t magic, int depth, bool& nested) {
  const std::uint8_t how = in.u8();
  const auto codec = static_cast<Compression>(1 + how % 4);
  Bytes inner;
  const int count = 1 + (how >> 2) % 4;
  for (int i = 0; i < count; ++i) {
    const std::uint8_t m = in.u8();
    const auto inner_offset = static_cast<std::int64_t>(magic == 1 ? i : offset - count + 1 + i);
    if (depth > 0 && (m & 0x80)) {
      nested = true;
      wrapper(in, inner, inner_offset, magic, depth - 1, nested);
      continue;
    }
    const std::int8_t inner_magic = (m & 0x40) ? static_cast<std::int8_t>(1 - magic) : magic;
    encode_legacy_message(inner, inner_offset, inner_magic, static_cast<std::int8_t>(m & 0x08),
                          static_cast<std::int64_t>(in.u16()), blob(in, m & 0x01), blob(in, m & 0x02));
  }
  Bytes packed;
  compress(codec, ByteSpan(inner), packed);
  if (codec == Compression::lz4 && magic == 0 && (how & 0x40)) use_old_lz4_checksum(packed);
  const auto attributes = static_cast<std::int8_t>(static_cast<int>(codec) | (how & 0x08));
  encode_legacy_message(out, offset, magic, attributes, static_cast<std::int64_t>(in.u16()), std::nullopt,
                        std::move(packed));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t flags = in.u8();
  const auto magic = static_cast<std::int8_t>(flags & 0x01);
  const int messages = 1 + (flags >> 1) % 4;
  Bytes set;
  bool nested = false;
  std::int64_t offset = in.u8();
  for (int i = 0; i < messages && !in.empty(); ++i) {
    const std::uint8_t kind = in.u8();
    offset += 1 + kind % 8;
    if (kind & 0x80) {
      wrapper(in, set, offset, magic, (kind & 0x40) ? 2 : 0, nested);
    } else {
      const auto attributes = static_cast<std::int8_t>(kind & 0x08);
      encode_legacy_message(set, offset, magic, attributes, static_cast<std::int64_t>(in.u16()), blob(in, kind & 0x01),
                            blob(in, kind & 0x02));
    }
  }
  const bool pristine = (flags & 0x20) == 0;
  // Flip up to three bytes, positions and values from the input.
  if (!pristine && !set.empty()) {
    for (int i = 0; i < 3 && in.remaining() >= 3; ++i) {
      const std::size_t at = in.u16() % set.size();
      set[at] ^= in.u8();
    }
  }
  // Whatever is left of the input becomes a (probably partial) tail.
  if (flags & 0x40) {
    auto tail = in.rest();
    set.insert(set.end(), tail.begin(), tail.end());
  }

  const std::int64_t fetch_offset = (flags & 0x80) ? 0 : 3;
  {
    DecodeOptions opts;
    opts.check_crcs = (flags & 0x08) == 0;
    opts.max_decompressed_bytes = kCap;
    DecodedRecords out;
    try {
      decode_records(ByteSpan(set), fetch_offset, opts, out);
      // Wrappers inside wrappers are not a thing Kafka writes; they must be rejected.
      KWIRE_FUZZ_CHECK(!nested || !pristine);
    } catch (const CorruptRecordError&) {
    }
    for (const auto& rec : out.records) KWIRE_FUZZ_CHECK(rec.offset >= fetch_offset);
  }
  (void)inspect_log(ByteSpan(set), kCap);
  return 0;
}

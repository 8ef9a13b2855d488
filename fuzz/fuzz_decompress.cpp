// Every codec's decompressor (and the pre-KIP-57 LZ4 reader) on arbitrary
// bytes, behind an output cap. Only CompressionError may escape, the output
// never exceeds the cap, and a compressed copy of the input decompresses back
// to it.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"
#include "kwire/protocol/compression.hpp"

namespace {

using namespace kwire::protocol;

constexpr std::size_t kCaps[] = {0, 1, 100, 4096, 65536, 1u << 20};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kwire::fuzz::Input in(data, size);
  const std::uint8_t selector = in.u8();
  const std::size_t cap = kCaps[(selector >> 4) % std::size(kCaps)];
  const int codec_index = (selector & 0x0f) % 6;  // 0-4: Compression, 5: LZ4 with Kafka's old header
  const ByteSpan payload = in.rest();
  const auto codec = static_cast<Compression>(codec_index == 5 ? 3 : codec_index);

  Bytes out;
  Bytes again;
  bool ok = false;
  try {
    if (codec_index == 5) decompress_lz4_legacy_header(payload, out, cap);
    else decompress(codec, payload, out, cap);
    ok = true;
  } catch (const CompressionError& e) {
    KWIRE_FUZZ_CHECK(e.codec() == codec);
  }
  if (ok) {
    KWIRE_FUZZ_CHECK(out.size() <= cap);
    // Same answer with a buffer that already holds data (capacity is reused).
    again.assign(out.size() + 17, 0xaa);
    if (codec_index == 5) decompress_lz4_legacy_header(payload, again, cap);
    else decompress(codec, payload, again, cap);
    KWIRE_FUZZ_CHECK(again == out);
  }

  // Round trip of the payload itself.
  Bytes packed;
  compress(codec, payload, packed);
  Bytes back;
  try {
    decompress(codec, ByteSpan(packed), back, cap);
    KWIRE_FUZZ_CHECK(payload.size() <= cap);
    KWIRE_FUZZ_CHECK(back.size() == payload.size() && std::equal(back.begin(), back.end(), payload.begin()));
  } catch (const CompressionError& e) {
    KWIRE_FUZZ_CHECK(e.limit_exceeded() && payload.size() > cap);
  }
  return 0;
}

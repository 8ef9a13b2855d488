// Micro-benchmarks of the hot paths of the consume side: varint parsing,
// magic-2 batch decoding, CRC-32C and each codec's decompression, the last
// compared with calling the codec library directly on the same input; and the
// streaming source's per-trigger planning and offsets JSON at 10,000 partitions.
#include <benchmark/benchmark.h>

#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/compression.hpp"
#include "kwire/protocol/crc32c.hpp"
#include "kwire/protocol/record_batch.hpp"
#include "kwire/source/planning.hpp"

namespace kp = kwire::protocol;
namespace ks = kwire::source;

namespace {

// Text-like payload: words drawn from a small vocabulary, so that codecs see
// roughly the ratios they see on log-style records.
kp::Bytes payload(std::size_t size, std::mt19937_64& rng) {
  static const char* const words[] = {
      "alpha", "beta", "gamma", "delta",   "user", "id", "event", "click", "view", "order",
      "12345", "true", "false", "\"ts\":", "{",    "}",  ",",     "null",  "page", "value"};
  kp::Bytes out;
  out.reserve(size);
  while (out.size() < size) {
    const char* w = words[rng() % std::size(words)];
    for (const char* c = w; *c && out.size() < size; ++c) out.push_back(static_cast<std::uint8_t>(*c));
    if (out.size() < size) out.push_back(' ');
  }
  return out;
}

// RECORDS bytes of a Fetch partition: `batches` batches of `per_batch` records
// of `value_size` bytes each, consecutive offsets from 0.
kp::Bytes make_records(std::size_t value_size, std::size_t per_batch, std::size_t batches,
                       kp::Compression codec = kp::Compression::none) {
  std::mt19937_64 rng(42);
  kp::Bytes out;
  std::int64_t offset = 0;
  for (std::size_t b = 0; b < batches; ++b) {
    std::vector<kp::ProducerRecord> recs(per_batch);
    for (auto& r : recs) {
      r.value = payload(value_size, rng);
      r.timestamp = 1'700'000'000'000;
    }
    kp::BatchOptions opts;
    opts.compression = codec;
    opts.base_offset = offset;
    kp::encode_record_batch(recs, opts, out);
    offset += static_cast<std::int64_t>(per_batch);
  }
  return out;
}

void BM_VarintDecode(benchmark::State& state) {
  // Mixed widths as found in records: small lengths and deltas, some larger.
  std::mt19937_64 rng(7);
  kp::Bytes buf;
  kp::Writer w(buf);
  constexpr std::size_t kCount = 1 << 16;
  for (std::size_t i = 0; i < kCount; ++i) {
    const std::uint64_t pick = rng() % 10;
    std::int32_t v = pick < 6   ? static_cast<std::int32_t>(rng() % 64)
                     : pick < 9 ? static_cast<std::int32_t>(rng() % 8192) - 4096
                                : static_cast<std::int32_t>(rng());
    w.varint(v);
  }
  for (auto _ : state) {
    kp::Reader r(buf);
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < kCount; ++i) sum += r.varint();
    benchmark::DoNotOptimize(sum);
    if (!r.ok()) state.SkipWithError("varint decode failed");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kCount);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buf.size()));
}
BENCHMARK(BM_VarintDecode);

// Args: value size, CRC check on/off. About 1 MB of uncompressed batches.
void BM_BatchDecode(benchmark::State& state) {
  const auto value_size = static_cast<std::size_t>(state.range(0));
  const bool crc = state.range(1) != 0;
  const std::size_t per_batch = 16384 / (value_size + 10);  // Java's default 16 KB batches
  const std::size_t batches = (1u << 20) / 16384;
  const kp::Bytes records = make_records(value_size, per_batch, batches);
  kp::DecodeOptions opts;
  opts.check_crcs = crc;
  kp::DecodedRecords out;
  for (auto _ : state) {
    out.clear();
    kp::decode_records(records, 0, opts, out);
    benchmark::DoNotOptimize(out.records.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * per_batch * batches));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * records.size()));
  state.SetLabel(crc ? "check_crcs" : "no_crc");
}
BENCHMARK(BM_BatchDecode)->Args({100, 0})->Args({100, 1})->Args({1024, 0})->Args({1024, 1});

void BM_Crc32c(benchmark::State& state) {
  std::mt19937_64 rng(1);
  kp::Bytes buf(static_cast<std::size_t>(state.range(0)));
  for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  for (auto _ : state) benchmark::DoNotOptimize(kp::crc32c(buf));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buf.size()));
}
BENCHMARK(BM_Crc32c)->Arg(16 << 10)->Arg(1 << 20);

// Args: Crc32cPath (0 portable, 1 sse42 with table merge, 2 sse42 with
// PCLMULQDQ merge, 3 AVX-512 VPCLMULQDQ folding), input size.
void BM_Crc32cPath(benchmark::State& state) {
  const auto path = static_cast<kp::Crc32cPath>(state.range(0));
  std::mt19937_64 rng(1);
  kp::Bytes buf(static_cast<std::size_t>(state.range(1)));
  for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  for (auto _ : state) benchmark::DoNotOptimize(kp::crc32c_via(path, buf));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buf.size()));
  static const char* const names[] = {"portable", "sse42", "sse42_pclmul", "avx512_vpclmulqdq"};
  state.SetLabel(names[state.range(0)]);
  if (path > kp::crc32c_path()) state.SkipWithError("path not supported by this CPU");
}
BENCHMARK(BM_Crc32cPath)
    ->Args({0, 16 << 10})
    ->Args({1, 16 << 10})
    ->Args({2, 16 << 10})
    ->Args({3, 16 << 10})
    ->Args({1, 1 << 20})
    ->Args({3, 1 << 20});

void BM_Memcpy(benchmark::State& state) {
  kp::Bytes src(static_cast<std::size_t>(state.range(0)), 0x5a), dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * src.size()));
}
BENCHMARK(BM_Memcpy)->Arg(16 << 10)->Arg(1 << 20);

// ------------------------------------------------------------ decompression

// One batch's worth of plain record bytes (256 KB: ProducerPerformance's
// batch.size in scripts/bench) and its compressed forms.
struct CodecInput {
  kp::Bytes plain;
  kp::Bytes gzip, snappy_raw, lz4, zstd;
  CodecInput() {
    std::mt19937_64 rng(3);
    plain = payload(256 << 10, rng);
    kp::compress(kp::Compression::gzip, plain, gzip);
    kp::compress(kp::Compression::lz4, plain, lz4);
    kp::compress(kp::Compression::zstd, plain, zstd);
    std::string s;
    snappy::Compress(reinterpret_cast<const char*>(plain.data()), plain.size(), &s);
    snappy_raw.assign(s.begin(), s.end());
  }
  const kp::Bytes& of(kp::Compression c) const {
    switch (c) {
      case kp::Compression::gzip: return gzip;
      case kp::Compression::snappy: return snappy_raw;
      case kp::Compression::lz4: return lz4;
      default: return zstd;
    }
  }
};

const CodecInput& codec_input() {
  static const CodecInput in;
  return in;
}

void BM_KwireDecompress(benchmark::State& state) {
  const auto codec = static_cast<kp::Compression>(state.range(0));
  const CodecInput& in = codec_input();
  const kp::Bytes& src = in.of(codec);
  kp::Bytes out;
  for (auto _ : state) {
    kp::decompress(codec, src, out, 64u << 20);
    benchmark::DoNotOptimize(out.data());
  }
  if (out != in.plain) state.SkipWithError("round trip mismatch");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * in.plain.size()));
  state.SetLabel(kp::compression_name(codec));
}

// The codec library called directly, output buffer already sized, reusable
// contexts: the floor kwire's wrapper is measured against.
void BM_RawDecompress(benchmark::State& state) {
  const auto codec = static_cast<kp::Compression>(state.range(0));
  const CodecInput& in = codec_input();
  const kp::Bytes& src = in.of(codec);
  kp::Bytes out(in.plain.size());
  LZ4F_dctx* lz4 = nullptr;
  LZ4F_createDecompressionContext(&lz4, LZ4F_VERSION);
  ZSTD_DCtx* zstd = ZSTD_createDCtx();
  z_stream zs{};
  inflateInit2(&zs, 15 + 16);
  for (auto _ : state) {
    std::size_t produced = 0;
    switch (codec) {
      case kp::Compression::gzip: {
        inflateReset(&zs);
        zs.next_in = const_cast<Bytef*>(src.data());
        zs.avail_in = static_cast<uInt>(src.size());
        zs.next_out = out.data();
        zs.avail_out = static_cast<uInt>(out.size());
        inflate(&zs, Z_FINISH);
        produced = out.size() - zs.avail_out;
        break;
      }
      case kp::Compression::snappy:
        snappy::RawUncompress(reinterpret_cast<const char*>(src.data()), src.size(),
                              reinterpret_cast<char*>(out.data()));
        produced = out.size();
        break;
      case kp::Compression::lz4: {
        std::size_t dst_size = out.size(), src_size = src.size();
        LZ4F_resetDecompressionContext(lz4);
        LZ4F_decompress(lz4, out.data(), &dst_size, src.data(), &src_size, nullptr);
        produced = dst_size;
        break;
      }
      default: produced = ZSTD_decompressDCtx(zstd, out.data(), out.size(), src.data(), src.size()); break;
    }
    benchmark::DoNotOptimize(produced);
    benchmark::ClobberMemory();
  }
  if (out != in.plain) state.SkipWithError("round trip mismatch");
  inflateEnd(&zs);
  ZSTD_freeDCtx(zstd);
  LZ4F_freeDecompressionContext(lz4);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * in.plain.size()));
  state.SetLabel(kp::compression_name(codec));
}

#define KWIRE_CODEC_ARGS ->Arg(1)->Arg(2)->Arg(3)->Arg(4)
BENCHMARK(BM_KwireDecompress) KWIRE_CODEC_ARGS;
BENCHMARK(BM_RawDecompress) KWIRE_CODEC_ARGS;

// ------------------------------------------------------------ planning

// One trigger of the streaming source over 10,000 partitions (100 topics of
// 100): start offsets from the last batch, latest offsets with a backlog of
// up to 100,000 per partition, and ten partitions new since the last batch.
struct TriggerInput {
  ks::PartitionOffsets start, latest, earliest_for_new;
  TriggerInput() {
    std::mt19937_64 rng(5);
    for (int t = 0; t < 100; ++t) {
      const std::string topic = "analytics.page-views.v2." + std::to_string(1000 + t);
      for (std::int32_t p = 0; p < 100; ++p) {
        const auto from = static_cast<std::int64_t>(1'000'000'000 + rng() % 1'000'000);
        latest[topic][p] = from + static_cast<std::int64_t>(rng() % 100'000);
        if (t == 99 && p >= 90) {
          earliest_for_new[topic][p] = 0;  // a partition added since the last batch
        } else {
          start[topic][p] = from;
        }
      }
    }
  }
};

const TriggerInput& trigger_input() {
  static const TriggerInput in;
  return in;
}

// maxOffsetsPerTrigger (rate_limit), plan_batch with minPartitions, then the
// lag metrics of the planned end: the pure part of one trigger.
void BM_PlanTrigger(benchmark::State& state) {
  const TriggerInput& in = trigger_input();
  ks::PlanOptions opts;
  opts.min_partitions = 20'000;
  std::size_t ranges = 0;
  for (auto _ : state) {
    const ks::PartitionOffsets end = ks::rate_limit(1'000'000, in.start, in.latest, in.earliest_for_new);
    const ks::BatchPlan plan = ks::plan_batch(in.start, end, in.earliest_for_new, opts);
    const auto lag = ks::offsets_behind_latest(in.latest, plan.end);
    ranges = plan.ranges.size();
    benchmark::DoNotOptimize(lag);
  }
  state.counters["ranges"] = static_cast<double>(ranges);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 10'000);  // partitions
}
BENCHMARK(BM_PlanTrigger)->Unit(benchmark::kMillisecond);

// The offsets JSON of one batch (offsets/N in the checkpoint; the progress
// report writes three such objects) and parsing it back (restart).
void BM_OffsetsJsonWrite(benchmark::State& state) {
  const TriggerInput& in = trigger_input();
  std::size_t size = 0;
  for (auto _ : state) {
    const std::string json = kwire::checkpoint::offsets_to_json(in.latest);
    size = json.size();
    benchmark::DoNotOptimize(json.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 10'000);
}
BENCHMARK(BM_OffsetsJsonWrite)->Unit(benchmark::kMillisecond);

void BM_OffsetsJsonRead(benchmark::State& state) {
  const std::string json = kwire::checkpoint::offsets_to_json(trigger_input().latest);
  for (auto _ : state) {
    const ks::PartitionOffsets parsed = kwire::checkpoint::offsets_from_json(json);
    benchmark::DoNotOptimize(parsed.size());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 10'000);
}
BENCHMARK(BM_OffsetsJsonRead)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// decode_records() over arbitrary RECORDS bytes, with or without CRC checks,
// READ_COMMITTED on or off (flags and aborted-transaction list taken from the input),
// the same bytes through inspect_log(), and through BatchWalker and
// next_offset_after_batches(), which must agree with the decoder. Only
// CorruptRecordError may escape decode_records(); the others never throw.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "fuzz_common.hpp"
#include "kwire/protocol/batch_walker.hpp"
#include "kwire/protocol/log_inspect.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace {

using namespace kwire::protocol;

constexpr std::size_t kCap = 1u << 20;

void check_result(const DecodedRecords& out, ByteSpan records, std::int64_t fetch_offset) {
  KWIRE_FUZZ_CHECK(out.buffers_in_use <= out.buffers.size());
  for (const auto& rec : out.records) {
    KWIRE_FUZZ_CHECK(rec.offset >= fetch_offset);
    // Views point into the input or into a decompression buffer.
    for (const auto& view : {rec.key, rec.value}) {
      if (!view || view->empty()) continue;
      const auto* p = view->data();
      bool inside = p >= records.data() && p + view->size() <= records.data() + records.size();
      for (std::size_t i = 0; !inside && i < out.buffers_in_use; ++i) {
        const Bytes& b = out.buffers[i];
        inside = p >= b.data() && p + view->size() <= b.data() + b.size();
      }
      KWIRE_FUZZ_CHECK(inside);
    }
  }
}

void decode_once(ByteSpan records, std::int64_t fetch_offset, const DecodeOptions& opts) {
  DecodedRecords out;
  try {
    decode_records(records, fetch_offset, opts, out);
    check_result(out, records, fetch_offset);
  } catch (const CorruptRecordError&) {
    // Records of earlier, complete batches stay valid.
    check_result(out, records, fetch_offset);
  }
}

// The walker covers the input with back-to-back entries whose headers are
// sound, then stops at the end, a partial tail or a malformed header; the
// next-offset helper agrees with it and, when the decoder succeeds, with the
// decoder.
void walk(ByteSpan records, std::int64_t fetch_offset) {
  BatchWalker w(records);
  std::size_t covered = 0;
  std::size_t complete = 0;
  BatchWalker::Step step;
  while ((step = w.next()) == BatchWalker::Step::entry) {
    const BatchEntry& e = w.entry();
    KWIRE_FUZZ_CHECK(e.position == covered);
    KWIRE_FUZZ_CHECK(e.bytes.size() == e.header.size());
    KWIRE_FUZZ_CHECK(e.bytes.size() >= e.header.header_size());
    KWIRE_FUZZ_CHECK(e.header.magic >= 0 && e.header.magic <= 2);
    KWIRE_FUZZ_CHECK(e.header.last_offset() >= e.header.base_offset || e.header.last_offset_delta < 0);
    (void)e.crc_valid();
    covered += e.bytes.size();
    ++complete;
  }
  KWIRE_FUZZ_CHECK(w.position() == covered);
  KWIRE_FUZZ_CHECK(w.next() == step);  // sticky
  if (step == BatchWalker::Step::end) KWIRE_FUZZ_CHECK(covered == records.size());
  if (step == BatchWalker::Step::partial_tail) {
    KWIRE_FUZZ_CHECK(covered < records.size());
    KWIRE_FUZZ_CHECK(w.partial_size() == 0 || w.partial_size() > records.size() - covered);
  }
  if (step == BatchWalker::Step::malformed) KWIRE_FUZZ_CHECK(w.error().position == covered);

  const NextFetchPosition next = next_offset_after_batches(records, fetch_offset);
  KWIRE_FUZZ_CHECK(next.next_offset >= fetch_offset);
  KWIRE_FUZZ_CHECK(next.complete_entries == complete);
  KWIRE_FUZZ_CHECK(next.malformed == (step == BatchWalker::Step::malformed));
  DecodeOptions opts;
  opts.check_crcs = false;
  opts.max_decompressed_bytes = kCap;
  DecodedRecords out;
  try {
    decode_records(records, fetch_offset, opts, out);
  } catch (const CorruptRecordError&) {
    return;
  }
  KWIRE_FUZZ_CHECK(out.next_offset == next.next_offset);
  KWIRE_FUZZ_CHECK(out.batches == complete);
  KWIRE_FUZZ_CHECK(out.truncated_tail == (step == BatchWalker::Step::partial_tail));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kwire::fuzz::Input in(data, size);
  const std::uint8_t flags = in.u8();
  // Up to three aborted transactions, then the fetch offset, then the records.
  std::vector<AbortedTransaction> aborted(flags & 0x03);
  for (auto& a : aborted) {
    a.producer_id = static_cast<std::int64_t>(in.u8()) - 1;
    a.first_offset = static_cast<std::int64_t>(in.u16()) - 8;
  }
  std::int64_t fetch_offset = static_cast<std::int64_t>(in.u8()) - 2;
  if (flags & 0x04) fetch_offset = std::numeric_limits<std::int64_t>::min();
  const ByteSpan records = in.rest();

  // One option set per input, chosen by the flags (every combination is
  // reached across inputs; decoding each input four times only slowed the search).
  {
    DecodeOptions opts;
    opts.check_crcs = (flags & 0x10) != 0;
    opts.read_committed = (flags & 0x20) != 0;
    opts.aborted_transactions = aborted;
    opts.max_decompressed_bytes = (flags & 0x08) ? 64 : kCap;
    decode_once(records, fetch_offset, opts);
  }

  // Reusing one DecodedRecords (and its buffers) across calls, as the source does.
  if (flags & 0x40) {
    DecodeOptions opts;
    opts.check_crcs = false;
    opts.max_decompressed_bytes = kCap;
    DecodedRecords out;
    for (int round = 0; round < 2; ++round) {
      out.clear();
      try {
        decode_records(records, fetch_offset, opts, out);
      } catch (const CorruptRecordError&) {
      }
      check_result(out, records, fetch_offset);
    }
  }

  walk(records, fetch_offset);

  const InspectResult inspected = inspect_log(records, kCap);
  std::size_t covered = 0;
  for (const auto& b : inspected.batches) {
    KWIRE_FUZZ_CHECK(b.position == covered);
    KWIRE_FUZZ_CHECK(b.size <= records.size() - b.position);
    covered += b.size;
  }
  return 0;
}

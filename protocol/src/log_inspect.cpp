#include "kwire/protocol/log_inspect.hpp"

#include <limits>

namespace kwire::protocol {

namespace {

std::string at(std::size_t pos) { return " (entry at byte " + std::to_string(pos) + ")"; }

InspectedRecord copy_of(const RecordView& rec) {
  InspectedRecord ir;
  ir.offset = rec.offset;
  ir.timestamp = rec.timestamp;
  ir.timestamp_type = rec.timestamp_type;
  if (rec.key) ir.key = Bytes(rec.key->begin(), rec.key->end());
  if (rec.value) ir.value = Bytes(rec.value->begin(), rec.value->end());
  ir.headers = rec.headers;
  return ir;
}

}  // namespace

InspectResult inspect_log(ByteSpan data, std::size_t max_decompressed_bytes) {
  InspectResult result;
  BatchWalker walker(data);
  for (;;) {
    const BatchWalker::Step step = walker.next();
    if (step == BatchWalker::Step::end) break;
    if (step == BatchWalker::Step::partial_tail) {
      result.truncated_tail = true;
      break;
    }
    if (step == BatchWalker::Step::malformed) {
      const BatchHeaderError& e = walker.error();
      result.error = e.what + at(e.position);
      result.error_position = e.position;
      break;
    }
    const BatchEntry& entry = walker.entry();
    InspectedBatch b;
    b.header = entry.header;
    b.position = entry.position;
    b.size = entry.bytes.size();
    b.crc_valid = entry.crc_valid();
    b.first_offset = entry.header.base_offset;
    b.last_offset = entry.header.last_offset();
    b.record_count = entry.header.is_legacy() ? 1 : entry.header.records_count;
    // Records, through the same decoder the consumer uses (CRC reported above,
    // not enforced, so a bad batch still shows what it holds).
    try {
      DecodeOptions opts;
      opts.check_crcs = false;
      opts.max_decompressed_bytes = max_decompressed_bytes;
      DecodedRecords decoded;
      decoded.next_offset = std::numeric_limits<std::int64_t>::min();
      decode_records(entry.bytes, std::numeric_limits<std::int64_t>::min(), opts, decoded);
      b.records.reserve(decoded.records.size());
      for (auto& rec : decoded.records) b.records.push_back(copy_of(rec));
      if (entry.header.is_legacy()) {
        b.record_count = static_cast<std::int32_t>(b.records.size());
        if (!b.records.empty()) b.first_offset = b.records.front().offset;
      }
    } catch (const ProtocolError& e) {
      result.batches.push_back(std::move(b));
      result.error = std::string(e.what()) + at(entry.position);
      result.error_position = entry.position;
      break;
    }
    result.batches.push_back(std::move(b));
  }
  return result;
}

}  // namespace kwire::protocol

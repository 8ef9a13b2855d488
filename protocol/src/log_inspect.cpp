#include "kwire/protocol/log_inspect.hpp"

#include <limits>

#include "kwire/protocol/crc32c.hpp"

namespace kwire::protocol {

namespace {

std::string at(std::size_t pos) { return " (entry at byte " + std::to_string(pos) + ")"; }

}  // namespace

InspectResult inspect_log(ByteSpan data, std::size_t max_decompressed_bytes) {
  InspectResult result;
  std::size_t pos = 0;
  while (pos < data.size()) {
    const std::size_t left = data.size() - pos;
    if (left < kLogOverhead + 5) {
      result.truncated_tail = true;
      break;
    }
    Reader head(data.subspan(pos, kLogOverhead + 5));
    const std::int64_t offset = head.i64();
    const std::int32_t length = head.i32();
    if (length < 0) {
      result.error = "negative entry length " + std::to_string(length) + at(pos);
      result.error_position = pos;
      break;
    }
    const std::size_t entry_size = kLogOverhead + static_cast<std::size_t>(length);
    if (entry_size > left) {
      result.truncated_tail = true;
      break;
    }
    const ByteSpan entry = data.subspan(pos, entry_size);
    InspectedBatch b;
    b.position = pos;
    b.size = entry_size;
    b.base_offset = offset;
    b.magic = static_cast<std::int8_t>(entry[16]);
    if (b.magic == 2) {
      if (entry_size < kRecordBatchHeaderSize) {
        result.error = "batch length " + std::to_string(length) + " is below the magic-2 header size" + at(pos);
        result.error_position = pos;
        break;
      }
      Reader r(entry.subspan(kLogOverhead));
      b.partition_leader_epoch = r.i32();
      (void)r.i8();
      b.crc = r.u32();
      b.attributes = r.i16();
      b.last_offset_delta = r.i32();
      b.base_timestamp = r.i64();
      b.max_timestamp = r.i64();
      b.producer_id = r.i64();
      b.producer_epoch = r.i16();
      b.base_sequence = r.i32();
      b.record_count = r.i32();
      b.crc_valid = crc32c(entry.subspan(21)) == b.crc;
      b.compression = compression_from_attributes(b.attributes).value_or(Compression::none);
      b.timestamp_type = (b.attributes & 0x08) ? kTimestampLogAppendTime : kTimestampCreateTime;
      b.transactional = (b.attributes & 0x10) != 0;
      b.control = (b.attributes & 0x20) != 0;
    } else if (b.magic == 0 || b.magic == 1) {
      Reader r(entry.subspan(kLogOverhead));
      b.crc = r.u32();
      (void)r.i8();
      const std::int8_t attributes = r.i8();
      b.attributes = attributes;
      if (b.magic == 1) b.max_timestamp = b.base_timestamp = r.i64();
      b.crc_valid = r.ok() && crc32_ieee(entry.subspan(16)) == b.crc;
      b.compression = compression_from_attributes(attributes).value_or(Compression::none);
      b.timestamp_type =
          b.magic == 0 ? kTimestampNone : ((attributes & 0x08) ? kTimestampLogAppendTime : kTimestampCreateTime);
      b.record_count = 1;
    } else {
      result.error = "unknown magic byte " + std::to_string(b.magic) + at(pos);
      result.error_position = pos;
      break;
    }
    // Records, through the same decoder the consumer uses (CRC reported above,
    // not enforced, so a bad batch still shows what it holds).
    try {
      DecodeOptions opts;
      opts.check_crcs = false;
      opts.max_decompressed_bytes = max_decompressed_bytes;
      DecodedRecords decoded;
      decoded.next_offset = std::numeric_limits<std::int64_t>::min();
      decode_records(entry, std::numeric_limits<std::int64_t>::min(), opts, decoded);
      for (auto& rec : decoded.records) {
        InspectedRecord ir;
        ir.offset = rec.offset;
        ir.timestamp = rec.timestamp;
        ir.timestamp_type = rec.timestamp_type;
        if (rec.key) ir.key = Bytes(rec.key->begin(), rec.key->end());
        if (rec.value) ir.value = Bytes(rec.value->begin(), rec.value->end());
        ir.headers = rec.headers;
        b.records.push_back(std::move(ir));
      }
      if (b.magic != 2) {
        b.record_count = static_cast<std::int32_t>(b.records.size());
        if (!b.records.empty())
          b.last_offset_delta = static_cast<std::int32_t>(static_cast<std::uint64_t>(b.base_offset) -
                                                          static_cast<std::uint64_t>(b.records.front().offset));
      }
    } catch (const ProtocolError& e) {
      result.batches.push_back(std::move(b));
      result.error = std::string(e.what()) + at(pos);
      result.error_position = pos;
      break;
    }
    result.batches.push_back(std::move(b));
    pos += entry_size;
  }
  return result;
}

}  // namespace kwire::protocol

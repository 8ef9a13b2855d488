#include "kwire/protocol/batch_walker.hpp"

#include <algorithm>
#include <limits>

#include "batch_layout.hpp"
#include "kwire/protocol/crc32c.hpp"

namespace kwire::protocol {

namespace {

std::int64_t i64_at(const std::uint8_t* p, std::size_t at) noexcept {
  return static_cast<std::int64_t>(load_be64(p + at));
}
std::int32_t i32_at(const std::uint8_t* p, std::size_t at) noexcept {
  return static_cast<std::int32_t>(load_be32(p + at));
}
std::int16_t i16_at(const std::uint8_t* p, std::size_t at) noexcept {
  return static_cast<std::int16_t>(load_be16(p + at));
}

// Fills the fields of a complete magic-2 entry (at least 61 bytes).
void read_v2(const std::uint8_t* p, BatchHeader& h) noexcept {
  using namespace layout;
  h.partition_leader_epoch = i32_at(p, kPartitionLeaderEpoch);
  h.crc = load_be32(p + kBatchCrc);
  h.attributes = i16_at(p, kBatchAttributes);
  h.last_offset_delta = i32_at(p, kLastOffsetDelta);
  h.base_timestamp = i64_at(p, kBaseTimestamp);
  h.max_timestamp = i64_at(p, kMaxTimestamp);
  h.producer_id = i64_at(p, kProducerId);
  h.producer_epoch = i16_at(p, kProducerEpoch);
  h.base_sequence = i32_at(p, kBaseSequence);
  h.records_count = i32_at(p, kRecordsCount);
}

// Fills the fields of a complete legacy entry (at least its header size) and
// defaults the ones legacy messages do not have.
void read_legacy(const std::uint8_t* p, BatchHeader& h) noexcept {
  using namespace layout;
  h.partition_leader_epoch = -1;
  h.crc = load_be32(p + kMessageCrc);
  h.attributes = static_cast<std::int8_t>(p[kMessageAttributes]);
  h.last_offset_delta = 0;
  h.base_timestamp = h.magic == 1 ? i64_at(p, kMessageTimestamp) : -1;
  h.max_timestamp = h.base_timestamp;
  h.producer_id = -1;
  h.producer_epoch = -1;
  h.base_sequence = -1;
  h.records_count = 1;
}

}  // namespace

std::uint32_t BatchEntry::computed_crc() const noexcept {
  if (header.magic >= 2) return crc32c(bytes.subspan(layout::kBatchAttributes));
  return crc32_ieee(bytes.subspan(layout::kMagic));
}

BatchWalker::Step BatchWalker::fail(std::int64_t base_offset, CorruptionKind kind, std::string what) {
  error_.position = pos_;
  error_.base_offset = base_offset;
  error_.kind = kind;
  error_.what = std::move(what);
  return last_ = Step::malformed;
}

BatchWalker::Step BatchWalker::next() {
  if (last_ != Step::entry) return last_;
  const std::size_t left = data_.size() - pos_;
  if (left == 0) return last_ = Step::end;
  const std::uint8_t* p = data_.data() + pos_;
  if (left < kLogOverhead) {
    partial_size_ = 0;
    return last_ = Step::partial_tail;
  }
  const std::int64_t base_offset = i64_at(p, layout::kOffset);
  const std::int32_t length = i32_at(p, layout::kLength);
  if (length < static_cast<std::int32_t>(kLegacyOverheadV0))
    return fail(
        base_offset, CorruptionKind::bad_length,
        "batch length " + std::to_string(length) + " is below the minimum of " + std::to_string(kLegacyOverheadV0));
  const std::size_t size = kLogOverhead + static_cast<std::size_t>(length);
  if (size > left) {
    partial_size_ = size;
    return last_ = Step::partial_tail;
  }

  BatchHeader& h = entry_.header;
  h.base_offset = base_offset;
  h.batch_length = length;
  h.magic = static_cast<std::int8_t>(p[layout::kMagic]);
  switch (h.magic) {
    case 2: {
      if (size < kRecordBatchHeaderSize)
        return fail(base_offset, CorruptionKind::bad_length,
                    "batch length " + std::to_string(length) + " is below the magic-2 minimum of " +
                        std::to_string(kRecordBatchHeaderSize - kLogOverhead));
      read_v2(p, h);
      std::int64_t last = 0;
      if (__builtin_add_overflow(base_offset, std::int64_t{h.last_offset_delta}, &last))
        return fail(base_offset, CorruptionKind::bad_length,
                    "last offset delta " + std::to_string(h.last_offset_delta) + " overflows the offset range");
      break;
    }
    case 0:
    case 1: {
      const std::size_t minimum = h.magic == 0 ? kLegacyOverheadV0 : kLegacyOverheadV1;
      if (static_cast<std::size_t>(length) < minimum)
        return fail(base_offset, CorruptionKind::bad_length,
                    "message size " + std::to_string(length) + " is below the magic-" + std::to_string(h.magic) +
                        " minimum of " + std::to_string(minimum));
      read_legacy(p, h);
      break;
    }
    default: return fail(base_offset, CorruptionKind::bad_magic, "unknown magic byte " + std::to_string(h.magic));
  }
  entry_.bytes = data_.subspan(pos_, size);
  entry_.position = pos_;
  pos_ += size;
  return Step::entry;
}

NextFetchPosition next_offset_after_batches(ByteSpan records, std::int64_t fetch_offset) {
  NextFetchPosition out;
  out.next_offset = fetch_offset;
  BatchWalker walker(records);
  for (;;) {
    switch (walker.next()) {
      case BatchWalker::Step::entry: {
        const std::int64_t last = walker.entry().header.last_offset();
        const std::int64_t next = last == std::numeric_limits<std::int64_t>::max() ? last : last + 1;
        if (next > out.next_offset) {
          out.next_offset = next;
          out.last_epoch = walker.entry().header.partition_leader_epoch;
        }
        ++out.complete_entries;
        break;
      }
      case BatchWalker::Step::end: return out;
      case BatchWalker::Step::partial_tail:
        if (out.complete_entries == 0) out.partial_size = walker.partial_size();
        return out;
      case BatchWalker::Step::malformed: out.malformed = true; return out;
    }
  }
}

}  // namespace kwire::protocol

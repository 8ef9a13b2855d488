// Byte positions of the fields of a record batch (magic 2) and of a legacy
// message (magic 0 and 1), counted from the start of the entry (its offset
// field). Private to protocol/src: everything outside reads headers through
// BatchWalker (kwire/protocol/batch_walker.hpp); the encoders use these to
// back-patch lengths and checksums.
#pragma once

#include <cstddef>

namespace kwire::protocol::layout {

// Shared by every entry: offset int64, length int32, then magic at byte 16.
inline constexpr std::size_t kOffset = 0;
inline constexpr std::size_t kLength = 8;
inline constexpr std::size_t kMagic = 16;

// Magic 2 (Kafka's DefaultRecordBatch).
inline constexpr std::size_t kPartitionLeaderEpoch = 12;
inline constexpr std::size_t kBatchCrc = 17;
inline constexpr std::size_t kBatchAttributes = 21;  // the CRC-32C covers from here to the end
inline constexpr std::size_t kLastOffsetDelta = 23;
inline constexpr std::size_t kBaseTimestamp = 27;
inline constexpr std::size_t kMaxTimestamp = 35;
inline constexpr std::size_t kProducerId = 43;
inline constexpr std::size_t kProducerEpoch = 51;
inline constexpr std::size_t kBaseSequence = 53;
inline constexpr std::size_t kRecordsCount = 57;

// Magic 0 and 1 (Kafka's LegacyRecord).
inline constexpr std::size_t kMessageCrc = 12;  // the CRC-32 covers from the magic byte to the end
inline constexpr std::size_t kMessageAttributes = 17;
inline constexpr std::size_t kMessageTimestamp = 18;  // magic 1 only

// Attribute bits (the low byte is shared by both formats).
inline constexpr int kAttrCompressionMask = 0x07;
inline constexpr int kAttrLogAppendTime = 0x08;
inline constexpr int kAttrTransactional = 0x10;  // magic 2
inline constexpr int kAttrControl = 0x20;        // magic 2

}  // namespace kwire::protocol::layout

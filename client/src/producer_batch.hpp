// One partition's batch of records on its way to the broker (internal): the
// records written once into a record batch builder, the callbacks of the
// records that have one, the times that bound it (linger, back-off,
// delivery.timeout.ms) and, once sent, the producer state it was sent under.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "kwire/client/producer.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::client {

struct ProducerBatch {
  std::uint64_t id = 0;  // creation order (flush() waits for the ids below its mark)
  TopicPartition tp;
  protocol::RecordBatchBuilder builder;
  struct Pending {
    std::int32_t index = 0;  // the record's place in the batch
    std::int64_t timestamp = -1;
    SendCallback callback;
  };
  std::vector<Pending> callbacks;  // records given a callback
  bool silent = false;             // some record has no callback (its error goes to flush())
  std::size_t reserved = 0;        // bytes of buffer.memory held
  Clock::time_point created;
  Clock::time_point delivery_deadline;
  bool full = false;  // no more records go in

  // Once drained by the sender.
  int attempts = 0;                 // Produce requests that carried it
  Clock::time_point retry_at{};     // not sent again before
  std::int16_t last_error = 0;      // of the last attempt (0: none yet)
  std::span<std::uint8_t> encoded;  // the finished batch (points into `builder`)
  std::int64_t producer_id = -1;    // the state it was numbered under
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;  // -1: not numbered yet
  bool transactional = false;
  // The last attempt went unanswered (lost connection, request timeout): it
  // may have been written, so it is resent unchanged before any epoch bump.
  bool fate_unknown = false;

  std::int32_t record_count() const noexcept { return builder.count(); }
  bool sequenced() const noexcept { return base_sequence >= 0; }
};

using BatchPtr = std::unique_ptr<ProducerBatch>;

/// Kafka's sequence arithmetic: sequences wrap from 2^31-1 to 0.
inline std::int32_t increment_sequence(std::int32_t sequence, std::int32_t by) noexcept {
  const std::int64_t next = static_cast<std::int64_t>(sequence) + by;
  return static_cast<std::int32_t>(next > 0x7fffffff ? next - 0x80000000LL : next);
}

}  // namespace kwire::client

// The Fetcher's private state (shared by fetcher.cpp and fetcher_io.cpp).
#pragma once

#include <exception>

#include "kwire/client/fetcher.hpp"

namespace kwire::client {

// One partition's part of one Fetch answer, taken in but not yet (all)
// handed out, or an error to raise when the answers before it are used up.
struct Fetcher::Answer {
  std::int64_t fetch_offset = 0;  // the offset it was fetched at
  std::int64_t next_offset = 0;   // after its complete batches
  std::int32_t last_epoch = -1;   // partition leader epoch of its last complete batch (-1: none)
  std::shared_ptr<const protocol::Bytes> frame;
  // The RECORDS (in `frame`) not decoded yet; reset once all are decoded.
  // They are decoded a part at a time, as they are handed out, so that what
  // is held decoded stays bounded however well they were compressed.
  std::optional<protocol::RecordsDecoder> decoder;
  std::shared_ptr<protocol::DecodedRecords> decoded;  // the part being handed out
  std::size_t next = 0;                               // next record of `decoded` to hand out
  std::exception_ptr error;
};

struct Fetcher::PartitionState {
  std::optional<std::int64_t> position;  // next offset to hand out; nullopt: reset with auto.offset.reset
  std::int32_t position_epoch = -1;      // leader epoch of the record before the position (-1: unknown)
  std::int32_t leader_epoch = -1;        // leader epoch the position was last fetched or validated under
  bool paused = false;
  std::optional<std::int64_t> limit;  // hand out records below it only
  bool validate = false;              // check the position with OffsetsForLeaderEpoch before fetching
  bool queued = false;                // listed in ready_
  int failures = 0;                   // consecutive errors counted against `retries` (not leadership ones)
  int attempts = 0;                   // consecutive failures of any kind (sets the back-off)
  Clock::time_point not_before{};
  std::int32_t max_bytes = 0;  // > 0: the size of a batch above max.partition.fetch.bytes
  // KIP-392: the follower the leader named to read from (-1: the leader),
  // used until read_replica_until (metadata.max.age.ms after it was named).
  std::int32_t read_replica = -1;
  Clock::time_point read_replica_until{};
  // The topic id the partition was fetched under (zero: not known yet). A
  // new one means the topic was deleted and created again (KIP-516).
  protocol::Uuid topic_id;
  std::deque<Answer> answers;
  std::optional<FetchedPartition> info;
};

// KIP-227 incremental fetch session with one broker: after a full fetch that
// opened it, a request lists only partitions whose fetch state changed, and
// names the ones to drop in forgotten_topics_data.
struct Fetcher::Session {
  struct Sent {
    std::int64_t offset = 0;
    std::int32_t max_bytes = 0;
    std::int32_t current_leader_epoch = -1;
    std::int32_t last_fetched_epoch = -1;
    protocol::Uuid topic_id;  // the topic's id when sent (zero: unknown, or a version before 13)
    bool operator==(const Sent&) const = default;
  };
  std::int32_t id = 0;     // 0: none yet (the next fetch asks for one)
  std::int32_t epoch = 0;  // epoch of the next request
  std::map<TopicPartition, Sent> sent;
};

struct Fetcher::InFlight {
  FetchCluster::Pending pending;
  std::int16_t version = 0;
  bool incremental = false;
  bool use_session = false;
  std::map<TopicPartition, Session::Sent> sent;  // every partition the request covers, with what it asked
};

}  // namespace kwire::client

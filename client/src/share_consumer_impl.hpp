// ShareConsumer's state (internal): the membership the heartbeat thread keeps
// (share_heartbeat.cpp) and the share sessions and acknowledgements of the
// application thread (share_consumer.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coordinators.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/share_consumer.hpp"
#include "kwire/protocol/messages/share_group.hpp"

namespace kwire::client {

/// Orders topic ids (Uuid has no ordering of its own).
struct UuidLess {
  bool operator()(const protocol::Uuid& a, const protocol::Uuid& b) const { return a.bytes < b.bytes; }
};
/// A share member's assignment: partitions by topic id.
using ShareAssignment = std::map<protocol::Uuid, std::vector<std::int32_t>, UuidLess>;

/// ShareGroupHeartbeat membership in a background thread with its own
/// KafkaClient (so the application's connections are never shared).
class ShareMembership {
 public:
  ShareMembership(const std::map<std::string, std::string>& properties, std::string group, std::string member_id);
  ~ShareMembership();  // stop(): leaves the group

  void subscribe(std::vector<std::string> topics);
  /// The partitions assigned now, by topic id; the version counts changes.
  ShareAssignment assignment(std::uint64_t* version = nullptr) const;
  /// Rethrows a fatal error the heartbeat met (authorization, bad group id...).
  void check() const;
  /// Sends the leave heartbeat (epoch -1) and ends the thread.
  void stop(Deadline deadline);

 private:
  void run();
  void beat(Deadline deadline);

  KafkaClient client_;
  Coordinators coordinators_;
  const std::string group_;
  const std::string member_id_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::string> topics_;
  bool topics_changed_ = false;
  bool stopping_ = false;
  std::int32_t epoch_ = 0;
  std::int32_t interval_ms_ = 1000;
  ShareAssignment assignment_;
  std::uint64_t assignment_version_ = 0;
  std::exception_ptr fatal_;
  int failures_ = 0;
  std::thread thread_;
};

/// One record handed out and not yet acknowledged, or acknowledged and not sent.
struct PendingAck {
  std::int8_t type = -1;  // -1: not acknowledged yet, else the AcknowledgeType (0: a gap)
};

/// A share session with one broker (keyed by its node id).
struct ShareSession {
  std::int32_t epoch = 0;               // the epoch of the next request
  std::set<TopicPartition> partitions;  // in the session (the broker's view)
};

/// Acknowledged offsets by partition (gaps left out), of one request.
using AckedOffsets = std::map<TopicPartition, std::vector<std::int64_t>>;

struct ShareConsumer::Impl {
  Impl(const std::map<std::string, std::string>& properties, std::string group, bool explicit_mode);

  std::vector<ShareRecord> poll(std::chrono::milliseconds timeout);
  void acknowledge(const ShareRecord& r, AcknowledgeType type);
  AcknowledgementResults send_acknowledgements(Deadline deadline, bool wait, bool final_request);
  void finish_async(bool wait);
  void close(Deadline deadline);

  // The acknowledgements of one partition, as batches of the wire form; the
  // offsets of the records among them are added to `offsets`.
  std::vector<protocol::AcknowledgementBatch> take_batches(const TopicPartition& tp,
                                                           std::vector<std::int64_t>& offsets);
  // Gives each outcome to the callbacks; returns them per partition.
  AcknowledgementResults report(const std::vector<AcknowledgementCommit>& commits);
  void resolve_topic_names(const ShareAssignment& assigned);

  KafkaClient client;
  std::string group;
  std::string member_id;
  bool explicit_mode = false;
  std::unique_ptr<ShareMembership> membership;
  std::map<protocol::Uuid, std::string, UuidLess> topic_names;
  std::map<std::string, protocol::Uuid> topic_ids;
  std::map<std::int32_t, ShareSession> sessions;                      // by node id
  std::map<TopicPartition, std::map<std::int64_t, PendingAck>> acks;  // by partition, offset
  // Records acknowledged `renew` whose renewal is not answered yet (copies,
  // to hand out again), and those renewed, handed out by the next poll.
  std::map<TopicPartition, std::map<std::int64_t, ShareRecord>> renewing;
  std::vector<ShareRecord> renewed;
  bool renewal_pending() const;
  std::function<void(const AcknowledgementResults&)> callback;
  std::function<void(const AcknowledgementCommit&)> offsets_callback;
  struct InFlight {
    std::int32_t node;
    std::int32_t corr;
    std::int16_t version;
    AckedOffsets partitions;
  };
  std::vector<InFlight> async_acks;
  std::atomic<std::int32_t> lock_ms{0};
  bool closed = false;
};

}  // namespace kwire::client

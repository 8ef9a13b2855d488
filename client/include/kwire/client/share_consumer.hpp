// A share-group consumer (KIP-932, "queues for Kafka"; Kafka 4.2+), with the
// names of Java's KafkaShareConsumer: subscribe, poll, acknowledge,
// commit_sync, commit_async, close.
//
// Members of one share group read the same partitions together: each fetch
// acquires records for the broker's lock duration
// (group.share.record.lock.duration.ms, 30 s by default; acquisition_lock_ms()
// reports it) and only the member that acquired a record may acknowledge it:
//   ACCEPT  processed: never delivered again
//   RELEASE give it back: delivered again at once (to any member), with its
//           delivery count one higher
//   REJECT  unprocessable: never delivered again (archived)
// A record not acknowledged before its lock ends is released by the broker;
// after group.share.delivery.count.limit deliveries (5 by default) it is
// archived instead. Each record carries its delivery count (1 the first time).
//
// Acknowledgement modes (share.acknowledgement.mode, as Java):
//   implicit (default) every record a poll returned is accepted by the next
//            poll, commit_sync, commit_async or close
//   explicit the application acknowledges each record with acknowledge();
//            poll throws ShareAcknowledgementModeError while records of the
//            previous poll are still unacknowledged
// Acknowledgements travel on the next ShareFetch to the partition's leader
// (piggy-backed) or, with commit_sync / commit_async / close, on
// ShareAcknowledge requests of their own.
//
// Membership: a background thread sends ShareGroupHeartbeat to the group's
// coordinator (found with the client's one coordinator lookup) at the
// interval the coordinator asks, and takes the partitions it assigns; a fenced
// or unknown member rejoins with epoch 0. Sessions: one share session per
// broker (epoch 0 opens it, +1 per request; SHARE_SESSION_NOT_FOUND or
// INVALID_SHARE_SESSION_EPOCH reopen it, and the acknowledgements of the
// failed request are reported failed: their records come back after the lock).
//
// Configuration: the client's properties (bootstrap.servers, security, ...),
// group.id (required), share.acknowledgement.mode, max.poll.records,
// fetch.max.wait.ms, fetch.min.bytes, fetch.max.bytes, client.id.
// Errors: ConfigError for bad settings; GroupAuthorizationError and
// KafkaError (from the heartbeat, raised by the next poll) for fatal group
// errors; ShareAcknowledgementModeError for a misuse of acknowledge();
// per-partition acknowledgement errors (INVALID_RECORD_STATE: the lock had
// ended or the record was not acquired by this member) are returned by
// commit_sync and given to the acknowledgement commit callback.
// Not thread-safe except close() from another thread while poll runs. Free of
// Boost.Asio.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/client/errors.hpp"
#include "kwire/client/records.hpp"
#include "kwire/client/types.hpp"
#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::client {

/// How a record is acknowledged (Java's AcknowledgeType; the wire codes of
/// ShareFetch/ShareAcknowledge). `renew` (KIP-1222, Kafka 4.2+: ShareAcknowledge
/// v2) is not an end: it asks the broker for a fresh acquisition lock on a
/// record still being worked on. Only in explicit mode. It is sent with the
/// next poll (a ShareAcknowledge before the fetch) or commit; once the broker
/// confirms it, the next poll hands the record out again (same offset and
/// delivery count) to be acknowledged anew. A renewal the broker refuses
/// (INVALID_RECORD_STATE: the lock had ended) reaches the callbacks and the
/// record is not handed out again. close() releases records being renewed.
enum class AcknowledgeType : std::int8_t { accept = 1, release = 2, reject = 3, renew = 4 };

/// "accept", "release", "reject" or "renew" (Java's AcknowledgeType names,
/// lower case); nullopt for anything else.
inline std::optional<AcknowledgeType> parse_acknowledge_type(std::string_view name) {
  if (name == "accept") return AcknowledgeType::accept;
  if (name == "release") return AcknowledgeType::release;
  if (name == "reject") return AcknowledgeType::reject;
  if (name == "renew") return AcknowledgeType::renew;
  return std::nullopt;
}

/// One record of a share fetch; owns its bytes.
struct ShareRecord {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp = -1;
  std::optional<protocol::Bytes> key;    // nullopt: null key
  std::optional<protocol::Bytes> value;  // nullopt: null value
  std::vector<protocol::RecordHeader> headers;
  std::int16_t delivery_count = 1;  // 1 on the first delivery
};

/// The ConsumerRecord view of `record` (pointing into it, valid while it
/// lives), for code written for ConsumerRecord (formatters, Arrow builders).
/// A share fetch does not say how a timestamp was set: CreateTime (0) is
/// reported, as Kafka's console share consumer does.
inline ConsumerRecord consumer_record_view(const ShareRecord& record) {
  ConsumerRecord c;
  c.topic = &record.topic;
  c.partition = record.partition;
  c.offset = record.offset;
  c.timestamp = record.timestamp;
  c.timestamp_type = 0;
  if (record.key) c.key = protocol::ByteSpan(*record.key);
  if (record.value) c.value = protocol::ByteSpan(*record.value);
  c.headers = &record.headers;
  return c;
}

/// acknowledge() of a record that no poll handed out (or that is already
/// acknowledged), or a poll in explicit mode while records of the previous
/// poll are unacknowledged. Java: IllegalStateException.
class ShareAcknowledgementModeError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// The outcome of acknowledgements, per partition: 0 or the error code the
/// broker answered (INVALID_RECORD_STATE, ...), -1 when the request was lost.
using AcknowledgementResults = std::map<TopicPartition, std::int16_t>;

/// The outcome of one partition's acknowledgements in one request (a
/// ShareFetch that carried them or a ShareAcknowledge): the offsets
/// acknowledged (accepted, released or rejected; ascending) and 0 or the
/// error code, as in AcknowledgementResults.
struct AcknowledgementCommit {
  TopicPartition partition;
  std::vector<std::int64_t> offsets;
  std::int16_t error_code = 0;
};

class ShareConsumer {
 public:
  explicit ShareConsumer(const std::map<std::string, std::string>& properties);
  ~ShareConsumer();  // close() if not closed yet
  ShareConsumer(const ShareConsumer&) = delete;
  ShareConsumer& operator=(const ShareConsumer&) = delete;

  /// The topics to read (replaces the previous subscription).
  void subscribe(const std::vector<std::string>& topics);
  void unsubscribe();
  /// Acquired records, waiting up to `timeout` for some (at most
  /// max.poll.records). In implicit mode, first accepts the previous poll's.
  std::vector<ShareRecord> poll(std::chrono::milliseconds timeout);
  /// Marks a record of the last poll; sent with the next poll or commit.
  /// `renew` in implicit mode raises ShareAcknowledgementModeError, and
  /// KafkaError UNSUPPORTED_VERSION when the partition's leader speaks
  /// ShareAcknowledge below v2 (Kafka 4.1).
  void acknowledge(const ShareRecord& record, AcknowledgeType type = AcknowledgeType::accept);
  /// Sends the acknowledgements not yet sent (ShareAcknowledge) and waits for
  /// the answers, up to `timeout`.
  AcknowledgementResults commit_sync(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  /// Sends them without waiting; the answers reach the callback from a later
  /// poll, commit or close.
  void commit_async();
  /// Called with the results of every acknowledgement request.
  void set_acknowledgement_commit_callback(std::function<void(const AcknowledgementResults&)> callback);
  /// Called once per partition of every acknowledgement request whose
  /// outcome is known, with the offsets it acknowledged (Java's
  /// AcknowledgementCommitCallback.onComplete). Both callbacks run on the
  /// thread that calls poll, commit_sync, commit_async or close, inside that
  /// call (never on the heartbeat thread). They must not throw: an exception
  /// would leave that call midway, with answers unread.
  void set_acknowledgement_offsets_callback(std::function<void(const AcknowledgementCommit&)> callback);
  /// Accepts what implicit mode owes, sends the remaining acknowledgements,
  /// closes the share sessions and leaves the group.
  void close(std::chrono::milliseconds timeout = std::chrono::seconds(30));

  /// The lock duration the brokers reported (ms; 0 before the first fetch).
  std::int32_t acquisition_lock_ms() const noexcept;
  /// The member id this consumer chose (a random UUID, as Java's).
  const std::string& member_id() const noexcept;
  /// The partitions the coordinator currently assigns to this member.
  std::vector<TopicPartition> assignment() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kwire::client

// Coordinator lookup for consumer groups and transactional ids, and the loop
// every request to a coordinator runs in (internal).
//
// A group's coordinator is the leader of its __consumer_offsets partition, a
// transactional id's the leader of its __transaction_state partition; any
// broker names it in a FindCoordinator answer (key type 0: group, 1:
// transaction; v4+ asks with a list of keys, KIP-699). Coordinators caches the
// answer per (key type, key) until a request to that node shows that the
// coordinator moved. The one rule for that, as the Java client's
// AbstractCoordinator, CoordinatorRequestManager and TransactionManager
// apply it:
//   NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE    forget the node, look it up
//                                                 again, retry after back-off
//   COORDINATOR_LOAD_IN_PROGRESS                  same node, retry after back-off
//   a lost connection, a request time-out         forget the node, look it up
//                                                 again, retry after back-off
// The back-off is the client's one rule (retry_loop.hpp, backoff.hpp).
//
// Thread-safe: a group member's application thread and heartbeat thread share
// one Coordinators (each sends over its own KafkaClient).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "retry_loop.hpp"

namespace kwire::client {

class Connection;

/// FindCoordinator's key type.
enum class CoordinatorType : std::int8_t { group = 0, transaction = 1 };

/// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE: the coordinator moved (or
/// is not elected yet); look it up again.
bool coordinator_moved(std::int16_t code);
/// coordinator_moved() or COORDINATOR_LOAD_IN_PROGRESS: retry after back-off.
bool coordinator_retriable(std::int16_t code);

class Coordinators {
 public:
  /// The coordinator's node id: cached, else asked with FindCoordinator over
  /// `via` (any broker), retrying the codes above and lost connections on
  /// `loop` (its back-off and deadline). Throws TimeoutError when the deadline
  /// passes (naming the last error), GroupAuthorizationError
  /// (GROUP_AUTHORIZATION_FAILED), KafkaError for the other codes
  /// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED...), UnsupportedVersionError
  /// (transactional ids need FindCoordinator v1+, Kafka 0.11).
  std::int32_t lookup(KafkaClient& via, CoordinatorType type, const std::string& key, RetryLoop& loop);
  /// One FindCoordinator at most (none when cached), for a caller that must
  /// not wait: the node, or nullopt with `code` set to the retriable error
  /// (-1: no answer). Throws as lookup() for the other codes.
  std::optional<std::int32_t> try_lookup(KafkaClient& via, CoordinatorType type, const std::string& key,
                                         Deadline deadline, std::int16_t& code);
  std::optional<std::int32_t> cached(CoordinatorType type, const std::string& key) const;
  /// The rule for an error code a coordinator answered: forgets the node when
  /// the coordinator moved; true when the request is to be retried
  /// (coordinator_retriable()).
  bool answered(CoordinatorType type, const std::string& key, std::int16_t code);
  /// A request to the coordinator lost its connection or timed out: forget it.
  void forget(CoordinatorType type, const std::string& key);
  /// FindCoordinator requests sent so far.
  std::uint64_t lookups() const;

 private:
  using Key = std::pair<CoordinatorType, std::string>;
  mutable std::mutex mu_;
  std::map<Key, std::int32_t> nodes_;
  std::uint64_t lookups_ = 0;
};

/// What one attempt at a coordinator request came to.
struct CoordinatorReply {
  enum class Next { done, back_off, at_once };
  Next next = Next::done;
  std::int16_t code = 0;
  static CoordinatorReply done() { return {}; }
  /// Retry after back-off (coordinator codes are also applied to the cache).
  static CoordinatorReply retry(std::int16_t code) { return {Next::back_off, code}; }
  /// Retry at once (answers the Java client retries without waiting).
  static CoordinatorReply retry_at_once(std::int16_t code) { return {Next::at_once, code}; }
};

/// Sends `attempt(Connection&)` to the coordinator of (type, key) until it
/// replies done: the coordinator from `coordinators` (looked up as needed),
/// the rule above applied to the codes it replies and to lost connections and
/// time-outs, the back-off and deadline of `loop` between attempts. Errors the
/// attempt throws (other than ConnectionError and TimeoutError) end the call;
/// TimeoutError is thrown when the deadline passes, naming the last error.
template <class F>
void call_coordinator(KafkaClient& via, Coordinators& coordinators, CoordinatorType type, const std::string& key,
                      RetryLoop& loop, F&& attempt) {
  for (;;) {
    const std::int32_t node = coordinators.lookup(via, type, key, loop);
    CoordinatorReply reply;
    try {
      reply = attempt(via.broker(node));
    } catch (const ConnectionError&) {
      reply = CoordinatorReply::retry(-1);
    } catch (const TimeoutError&) {
      reply = CoordinatorReply::retry(-1);
    }
    if (reply.next == CoordinatorReply::Next::done) return;
    if (reply.code < 0) coordinators.forget(type, key);
    else coordinators.answered(type, key, reply.code);
    if (reply.next == CoordinatorReply::Next::at_once) loop.again(reply.code);
    else loop.back_off(reply.code);
  }
}

}  // namespace kwire::client

// group.protocol=consumer (KIP-848): the member side of
// ConsumerGroupHeartbeat. The broker assigns; the member reconciles: it
// revokes what it lost first (commit, listener, acknowledge by heartbeating
// without those partitions), then takes what it gained at their committed
// offsets. Errors as the Java consumer's AbstractHeartbeatRequestManager.
#include <algorithm>
#include <iterator>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "group_coordinator.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/fetcher.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }

// v1: the member names itself with a random UUID in base64url, 22 characters (KIP-1082).
std::string random_member_id() {
  std::random_device rd;
  Uuid u;
  for (auto& b : u.bytes) b = static_cast<std::uint8_t>(rd());
  return u.to_base64();
}

std::vector<TopicPartition> minus(const std::vector<TopicPartition>& a, const std::vector<TopicPartition>& b) {
  std::vector<TopicPartition> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

ConsumerGroupHeartbeatRequest GroupCoordinator::consumer_heartbeat_request(const ClusterMetadata& md,
                                                                           std::int16_t version) {
  if (member_id_.empty() && version >= 1) member_id_ = random_member_id();
  // Every field is sent each time (null would mean "unchanged"): simple,
  // and always right after an error.
  ConsumerGroupHeartbeatRequest req;
  req.group_id = config_.group_id;
  req.member_id = member_id_;
  req.member_epoch = generation_ < 0 ? 0 : generation_;
  req.instance_id = config_.group_instance_id;
  req.rebalance_timeout_ms = config_.max_poll_interval_ms;
  req.subscribed_topic_names = topics_;
  req.server_assignor = config_.group_remote_assignor;
  req.topic_partitions.emplace();
  for (auto& tp : owned_) {
    auto* t = md.topic(tp.topic);
    if (!t) continue;
    if (req.topic_partitions->empty() || !(req.topic_partitions->back().topic_id == t->topic_id))
      req.topic_partitions->push_back({t->topic_id, {}, {}});
    req.topic_partitions->back().partitions.push_back(tp.partition);
  }
  return req;
}

void GroupCoordinator::cache_topic_ids(KafkaClient& via, const std::vector<TopicPartition>& owned) {
  std::vector<std::string> missing;
  for (auto& tp : owned) {
    const auto* t = via.cached_metadata().topic(tp.topic);
    if ((!t || t->topic_id.is_zero()) && (missing.empty() || missing.back() != tp.topic)) missing.push_back(tp.topic);
  }
  if (!missing.empty()) via.metadata(missing);
}

void GroupCoordinator::consumer_heartbeat() {
  if (!heartbeat_once(client_, nullptr)) return;
  handle_lost();
  take_pending_assignment();
}

void GroupCoordinator::consumer_heartbeat_answered(const ConsumerGroupHeartbeatResponse& r, std::int16_t v) {
  const std::int16_t code = r.error_code;
  if (is(code, ErrorCode::fenced_member_epoch) || is(code, ErrorCode::unknown_member_id)) {
    // Fenced: everything owned is lost; rejoin at epoch 0 (v0: with a new id).
    lost_pending_ = true;
    pending_assignment_.reset();
    generation_ = -1;
    if (v == 0) member_id_.clear();
    next_heartbeat_ = timer_now();
    return;
  }
  if (is(code, ErrorCode::not_coordinator) || is(code, ErrorCode::coordinator_not_available)) {
    coordinator_lost();
    return;
  }
  if (is(code, ErrorCode::coordinator_load_in_progress)) return;
  if (is(code, ErrorCode::unsupported_version))
    throw UnsupportedVersionError(
        fmt::format("group {}: the broker does not serve group.protocol=consumer (KIP-848; Kafka 4.0+, or 3.8/3.9 with "
                    "group.coordinator.rebalance.protocols including consumer): {}",
                    config_.group_id, r.error_message.value_or("UNSUPPORTED_VERSION")));
  if (code) {
    if (r.error_message)
      throw KafkaError(code, fmt::format("ConsumerGroupHeartbeat for group {}: {}: {}", config_.group_id,
                                         error_name(code), *r.error_message));
    throw_group_error(config_.group_id, "ConsumerGroupHeartbeat", code);
  }
  if (r.member_id && !r.member_id->empty()) member_id_ = *r.member_id;
  generation_ = r.member_epoch;
  need_join_ = false;
  next_heartbeat_ = timer_now() + std::chrono::milliseconds(std::max(r.heartbeat_interval_ms, 100));
  if (next_auto_commit_ == Clock::time_point{})
    next_auto_commit_ = timer_now() + std::chrono::milliseconds(config_.auto_commit_interval_ms);
  if (r.assignment) pending_assignment_ = *r.assignment;
}

void GroupCoordinator::take_pending_assignment() {
  if (!pending_assignment_) return;
  const auto assignment = std::move(*pending_assignment_);
  pending_assignment_.reset();
  std::vector<TopicPartition> target;
  bool unresolved = false;
  for (auto& t : assignment.topic_partitions) {
    const std::string* name = client_.fetch_cluster().topic_name(t.topic_id);
    if (!name) {
      client_.fetch_cluster().refresh_metadata(topics_);
      name = client_.fetch_cluster().topic_name(t.topic_id);
    }
    if (!name) {
      unresolved = true;  // a topic this member cannot see yet: taken at a later heartbeat
      continue;
    }
    for (auto p : t.partitions) target.push_back({*name, p});
  }
  std::sort(target.begin(), target.end());
  reconcile(target);
  if (unresolved) next_heartbeat_ = std::min(next_heartbeat_, timer_now() + std::chrono::milliseconds(500));
}

void GroupCoordinator::reconcile(const std::vector<TopicPartition>& target) {
  const auto revoked = minus(owned_, target);
  const auto added = minus(target, owned_);
  if (!revoked.empty()) {
    commit_before_revoke(revoked);
    if (listener_) listener_->on_partitions_revoked(revoked);
    owned_ = minus(owned_, revoked);
    host_.assign(owned_, {});
  }
  if (!added.empty()) {
    std::map<TopicPartition, OffsetAndMetadata> start;
    for (auto& [tp, om] :
         committed(added, Clock::now() + std::chrono::milliseconds(client_.config().default_api_timeout_ms)))
      if (om) start[tp] = *om;
    owned_ = target;
    host_.assign(owned_, start);
    if (listener_) listener_->on_partitions_assigned(added);
  }
  if (!revoked.empty() || !added.empty()) {
    ++rebalances_;
    next_heartbeat_ = timer_now();  // acknowledge at once
  }
}

void GroupCoordinator::consumer_leave(Deadline deadline) {
  const auto node = cached_coordinator();
  if (!member_id_.empty() && generation_ >= 0 && node && Clock::now() < deadline) {
    try {
      Connection& c = client_.broker(*node);
      ConsumerGroupHeartbeatRequest req;
      req.group_id = config_.group_id;
      req.member_id = member_id_;
      req.instance_id = config_.group_instance_id;
      // A static member leaves with -2: its assignment waits for its return.
      req.member_epoch = config_.group_instance_id ? ConsumerGroupHeartbeatRequest::kStaticLeaveEpoch
                                                   : ConsumerGroupHeartbeatRequest::kLeaveEpoch;
      const std::int16_t v = c.version_for<ConsumerGroupHeartbeatRequest>();
      c.receive<ConsumerGroupHeartbeatResponse>(c.send(req, v), v, std::min(deadline, client_.default_deadline()));
    } catch (const ClientError&) {
    }
  }
  generation_ = -1;
  need_join_ = true;
}

}  // namespace kwire::client

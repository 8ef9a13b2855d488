// Classic group membership: coordinator discovery, JoinGroup / SyncGroup
// (the leader runs the assignor), heartbeats, leaving, and the rebalance
// listener calls. Error handling follows the Java consumer's
// AbstractCoordinator / ConsumerCoordinator (see group_coordinator.hpp).
#include "group_coordinator.hpp"
#include "retry_loop.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }

std::vector<TopicPartition> sorted(std::vector<TopicPartition> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<TopicPartition> minus(const std::vector<TopicPartition>& a, const std::vector<TopicPartition>& b) {
  std::vector<TopicPartition> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<ConsumerProtocolTopicPartition> by_topic(const std::vector<TopicPartition>& tps) {
  std::vector<ConsumerProtocolTopicPartition> out;
  for (auto& tp : tps) {
    if (out.empty() || out.back().topic != tp.topic) out.push_back({tp.topic, {}, {}});
    out.back().partitions.push_back(tp.partition);
  }
  return out;
}

std::vector<TopicPartition> flatten(const std::vector<ConsumerProtocolTopicPartition>& tps) {
  std::vector<TopicPartition> out;
  for (auto& t : tps)
    for (auto p : t.partitions) out.push_back({t.topic, p});
  return sorted(std::move(out));
}

}  // namespace

[[noreturn]] void throw_group_error(const std::string& group, const char* api, std::int16_t code) {
  const std::string what = fmt::format("{} for group {}: {}", api, group, error_name(code));
  if (is(code, ErrorCode::group_authorization_failed)) throw GroupAuthorizationError(code, what);
  if (is(code, ErrorCode::fenced_instance_id)) throw FencedInstanceIdError(code, what);
  throw KafkaError(code, what);
}

GroupCoordinator::GroupCoordinator(KafkaClient& client, GroupConfig config, Host& host)
    : client_(client),
      config_(std::move(config)),
      host_(host),
      timers_(config_.timer_clock ? config_.timer_clock : steady_timer_clock()) {
  if (config_.group_id.empty()) throw ConfigError("group.id is required to subscribe or commit");
}

Clock::duration GroupCoordinator::real_wait(Clock::time_point timer_time) const {
  Clock::duration wait = timer_time - timers_->now();
  if (wait < Clock::duration::zero()) wait = Clock::duration::zero();
  if (const auto cap = timers_->recheck_after()) wait = std::min<Clock::duration>(wait, *cap);
  return wait;
}

GroupCoordinator::~GroupCoordinator() { stop_background(); }

void GroupCoordinator::subscribe(std::vector<std::string> topics, RebalanceListener* listener) {
  std::lock_guard lock(mu_);
  std::sort(topics.begin(), topics.end());
  topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
  if (topics.empty()) {
    unsubscribe();
    return;
  }
  if (subscribed_ && topics == topics_ && !pattern_) {
    listener_ = listener;
    return;
  }
  listener_ = listener;
  topics_ = std::move(topics);
  pattern_.reset();
  subscribed_ = true;
  need_join_ = true;
}

void GroupCoordinator::subscribe_pattern(const std::string& pattern, RebalanceListener* listener) {
  std::lock_guard lock(mu_);
  try {
    pattern_ = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError(fmt::format("invalid subscription pattern '{}': {}", pattern, e.what()));
  }
  listener_ = listener;
  subscribed_ = true;
  topics_ = current_topics();
  pattern_checked_ = timer_now();
  need_join_ = true;
}

void GroupCoordinator::unsubscribe() {
  std::lock_guard lock(mu_);
  if (!subscribed_) return;
  maybe_auto_commit(true);
  revoke_all();
  leave("the consumer unsubscribed", client_.default_deadline());
  subscribed_ = false;
  topics_.clear();
  pattern_.reset();
}

std::vector<std::string> GroupCoordinator::current_topics() {
  if (!pattern_) return topics_;
  auto md = client_.metadata(std::nullopt);
  std::vector<std::string> out;
  for (auto& t : md.topics)
    if (!t.is_internal && t.error_code == 0 && std::regex_match(t.name, *pattern_)) out.push_back(t.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::int32_t GroupCoordinator::coordinator(Deadline deadline) {
  RetryLoop loop(client_.config(), deadline, fmt::format("FindCoordinator for group {}", config_.group_id));
  return coordinators_.lookup(client_, CoordinatorType::group, config_.group_id, loop);
}

void GroupCoordinator::coordinator_lost() { coordinators_.forget(CoordinatorType::group, config_.group_id); }

bool GroupCoordinator::cooperative() const {
  return protocol_ == assignor_name(Assignor::cooperative_sticky) ||
         (protocol_.empty() && config_.assignors.front() == Assignor::cooperative_sticky);
}

Bytes GroupCoordinator::subscription_metadata(Assignor a) {
  ConsumerProtocolSubscription s;
  s.topics = topics_;
  if (a == Assignor::cooperative_sticky) {
    s.owned_partitions = by_topic(owned_);
    s.generation_id = generation_;
  }
  return encode_consumer_subscription(s, 2);
}

std::vector<SyncGroupRequest::SyncGroupRequestAssignment> GroupCoordinator::lead(
    const std::string& protocol, const std::vector<JoinGroupResponse::JoinGroupResponseMember>& members) {
  Assignor assignor = Assignor::range;
  bool known = false;
  for (auto a : config_.assignors)
    if (protocol == assignor_name(a)) {
      assignor = a;
      known = true;
    }
  if (!known)
    throw KafkaError(
        static_cast<std::int16_t>(ErrorCode::inconsistent_group_protocol),
        fmt::format("group {} chose assignor '{}', which this member does not have", config_.group_id, protocol));
  std::vector<MemberSubscription> subs;
  std::set<std::string> topics;
  for (auto& m : members) {
    ConsumerProtocolSubscription s;
    try {
      decode_consumer_subscription(ByteSpan(m.metadata), s);
    } catch (const ProtocolError&) {
      s = {};  // a member whose subscription cannot be read gets nothing
    }
    MemberSubscription ms;
    ms.member_id = m.member_id;
    ms.group_instance_id = m.group_instance_id;
    ms.topics = s.topics;
    ms.owned = flatten(s.owned_partitions);
    ms.generation = s.generation_id;
    topics.insert(s.topics.begin(), s.topics.end());
    subs.push_back(std::move(ms));
  }
  std::map<std::string, std::int32_t> counts;
  if (!topics.empty()) {
    auto md = client_.metadata(std::vector<std::string>(topics.begin(), topics.end()));
    for (auto& t : md.topics)
      if (t.error_code == 0 && !t.partitions.empty()) counts[t.name] = static_cast<std::int32_t>(t.partitions.size());
  }
  auto plan = assign_partitions(assignor, subs, counts);
  std::vector<SyncGroupRequest::SyncGroupRequestAssignment> out;
  for (auto& [member, tps] : plan) {
    ConsumerProtocolAssignment a;
    a.assigned_partitions = by_topic(sorted(tps));
    out.push_back({member, encode_consumer_assignment(a, 0), {}});
  }
  return out;
}

void GroupCoordinator::join(Deadline deadline) {
  if (generation_ < 0) {
    // Fenced or dropped from the group: the partitions may be someone else's.
    lose_partitions();
  } else if (!cooperative()) {
    // Eager: commit and give everything up before joining.
    maybe_auto_commit(true);
    if (listener_) listener_->on_partitions_revoked(owned_);
    owned_.clear();
    host_.assign({}, {});
  }
  topics_ = current_topics();
  RetryLoop loop(client_.config(), deadline, fmt::format("joining group {}", config_.group_id));
  for (;;) {
    const auto reply = join_round(deadline);
    if (reply.next == CoordinatorReply::Next::done) return;
    if (reply.next == CoordinatorReply::Next::at_once) loop.again(reply.code);
    else loop.back_off(reply.code);
  }
}

CoordinatorReply GroupCoordinator::join_round(Deadline deadline) {
  const std::int32_t node = coordinator(deadline);
  // The broker answers JoinGroup when the rebalance completes (up to the
  // rebalance timeout, max.poll.interval.ms), but never later than `deadline`.
  const auto rebalance_wait =
      std::min(deadline, Clock::now() + std::chrono::milliseconds(config_.max_poll_interval_ms) +
                             std::chrono::milliseconds(client_.config().request_timeout_ms));
  try {
    Connection& c = client_.broker(node);
    JoinGroupRequest req;
    req.group_id = config_.group_id;
    req.session_timeout_ms = config_.session_timeout_ms;
    req.rebalance_timeout_ms = config_.max_poll_interval_ms;
    req.member_id = member_id_;
    req.group_instance_id = config_.group_instance_id;
    req.protocol_type = "consumer";
    for (auto a : config_.assignors) req.protocols.push_back({assignor_name(a), subscription_metadata(a), {}});
    req.reason = "rejoining the group";
    const std::int16_t v = c.version_for<JoinGroupRequest>();
    if (config_.group_instance_id && v < 5)
      throw UnsupportedVersionError("group.instance.id needs JoinGroup v5 (Kafka 2.3+)");
    auto r = c.receive<JoinGroupResponse>(c.send(req, v), v, rebalance_wait).body;
    const std::int16_t code = r.error_code;
    // As the Java client: the member-id handshake and a rebalance under way
    // are answered at once; the coordinator moving or loading after a back-off.
    if (is(code, ErrorCode::member_id_required)) {
      member_id_ = r.member_id;
      return CoordinatorReply::retry_at_once(code);
    }
    if (is(code, ErrorCode::unknown_member_id)) {
      member_id_.clear();
      generation_ = -1;
      return CoordinatorReply::retry_at_once(code);
    }
    if (is(code, ErrorCode::rebalance_in_progress) || is(code, ErrorCode::illegal_generation))
      return CoordinatorReply::retry_at_once(code);
    if (coordinator_retriable(code)) {
      if (coordinator_moved(code)) coordinator_lost();
      return CoordinatorReply::retry(code);
    }
    if (code) throw_group_error(config_.group_id, "JoinGroup", code);
    member_id_ = r.member_id;
    generation_ = r.generation_id;
    protocol_ = r.protocol_name.value_or("");

    SyncGroupRequest s;
    s.group_id = config_.group_id;
    s.generation_id = generation_;
    s.member_id = member_id_;
    s.group_instance_id = config_.group_instance_id;
    s.protocol_type = "consumer";
    s.protocol_name = protocol_;
    if (r.leader == r.member_id && !r.skip_assignment) s.assignments = lead(protocol_, r.members);
    const std::int16_t sv = c.version_for<SyncGroupRequest>();
    auto sr = c.receive<SyncGroupResponse>(c.send(s, sv), sv, rebalance_wait).body;
    const std::int16_t scode = sr.error_code;
    if (is(scode, ErrorCode::rebalance_in_progress)) return CoordinatorReply::retry_at_once(scode);
    if (is(scode, ErrorCode::unknown_member_id) || is(scode, ErrorCode::illegal_generation)) {
      if (is(scode, ErrorCode::unknown_member_id)) member_id_.clear();
      generation_ = -1;
      return CoordinatorReply::retry_at_once(scode);
    }
    if (coordinator_moved(scode)) {
      coordinator_lost();
      return CoordinatorReply::retry(scode);
    }
    if (scode) throw_group_error(config_.group_id, "SyncGroup", scode);
    ConsumerProtocolAssignment a;
    try {
      decode_consumer_assignment(ByteSpan(sr.assignment), a);
    } catch (const ProtocolError& e) {
      throw MalformedResponseError(fmt::format("group {}: unreadable assignment: {}", config_.group_id, e.what()));
    }
    take_assignment(flatten(a.assigned_partitions));
    return CoordinatorReply::done();
  } catch (const ConnectionError&) {
    coordinator_lost();
  } catch (const TimeoutError&) {
    coordinator_lost();
  }
  return CoordinatorReply::retry(-1);
}

void GroupCoordinator::commit_before_revoke(const std::vector<TopicPartition>& revoked) {
  if (!config_.enable_auto_commit) return;
  std::map<TopicPartition, OffsetAndMetadata> offsets;
  for (auto& [tp, om] : host_.consumed())
    if (std::binary_search(revoked.begin(), revoked.end(), tp)) offsets[tp] = om;
  if (offsets.empty()) return;
  try {
    commit_sync(offsets, client_.default_deadline());
  } catch (const ClientError& e) {
    std::fprintf(stderr, "WARN group %s: committing revoked partitions failed: %s\n", config_.group_id.c_str(),
                 e.what());
  }
}

void GroupCoordinator::take_assignment(const std::vector<TopicPartition>& assigned) {
  const auto revoked = minus(owned_, assigned);
  const auto added = minus(assigned, owned_);
  if (!revoked.empty()) {
    // Cooperative: partitions moving away are committed and revoked; a
    // second rebalance hands them to their new owner.
    commit_before_revoke(revoked);
    if (listener_) listener_->on_partitions_revoked(revoked);
  }
  std::map<TopicPartition, OffsetAndMetadata> start;
  for (auto& [tp, om] :
       committed(added, Clock::now() + std::chrono::milliseconds(client_.config().default_api_timeout_ms)))
    if (om) start[tp] = *om;
  owned_ = assigned;
  host_.assign(owned_, start);
  need_join_ = cooperative() && !revoked.empty();
  ++rebalances_;
  const auto now = timer_now();
  next_heartbeat_ = now + std::chrono::milliseconds(config_.heartbeat_interval_ms);
  if (next_auto_commit_ == Clock::time_point{})
    next_auto_commit_ = now + std::chrono::milliseconds(config_.auto_commit_interval_ms);
  if (listener_) listener_->on_partitions_assigned(cooperative() ? added : owned_);
}

void GroupCoordinator::lose_partitions() {
  auto lost = owned_;
  owned_.clear();
  host_.assign({}, {});
  if (!lost.empty() && listener_) listener_->on_partitions_lost(lost);
}

void GroupCoordinator::revoke_all() {
  auto revoked = owned_;
  owned_.clear();
  host_.assign({}, {});
  if (!revoked.empty() && listener_) listener_->on_partitions_revoked(revoked);
}

void GroupCoordinator::leave(const char* reason, Deadline deadline) {
  if (consumer_protocol()) {
    consumer_leave(deadline);
    return;
  }
  // Static members do not leave (KIP-345): a restart within the session
  // timeout takes the assignment back without a rebalance.
  const auto node = cached_coordinator();
  if (!config_.group_instance_id && !member_id_.empty() && node && Clock::now() < deadline) {
    try {
      Connection& c = client_.broker(*node);
      LeaveGroupRequest req;
      req.group_id = config_.group_id;
      req.member_id = member_id_;
      req.members.push_back({member_id_, std::nullopt, std::string(reason), {}});
      const std::int16_t v = c.version_for<LeaveGroupRequest>();
      c.receive<LeaveGroupResponse>(c.send(req, v), v, std::min(deadline, client_.default_deadline()));
    } catch (const ClientError&) {
      // Leaving is best effort: the session timeout removes the member anyway.
    }
  }
  if (!config_.group_instance_id) member_id_.clear();
  generation_ = -1;
  need_join_ = true;
}

Clock::time_point GroupCoordinator::poll() {
  std::unique_lock lock(mu_);
  auto now = timer_now();
  complete_async(false);
  if (!subscribed_) return Clock::now() + std::chrono::hours(1);
  if (background_error_) std::rethrow_exception(std::exchange(background_error_, nullptr));
  handle_lost();
  if (!background_.joinable()) start_background();
  if (last_poll_ != Clock::time_point{} && generation_ >= 0 &&
      now - last_poll_ > std::chrono::milliseconds(config_.max_poll_interval_ms)) {
    // The application stopped polling for longer than max.poll.interval.ms:
    // as the Java consumer, give the partitions up and leave; rejoin now.
    lose_partitions();
    leave("the consumer poll timeout has expired", client_.default_deadline());
  }
  last_poll_ = now;
  if (pattern_ && now - pattern_checked_ >= std::chrono::milliseconds(client_.config().metadata_max_age_ms)) {
    pattern_checked_ = now;
    if (current_topics() != topics_) need_join_ = true;
  }
  if (consumer_protocol()) {
    take_pending_assignment();
    // Joining is poll()'s (its answer is acted on at once); every other
    // heartbeat is the background thread's, woken here (a reconciliation
    // asks for an acknowledgement at once).
    if (need_join_ || generation_ < 0) consumer_heartbeat();
    maybe_auto_commit(false);
    wake_.notify_all();
    auto due = next_heartbeat_;
    if (config_.enable_auto_commit) due = std::min(due, next_auto_commit_);
    return Clock::now() + real_wait(due);
  }
  if (need_join_ || generation_ < 0) {
    join(Clock::now() + std::chrono::milliseconds(config_.max_poll_interval_ms) +
         std::chrono::milliseconds(client_.config().default_api_timeout_ms));
    now = timer_now();
    last_poll_ = now;  // the rebalance was part of this poll
  }
  // Heartbeats are the background thread's; poll() acts on what they
  // recorded (above: lost partitions, a rejoin, a fatal error).
  if (need_join_) return Clock::now();
  maybe_auto_commit(false);
  wake_.notify_all();  // the background thread's timers may have moved
  auto due = next_heartbeat_;
  if (config_.enable_auto_commit) due = std::min(due, next_auto_commit_);
  return Clock::now() + real_wait(due);
}

void GroupCoordinator::close(Deadline deadline) {
  stop_background();
  std::lock_guard lock(mu_);
  // Every request of the close (async commits still unanswered, the final
  // commit, the leave) ends by the caller's deadline.
  const auto bound = client_.cap_deadlines(deadline);
  complete_async(true);
  if (subscribed_) {
    handle_lost();
    if (generation_ >= 0) {
      maybe_auto_commit(true, deadline);
      revoke_all();
    }
    leave("the consumer is being closed", deadline);
    subscribed_ = false;
  }
}

}  // namespace kwire::client

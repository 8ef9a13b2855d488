// The group member's background thread (see group_coordinator.hpp): keeps
// heartbeating while the application processes between polls, and leaves
// the group when poll() stays away longer than max.poll.interval.ms. It
// changes the group state only under the mutex and never calls the
// rebalance listener or touches the Fetcher: the next poll() does that.
#include <cstdio>

#include <fmt/format.h>

#include "group_coordinator.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {
bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }
}  // namespace

void GroupCoordinator::handle_lost() {
  if (!lost_pending_) return;
  lost_pending_ = false;
  lose_partitions();
}

void GroupCoordinator::start_background() {
  stopping_ = false;
  if (!background_client_) background_client_ = std::make_unique<KafkaClient>(client_.config());
  background_ = std::thread([this] { background_loop(); });
}

void GroupCoordinator::stop_background() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  // A heartbeat in flight to a coordinator that stopped answering would hold
  // the join for up to request.timeout.ms: end its wait now.
  if (background_client_) background_client_->interrupt();
  if (background_.joinable()) background_.join();
  background_client_.reset();  // interrupted for good: the next start makes a new one
}

void GroupCoordinator::background_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = timer_now();
    auto wake = now + std::chrono::seconds(1);
    if (subscribed_ && generation_ >= 0 && !background_error_ && last_poll_ != Clock::time_point{}) {
      const auto poll_expiry = last_poll_ + std::chrono::milliseconds(config_.max_poll_interval_ms);
      if (now >= poll_expiry) {
        background_leave(lock);
        continue;
      }
      if (now >= next_heartbeat_) {
        background_heartbeat(lock);
        continue;
      }
      wake = std::min({wake, next_heartbeat_, poll_expiry});
    }
    wake_.wait_for(lock, real_wait(wake));
  }
}

void GroupCoordinator::background_heartbeat(std::unique_lock<std::recursive_mutex>& lock) {
  ++background_heartbeats_;
  try {
    heartbeat_once(*background_client_, &lock);
  } catch (const ClientError&) {
    background_error_ = std::current_exception();  // rethrown by the next poll()
  }
}

bool GroupCoordinator::heartbeat_once(KafkaClient& via, std::unique_lock<std::recursive_mutex>* unlocked) {
  HeartbeatAnswer a;
  a.kip848 = consumer_protocol();
  // Claimed: no other heartbeat is sent before this one is answered or given
  // up (the answer may move it).
  next_heartbeat_ = timer_now() + std::chrono::milliseconds(a.kip848 ? client_.config().retry_backoff_ms
                                                                     : config_.heartbeat_interval_ms);
  std::string member = member_id_;
  const std::int32_t generation = generation_;
  const auto owned = owned_;
  std::optional<std::int32_t> node = cached_coordinator();
  // The same member at the same epoch: an answer still applies.
  auto same = [&] { return !stopping_ && subscribed_ && member_id_ == member && generation_ == generation; };
  auto unlock = [&] {
    if (unlocked && unlocked->owns_lock()) unlocked->unlock();
  };
  auto relock = [&] {
    if (unlocked && !unlocked->owns_lock()) unlocked->lock();
  };

  unlock();
  try {
    if (!node) {
      std::int16_t find_code = -1;
      node = coordinators_.try_lookup(via, CoordinatorType::group, config_.group_id, via.default_deadline(), find_code);
    }
    if (node) {
      Connection& c = via.broker(*node);
      if (!a.kip848) {
        HeartbeatRequest req;
        req.group_id = config_.group_id;
        req.generation_id = generation;
        req.member_id = member;
        req.group_instance_id = config_.group_instance_id;
        a.version = c.version_for<HeartbeatRequest>();
        a.code =
            c.receive<HeartbeatResponse>(c.send(req, a.version), a.version, via.default_deadline()).body.error_code;
      } else {
        a.version = c.version_for<ConsumerGroupHeartbeatRequest>();
        cache_topic_ids(via, owned);
        relock();
        if (!same()) return false;
        auto req = consumer_heartbeat_request(via.cached_metadata(), a.version);
        member = member_id_;  // a joining member names itself (KIP-1082)
        unlock();
        a.answer =
            c.receive<ConsumerGroupHeartbeatResponse>(c.send(req, a.version), a.version, via.default_deadline()).body;
      }
      a.reached = true;
    }
  } catch (const ConnectionError&) {
    a.reached = false;
  } catch (const TimeoutError&) {
    a.reached = false;
  } catch (const ClientError&) {
    relock();
    if (same()) throw;
    return false;
  }
  relock();
  if (!same()) return false;
  heartbeat_answered(a);
  return a.reached;
}

void GroupCoordinator::heartbeat_answered(const HeartbeatAnswer& a) {
  const auto back_off = [&] {
    coordinator_lost();
    next_heartbeat_ = timer_now() + std::chrono::milliseconds(client_.config().retry_backoff_ms);
  };
  if (!a.reached) return back_off();
  if (a.kip848) return consumer_heartbeat_answered(a.answer, a.version);
  const std::int16_t code = a.code;
  if (code == 0) return;
  if (is(code, ErrorCode::rebalance_in_progress)) {
    need_join_ = true;  // the next poll() rejoins; heartbeats go on meanwhile
  } else if (is(code, ErrorCode::illegal_generation) || is(code, ErrorCode::unknown_member_id)) {
    lost_pending_ = true;  // the next poll() gives the partitions up as lost
    if (is(code, ErrorCode::unknown_member_id)) member_id_.clear();
    generation_ = -1;
    need_join_ = true;
  } else if (coordinator_moved(code)) {
    back_off();
  } else if (!is(code, ErrorCode::coordinator_load_in_progress)) {
    throw_group_error(config_.group_id, "Heartbeat", code);
  }
}

void GroupCoordinator::background_leave(std::unique_lock<std::recursive_mutex>& lock) {
  std::fprintf(stderr,
               "WARN group %s: poll() was not called within max.poll.interval.ms (%d ms): leaving the group; the "
               "next poll() rejoins\n",
               config_.group_id.c_str(), config_.max_poll_interval_ms);
  const bool kip848 = consumer_protocol();
  const bool is_static = config_.group_instance_id.has_value();
  const std::string member = member_id_;
  const std::int32_t node = cached_coordinator().value_or(-1);
  // Out of the group whatever the coordinator answers: the next poll()
  // gives the partitions up as lost and rejoins.
  generation_ = -1;
  need_join_ = true;
  lost_pending_ = true;
  pending_assignment_.reset();
  if (!kip848 && !is_static) member_id_.clear();
  // Classic static members send nothing (KIP-345: the session timeout
  // decides); KIP-848 static members leave with epoch -2, keeping their
  // assignment for their return.
  if (node < 0 || member.empty() || (!kip848 && is_static)) return;
  KafkaClient& via = *background_client_;
  lock.unlock();
  try {
    Connection& c = via.broker(node);
    if (kip848) {
      ConsumerGroupHeartbeatRequest req;
      req.group_id = config_.group_id;
      req.member_id = member;
      req.instance_id = config_.group_instance_id;
      req.member_epoch =
          is_static ? ConsumerGroupHeartbeatRequest::kStaticLeaveEpoch : ConsumerGroupHeartbeatRequest::kLeaveEpoch;
      const std::int16_t v = c.version_for<ConsumerGroupHeartbeatRequest>();
      c.receive<ConsumerGroupHeartbeatResponse>(c.send(req, v), v, via.default_deadline());
    } else {
      LeaveGroupRequest req;
      req.group_id = config_.group_id;
      req.member_id = member;
      req.members.push_back({member, std::nullopt, std::string("the consumer poll timeout has expired"), {}});
      const std::int16_t v = c.version_for<LeaveGroupRequest>();
      c.receive<LeaveGroupResponse>(c.send(req, v), v, via.default_deadline());
    }
  } catch (const ClientError&) {
    // Best effort: the session timeout removes the member anyway.
  }
  lock.lock();
}

}  // namespace kwire::client

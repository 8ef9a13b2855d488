// ShareGroupHeartbeat membership of a ShareConsumer (KIP-932), in a thread of
// its own (see share_consumer_impl.hpp). The rules, as Java's
// ShareHeartbeatRequestManager applies them:
//   join            epoch 0 with the subscription; the coordinator answers the
//                   member epoch, the interval and (maybe later) an assignment
//   steady          a heartbeat every interval; the topic list only when it
//                   changed; an assignment in an answer replaces the old one
//   FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID
//                   the member lost its place: drop the assignment, rejoin
//                   with epoch 0 (same member id)
//   coordinator moved or loading, lost connection
//                   the coordinator rule (coordinators.hpp) and the client's
//                   back-off (KIP-580)
//   other codes     fatal (GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST,
//                   GROUP_MAX_SIZE_REACHED...): raised by the next poll
//   leave           epoch -1 on close
#include <fmt/format.h>

#include "backoff.hpp"
#include "group_coordinator.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "share_consumer_impl.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {
bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }
}  // namespace

ShareMembership::ShareMembership(const std::map<std::string, std::string>& properties, std::string group,
                                 std::string member_id)
    : client_(properties), group_(std::move(group)), member_id_(std::move(member_id)) {
  thread_ = std::thread([this] { run(); });
}

ShareMembership::~ShareMembership() {
  try {
    stop(Clock::now() + std::chrono::seconds(5));
  } catch (...) {
  }
}

void ShareMembership::subscribe(std::vector<std::string> topics) {
  std::lock_guard lock(mu_);
  topics_ = std::move(topics);
  topics_changed_ = true;
  wake_.notify_all();
}

ShareAssignment ShareMembership::assignment(std::uint64_t* version) const {
  std::lock_guard lock(mu_);
  if (version) *version = assignment_version_;
  return assignment_;
}

void ShareMembership::check() const {
  std::lock_guard lock(mu_);
  if (fatal_) std::rethrow_exception(fatal_);
}

void ShareMembership::beat(Deadline deadline) {
  ShareGroupHeartbeatRequest req;
  {
    std::lock_guard lock(mu_);
    req.group_id = group_;
    req.member_id = member_id_;
    req.member_epoch = stopping_ ? -1 : epoch_;
    if (!stopping_ && (epoch_ == 0 || topics_changed_)) req.subscribed_topic_names = topics_;
    req.rack_id =
        client_.config().client_rack.empty() ? std::nullopt : std::optional<std::string>(client_.config().client_rack);
  }
  RetryLoop loop(client_.config(), deadline, fmt::format("ShareGroupHeartbeat for group {}", group_));
  call_coordinator(client_, coordinators_, CoordinatorType::group, group_, loop, [&](Connection& c) {
    const std::int16_t v = c.version_for<ShareGroupHeartbeatRequest>();
    auto r = c.receive<ShareGroupHeartbeatResponse>(c.send(req, v), v, loop.request_deadline()).body;
    if (coordinator_retriable(r.error_code)) return CoordinatorReply::retry(r.error_code);
    std::lock_guard lock(mu_);
    if (is(r.error_code, ErrorCode::fenced_member_epoch) || is(r.error_code, ErrorCode::unknown_member_id)) {
      epoch_ = 0;
      assignment_.clear();
      ++assignment_version_;
      return CoordinatorReply::done();
    }
    if (r.error_code) {
      try {
        throw_group_error(group_, "ShareGroupHeartbeat", r.error_code);
      } catch (...) {
        fatal_ = std::current_exception();
      }
      return CoordinatorReply::done();
    }
    if (req.member_epoch == -1) return CoordinatorReply::done();
    if (req.subscribed_topic_names) topics_changed_ = false;
    epoch_ = r.member_epoch;
    if (r.heartbeat_interval_ms > 0) interval_ms_ = r.heartbeat_interval_ms;
    if (r.assignment) {
      assignment_.clear();
      for (auto& tp : r.assignment->topic_partitions) assignment_[tp.topic_id] = tp.partitions;
      ++assignment_version_;
    }
    return CoordinatorReply::done();
  });
}

void ShareMembership::run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stopping_ || fatal_) return;
      if (topics_.empty()) {
        wake_.wait(lock, [&] { return stopping_ || !topics_.empty(); });
        if (stopping_) return;
      }
    }
    try {
      beat(Clock::now() + std::chrono::milliseconds(client_.config().request_timeout_ms));
      failures_ = 0;
    } catch (const ClientError&) {
      // The coordinator did not answer in time: the next beat tries again
      // after the back-off (a member that misses its session is fenced and
      // rejoins).
      ++failures_;
    }
    std::unique_lock lock(mu_);
    const auto wait = failures_ ? retry_backoff(client_.config(), failures_ - 1)
                                : std::chrono::milliseconds(epoch_ == 0 ? 0 : interval_ms_);
    wake_.wait_for(lock, wait, [&] { return stopping_ || fatal_ || (topics_changed_ && failures_ == 0); });
  }
}

void ShareMembership::stop(Deadline deadline) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  bool joined = false;
  {
    std::lock_guard lock(mu_);
    joined = epoch_ > 0 && !fatal_;
  }
  if (joined) beat(deadline);  // epoch -1: leave
}

}  // namespace kwire::client

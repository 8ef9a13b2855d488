// Offsets of a classic group member: OffsetCommit (sync, async, automatic)
// and OffsetFetch, with the Java consumer's reactions to their errors.
#include <algorithm>

#include <fmt/format.h>

#include "group_coordinator.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "retry_loop.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }

OffsetCommitRequest commit_request(const GroupConfig& config, const std::string& member_id, std::int32_t generation,
                                   const std::map<TopicPartition, OffsetAndMetadata>& offsets) {
  OffsetCommitRequest req;
  req.group_id = config.group_id;
  // Outside a generation, commit as a consumer without a group (accepted
  // only while the group has no members).
  req.generation_id_or_member_epoch = generation;
  req.member_id = generation >= 0 ? member_id : std::string();
  if (generation >= 0) req.group_instance_id = config.group_instance_id;
  for (auto& [tp, om] : offsets) {
    if (req.topics.empty() || req.topics.back().name != tp.topic) req.topics.push_back({tp.topic, {}, {}});
    req.topics.back().partitions.push_back({tp.partition, om.offset, om.leader_epoch, -1, om.metadata, {}});
  }
  return req;
}

std::map<TopicPartition, std::int16_t> errors_of(const OffsetCommitResponse& r) {
  std::map<TopicPartition, std::int16_t> out;
  for (auto& t : r.topics)
    for (auto& p : t.partitions) out[{t.name, p.partition_index}] = p.error_code;
  return out;
}

}  // namespace

std::map<TopicPartition, std::int16_t> GroupCoordinator::send_commit(
    const std::map<TopicPartition, OffsetAndMetadata>& offsets, Deadline deadline) {
  Connection& c = client_.broker(coordinator(deadline));
  auto req = commit_request(config_, member_id_, generation_, offsets);
  const std::int16_t v = c.version_for<OffsetCommitRequest>();
  return errors_of(
      c.receive<OffsetCommitResponse>(c.send(req, v), v, std::min(deadline, client_.default_deadline())).body);
}

void GroupCoordinator::commit_sync(const std::map<TopicPartition, OffsetAndMetadata>& offsets, Deadline deadline) {
  std::lock_guard lock(mu_);
  if (offsets.empty()) return;
  RetryLoop loop(client_.config(), deadline, fmt::format("OffsetCommit for group {}", config_.group_id));
  for (;;) {
    std::map<TopicPartition, std::int16_t> errors;
    bool retry = false;
    std::int16_t retry_code = -1;  // -1: no answer
    try {
      errors = send_commit(offsets, deadline);
    } catch (const ConnectionError&) {
      coordinator_lost();
      retry = true;
    }
    bool epoch_refreshed = false;
    for (auto& [tp, code] : errors) {
      if (code == 0) continue;
      if (is(code, ErrorCode::stale_member_epoch) && consumer_protocol() && generation_ >= 0 && !lost_pending_) {
        // KIP-848: the member epoch moved on while the member is still in
        // the group. As the Java consumer does, learn the current epoch (one
        // heartbeat) and retry the commit with it until the deadline.
        if (!epoch_refreshed) heartbeat_once(client_, nullptr);
        epoch_refreshed = true;
        if (generation_ >= 0 && !lost_pending_) {
          retry = true;
          retry_code = code;
          continue;
        }
      }
      if (coordinator_retriable(code)) {
        if (!is(code, ErrorCode::coordinator_load_in_progress)) coordinator_lost();
        retry = true;
        retry_code = code;
        continue;
      }
      const std::string what =
          fmt::format("OffsetCommit of {} for group {}: {}", to_string(tp), config_.group_id, error_name(code));
      if (is(code, ErrorCode::rebalance_in_progress)) {
        need_join_ = true;
        throw RebalanceInProgressError(code, what);
      }
      if (is(code, ErrorCode::stale_member_epoch)) {
        // KIP-848, and the member is no longer in the group (fenced, or
        // leaving): the commit cannot be retried.
        next_heartbeat_ = timer_now();
        throw CommitFailedError(code, what + " (the member is no longer in the group)");
      }
      if (is(code, ErrorCode::illegal_generation) || is(code, ErrorCode::unknown_member_id) ||
          is(code, ErrorCode::fenced_instance_id)) {
        if (is(code, ErrorCode::fenced_instance_id)) throw FencedInstanceIdError(code, what);
        if (is(code, ErrorCode::unknown_member_id)) member_id_.clear();
        generation_ = -1;
        need_join_ = true;
        throw CommitFailedError(code, what + " (the member is no longer in the group's current generation)");
      }
      if (is(code, ErrorCode::group_authorization_failed)) throw GroupAuthorizationError(code, what);
      throw KafkaError(code, what);
    }
    if (!retry) return;
    loop.back_off(retry_code);
  }
}

void GroupCoordinator::commit_async(const std::map<TopicPartition, OffsetAndMetadata>& offsets,
                                    CommitCallback callback) {
  std::lock_guard lock(mu_);
  auto p = std::make_unique<PendingCommit>();
  p->offsets = offsets;
  p->callback = std::move(callback);
  try {
    if (offsets.empty()) {
      p->node = -1;
    } else {
      p->node = coordinator(client_.default_deadline());
      Connection& c = client_.broker(p->node);
      p->version = c.version_for<OffsetCommitRequest>();
      p->corr = c.send(commit_request(config_, member_id_, generation_, offsets), p->version);
    }
  } catch (const ClientError&) {
    coordinator_lost();
    p->error = std::current_exception();
  }
  pending_.push_back(std::move(p));
}

void GroupCoordinator::complete_async(bool wait) {
  for (std::size_t i = 0; i < pending_.size();) {
    auto& p = *pending_[i];
    std::exception_ptr error = p.error;
    if (!error && p.node >= 0) {
      try {
        Connection& c = client_.broker(p.node);
        if (!wait && !c.ready(p.corr)) {
          ++i;
          continue;
        }
        auto errors = errors_of(c.receive<OffsetCommitResponse>(p.corr, p.version, client_.default_deadline()).body);
        for (auto& [tp, code] : errors) {
          if (code == 0) continue;
          if (coordinator_retriable(code)) coordinator_lost();
          if (is(code, ErrorCode::illegal_generation) || is(code, ErrorCode::unknown_member_id)) need_join_ = true;
          const std::string what =
              fmt::format("OffsetCommit of {} for group {}: {}", to_string(tp), config_.group_id, error_name(code));
          if (is(code, ErrorCode::rebalance_in_progress)) throw RebalanceInProgressError(code, what);
          if (is(code, ErrorCode::illegal_generation) || is(code, ErrorCode::unknown_member_id))
            throw CommitFailedError(code, what);
          throw KafkaError(code, what);
        }
      } catch (const ClientError&) {
        error = std::current_exception();
      }
    }
    auto done = std::move(pending_[i]);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    if (done->callback) done->callback(done->offsets, error);
  }
}

void GroupCoordinator::maybe_auto_commit(bool force, Deadline deadline) {
  if (!config_.enable_auto_commit || generation_ < 0) return;
  const auto now = timer_now();
  if (!force && now < next_auto_commit_) return;
  next_auto_commit_ = now + std::chrono::milliseconds(config_.auto_commit_interval_ms);
  std::map<TopicPartition, OffsetAndMetadata> offsets;
  for (auto& [tp, om] : host_.consumed())
    if (std::binary_search(owned_.begin(), owned_.end(), tp)) offsets[tp] = om;
  if (offsets.empty()) return;
  if (!force) {
    commit_async(offsets, nullptr);
    return;
  }
  try {
    commit_sync(offsets, std::min(deadline, now + std::chrono::milliseconds(client_.config().default_api_timeout_ms)));
  } catch (const ClientError&) {
    // As in Java, a failed automatic commit is not fatal: the records are
    // read again by the next owner.
  }
}

std::map<TopicPartition, std::optional<OffsetAndMetadata>> GroupCoordinator::committed(
    const std::vector<TopicPartition>& tps, Deadline deadline) {
  std::lock_guard lock(mu_);
  std::map<TopicPartition, std::optional<OffsetAndMetadata>> out;
  if (tps.empty()) return out;
  OffsetFetchRequest req;
  std::vector<OffsetFetchRequest::OffsetFetchRequestTopic> topics;
  for (auto& tp : tps) {
    out[tp] = std::nullopt;
    if (topics.empty() || topics.back().name != tp.topic) topics.push_back({tp.topic, {}, {}});
    topics.back().partition_indexes.push_back(tp.partition);
  }
  req.group_id = config_.group_id;
  req.topics = topics;
  req.groups.push_back({config_.group_id, std::nullopt, -1, topics, {}});
  req.require_stable = true;
  RetryLoop loop(client_.config(), deadline, fmt::format("OffsetFetch for group {}", config_.group_id));
  for (;;) {
    std::int16_t retry_code = -1;  // -1: no answer
    try {
      Connection& c = client_.broker(coordinator(deadline));
      const std::int16_t v = c.version_for<OffsetFetchRequest>();
      auto r = c.receive<OffsetFetchResponse>(c.send(req, v), v, client_.default_deadline()).body;
      std::int16_t group_code = v >= 8 ? (r.groups.empty() ? 0 : r.groups[0].error_code) : r.error_code;
      const auto& rtopics = v >= 8 ? (r.groups.empty() ? r.topics : r.groups[0].topics) : r.topics;
      if (group_code == 0) {
        for (auto& t : rtopics)
          for (auto& p : t.partitions) {
            if (p.error_code && !is(p.error_code, ErrorCode::unstable_offset_commit))
              throw KafkaError(p.error_code,
                               fmt::format("OffsetFetch of {}-{} for group {}: {}", t.name, p.partition_index,
                                           config_.group_id, error_name(p.error_code)));
            if (p.error_code) group_code = p.error_code;
            else if (p.committed_offset >= 0)
              out[{t.name, p.partition_index}] =
                  OffsetAndMetadata{p.committed_offset, p.committed_leader_epoch, p.metadata.value_or("")};
          }
      }
      if (group_code == 0) return out;
      if (!coordinator_retriable(group_code) && !is(group_code, ErrorCode::unstable_offset_commit))
        throw_group_error(config_.group_id, "OffsetFetch", group_code);
      if (!is(group_code, ErrorCode::coordinator_load_in_progress) &&
          !is(group_code, ErrorCode::unstable_offset_commit))
        coordinator_lost();
      retry_code = group_code;
    } catch (const ConnectionError&) {
      coordinator_lost();
    }
    loop.back_off(retry_code);
  }
}

}  // namespace kwire::client

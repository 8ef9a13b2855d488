// The Fetcher's partition state and hand-out: assign, seek, pause, positions,
// offset resets, validation after a leader change, and poll(). Building Fetch
// requests and taking their answers in is in fetcher_io.cpp.
#include "kwire/client/fetcher.hpp"

#include <algorithm>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "backoff.hpp"
#include "fetcher_state.hpp"
#include "kwire/protocol/errors.hpp"
#include "retriable.hpp"

namespace kwire::client {

using namespace kwire::protocol;

OffsetResetPolicy parse_offset_reset(const std::string& value) {
  if (value == "earliest" || value == "smallest" || value == "beginning") return OffsetResetPolicy::earliest;
  if (value == "latest" || value == "largest" || value == "end") return OffsetResetPolicy::latest;
  if (value == "none") return OffsetResetPolicy::none;
  throw ConfigError(fmt::format("invalid value '{}' for auto.offset.reset: expected earliest, latest or none", value));
}

Fetcher::Fetcher(FetchCluster& cluster, const ClientConfig& config, OffsetResetPolicy reset)
    : cluster_(cluster), config_(config), reset_(reset) {}

Fetcher::~Fetcher() = default;

Fetcher::PartitionState& Fetcher::state(const TopicPartition& tp) {
  auto it = partitions_.find(tp);
  if (it == partitions_.end()) throw ClientError(fmt::format("{} is not assigned", to_string(tp)));
  return *it->second;
}

const Fetcher::PartitionState* Fetcher::find(const TopicPartition& tp) const {
  auto it = partitions_.find(tp);
  return it == partitions_.end() ? nullptr : it->second.get();
}

void Fetcher::assign(const std::vector<TopicPartition>& partitions) {
  std::map<TopicPartition, std::unique_ptr<PartitionState>> next;
  for (auto& tp : partitions) {
    auto it = partitions_.find(tp);
    next[tp] = it != partitions_.end() ? std::move(it->second) : std::make_unique<PartitionState>();
  }
  partitions_ = std::move(next);
  // Partitions no longer assigned leave ready_ lazily (collect() skips them).
}

std::vector<TopicPartition> Fetcher::assignment() const {
  std::vector<TopicPartition> out;
  out.reserve(partitions_.size());
  for (auto& [tp, _] : partitions_) out.push_back(tp);
  return out;
}

void Fetcher::seek(const TopicPartition& tp, std::int64_t offset, std::int32_t leader_epoch) {
  auto it = partitions_.find(tp);
  if (it == partitions_.end())
    throw ClientError(fmt::format("cannot seek {}: partition is not assigned", to_string(tp)));
  if (offset < 0) throw ClientError(fmt::format("cannot seek {} to negative offset {}", to_string(tp), offset));
  auto& s = *it->second;
  s.position = offset;
  s.position_epoch = leader_epoch;
  s.validate = false;
  s.answers.clear();
}

std::optional<std::int64_t> Fetcher::position(const TopicPartition& tp) const {
  auto* s = find(tp);
  if (!s) throw ClientError(fmt::format("{} is not assigned", to_string(tp)));
  return s->position;
}

void Fetcher::pause(const std::vector<TopicPartition>& tps) {
  for (auto& tp : tps) {
    auto it = partitions_.find(tp);
    // As Java's consumer: nothing of a paused partition is handed out; what
    // was received for it is kept and handed out after resume() (when the
    // position still matches); the position does not move.
    if (it != partitions_.end()) it->second->paused = true;
  }
}

void Fetcher::resume(const std::vector<TopicPartition>& tps) {
  for (auto& tp : tps) {
    auto it = partitions_.find(tp);
    if (it == partitions_.end() || !it->second->paused) continue;
    it->second->paused = false;
    if (!it->second->answers.empty()) enqueue(tp, *it->second);
  }
}

void Fetcher::set_position_limit(const TopicPartition& tp, std::optional<std::int64_t> limit) {
  auto it = partitions_.find(tp);
  if (it == partitions_.end())
    throw ClientError(fmt::format("cannot limit {}: partition is not assigned", to_string(tp)));
  auto& s = *it->second;
  s.limit = limit;
  // Answers held at the old limit may be handed out again.
  if (!s.paused && !s.answers.empty()) enqueue(tp, s);
}

bool Fetcher::paused(const TopicPartition& tp) const {
  auto* s = find(tp);
  return s && s->paused;
}

std::optional<FetchedPartition> Fetcher::last_fetch_info(const TopicPartition& tp) const {
  auto* s = find(tp);
  if (!s) return std::nullopt;
  return s->info;
}

std::optional<std::int32_t> Fetcher::read_replica(const TopicPartition& tp) const {
  auto* s = find(tp);
  if (!s || s->read_replica < 0) return std::nullopt;
  return s->read_replica;
}

std::optional<std::pair<std::int32_t, std::int32_t>> Fetcher::fetch_session(std::int32_t node) const {
  auto it = sessions_.find(node);
  if (it == sessions_.end() || it->second->id == 0) return std::nullopt;
  return std::make_pair(it->second->id, it->second->epoch);
}

void Fetcher::resolve_positions() {
  std::map<TopicPartition, std::int64_t> targets;
  for (auto& [tp, s] : partitions_) {
    if (s->position) continue;
    if (reset_ == OffsetResetPolicy::none)
      throw OffsetOutOfRangeError(tp, -1,
                                  fmt::format("no position for {} and auto.offset.reset is none", to_string(tp)));
    targets[tp] = reset_ == OffsetResetPolicy::earliest ? kEarliestTimestamp : kLatestTimestamp;
  }
  if (targets.empty()) return;
  for (auto& [tp, lo] : cluster_.list_offsets(targets)) {
    auto it = partitions_.find(tp);
    if (it == partitions_.end() || it->second->position) continue;
    auto& s = *it->second;
    s.position = lo.offset;
    s.position_epoch = lo.leader_epoch;
    s.answers.clear();
  }
}

void Fetcher::push_error(const TopicPartition& tp, PartitionState& s, std::exception_ptr error) {
  Answer a;
  a.fetch_offset = a.next_offset = s.answers.empty() ? s.position.value_or(0) : s.answers.back().next_offset;
  a.error = std::move(error);
  s.answers.push_back(std::move(a));
  enqueue(tp, s);
}

void Fetcher::enqueue(const TopicPartition& tp, PartitionState& s) {
  if (s.queued) return;
  s.queued = true;
  ready_.push_back(tp);
}

void Fetcher::truncated(const TopicPartition& tp, PartitionState& s, std::int64_t divergent_offset,
                        std::int32_t divergent_epoch) {
  s.answers.clear();
  const std::int64_t position = s.position.value_or(0);
  if (divergent_offset >= position) return;  // nothing handed out diverged: fetch again from the position
  if (reset_ == OffsetResetPolicy::none) {
    push_error(tp, s,
               std::make_exception_ptr(LogTruncationError(
                   tp, position, divergent_offset,
                   fmt::format("truncation detected for {}: the log diverges at offset {} (leader epoch {}), below "
                               "the position {}; records from {} on that were consumed are no longer in the log",
                               to_string(tp), divergent_offset, divergent_epoch, position, divergent_offset))));
    return;
  }
  std::fprintf(stderr, "WARN truncation detected for %s: resetting the position from %lld to %lld\n",
               to_string(tp).c_str(), static_cast<long long>(position), static_cast<long long>(divergent_offset));
  s.position = divergent_offset;
  s.position_epoch = divergent_epoch;
}

void Fetcher::back_off(const TopicPartition& tp, PartitionState& s, std::int16_t error_code, bool counts) {
  ++s.attempts;
  if (counts) ++s.failures;
  if (s.failures > config_.retries) {
    s.failures = 0;
    s.attempts = 0;
    push_error(tp, s,
               std::make_exception_ptr(
                   KafkaError(error_code, fmt::format("fetch from {} failed after {} attempts: {}", to_string(tp),
                                                      config_.retries + 1, error_name(error_code)))));
    return;
  }
  s.not_before = Clock::now() + retry_backoff(config_, s.attempts - 1);
}

bool Fetcher::topic_recreated(const TopicPartition& tp, PartitionState& s) {
  const auto id = cluster_.topic_id(tp.topic);
  if (!id || id->is_zero()) return false;
  if (s.topic_id.is_zero() || s.topic_id == *id) {
    s.topic_id = *id;
    return false;
  }
  // The topic was deleted and created again under the same name (KIP-516):
  // nothing fetched from the old one is handed out, the session lists the
  // partition under its new id, and the old topic's leader epochs (which
  // mean nothing for the new log) are dropped, so the position is fetched
  // as it is: past the new log's end the answer is OFFSET_OUT_OF_RANGE,
  // handled with auto.offset.reset.
  s.topic_id = *id;
  s.answers.clear();
  s.max_bytes = 0;
  s.read_replica = -1;
  s.leader_epoch = -1;
  s.position_epoch = -1;
  s.validate = false;
  return true;
}

void Fetcher::validate_positions() {
  std::map<std::int32_t, std::map<TopicPartition, FetchCluster::EpochQuery>> by_node;
  const auto now = Clock::now();
  for (auto& [tp, s] : partitions_) {
    if (!s->validate || !s->position || s->paused || now < s->not_before) continue;
    auto leader = cluster_.leader(tp);
    if (leader.node < 0) continue;
    by_node[leader.node][tp] = {leader.epoch, s->position_epoch};
  }
  std::vector<std::string> refresh;
  for (auto& [node, queries] : by_node) {
    std::map<TopicPartition, FetchCluster::EpochEndOffset> answers;
    try {
      answers = cluster_.offsets_for_leader_epoch(node, queries);
    } catch (const UnsupportedVersionError&) {
      // A broker without the API: fetch without validating (as Java does).
      for (auto& [tp, q] : queries) {
        auto& s = state(tp);
        s.validate = false;
        s.leader_epoch = q.current_leader_epoch;
      }
      continue;
    } catch (const ConnectionError&) {
      for (auto& [tp, q] : queries) {
        back_off(tp, state(tp), static_cast<std::int16_t>(ErrorCode::network_exception), false);
        refresh.push_back(tp.topic);
      }
      continue;
    }
    for (auto& [tp, q] : queries) {
      auto& s = state(tp);
      auto a = answers.find(tp);
      if (a == answers.end()) continue;  // not answered: asked again next time
      if (a->second.error_code != 0) {
        back_off(tp, s, a->second.error_code, !fetch_waits_out(a->second.error_code));
        refresh.push_back(tp.topic);
        continue;
      }
      s.validate = false;
      s.leader_epoch = q.current_leader_epoch;
      s.failures = s.attempts = 0;
      if (a->second.end_offset < 0 || a->second.leader_epoch < 0) {
        // The leader knows nothing of the epoch: the position cannot be
        // checked. Java resets it with auto.offset.reset.
        s.answers.clear();
        if (reset_ == OffsetResetPolicy::none)
          push_error(tp, s,
                     std::make_exception_ptr(OffsetOutOfRangeError(
                         tp, s.position.value_or(-1),
                         fmt::format("the leader of {} has no end offset for leader epoch {}: position {} cannot be "
                                     "validated and auto.offset.reset is none",
                                     to_string(tp), q.leader_epoch, s.position.value_or(-1)))));
        else s.position.reset();
        continue;
      }
      if (a->second.end_offset < *s.position) truncated(tp, s, a->second.end_offset, a->second.leader_epoch);
    }
  }
  if (!refresh.empty()) {
    try {
      cluster_.refresh_metadata(refresh);
    } catch (const ClientError&) {
    }
  }
}

std::optional<Clock::time_point> Fetcher::next_retry(Clock::time_point now) const {
  std::optional<Clock::time_point> at;
  for (auto& [tp, s] : partitions_) {
    if (s->paused || !s->position || s->not_before <= now) continue;
    at = std::min(at.value_or(s->not_before), s->not_before);
  }
  return at;
}

ConsumerRecords Fetcher::poll(std::chrono::milliseconds timeout, std::size_t max_records) {
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  if (max_records == 0) max_records = 1;
  // The calls a poll must block on (Metadata, ListOffsets,
  // OffsetsForLeaderEpoch: one round trip each) get at least kMinBlockingWork
  // whatever the timeout, so that short polls (poll(0)) still get them done;
  // a connection being set up is taken up again by the next poll.
  const auto bound_at = std::max(deadline, start + kMinBlockingWork);
  struct Bound {
    FetchCluster& cluster;
    Deadline previous;
    ~Bound() { cluster.bound_deadlines(previous); }
  } bound{cluster_, cluster_.bound_deadlines(bound_at)};
  if (bound.previous < bound_at) cluster_.bound_deadlines(bound.previous);  // an outer bound stays
  try {
    auto out = poll_until(deadline, max_records);
    unanswered_since_.reset();
    return out;
  } catch (const TimeoutError& e) {
    if (Clock::now() < bound_at) throw;  // the call's own time-out, not the poll's
    if (!unanswered_since_) unanswered_since_ = start;
    const auto limit = std::chrono::milliseconds(config_.default_api_timeout_ms);
    if (Clock::now() - *unanswered_since_ >= limit) {
      unanswered_since_.reset();
      throw TimeoutError(fmt::format("the cluster did not answer within default.api.timeout.ms ({} ms): {}",
                                     config_.default_api_timeout_ms, e.what()));
    }
    return collect(max_records);  // what earlier answers brought, if anything
  }
}

ConsumerRecords Fetcher::poll_until(Deadline deadline, std::size_t max_records) {
  for (;;) {
    resolve_positions();
    validate_positions();
    send_fetches();
    auto out = collect(max_records);
    if (!out.empty()) return out;
    const auto now = Clock::now();
    const auto retry_at = next_retry(now);
    if (in_flight_.empty()) {
      if (!retry_at) return {};  // nothing to fetch
      if (*retry_at >= deadline) {
        // Backing off past the deadline: wait it out rather than return at
        // once, so that a caller polling in a loop does not spin.
        std::this_thread::sleep_until(deadline);
        return {};
      }
      std::this_thread::sleep_until(*retry_at);
      continue;
    }
    take_answer(retry_at ? std::min(deadline, *retry_at) : deadline);
    if (Clock::now() >= deadline) {
      // Time is up: hand out what the last answer brought, if anything.
      resolve_positions();
      return collect(max_records);
    }
  }
}

ConsumerRecords Fetcher::collect(std::size_t max_records) {
  auto round = reusable_round();
  // One allocation instead of a doubling series while records are appended.
  if (!ready_.empty()) round->records.reserve(std::min(max_records, std::max<std::size_t>(last_round_size_, 4096)));
  // ready_[0, held) are partitions whose error waits for the next poll (this
  // one already has records to return); they stay first in line.
  std::size_t held = 0;
  auto done_with = [&](const TopicPartition& tp, PartitionState& s) {
    ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(held));
    s.queued = false;
    if (!s.answers.empty()) enqueue(tp, s);  // its next answer after the other partitions'
  };
  while (ready_.size() > held && round->records.size() < max_records) {
    const TopicPartition tp = ready_[held];
    auto it = partitions_.find(tp);
    if (it == partitions_.end()) {
      ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(held));
      continue;
    }
    auto& s = *it->second;
    if (s.answers.empty() || s.paused || !s.position || (s.limit && *s.position >= *s.limit)) {
      if (!s.position) s.answers.clear();
      s.queued = false;  // a paused partition is queued again by resume()
      ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(held));
      continue;
    }
    Answer& a = s.answers.front();
    if (a.fetch_offset > *s.position) {
      // Only answers that continue from the position are handed out.
      s.answers.clear();
      continue;
    }
    bool full = false;
    bool at_limit = false;  // the next record is at or past s.limit
    for (;;) {
      if (a.decoder && (!a.decoded || a.next >= a.decoded->records.size())) decode(tp, s, a, max_records);
      if (a.decoded) {
        const auto& recs = a.decoded->records;
        std::shared_ptr<const std::string> topic;
        bool took = false;
        auto& out = round->records;
        std::int64_t position = *s.position;
        std::int32_t position_epoch = s.position_epoch;
        const std::int64_t limit = s.limit.value_or(std::numeric_limits<std::int64_t>::max());
        while (a.next < recs.size() && out.size() < max_records) {
          const auto& r = recs[a.next];
          if (r.offset >= limit) {
            at_limit = true;  // kept for when the limit moves
            break;
          }
          ++a.next;
          if (r.offset < position) continue;  // never below the position
          if (!topic) {
            topic = std::make_shared<const std::string>(tp.topic);
            round->topics.push_back(topic);
          }
          ConsumerRecord& cr = out.emplace_back();
          cr.topic = topic.get();
          cr.partition = tp.partition;
          cr.offset = r.offset;
          cr.timestamp = r.timestamp;
          cr.timestamp_type = r.timestamp_type;
          cr.key = r.key;
          cr.value = r.value;
          cr.headers = &r.headers;
          cr.leader_epoch = r.leader_epoch;
          position = r.offset + 1;
          position_epoch = r.leader_epoch;
          took = true;
        }
        if (took) {
          s.position = position;
          s.position_epoch = position_epoch;
          if (round->frames.empty() || round->frames.back() != a.frame) round->frames.push_back(a.frame);
          round->decoded.push_back(a.decoded);
        }
        // max_records reached; the rest waits for the next poll.
        if (a.next < recs.size() && !at_limit) full = true;
      }
      if (full || at_limit || !a.decoder) break;
      if (round->records.size() >= max_records) {
        full = true;  // the answer has more to decode, for the next poll
        break;
      }
    }
    if (full) break;
    if (at_limit) {
      // Stopped at the limit: the answer stays first; set_position_limit()
      // queues the partition again. Its next record is at or past the limit,
      // so nothing lies between (a control batch, compacted offsets): the
      // position moves to the limit.
      if (*s.position < *s.limit) s.position = *s.limit;
      s.queued = false;
      ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(held));
      continue;
    }
    // The answer is used up: the position moves past its batches (control
    // batches and aborted records included).
    if (a.next_offset > *s.position) {
      s.position = a.next_offset;
      if (a.last_epoch >= 0) s.position_epoch = a.last_epoch;
    }
    if (a.error) {
      if (!round->records.empty()) {
        ++held;  // raised by the next poll, after these records
        continue;
      }
      auto error = a.error;
      s.answers.pop_front();
      done_with(tp, s);
      std::rethrow_exception(error);
    }
    s.answers.pop_front();
    done_with(tp, s);
  }
  ConsumerRecords out;
  if (!round->records.empty()) {
    last_round_size_ = std::max(last_round_size_, round->records.size());
    out.round_ = std::move(round);
  }
  return out;
}

std::shared_ptr<ConsumerRecords::Round> Fetcher::reusable_round() {
  // Every released round lets go of what its records pointed into (frames
  // and decoded sets go back to their pools); the first is reused.
  std::shared_ptr<ConsumerRecords::Round> free;
  for (auto& r : round_pool_)
    if (r.use_count() == 1) {
      r->records.clear();
      r->frames.clear();
      r->decoded.clear();
      r->topics.clear();
      if (!free) free = r;
    }
  if (free) return free;
  auto r = std::make_shared<ConsumerRecords::Round>();
  // A reader holds a round or two while it reads the next (a sink that
  // writes behind); more are not kept.
  constexpr std::size_t kKeptRounds = 3;
  if (round_pool_.size() < kKeptRounds) round_pool_.push_back(r);
  return r;
}

std::shared_ptr<DecodedRecords> Fetcher::reusable_decoded() {
  for (auto& d : decoded_pool_)
    if (d.use_count() == 1) {
      d->clear();
      // Decompression buffers are kept as scratch space, so a batch is not
      // zero-filled before it is decompressed; only two of at most 4 MiB
      // each, as a set is reused for any partition and a kept buffer keeps
      // the size of the largest batch it held.
      constexpr std::size_t kKeptBuffers = 2;
      constexpr std::size_t kMaxKeptBuffer = std::size_t{4} << 20;
      if (d->buffers.size() > kKeptBuffers) d->buffers.resize(kKeptBuffers);
      for (auto& b : d->buffers)
        if (b.capacity() > kMaxKeptBuffer) protocol::Bytes().swap(b);
      return d;
    }
  auto d = std::make_shared<DecodedRecords>();
  if (decoded_pool_.size() < 64) decoded_pool_.push_back(d);
  return d;
}

void Fetcher::decode(const TopicPartition& tp, PartitionState& s, Answer& a, std::size_t max_records) {
  a.decoded = reusable_decoded();
  a.next = 0;
  try {
    a.decoder->decode(*a.decoded, max_records);
    if (a.decoder->done()) a.decoder.reset();
  } catch (const CorruptRecordError& e) {
    // The records before the bad batch are handed out; then the error, once;
    // the position stays at the bad batch. What was fetched after it is dropped.
    a.decoder.reset();
    a.next_offset = std::max(a.fetch_offset, a.decoded->next_offset);
    a.last_epoch = -1;
    a.error = std::make_exception_ptr(CorruptBatchError(
        tp, e.base_offset(), e.kind(),
        fmt::format("corrupt record batch at base offset {} of {}: {}", e.base_offset(), to_string(tp), e.detail())));
    while (s.answers.size() > 1) s.answers.pop_back();
  }
}

}  // namespace kwire::client

#include "kwire/client/consumer.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "kwire/protocol/errors.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {
std::string reset_policy(const std::map<std::string, std::string>& props) {
  auto it = props.find("auto.offset.reset");
  if (it == props.end()) return "latest";
  std::string v = it->second;
  if (v == "smallest" || v == "beginning") v = "earliest";
  if (v == "largest" || v == "end") v = "latest";
  if (v != "earliest" && v != "latest" && v != "none")
    throw ConfigError(
        fmt::format("invalid value '{}' for auto.offset.reset: expected earliest, latest or none", it->second));
  return v;
}
std::map<std::string, std::string> without_reset(std::map<std::string, std::string> props) {
  props.erase("auto.offset.reset");
  props.erase("enable.auto.commit");
  return props;
}
}  // namespace

Consumer::Consumer(const std::map<std::string, std::string>& properties)
    : Consumer(ClientConfig::from_properties(without_reset(properties)), reset_policy(properties)) {}

Consumer::Consumer(ClientConfig config, std::string auto_offset_reset)
    : client_(std::make_unique<KafkaClient>(std::move(config))), auto_offset_reset_(std::move(auto_offset_reset)) {}

Consumer::~Consumer() = default;

void Consumer::assign(const std::vector<TopicPartition>& partitions) {
  std::map<TopicPartition, std::optional<std::int64_t>> next;
  for (auto& tp : partitions) {
    auto it = positions_.find(tp);
    next[tp] = it != positions_.end() ? it->second : std::nullopt;
  }
  positions_ = std::move(next);
  for (auto it = paused_.begin(); it != paused_.end();)
    it = positions_.count(it->first) ? std::next(it) : paused_.erase(it);
  std::erase_if(retry_, [&](const auto& kv) { return !positions_.count(kv.first); });
  buffered_.reset();
  buffered_pos_ = 0;
  pending_next_.clear();  // the buffered records were dropped: fetch them again
}

std::vector<TopicPartition> Consumer::assignment() const {
  std::vector<TopicPartition> out;
  for (auto& [tp, _] : positions_) out.push_back(tp);
  return out;
}

void Consumer::seek(const TopicPartition& tp, std::int64_t offset) {
  auto it = positions_.find(tp);
  if (it == positions_.end())
    throw ClientError(fmt::format("cannot seek {}: partition is not assigned", to_string(tp)));
  if (offset < 0) throw ClientError(fmt::format("cannot seek {} to negative offset {}", to_string(tp), offset));
  it->second = offset;
  pending_next_.erase(tp);
  // Drop buffered records of that partition (into a new round: records
  // already returned keep pointing into the old one).
  if (buffered_left() > 0) {
    auto keep = std::make_shared<ConsumerRecords::Round>();
    keep->frames = buffered_->frames;
    keep->decoded = buffered_->decoded;
    keep->topics = buffered_->topics;
    for (std::size_t i = buffered_pos_; i < buffered_->records.size(); ++i) {
      auto& r = buffered_->records[i];
      if (!(*r.topic == tp.topic && r.partition == tp.partition)) keep->records.push_back(r);
    }
    buffered_ = std::move(keep);
    buffered_pos_ = 0;
  }
}

void Consumer::seek_to_beginning(const std::vector<TopicPartition>& tps) {
  for (auto& [tp, off] : beginning_offsets(tps)) seek(tp, off);
}
void Consumer::seek_to_end(const std::vector<TopicPartition>& tps) {
  for (auto& [tp, off] : end_offsets(tps)) seek(tp, off);
}

std::int64_t Consumer::position(const TopicPartition& tp) {
  auto it = positions_.find(tp);
  if (it == positions_.end()) throw ClientError(fmt::format("{} is not assigned", to_string(tp)));
  if (!it->second) resolve_positions();
  return *it->second;
}

void Consumer::pause(const std::vector<TopicPartition>& tps) {
  for (auto& tp : tps) paused_[tp] = true;
}
void Consumer::resume(const std::vector<TopicPartition>& tps) {
  for (auto& tp : tps) paused_.erase(tp);
}

void Consumer::resolve_positions() {
  std::map<TopicPartition, std::int64_t> targets;
  for (auto& [tp, pos] : positions_) {
    if (pos) continue;
    if (auto_offset_reset_ == "none")
      throw OffsetOutOfRangeError(tp, -1,
                                  fmt::format("no position for {} and auto.offset.reset is none", to_string(tp)));
    targets[tp] = auto_offset_reset_ == "earliest" ? kEarliestTimestamp : kLatestTimestamp;
  }
  if (targets.empty()) return;
  for (auto& [tp, lo] : client_->list_offsets(targets)) positions_[tp] = lo.offset;
}

std::map<TopicPartition, std::int64_t> Consumer::beginning_offsets(const std::vector<TopicPartition>& tps) {
  std::map<TopicPartition, std::int64_t> targets;
  for (auto& tp : tps) targets[tp] = kEarliestTimestamp;
  std::map<TopicPartition, std::int64_t> out;
  for (auto& [tp, lo] : client_->list_offsets(targets)) out[tp] = lo.offset;
  return out;
}

std::map<TopicPartition, std::int64_t> Consumer::end_offsets(const std::vector<TopicPartition>& tps) {
  std::map<TopicPartition, std::int64_t> targets;
  for (auto& tp : tps) targets[tp] = kLatestTimestamp;
  std::map<TopicPartition, std::int64_t> out;
  for (auto& [tp, lo] : client_->list_offsets(targets)) out[tp] = lo.offset;
  return out;
}

std::map<TopicPartition, std::optional<ListedOffset>> Consumer::offsets_for_times(
    const std::map<TopicPartition, std::int64_t>& timestamps) {
  std::map<TopicPartition, std::optional<ListedOffset>> out;
  for (auto& [tp, lo] : client_->list_offsets(timestamps))
    out[tp] = lo.offset >= 0 ? std::optional<ListedOffset>(lo) : std::nullopt;
  return out;
}

std::optional<FetchedPartition> Consumer::last_fetch_info(const TopicPartition& tp) const {
  auto it = last_info_.find(tp);
  if (it == last_info_.end()) return std::nullopt;
  FetchedPartition copy = it->second;
  copy.frame.reset();
  copy.records.reset();
  return copy;
}

ConsumerRecords Consumer::poll(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const auto max_records = static_cast<std::size_t>(client_->config().max_poll_records);
  auto take_buffered = [&]() {
    ConsumerRecords out;
    std::size_t n = std::min(max_records, buffered_left());
    out.round_ = buffered_;
    out.begin_ = buffered_pos_;
    out.end_ = buffered_pos_ + n;
    // Records of one partition are contiguous and in offset order, so the
    // position map is searched once per run of a partition, not per record.
    const std::string* run_topic = nullptr;
    std::int32_t run_partition = -1;
    auto run_it = positions_.end();
    for (std::size_t i = buffered_pos_; i < buffered_pos_ + n; ++i) {
      auto& r = buffered_->records[i];
      if (r.topic != run_topic || r.partition != run_partition) {
        run_topic = r.topic;
        run_partition = r.partition;
        run_it = positions_.find(TopicPartition{*r.topic, r.partition});
      }
      if (run_it != positions_.end()) run_it->second = r.offset + 1;
    }
    buffered_pos_ += n;
    if (buffered_left() == 0) {
      for (auto& [tp, next] : pending_next_) {
        auto it = positions_.find(tp);
        if (it != positions_.end() && next > it->second.value_or(-1)) it->second = next;
      }
      pending_next_.clear();
    }
    return out;
  };
  if (buffered_left() > 0) return take_buffered();
  // Every buffered record has been returned (or dropped by seek()): move to
  // the end of what was fetched, so positions match the fetches in flight.
  for (auto& [tp, next] : pending_next_) {
    auto it = positions_.find(tp);
    if (it != positions_.end() && next > it->second.value_or(-1)) it->second = next;
  }
  pending_next_.clear();

  resolve_positions();
  // The broker's long-poll time; a Fetch may outlive this poll() and is then
  // collected by the next one.
  const auto max_wait = std::chrono::milliseconds(client_->config().fetch_max_wait_ms);
  while (true) {
    std::map<TopicPartition, std::int64_t> fetch_positions;
    std::optional<Clock::time_point> retry_at;  // earliest end of a back-off
    const auto round_start = Clock::now();
    for (auto& [tp, pos] : positions_) {
      if (paused_.count(tp) || !pos) continue;
      auto r = retry_.find(tp);
      if (r != retry_.end() && r->second.not_before > round_start) {
        retry_at = std::min(retry_at.value_or(r->second.not_before), r->second.not_before);
        continue;
      }
      fetch_positions[tp] = *pos;
    }
    // Leaders with no Fetch in flight get one now; partitions that cannot be
    // sent come back with their error.
    std::vector<FetchedPartition> fetched;
    if (!fetch_positions.empty()) fetched = client_->send_fetches(fetch_positions, max_wait);
    if (fetched.empty()) {
      if (!client_->fetch_in_flight()) {
        if (!retry_at || *retry_at >= deadline) return {};
        std::this_thread::sleep_until(*retry_at);
        continue;
      }
      auto arrived = client_->wait_fetch(retry_at ? std::min(deadline, *retry_at) : deadline);
      if (!arrived) {
        if (Clock::now() >= deadline) return {};
        continue;  // a back-off ended
      }
      // Send that leader its next Fetch before decoding this answer, from the
      // positions after the records just received (read from the batch
      // headers). Partitions answered with an error wait for their handling
      // below; partitions whose position moved meanwhile (seek) are fetched
      // from where they are now, and this answer's data for them is dropped.
      auto next = fetch_positions;
      for (auto& [tp, sent] : arrived->positions) {
        auto it = next.find(tp);
        if (it == next.end()) continue;
        if (arrived->failed.count(tp)) {
          next.erase(it);
          continue;
        }
        auto n = arrived->next_offsets.find(tp);
        if (n != arrived->next_offsets.end() && it->second == sent) it->second = n->second;
      }
      auto unsent = client_->send_fetches(next, max_wait);
      fetched = client_->decode_fetch(std::move(*arrived));
      for (auto& p : unsent) fetched.push_back(std::move(p));
    }
    // Only answers for a partition's current position count: a partition
    // that was sought, paused, unassigned or reset while its Fetch was in
    // flight is fetched again from its position.
    std::erase_if(fetched, [&](const FetchedPartition& p) {
      auto it = positions_.find(p.tp);
      return it == positions_.end() || it->second != p.fetch_offset || paused_.count(p.tp);
    });

    // With auto.offset.reset=none an out-of-range partition fails the poll
    // before anything of this round is taken in, so no other partition's
    // position can move past records that were never returned.
    if (auto_offset_reset_ == "none")
      for (auto& p : fetched)
        if (p.error_code == static_cast<std::int16_t>(ErrorCode::offset_out_of_range))
          throw OffsetOutOfRangeError(
              p.tp, p.fetch_offset,
              fmt::format("offset {} is out of range for {} (OFFSET_OUT_OF_RANGE)", p.fetch_offset, to_string(p.tp)));
    auto batch = std::make_shared<ConsumerRecords::Round>();
    std::size_t total = 0;
    for (auto& p : fetched)
      if (p.error_code == 0 && p.records) total += p.records->records.size();
    batch->records.reserve(total);
    bool reset_needed = false;
    for (auto& p : fetched) {
      auto topic_holder = std::make_shared<const std::string>(p.tp.topic);
      const std::string* topic = topic_holder.get();
      batch->topics.push_back(std::move(topic_holder));
      if (p.error_code == static_cast<std::int16_t>(ErrorCode::offset_out_of_range)) {
        if (auto_offset_reset_ == "none")
          throw OffsetOutOfRangeError(
              p.tp, p.fetch_offset,
              fmt::format("offset {} is out of range for {} (OFFSET_OUT_OF_RANGE)", p.fetch_offset, to_string(p.tp)));
        positions_[p.tp] = std::nullopt;
        reset_needed = true;
        continue;
      }
      if (p.error_code != 0) {
        if (!is_retriable(p.error_code))
          throw KafkaError(p.error_code,
                           fmt::format("fetch from {} failed: {}", to_string(p.tp), error_name(p.error_code)));
        // Leadership moved etc.: metadata was refreshed; back off this
        // partition (others keep flowing) and retry at the same position.
        auto& rs = retry_[p.tp];
        ++rs.attempts;
        if (p.error_code != static_cast<std::int16_t>(ErrorCode::network_exception)) ++rs.failures;
        if (rs.failures > client_->config().retries)
          throw KafkaError(p.error_code, fmt::format("fetch from {} failed after {} attempts: {}", to_string(p.tp),
                                                     rs.failures, error_name(p.error_code)));
        auto backoff_ms = std::min<std::int64_t>(
            std::int64_t{client_->config().retry_backoff_ms} << std::min(rs.attempts - 1, 6), 1000);
        rs.not_before = Clock::now() + std::chrono::milliseconds(backoff_ms);
        continue;
      }
      retry_.erase(p.tp);
      FetchedPartition info = p;
      info.frame.reset();
      info.records.reset();
      last_info_[p.tp] = std::move(info);
      if (!p.records) continue;
      auto& pos = positions_[p.tp];
      for (auto& r : p.records->records) {
        ConsumerRecord cr;
        cr.topic = topic;
        cr.partition = p.tp.partition;
        cr.offset = r.offset;
        cr.timestamp = r.timestamp;
        cr.timestamp_type = r.timestamp_type;
        cr.key = r.key;
        cr.value = r.value;
        cr.headers = &r.headers;
        batch->records.push_back(cr);
      }
      if (p.records->records.empty()) {
        if (p.records->next_offset > pos.value_or(-1)) pos = p.records->next_offset;
      } else {
        pending_next_[p.tp] = p.records->next_offset;
      }
      batch->frames.push_back(p.frame);
      batch->decoded.push_back(p.records);
    }
    if (reset_needed) resolve_positions();
    if (!batch->records.empty()) {
      buffered_ = std::move(batch);
      buffered_pos_ = 0;
      return take_buffered();
    }
    if (Clock::now() >= deadline) return {};
  }
}

}  // namespace kwire::client

#include "kwire/client/consumer.hpp"

#include <fmt/format.h>

namespace kwire::client {

namespace {
std::string reset_policy(const std::map<std::string, std::string>& props) {
  auto it = props.find("auto.offset.reset");
  return it == props.end() ? "latest" : it->second;
}
std::map<std::string, std::string> without_reset(std::map<std::string, std::string> props) {
  props.erase("auto.offset.reset");
  props.erase("enable.auto.commit");
  return props;
}
}  // namespace

Consumer::Consumer(const std::map<std::string, std::string>& properties)
    : Consumer(ClientConfig::from_properties(without_reset(properties)), reset_policy(properties)) {}

Consumer::Consumer(ClientConfig config, std::string auto_offset_reset) {
  const auto policy = parse_offset_reset(auto_offset_reset);
  client_ = std::make_unique<KafkaClient>(std::move(config));
  fetcher_ = std::make_unique<Fetcher>(client_->fetch_cluster(), client_->config(), policy);
}

Consumer::~Consumer() = default;

void Consumer::assign(const std::vector<TopicPartition>& partitions) { fetcher_->assign(partitions); }
std::vector<TopicPartition> Consumer::assignment() const { return fetcher_->assignment(); }
void Consumer::seek(const TopicPartition& tp, std::int64_t offset) { fetcher_->seek(tp, offset); }

void Consumer::seek_to_beginning(const std::vector<TopicPartition>& tps) {
  for (auto& [tp, off] : beginning_offsets(tps)) seek(tp, off);
}
void Consumer::seek_to_end(const std::vector<TopicPartition>& tps) {
  for (auto& [tp, off] : end_offsets(tps)) seek(tp, off);
}

std::int64_t Consumer::position(const TopicPartition& tp) {
  if (auto p = fetcher_->position(tp)) return *p;
  fetcher_->resolve_positions();
  return fetcher_->position(tp).value();
}

std::optional<std::int64_t> Consumer::known_position(const TopicPartition& tp) const { return fetcher_->position(tp); }

void Consumer::pause(const std::vector<TopicPartition>& tps) { fetcher_->pause(tps); }
void Consumer::resume(const std::vector<TopicPartition>& tps) { fetcher_->resume(tps); }

ConsumerRecords Consumer::poll(std::chrono::milliseconds timeout) {
  return fetcher_->poll(timeout, static_cast<std::size_t>(client_->config().max_poll_records));
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
  return fetcher_->last_fetch_info(tp);
}

std::optional<std::int32_t> Consumer::read_replica(const TopicPartition& tp) const {
  return fetcher_->read_replica(tp);
}

std::optional<std::pair<std::int32_t, std::int32_t>> Consumer::fetch_session(std::int32_t node_id) const {
  return fetcher_->fetch_session(node_id);
}

}  // namespace kwire::client

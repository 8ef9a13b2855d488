#include "kwire/client/consumer.hpp"

#include <thread>

#include <fmt/format.h>

#include "group_coordinator.hpp"

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

// The Consumer as its group member sees it: positions come from, and
// assignments go to, the Fetcher.
class Consumer::GroupHost : public GroupCoordinator::Host {
 public:
  explicit GroupHost(Fetcher& f) : fetcher_(f) {}
  std::map<TopicPartition, OffsetAndMetadata> consumed() override {
    std::map<TopicPartition, OffsetAndMetadata> out;
    for (auto& tp : fetcher_.assignment())
      if (auto p = fetcher_.position(tp)) out[tp] = OffsetAndMetadata{*p, -1, ""};
    return out;
  }
  void assign(const std::vector<TopicPartition>& partitions,
              const std::map<TopicPartition, OffsetAndMetadata>& start) override {
    fetcher_.assign(partitions);
    for (auto& [tp, om] : start) fetcher_.seek(tp, om.offset, om.leader_epoch);
  }

 private:
  Fetcher& fetcher_;
};

Consumer::Consumer(const std::map<std::string, std::string>& properties)
    : Consumer(ClientConfig::from_properties(without_reset(properties)), reset_policy(properties)) {
  group_config_ = GroupConfig::from_properties(properties);
}

Consumer::Consumer(ClientConfig config, std::string auto_offset_reset) {
  const auto policy = parse_offset_reset(auto_offset_reset);
  group_config_.group_id = config.group_id;
  client_ = std::make_unique<KafkaClient>(std::move(config));
  fetcher_ = std::make_unique<Fetcher>(client_->fetch_cluster(), client_->config(), policy);
  group_host_ = std::make_unique<GroupHost>(*fetcher_);
}

Consumer::~Consumer() {
  if (closed_ || !group_) return;
  try {
    close();
  } catch (const std::exception&) {
  }
}

void Consumer::set_group_timer_clock(std::shared_ptr<TimerClock> clock) {
  if (group_) throw ClientError("set_group_timer_clock() must come before subscribe() and the group calls");
  group_config_.timer_clock = std::move(clock);
}

GroupCoordinator& Consumer::group() {
  if (!group_) group_ = std::make_unique<GroupCoordinator>(*client_, group_config_, *group_host_);
  return *group_;
}

void Consumer::assign(const std::vector<TopicPartition>& partitions) {
  if (group_ && group_->subscribed())
    throw ClientError("assign() is not allowed while subscribed to topics; unsubscribe() first");
  fetcher_->assign(partitions);
}

void Consumer::subscribe(const std::vector<std::string>& topics, RebalanceListener* listener) {
  if (!fetcher_->assignment().empty() && !(group_ && group_->subscribed()))
    throw ClientError("subscribe() is not allowed with manually assigned partitions; assign({}) first");
  group().subscribe(topics, listener);
}

void Consumer::subscribe_pattern(const std::string& pattern, RebalanceListener* listener) {
  if (!fetcher_->assignment().empty() && !(group_ && group_->subscribed()))
    throw ClientError("subscribe() is not allowed with manually assigned partitions; assign({}) first");
  group().subscribe_pattern(pattern, listener);
}

void Consumer::unsubscribe() {
  if (group_) group_->unsubscribe();
}

std::vector<std::string> Consumer::subscription() const {
  return group_ && group_->subscribed() ? group_->subscription() : std::vector<std::string>{};
}

void Consumer::commit_sync() { commit_sync(group_host_->consumed()); }

void Consumer::commit_sync(const std::map<TopicPartition, OffsetAndMetadata>& offsets) {
  group().commit_sync(offsets, Clock::now() + std::chrono::milliseconds(client_->config().default_api_timeout_ms));
}

void Consumer::commit_async(CommitCallback callback) { commit_async(group_host_->consumed(), std::move(callback)); }

void Consumer::commit_async(const std::map<TopicPartition, OffsetAndMetadata>& offsets, CommitCallback callback) {
  group().commit_async(offsets, std::move(callback));
}

std::map<TopicPartition, std::optional<OffsetAndMetadata>> Consumer::committed(const std::vector<TopicPartition>& tps) {
  return group().committed(tps, Clock::now() + std::chrono::milliseconds(client_->config().default_api_timeout_ms));
}

Consumer::GroupMetadata Consumer::group_metadata() const {
  GroupMetadata m;
  m.group_id = group_config_.group_id;
  m.group_instance_id = group_config_.group_instance_id;
  if (group_) {
    m.member_id = group_->member_id();
    m.generation = group_->generation();
  }
  return m;
}

std::uint64_t Consumer::rebalance_count() const { return group_ ? group_->rebalances() : 0; }

void Consumer::close() { close(std::chrono::milliseconds(client_->config().default_api_timeout_ms)); }

void Consumer::close(std::chrono::milliseconds timeout) {
  if (closed_) return;
  closed_ = true;
  if (group_) group_->close(Clock::now() + timeout);
}
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
void Consumer::set_position_limit(const TopicPartition& tp, std::optional<std::int64_t> limit) {
  fetcher_->set_position_limit(tp, limit);
}

ConsumerRecords Consumer::poll(std::chrono::milliseconds timeout) {
  const auto max_records = static_cast<std::size_t>(client_->config().max_poll_records);
  if (!group_ || !group_->subscribed()) {
    if (group_) group_->poll();  // async commit callbacks
    return fetcher_->poll(timeout, max_records);
  }
  const auto end = Clock::now() + timeout;
  for (;;) {
    // The group first: a rebalance changes what is fetched.
    const auto due = std::min(group_->poll(), end);
    const auto now = Clock::now();
    const auto slice = std::chrono::duration_cast<std::chrono::milliseconds>(due > now ? due - now : Clock::duration{});
    auto records = fetcher_->poll(slice, max_records);
    if (!records.empty()) return records;
    if (!fetcher_->fetch_in_flight() && Clock::now() < due) std::this_thread::sleep_until(due);
    if (Clock::now() >= end) return records;
  }
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

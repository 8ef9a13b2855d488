#include "producer_cluster.hpp"

#include <fmt/format.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "kwire/protocol/errors.hpp"

namespace kwire::client {

using namespace kwire::protocol;

struct ProducerCluster::Guard {
  explicit Guard(boost::asio::io_context& io) : work(io.get_executor()) {}
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
};

ProducerCluster::ProducerCluster(KafkaClient& client) : c_(client), guard_(std::make_unique<Guard>(*client.io_)) {}

ProducerCluster::~ProducerCluster() = default;

ProducerCluster::Leader ProducerCluster::leader(const TopicPartition& tp) const {
  auto it = c_.leaders_.find(tp);
  if (it == c_.leaders_.end()) return {};
  return Leader{it->second.node, it->second.epoch};
}

bool ProducerCluster::new_leader(const TopicPartition& tp, const ProduceResponse& answer,
                                 const ProduceResponse::PartitionProduceResponse& p) {
  const std::int32_t id = p.current_leader.leader_id;
  // A refusal of a request sent before an earlier refusal's hint was taken
  // names the leader the cache already has: nothing left to look up.
  const Leader known = leader(tp);
  if (id >= 0 && known.node == id && p.current_leader.leader_epoch >= 0 && known.epoch >= p.current_leader.leader_epoch)
    return true;
  for (auto& e : answer.node_endpoints)
    if (e.node_id == id) {
      const BrokerMetadata b{e.node_id, e.host, e.port, e.rack};
      return c_.take_leader_hint(tp, id, p.current_leader.leader_epoch, &b);
    }
  return c_.take_leader_hint(tp, id, p.current_leader.leader_epoch, nullptr);
}

std::int32_t ProducerCluster::partition_count(const std::string& topic, std::int16_t* error) const {
  const TopicMetadata* t = c_.metadata_.topic(topic);
  if (error) *error = t ? t->error_code : static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition);
  if (!t || t->error_code != 0) return 0;
  return static_cast<std::int32_t>(t->partitions.size());
}

std::optional<Uuid> ProducerCluster::topic_id(const std::string& topic) const {
  auto it = c_.topic_ids_.find(topic);
  if (it == c_.topic_ids_.end()) return std::nullopt;
  return it->second;
}

const std::string* ProducerCluster::topic_name(const Uuid& id) const {
  auto it = c_.names_by_id_.find(id.to_base64());
  return it == c_.names_by_id_.end() ? nullptr : &it->second;
}

Connection& ProducerCluster::connection(std::int32_t node) {
  try {
    return c_.broker(node);
  } catch (const ConnectionError&) {
    c_.drop_broker(node);
    throw;
  }
}

void ProducerCluster::drop(std::int32_t node) { c_.drop_broker(node); }

std::uint64_t ProducerCluster::generation(std::int32_t node) const {
  auto it = c_.broker_generation_.find(node);
  return it == c_.broker_generation_.end() ? 0 : it->second;
}

Connection* ProducerCluster::alive(const Sent& s) const {
  auto b = c_.brokers_.find(s.node);
  if (b == c_.brokers_.end() || !b->second || !b->second->is_open() || generation(s.node) != s.generation)
    return nullptr;
  return b->second.get();
}

bool ProducerCluster::ready(const Sent& s) const {
  const Connection* conn = alive(s);
  return !conn || conn->ready(s.corr) || Clock::now() >= s.deadline;
}

std::size_t ProducerCluster::in_flight(std::int32_t node) const {
  auto b = c_.brokers_.find(node);
  if (b == c_.brokers_.end() || !b->second || !b->second->is_open()) return 0;
  return b->second->in_flight();
}

std::string ProducerCluster::fmt_lost(const Sent& s) {
  return fmt::format("the connection to broker {} was closed with a request in flight", s.node);
}

void ProducerCluster::wait(Deadline until, const std::function<bool()>& answered) {
  auto& io = *c_.io_;
  auto now = Clock::now();
  if (io.stopped()) io.restart();
  if (until <= now || woken_.exchange(false)) {
    io.poll();
    return;
  }
  for (;;) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now) + std::chrono::milliseconds(1);
    io.run_one_for(std::min<std::chrono::milliseconds>(ms, std::chrono::hours(1)));
    io.poll();
    // A handler that only moved a write along (the socket took more of a
    // request) is no reason for the sender to look around again.
    if (woken_.exchange(false) || !answered || answered() || io.stopped()) return;
    now = Clock::now();
    if (now >= until) return;
  }
}

void ProducerCluster::wake() {
  woken_.store(true);
  boost::asio::post(*c_.io_, [] {});
}

}  // namespace kwire::client

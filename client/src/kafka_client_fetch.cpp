// KafkaClient as the Fetcher's cluster: leaders and their epochs from the
// metadata cache, topic ids, and Fetch / OffsetsForLeaderEpoch requests over
// the client's broker connections.
#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include "kwire/client/connection.hpp"
#include "kwire/client/fetcher.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

class KafkaClient::FetchAdapter : public FetchCluster {
 public:
  explicit FetchAdapter(KafkaClient& client) : c_(client) {}

  Deadline bound_deadlines(Deadline until) override { return std::exchange(c_.cap_, until); }

  Leader leader(const TopicPartition& tp) override {
    try {
      const auto node = c_.leader_id(tp);
      auto it = c_.leaders_.find(tp);
      return Leader{node, it != c_.leaders_.end() ? it->second.epoch : -1, 0};
    } catch (const KafkaError& e) {
      // The topic's own error when Metadata answered one for it
      // (TOPIC_AUTHORIZATION_FAILED...), else the partition's.
      const TopicMetadata* t = c_.metadata_.topic(tp.topic);
      return Leader{-1, -1, t && t->error_code ? t->error_code : e.code()};
    } catch (const ConnectionError&) {
      return Leader{-1, -1, static_cast<std::int16_t>(ErrorCode::network_exception)};
    }
  }

  void refresh_metadata(const std::vector<std::string>& topics) override {
    std::vector<std::string> unique = topics;
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    c_.metadata(unique);
  }

  bool new_leader(const TopicPartition& tp, std::int32_t leader_id, std::int32_t leader_epoch,
                  const FetchResponse::NodeEndpoint* endpoint) override {
    if (!endpoint) return c_.take_leader_hint(tp, leader_id, leader_epoch, nullptr);
    const BrokerMetadata b{endpoint->node_id, endpoint->host, endpoint->port, endpoint->rack};
    return c_.take_leader_hint(tp, leader_id, leader_epoch, &b);
  }

  std::optional<Uuid> topic_id(const std::string& topic) override {
    auto it = c_.topic_ids_.find(topic);
    if (it == c_.topic_ids_.end()) return std::nullopt;
    return it->second;
  }

  const std::string* topic_name(const Uuid& id) override {
    auto it = c_.names_by_id_.find(id.to_base64());
    return it == c_.names_by_id_.end() ? nullptr : &it->second;
  }

  std::int16_t fetch_version(std::int32_t node) override {
    try {
      return c_.broker(node).version_for<FetchRequest>();
    } catch (const ConnectionError&) {
      c_.drop_broker(node);
      throw;
    }
  }

  std::int32_t send_fetch(std::int32_t node, const FetchRequest& request, std::int16_t version) override {
    try {
      auto& conn = c_.broker(node);
      const auto token = conn.send(request, version);
      sent_[{node, token}] = c_.broker_generation_[node];
      return token;
    } catch (const ConnectionError&) {
      c_.drop_broker(node);
      throw;
    }
  }

  std::optional<std::size_t> wait_any(const std::vector<Pending>& pending, Deadline until) override {
    bool polled = false;  // read what is there at least once, even when `until` has passed
    auto& io = *c_.io_;
    for (;;) {
      const auto now = Clock::now();
      Deadline first_deadline = Deadline::max();
      for (std::size_t i = 0; i < pending.size(); ++i) {
        Connection* conn = alive(pending[i]);
        if (!conn || conn->ready(pending[i].token) || now >= pending[i].deadline) return i;
        first_deadline = std::min(first_deadline, pending[i].deadline);
      }
      if (io.stopped()) io.restart();
      if (now >= until) {
        if (polled) return std::nullopt;
        polled = true;
        io.poll();
        continue;
      }
      const auto wake = std::min(until, first_deadline);
      io.run_one_for(std::chrono::duration_cast<std::chrono::milliseconds>(wake - now) + std::chrono::milliseconds(1));
    }
  }

  Response<FetchResponse> receive_fetch(const Pending& pending, std::int16_t version) override {
    Connection* conn = alive(pending);
    sent_.erase({pending.node, pending.token});
    if (!conn)
      throw ConnectionError(fmt::format("the connection to broker {} was closed with a Fetch in flight", pending.node));
    try {
      return conn->receive<FetchResponse>(pending.token, version, pending.deadline);
    } catch (const ClientError&) {
      c_.drop_broker(pending.node);  // lost, or late: the connection is closed
      throw;
    }
  }

  std::map<TopicPartition, ListedOffset> list_offsets(const std::map<TopicPartition, std::int64_t>& targets) override {
    return c_.list_offsets(targets);
  }

  std::map<TopicPartition, EpochEndOffset> offsets_for_leader_epoch(
      std::int32_t node, const std::map<TopicPartition, EpochQuery>& queries) override {
    OffsetForLeaderEpochRequest req;
    for (auto& [tp, q] : queries) {
      if (req.topics.empty() || req.topics.back().topic != tp.topic) req.topics.push_back({tp.topic, {}, {}});
      OffsetForLeaderEpochRequest::OffsetForLeaderPartition p;
      p.partition = tp.partition;
      p.current_leader_epoch = q.current_leader_epoch;
      p.leader_epoch = q.leader_epoch;
      req.topics.back().partitions.push_back(p);
    }
    Response<OffsetForLeaderEpochResponse> resp;
    try {
      auto& conn = c_.broker(node);
      // Below v2 there is no fencing and no answer epoch to check against:
      // such a broker is treated as one without the API (as Java does).
      const auto& versions = conn.broker_versions();
      auto range = versions.find(static_cast<std::int16_t>(ApiKey::offset_for_leader_epoch));
      if (range == versions.end() || range->second.max < 2)
        throw UnsupportedVersionError(fmt::format("broker {} does not answer OffsetForLeaderEpoch v2+", node));
      resp = conn.request<OffsetForLeaderEpochResponse>(req, c_.default_deadline());
    } catch (const ConnectionError&) {
      c_.drop_broker(node);
      throw;
    }
    std::map<TopicPartition, EpochEndOffset> out;
    for (auto& t : resp.body.topics)
      for (auto& p : t.partitions) {
        TopicPartition tp{t.topic, p.partition};
        if (queries.count(tp)) out[tp] = EpochEndOffset{p.error_code, p.leader_epoch, p.end_offset};
      }
    return out;
  }

 private:
  // The connection a request went out on, if it is still the broker's.
  Connection* alive(const Pending& p) {
    auto sent = sent_.find({p.node, p.token});
    auto b = c_.brokers_.find(p.node);
    auto g = c_.broker_generation_.find(p.node);
    if (sent == sent_.end() || b == c_.brokers_.end() || !b->second || g == c_.broker_generation_.end() ||
        g->second != sent->second || !b->second->is_open())
      return nullptr;
    return b->second.get();
  }

  KafkaClient& c_;
  std::map<std::pair<std::int32_t, std::int32_t>, std::uint64_t> sent_;  // (node, token) -> connection generation
};

// Here rather than in kafka_client.cpp: they destroy the FetchAdapter.
KafkaClient::KafkaClient(ClientConfig config)
    : config_(std::move(config)), io_(std::make_unique<boost::asio::io_context>(1)) {
  if (config_.bootstrap_servers.empty()) throw ConfigError("bootstrap.servers must be set");
}

KafkaClient::~KafkaClient() {
  fetch_adapter_.reset();
  brokers_.clear();
  bootstrap_.reset();
}

FetchCluster& KafkaClient::fetch_cluster() {
  if (!fetch_adapter_) fetch_adapter_ = std::make_unique<FetchAdapter>(*this);
  return *fetch_adapter_;
}

}  // namespace kwire::client

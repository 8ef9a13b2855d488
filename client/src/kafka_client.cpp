#include "kwire/client/kafka_client.hpp"

#include <algorithm>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "backoff.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/fetcher.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

const TopicMetadata* ClusterMetadata::topic(const std::string& name) const {
  for (auto& t : topics)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

std::string describe(std::int16_t code) { return std::string(error_name(code)); }

constexpr auto kRebootstrapRequired = static_cast<std::int16_t>(ErrorCode::rebootstrap_required);

}  // namespace

void KafkaClient::backoff(int attempt) {
  std::this_thread::sleep_until(std::min(Clock::now() + retry_backoff(config_, attempt), cap_));
}

void KafkaClient::interrupt() noexcept {
  interrupted_->store(true);
  io_->stop();  // io_context::stop() may be called from any thread
}

ConnectionOptions KafkaClient::connection_options() const {
  ConnectionOptions opts;
  opts.request_timeout = std::chrono::milliseconds(config_.request_timeout_ms);
  opts.interrupted = interrupted_;
  opts.client_id = config_.client_id;
  opts.connect_timeout = std::chrono::milliseconds(config_.socket_connection_setup_timeout_ms);
  opts.socket_receive_buffer_bytes = config_.receive_buffer_bytes;
  opts.socket_send_buffer_bytes = config_.send_buffer_bytes;
  const auto& sp = config_.security_protocol;
  opts.tls.enabled = sp == "SSL" || sp == "SASL_SSL";
  opts.tls.ca_location = config_.ssl_ca_location;
  opts.tls.certificate_location = config_.ssl_certificate_location;
  opts.tls.key_location =
      config_.ssl_key_location.empty() ? config_.ssl_certificate_location : config_.ssl_key_location;
  opts.tls.key_password = config_.ssl_key_password;
  opts.tls.ca_pem = config_.ssl_truststore_certificates;
  opts.tls.certificate_pem = config_.ssl_keystore_certificate_chain;
  opts.tls.key_pem = config_.ssl_keystore_key;
  if (!opts.tls.certificate_pem.empty() && config_.ssl_key_location.empty()) opts.tls.key_location.clear();
  opts.tls.verify_hostname = !config_.ssl_endpoint_identification_algorithm.empty();
  opts.sasl.enabled = sp == "SASL_PLAINTEXT" || sp == "SASL_SSL";
  opts.sasl.credentials.mechanism = config_.sasl_mechanism;
  opts.sasl.credentials.username = config_.sasl_username;
  opts.sasl.credentials.password = config_.sasl_password;
  opts.sasl.credentials.oauth_token = config_.sasl_oauthbearer_token;
  opts.sasl.credentials.kerberos_service_name = config_.sasl_kerberos_service_name;
  opts.sasl.credentials.kerberos_keytab = config_.sasl_kerberos_keytab;
  opts.sasl.credentials.kerberos_principal = config_.sasl_kerberos_principal;
  opts.sasl.token_callback = config_.sasl_oauthbearer_token_callback;
  return opts;
}

// KIP-368: a connection whose SASL session is close to its end is
// re-authenticated in place before the next request goes out on it (see
// Connection::renew_session_if_due).
void KafkaClient::renew_if_due(Connection& c) {
  switch (c.renew_session_if_due(default_deadline())) {
    case Connection::SessionRenewal::reauthenticated: ++connection_stats_.reauthentications; break;
    case Connection::SessionRenewal::reconnected: ++connection_stats_.connects; break;
    case Connection::SessionRenewal::none: break;
  }
}

// A connection's setup ends by request.timeout.ms from its start; the cap
// (a caller's deadline) may cut it short, and the next call takes it up
// again where it was (Connection::connect), so short polls still connect.
Connection& KafkaClient::connect_to(const std::string& host, std::uint16_t port, std::int32_t node_id) {
  auto& slot = brokers_[node_id];
  if (!(slot && slot->connecting() && slot->host() == host && slot->port() == port))
    slot = std::make_unique<Connection>(*io_, host, port, connection_options());
  slot->connect(deadline_after(std::chrono::milliseconds(config_.request_timeout_ms)), cap_);
  ++connection_stats_.connects;
  broker_generation_[node_id] = ++connection_generation_;
  return *slot;
}

Connection& KafkaClient::broker(std::int32_t node_id) {
  auto it = brokers_.find(node_id);
  if (it != brokers_.end() && it->second && it->second->is_open()) {
    renew_if_due(*it->second);
    return *it->second;
  }
  for (auto& b : metadata_.brokers) {
    if (b.node_id == node_id) return connect_to(b.host, static_cast<std::uint16_t>(b.port), node_id);
  }
  metadata();
  for (auto& b : metadata_.brokers) {
    if (b.node_id == node_id) return connect_to(b.host, static_cast<std::uint16_t>(b.port), node_id);
  }
  throw ConnectionError(fmt::format("broker {} is not in the cluster metadata", node_id));
}

ClusterMetadata KafkaClient::metadata(const std::optional<std::vector<std::string>>& topics) {
  MetadataRequest req;
  if (topics) {
    req.topics.emplace();
    for (auto& t : *topics) {
      MetadataRequest::MetadataRequestTopic rt;
      rt.name = t;
      req.topics->push_back(std::move(rt));
    }
  }
  req.allow_auto_topic_creation = false;
  Response<MetadataResponse> resp;
  std::string answered_by;
  // Each attempt is bounded by request.timeout.ms, the whole call (retries
  // included) by default.api.timeout.ms, as in the Java client. A failed
  // attempt may end in a rebootstrap (metadata_recovery.cpp).
  const auto overall = capped(deadline_after(std::chrono::milliseconds(config_.default_api_timeout_ms)));
  for (int attempt = 0;; ++attempt) {
    const auto started = Clock::now();
    try {
      auto& conn = any_connection();
      resp = conn.request<MetadataResponse>(req, std::min(default_deadline(), overall));
      answered_by = fmt::format("{} {}", &conn == bootstrap_.get() ? "bootstrap server" : "broker", conn.endpoint());
      if (resp.body.error_code != kRebootstrapRequired) break;
      // KIP-1102: the broker tells the client to start again from
      // bootstrap.servers (taken only with metadata.recovery.strategy=rebootstrap,
      // as Java does; otherwise a failed attempt).
      metadata_attempt_failed(started);
      if (rebootstrap_enabled()) rebootstrap(answered_by + " answered Metadata with REBOOTSTRAP_REQUIRED");
      if (attempt >= config_.retries || Clock::now() >= overall)
        throw KafkaError(kRebootstrapRequired, fmt::format("Metadata from {} answered REBOOTSTRAP_REQUIRED {} time(s)",
                                                           answered_by, attempt + 1));
    } catch (const ConnectionError& e) {
      metadata_attempt_failed(started);
      if (attempt >= config_.retries) throw;
      if (Clock::now() >= overall)
        throw TimeoutError(fmt::format("Metadata got no answer within default.api.timeout.ms ({} ms): {}",
                                       config_.default_api_timeout_ms, e.what()));
      bootstrap_.reset();
      brokers_.clear();
      broker_generation_.clear();
    } catch (const TimeoutError&) {
      metadata_attempt_failed(started);
      throw;
    }
    backoff(attempt);
  }
  metadata_failing_since_.reset();
  take_cluster_id(resp.body.cluster_id, answered_by);
  ClusterMetadata md;
  md.cluster_id = resp.body.cluster_id;
  md.controller_id = resp.body.controller_id;
  for (auto& b : resp.body.brokers) md.brokers.push_back({b.node_id, b.host, b.port, b.rack});
  for (auto& t : resp.body.topics) {
    TopicMetadata tm;
    tm.name = t.name.value_or("");
    tm.topic_id = t.topic_id;
    tm.is_internal = t.is_internal;
    tm.error_code = t.error_code;
    // A topic deleted and created again under the same name has a new id:
    // everything known of the old one (leader epochs included) is dropped.
    const auto known_id = topic_ids_.find(tm.name);
    const bool recreated = known_id != topic_ids_.end() && !tm.topic_id.is_zero() && known_id->second != tm.topic_id;
    const TopicMetadata* known = recreated ? nullptr : metadata_.topic(tm.name);
    for (auto& p : t.partitions) {
      PartitionMetadata pm{p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes};
      const TopicPartition tp{tm.name, p.partition_index};
      auto cached = leaders_.find(tp);
      if (recreated && cached != leaders_.end()) {
        leaders_.erase(cached);
        cached = leaders_.end();
      }
      // Leader epochs only move forward (Java's Metadata.updateLatestMetadata):
      // during a leader move a broker can still answer with the previous
      // epoch; that answer keeps what is known of the partition.
      if (cached != leaders_.end() && cached->second.epoch >= 0 && p.leader_epoch >= 0 &&
          p.leader_epoch < cached->second.epoch) {
        pm.leader_id = cached->second.node;
        pm.leader_epoch = cached->second.epoch;
        pm.error_code = 0;
        if (known)
          for (auto& kp : known->partitions)
            if (kp.partition == pm.partition) pm = kp;
      }
      leaders_[tp] = {pm.leader_id, pm.leader_epoch};
      tm.partitions.push_back(std::move(pm));
    }
    std::sort(tm.partitions.begin(), tm.partitions.end(), [](auto& a, auto& b) { return a.partition < b.partition; });
    if (!tm.topic_id.is_zero()) {
      if (recreated) names_by_id_.erase(known_id->second.to_base64());
      topic_ids_[tm.name] = tm.topic_id;
      names_by_id_[tm.topic_id.to_base64()] = tm.name;
    }
    md.topics.push_back(std::move(tm));
  }
  std::sort(md.topics.begin(), md.topics.end(), [](auto& a, auto& b) { return a.name < b.name; });
  // Merge into the cache: brokers replaced, topics updated.
  metadata_.cluster_id = md.cluster_id;
  metadata_.controller_id = md.controller_id;
  metadata_.brokers = md.brokers;
  for (auto& t : md.topics) {
    auto it = std::find_if(metadata_.topics.begin(), metadata_.topics.end(), [&](auto& x) { return x.name == t.name; });
    if (it != metadata_.topics.end()) *it = t;
    else metadata_.topics.push_back(t);
  }
  std::sort(metadata_.topics.begin(), metadata_.topics.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return md;
}

bool KafkaClient::take_leader_hint(const TopicPartition& tp, std::int32_t leader_id, std::int32_t leader_epoch,
                                   const BrokerMetadata* endpoint) {
  auto known = leaders_.find(tp);
  if (leader_id < 0 || known == leaders_.end() || known->second.epoch < 0 || leader_epoch <= known->second.epoch)
    return false;
  auto& brokers = metadata_.brokers;
  if (std::none_of(brokers.begin(), brokers.end(), [&](auto& b) { return b.node_id == leader_id; })) {
    if (!endpoint || endpoint->node_id != leader_id) return false;
    brokers.push_back(*endpoint);
  }
  known->second = {leader_id, leader_epoch};
  for (auto& t : metadata_.topics)
    if (t.name == tp.topic)
      for (auto& p : t.partitions)
        if (p.partition == tp.partition) {
          p.leader_id = leader_id;
          p.leader_epoch = leader_epoch;
          p.error_code = 0;
        }
  return true;
}

std::int32_t KafkaClient::partition_count(const std::string& topic) {
  const TopicMetadata* t = metadata_.topic(topic);
  if (!t || t->partitions.empty() || t->error_code != 0) {
    metadata(std::vector<std::string>{topic});
    t = metadata_.topic(topic);
  }
  if (!t || t->error_code != 0 || t->partitions.empty()) {
    std::int16_t code = t ? t->error_code : static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition);
    if (code == 0) code = static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition);
    throw KafkaError(code, fmt::format("topic '{}' is not available: {}", topic, describe(code)));
  }
  return static_cast<std::int32_t>(t->partitions.size());
}

std::int32_t KafkaClient::leader_id(const TopicPartition& tp) {
  auto it = leaders_.find(tp);
  if (it == leaders_.end() || it->second.node < 0) {
    metadata(std::vector<std::string>{tp.topic});
    it = leaders_.find(tp);
  }
  if (it == leaders_.end())
    throw KafkaError(static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition),
                     fmt::format("partition {} does not exist (UNKNOWN_TOPIC_OR_PARTITION)", to_string(tp)));
  if (it->second.node < 0)
    throw KafkaError(static_cast<std::int16_t>(ErrorCode::leader_not_available),
                     fmt::format("partition {} has no leader (LEADER_NOT_AVAILABLE)", to_string(tp)));
  return it->second.node;
}

Connection& KafkaClient::leader_for(const TopicPartition& tp) { return broker(leader_id(tp)); }

void KafkaClient::drop_broker(std::int32_t node_id) {
  brokers_.erase(node_id);
  broker_generation_.erase(node_id);
}

void KafkaClient::create_topics(const std::vector<NewTopic>& topics, bool if_not_exists) {
  if (metadata_.brokers.empty()) metadata(std::vector<std::string>{});
  CreateTopicsRequest req;
  req.timeout_ms = config_.request_timeout_ms;
  for (auto& t : topics) {
    CreateTopicsRequest::CreatableTopic ct;
    ct.name = t.name;
    ct.num_partitions = t.num_partitions;
    ct.replication_factor = t.replication_factor;
    for (auto& [k, v] : t.configs) {
      CreateTopicsRequest::CreatableTopicConfig c;
      c.name = k;
      c.value = v;
      ct.configs.push_back(std::move(c));
    }
    req.topics.push_back(std::move(ct));
  }
  Connection* conn = nullptr;
  try {
    conn = metadata_.controller_id >= 0 ? &broker(metadata_.controller_id) : &any_connection();
  } catch (const ConnectionError&) {
    conn = &any_connection();
  }
  auto resp = conn->request<CreateTopicsResponse>(req, default_deadline());
  for (auto& r : resp.body.topics) {
    if (r.error_code == 0) continue;
    if (if_not_exists && r.error_code == static_cast<std::int16_t>(ErrorCode::topic_already_exists)) continue;
    throw KafkaError(r.error_code, fmt::format("creating topic '{}' failed: {}{}{}", r.name, describe(r.error_code),
                                               r.error_message ? ": " : "", r.error_message.value_or("")));
  }
  // Wait until the new topics have leaders (bounded).
  std::vector<std::string> names;
  for (auto& t : topics) names.push_back(t.name);
  auto deadline = default_deadline();
  while (Clock::now() < deadline) {
    auto md = metadata(names);
    bool ready = true;
    for (auto& t : md.topics) {
      if (t.error_code != 0 || t.partitions.empty()) ready = false;
      for (auto& p : t.partitions)
        if (p.leader_id < 0) ready = false;
    }
    if (ready && md.topics.size() == names.size()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void KafkaClient::delete_topics(const std::vector<std::string>& topics) {
  if (metadata_.brokers.empty()) metadata(std::vector<std::string>{});
  DeleteTopicsRequest req;
  req.timeout_ms = config_.request_timeout_ms;
  for (auto& t : topics) {
    req.topic_names.push_back(t);
    DeleteTopicsRequest::DeleteTopicState s;
    s.name = t;
    req.topics.push_back(std::move(s));
  }
  Connection* conn = metadata_.controller_id >= 0 ? &broker(metadata_.controller_id) : &any_connection();
  auto resp = conn->request<DeleteTopicsResponse>(req, default_deadline());
  for (auto& r : resp.body.responses) {
    if (r.error_code != 0)
      throw KafkaError(r.error_code,
                       fmt::format("deleting topic '{}' failed: {}", r.name.value_or("?"), describe(r.error_code)));
  }
  for (auto& t : topics) {
    std::erase_if(leaders_, [&](auto& kv) { return kv.first.topic == t; });
    std::erase_if(metadata_.topics, [&](auto& x) { return x.name == t; });
    topic_ids_.erase(t);
  }
}

void KafkaClient::create_partitions(const std::string& topic, std::int32_t new_total_count) {
  if (metadata_.brokers.empty()) metadata(std::vector<std::string>{});
  CreatePartitionsRequest req;
  req.timeout_ms = config_.request_timeout_ms;
  CreatePartitionsRequest::CreatePartitionsTopic t;
  t.name = topic;
  t.count = new_total_count;
  req.topics.push_back(std::move(t));
  Connection* conn = nullptr;
  try {
    conn = metadata_.controller_id >= 0 ? &broker(metadata_.controller_id) : &any_connection();
  } catch (const ConnectionError&) {
    conn = &any_connection();
  }
  auto resp = conn->request<CreatePartitionsResponse>(req, default_deadline());
  for (auto& r : resp.body.results) {
    if (r.error_code == 0) continue;
    throw KafkaError(r.error_code, fmt::format("adding partitions to topic '{}' (to {} in total) failed: {}{}{}",
                                               r.name, new_total_count, describe(r.error_code),
                                               r.error_message ? ": " : "", r.error_message.value_or("")));
  }
  // Wait until every partition, old and new, has a leader (bounded).
  auto deadline = default_deadline();
  for (;;) {
    auto md = metadata(std::vector<std::string>{topic});
    const TopicMetadata* tm = md.topic(topic);
    bool ready = tm && tm->error_code == 0 && static_cast<std::int32_t>(tm->partitions.size()) >= new_total_count &&
                 std::all_of(tm->partitions.begin(), tm->partitions.end(), [](auto& p) { return p.leader_id >= 0; });
    if (ready) return;
    if (Clock::now() >= deadline)
      throw TimeoutError(fmt::format("partitions of topic '{}' had no leaders {} ms after CreatePartitions", topic,
                                     config_.request_timeout_ms));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace kwire::client

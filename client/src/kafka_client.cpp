#include "kwire/client/kafka_client.hpp"

#include <algorithm>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

std::string to_string(const TopicPartition& tp) { return fmt::format("{}-{}", tp.topic, tp.partition); }

const TopicMetadata* ClusterMetadata::topic(const std::string& name) const {
  for (auto& t : topics)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

bool refresh_worthy(std::int16_t code) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::not_leader_or_follower:
    case ErrorCode::unknown_topic_or_partition:
    case ErrorCode::leader_not_available:
    case ErrorCode::fenced_leader_epoch:
    case ErrorCode::replica_not_available:
    case ErrorCode::kafka_storage_error:
    case ErrorCode::unknown_leader_epoch:
    case ErrorCode::unknown_topic_id:
    case ErrorCode::inconsistent_topic_id:
    case ErrorCode::not_coordinator: return true;
    default: return false;
  }
}

std::string describe(std::int16_t code) { return std::string(error_name(code)); }

}  // namespace

KafkaClient::KafkaClient(ClientConfig config)
    : config_(std::move(config)), io_(std::make_unique<boost::asio::io_context>(1)) {
  if (config_.bootstrap_servers.empty()) throw ConfigError("bootstrap.servers must be set");
}

KafkaClient::~KafkaClient() {
  brokers_.clear();
  bootstrap_.reset();
}

void KafkaClient::backoff(int attempt) {
  auto ms = std::min<std::int64_t>(std::int64_t{config_.retry_backoff_ms} << std::min(attempt, 6), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

ConnectionOptions KafkaClient::connection_options() const {
  ConnectionOptions opts;
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

Connection& KafkaClient::connect_to(const std::string& host, std::uint16_t port, std::int32_t node_id) {
  auto conn = std::make_unique<Connection>(*io_, host, port, connection_options());
  conn->connect(default_deadline());
  ++connection_stats_.connects;
  if (fetches_.erase(node_id)) sessions_.erase(node_id);  // it was in flight on the connection replaced
  auto& slot = brokers_[node_id];
  slot = std::move(conn);
  return *slot;
}

Connection& KafkaClient::any_connection() {
  for (auto& [id, c] : brokers_)
    if (c && c->is_open()) {
      renew_if_due(*c);
      return *c;
    }
  if (bootstrap_ && bootstrap_->is_open()) {
    renew_if_due(*bootstrap_);
    return *bootstrap_;
  }
  std::string errors;
  bool all_tls = true;
  for (auto& addr : config_.bootstrap_servers) {
    try {
      bootstrap_ = std::make_unique<Connection>(*io_, addr.host, addr.port, connection_options());
      bootstrap_->connect(default_deadline());
      ++connection_stats_.connects;
      return *bootstrap_;
    } catch (const AuthenticationError&) {
      throw;  // the same credentials would be refused by every broker
    } catch (const ClientError& e) {
      if (!dynamic_cast<const TlsError*>(&e)) all_tls = false;
      if (!errors.empty()) errors += "; ";
      errors += e.what();
    }
  }
  if (all_tls && !errors.empty()) throw TlsError("could not reach any bootstrap server: " + errors);
  throw ConnectionError("could not reach any bootstrap server: " + errors);
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
  // Each attempt is bounded by request.timeout.ms, the whole call (retries
  // included) by default.api.timeout.ms, as in the Java client.
  const auto overall = deadline_after(std::chrono::milliseconds(config_.default_api_timeout_ms));
  for (int attempt = 0;; ++attempt) {
    try {
      auto& conn = any_connection();
      resp = conn.request<MetadataResponse>(req, std::min(default_deadline(), overall));
      break;
    } catch (const ConnectionError& e) {
      if (attempt >= config_.retries) throw;
      if (Clock::now() >= overall)
        throw TimeoutError(fmt::format("Metadata got no answer within default.api.timeout.ms ({} ms): {}",
                                       config_.default_api_timeout_ms, e.what()));
      bootstrap_.reset();
      for (auto& [node, _] : fetches_) sessions_.erase(node);
      fetches_.clear();
      brokers_.clear();
      backoff(attempt);
    }
  }
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
    for (auto& p : t.partitions) {
      tm.partitions.push_back(
          {p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes});
      leaders_[TopicPartition{tm.name, p.partition_index}] = p.leader_id;
    }
    std::sort(tm.partitions.begin(), tm.partitions.end(), [](auto& a, auto& b) { return a.partition < b.partition; });
    if (!tm.topic_id.is_zero()) {
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
  if (it == leaders_.end() || it->second < 0) {
    metadata(std::vector<std::string>{tp.topic});
    it = leaders_.find(tp);
  }
  if (it == leaders_.end())
    throw KafkaError(static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition),
                     fmt::format("partition {} does not exist (UNKNOWN_TOPIC_OR_PARTITION)", to_string(tp)));
  if (it->second < 0)
    throw KafkaError(static_cast<std::int16_t>(ErrorCode::leader_not_available),
                     fmt::format("partition {} has no leader (LEADER_NOT_AVAILABLE)", to_string(tp)));
  return it->second;
}

Connection& KafkaClient::leader_for(const TopicPartition& tp) { return broker(leader_id(tp)); }

std::map<TopicPartition, ListedOffset> KafkaClient::list_offsets(const std::map<TopicPartition, std::int64_t>& targets,
                                                                 std::optional<std::int8_t> isolation_level) {
  std::map<TopicPartition, ListedOffset> out;
  std::map<TopicPartition, std::int64_t> todo = targets;
  std::map<TopicPartition, std::int16_t> last_error;
  for (int attempt = 0; !todo.empty(); ++attempt) {
    if (attempt > config_.retries) {
      // Name a partition that is still pending and the last error it got.
      const TopicPartition& tp = todo.begin()->first;
      auto le = last_error.find(tp);
      std::int16_t code = le != last_error.end() ? le->second : static_cast<std::int16_t>(ErrorCode::network_exception);
      throw KafkaError(
          code, fmt::format("ListOffsets for {} failed after {} attempts: {}", to_string(tp), attempt, describe(code)));
    }
    if (attempt > 0) {
      backoff(attempt - 1);
      refresh_metadata_for(todo);
    }
    // Group by leader.
    std::map<std::int32_t, std::map<TopicPartition, std::int64_t>> by_leader;
    for (auto& [tp, ts] : todo) {
      std::int32_t leader;
      try {
        leader = leader_id(tp);
      } catch (const KafkaError& e) {
        last_error[tp] = e.code();
        if (e.code() == static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition) && attempt >= 1) throw;
        continue;
      }
      by_leader[leader][tp] = ts;
    }
    struct InFlight {
      Connection* conn;
      std::int32_t corr;
      std::int16_t version;
      std::int32_t leader;
    };
    std::vector<InFlight> flights;
    for (auto& [leader, parts] : by_leader) {
      ListOffsetsRequest req;
      req.replica_id = -1;
      req.isolation_level = isolation_level.value_or(config_.isolation_level);
      req.timeout_ms = config_.request_timeout_ms;
      for (auto& [tp, ts] : parts) {
        if (req.topics.empty() || req.topics.back().name != tp.topic) req.topics.push_back({tp.topic, {}, {}});
        ListOffsetsRequest::ListOffsetsPartition p;
        p.partition_index = tp.partition;
        p.timestamp = ts;
        req.topics.back().partitions.push_back(p);
      }
      try {
        auto& conn = broker(leader);
        auto v = conn.version_for<ListOffsetsRequest>();
        if (v < 1) v = 1;
        flights.push_back({&conn, conn.send(req, v), v, leader});
      } catch (const ConnectionError& e) {
        for (auto& [tp, _] : parts) last_error[tp] = static_cast<std::int16_t>(ErrorCode::network_exception);
        drop_broker(leader);
      }
    }
    for (auto& f : flights) {
      Response<ListOffsetsResponse> resp;
      try {
        resp = f.conn->receive<ListOffsetsResponse>(f.corr, f.version, default_deadline());
      } catch (const ConnectionError&) {
        // Lost mid-request: retried next round (on a new connection).
        for (auto& [tp, _] : by_leader[f.leader])
          if (todo.count(tp)) last_error[tp] = static_cast<std::int16_t>(ErrorCode::network_exception);
        continue;
      }
      for (auto& t : resp.body.topics) {
        for (auto& p : t.partitions) {
          TopicPartition tp{t.name, p.partition_index};
          if (!todo.count(tp)) continue;
          if (p.error_code == 0) {
            out[tp] = ListedOffset{p.offset, p.timestamp, p.leader_epoch};
            todo.erase(tp);
            last_error.erase(tp);
          } else if (refresh_worthy(p.error_code) || is_retriable(p.error_code)) {
            last_error[tp] = p.error_code;
          } else {
            throw KafkaError(p.error_code,
                             fmt::format("ListOffsets for {} failed: {}", to_string(tp), describe(p.error_code)));
          }
        }
      }
    }
  }
  return out;
}

std::vector<FetchedPartition> KafkaClient::fetch(const std::map<TopicPartition, std::int64_t>& positions,
                                                 std::chrono::milliseconds max_wait) {
  // A pipelined Fetch still in flight holds its session's epoch: let it
  // arrive (its records are not wanted here) before sending new ones.
  while (fetch_in_flight()) wait_fetch(Deadline::max());
  std::vector<FetchedPartition> out = send_fetches(positions, max_wait);
  while (fetch_in_flight()) {
    auto arrived = wait_fetch(Deadline::max());
    if (!arrived) break;
    for (auto& fp : decode_fetch(std::move(*arrived))) out.push_back(std::move(fp));
  }
  return out;
}

void KafkaClient::drop_broker(std::int32_t node_id) {
  brokers_.erase(node_id);
  if (fetches_.erase(node_id)) sessions_.erase(node_id);  // the broker may have moved the epoch on
}

std::vector<FetchedPartition> KafkaClient::send_fetches(const std::map<TopicPartition, std::int64_t>& positions,
                                                        std::chrono::milliseconds max_wait) {
  std::vector<FetchedPartition> out;
  std::map<std::int32_t, std::map<TopicPartition, std::int64_t>> by_leader;
  for (auto& [tp, off] : positions) {
    try {
      const auto leader = leader_id(tp);
      if (!fetches_.count(leader)) by_leader[leader][tp] = off;
    } catch (const KafkaError& e) {
      FetchedPartition fp;
      fp.tp = tp;
      fp.fetch_offset = off;
      fp.error_code = e.code();
      out.push_back(std::move(fp));
    }
  }
  bool refresh = false;
  for (auto& [leader, parts] : by_leader) {
    Connection* conn;
    try {
      conn = &broker(leader);
    } catch (const ConnectionError&) {
      drop_broker(leader);
      refresh = true;  // the leader may be gone for good: ask who leads now
      for (auto& [tp, off] : parts) {
        FetchedPartition fp;
        fp.tp = tp;
        fp.fetch_offset = off;
        fp.error_code = static_cast<std::int16_t>(ErrorCode::network_exception);
        out.push_back(std::move(fp));
      }
      continue;
    }
    auto v = conn->version_for<FetchRequest>();
    FetchRequest req;
    req.replica_id = -1;
    req.max_wait_ms = static_cast<std::int32_t>(max_wait.count());
    req.min_bytes = config_.fetch_min_bytes;
    req.max_bytes = config_.fetch_max_bytes;
    req.isolation_level = config_.isolation_level;
    auto max_bytes_for = [&](const TopicPartition& tp) {
      auto it = partition_max_bytes_.find(tp);
      return it != partition_max_bytes_.end() ? it->second : config_.max_partition_fetch_bytes;
    };
    bool ids_known = true;
    for (auto& [tp, off] : parts)
      if (topic_ids_.find(tp.topic) == topic_ids_.end()) ids_known = false;
    // Topic ids are required from v13; stay at v12 while one is unknown.
    if (v >= 13 && !ids_known) v = 12;
    auto& session = sessions_[leader];
    const bool use_session = v >= 7;
    const bool incremental = use_session && session.id != 0;
    if (!use_session) {
      req.session_id = 0;
      req.session_epoch = -1;  // sessionless full fetch
    } else if (!incremental) {
      session = FetchSession{};
      req.session_id = 0;
      req.session_epoch = 0;  // full fetch that asks for a new session
    } else {
      req.session_id = session.id;
      req.session_epoch = session.epoch;
    }
    auto add_topic = [&](std::vector<FetchRequest::FetchTopic>& topics, const std::string& name) {
      if (topics.empty() || topics.back().topic != name) {
        FetchRequest::FetchTopic ft;
        ft.topic = name;
        auto id = topic_ids_.find(name);
        if (id != topic_ids_.end()) ft.topic_id = id->second;
        topics.push_back(std::move(ft));
      }
    };
    for (auto& [tp, off] : parts) {
      const std::int32_t mb = max_bytes_for(tp);
      if (incremental) {
        auto it = session.sent.find(tp);
        if (it != session.sent.end() && it->second == std::make_pair(off, mb)) continue;  // unchanged
      }
      add_topic(req.topics, tp.topic);
      FetchRequest::FetchPartition fp;
      fp.partition = tp.partition;
      fp.fetch_offset = off;
      fp.partition_max_bytes = mb;
      req.topics.back().partitions.push_back(fp);
    }
    if (incremental) {
      for (auto& [tp, _] : session.sent) {
        if (parts.count(tp)) continue;
        if (req.forgotten_topics_data.empty() || req.forgotten_topics_data.back().topic != tp.topic) {
          FetchRequest::ForgottenTopic ft;
          ft.topic = tp.topic;
          auto id = topic_ids_.find(tp.topic);
          if (id != topic_ids_.end()) ft.topic_id = id->second;
          req.forgotten_topics_data.push_back(std::move(ft));
        }
        req.forgotten_topics_data.back().partitions.push_back(tp.partition);
      }
    }
    FetchInFlight f;
    f.conn = conn;
    f.version = v;
    f.deadline = Clock::now() + max_wait + std::chrono::milliseconds(config_.request_timeout_ms);
    f.incremental = incremental;
    f.use_session = use_session;
    // What the broker will remember once it answers without error.
    for (auto& [tp, off] : parts) f.sent[tp] = {off, max_bytes_for(tp)};
    f.positions = std::move(parts);
    try {
      f.corr = conn->send(req, v);
    } catch (const ConnectionError&) {
      drop_broker(leader);
      refresh = true;
      for (auto& [tp, off] : f.positions) {
        FetchedPartition fp;
        fp.tp = tp;
        fp.fetch_offset = off;
        fp.error_code = static_cast<std::int16_t>(ErrorCode::network_exception);
        out.push_back(std::move(fp));
      }
      continue;
    }
    fetches_[leader] = std::move(f);
  }
  if (refresh) {
    try {
      refresh_metadata_for(positions);
    } catch (const ClientError&) {
    }
  }
  return out;
}

namespace {
// Where the next fetch of a partition starts once the record set of a Fetch
// answer is taken in: after the last complete batch (v2: base offset + last
// offset delta + 1; legacy message sets: the wrapper's offset + 1), read from
// the batch headers alone. A partial batch at the end is not counted; its
// full size (with the 12-byte log overhead) goes to `partial_size` when no
// complete batch precedes it.
std::int64_t next_fetch_offset(ByteSpan data, std::int64_t fetch_offset, std::size_t& partial_size) {
  constexpr std::size_t kLogOverhead = 12;      // base offset + batch length
  constexpr std::size_t kLastOffsetDelta = 23;  // position in a v2 batch header
  std::int64_t next = fetch_offset;
  bool complete = false;
  std::size_t pos = 0;
  partial_size = 0;
  while (data.size() - pos >= kLogOverhead) {
    const std::uint8_t* b = data.data() + pos;
    const auto base = static_cast<std::int64_t>(load_be64(b));
    const auto length = static_cast<std::int32_t>(load_be32(b + 8));
    if (length <= 0) break;  // corrupt: the decoder reports it
    const std::size_t size = kLogOverhead + static_cast<std::size_t>(length);
    if (data.size() - pos < size) {
      if (!complete) partial_size = size;
      break;
    }
    std::int64_t last = base;
    if (size > kLastOffsetDelta + 4 && b[16] >= 2)
      last = base + static_cast<std::int32_t>(load_be32(b + kLastOffsetDelta));
    next = std::max(next, last + 1);
    complete = true;
    pos += size;
  }
  return next;
}
}  // namespace

std::optional<KafkaClient::ArrivedFetch> KafkaClient::wait_fetch(Deadline until) {
  bool polled = false;  // read what is there at least once, even when `until` has passed
  while (!fetches_.empty()) {
    const auto now = Clock::now();
    auto ready = fetches_.end();
    Deadline first_deadline = Deadline::max();
    for (auto it = fetches_.begin(); it != fetches_.end(); ++it) {
      auto& f = it->second;
      auto b = brokers_.find(it->first);
      const bool gone = b == brokers_.end() || b->second.get() != f.conn;
      if (gone || f.conn->ready(f.corr) || now >= f.deadline) {
        ready = it;
        break;
      }
      first_deadline = std::min(first_deadline, f.deadline);
    }
    if (ready == fetches_.end()) {
      if (io_->stopped()) io_->restart();
      if (now >= until) {
        if (polled) return std::nullopt;
        polled = true;
        io_->poll();
        continue;
      }
      const auto wake = std::min(until, first_deadline);
      io_->run_one_for(std::chrono::duration_cast<std::chrono::milliseconds>(wake - now) +
                       std::chrono::milliseconds(1));
      continue;
    }
    const std::int32_t leader = ready->first;
    FetchInFlight f = std::move(ready->second);
    fetches_.erase(ready);
    ArrivedFetch a;
    a.leader = leader;
    a.positions = std::move(f.positions);
    auto lose = [&] {
      sessions_.erase(leader);
      for (auto& [tp, off] : a.positions) {
        FetchedPartition fp;
        fp.tp = tp;
        fp.fetch_offset = off;
        fp.error_code = static_cast<std::int16_t>(ErrorCode::network_exception);
        a.lost.push_back(std::move(fp));
        a.failed.insert(tp);
      }
    };
    auto b = brokers_.find(leader);
    if (b == brokers_.end() || b->second.get() != f.conn) {
      lose();  // its connection was closed or replaced meanwhile
      return a;
    }
    Response<FetchResponse> resp;
    try {
      resp = f.conn->receive<FetchResponse>(f.corr, f.version, f.deadline);
    } catch (const ConnectionError&) {
      drop_broker(leader);
      lose();
      return a;
    } catch (const TimeoutError&) {
      drop_broker(leader);
      sessions_.erase(leader);
      throw;
    }
    const auto top_error = resp.body.error_code;
    if (top_error == static_cast<std::int16_t>(ErrorCode::fetch_session_id_not_found) ||
        top_error == static_cast<std::int16_t>(ErrorCode::invalid_fetch_session_epoch) ||
        top_error == static_cast<std::int16_t>(ErrorCode::fetch_session_topic_id_error)) {
      // The broker dropped or does not know our session: the next fetch to it
      // is a full one that opens a new session. Nothing is lost: positions
      // did not move.
      sessions_.erase(leader);
      return a;
    }
    if (top_error != 0) {
      sessions_.erase(leader);
      throw KafkaError(top_error, fmt::format("Fetch failed: {}", describe(top_error)));
    }
    {
      auto& session = sessions_[leader];
      if (f.use_session && resp.body.session_id != 0) {
        if (!f.incremental) session.id = resp.body.session_id;
        session.epoch = session.epoch == 0x7fffffff ? 1 : session.epoch + 1;
        session.sent = std::move(f.sent);
      } else {
        sessions_.erase(leader);  // the broker keeps no session for us
      }
    }
    for (auto& t : resp.body.responses) {
      const std::string* name = &t.topic;
      if (f.version >= 13) {
        auto it = names_by_id_.find(t.topic_id.to_base64());
        if (it == names_by_id_.end()) continue;
        name = &it->second;
      }
      for (auto& p : t.partitions) {
        TopicPartition tp{*name, p.partition_index};
        auto pos = a.positions.find(tp);
        if (pos == a.positions.end()) continue;
        if (p.error_code != 0) {
          a.failed.insert(tp);
          continue;
        }
        std::size_t partial = 0;
        const auto next = p.records.data ? next_fetch_offset(*p.records.data, pos->second, partial) : pos->second;
        a.next_offsets[tp] = next;
        // A batch bigger than what was asked for arrives cut off: ask for its
        // full size in the next fetch already (decode_fetch checks the bound).
        if (partial > 0 && next == pos->second && partial <= static_cast<std::size_t>(config_.fetch_max_bytes))
          partition_max_bytes_[tp] = static_cast<std::int32_t>(partial);
      }
    }
    a.response = std::move(resp);
    return a;
  }
  return std::nullopt;
}

std::shared_ptr<DecodedRecords> KafkaClient::reusable_decoded() {
  for (auto& d : decoded_pool_)
    if (d.use_count() == 1) {
      d->clear();
      // Decompression buffers are not kept: a set is reused for any partition,
      // and each kept buffer would grow to the largest batch it ever held.
      d->buffers.clear();
      return d;
    }
  auto d = std::make_shared<DecodedRecords>();
  // Bounded: enough for the partitions of two fetch rounds of a typical
  // assignment; beyond that record sets are not kept.
  if (decoded_pool_.size() < 64) decoded_pool_.push_back(d);
  return d;
}

std::vector<FetchedPartition> KafkaClient::decode_fetch(ArrivedFetch&& arrived) {
  std::vector<FetchedPartition> out = std::move(arrived.lost);
  const auto& positions = arrived.positions;
  bool refresh = !out.empty();  // the connection was lost: ask who leads now
  if (!arrived.response) {
    if (refresh) {
      try {
        refresh_metadata_for(positions);
      } catch (const ClientError&) {
      }
    }
    return out;
  }
  auto& resp = *arrived.response;
  auto frame = resp.frame;
  for (auto& t : resp.body.responses) {
    const std::string* name = &t.topic;
    if (resp.version >= 13) {
      auto it = names_by_id_.find(t.topic_id.to_base64());
      if (it == names_by_id_.end()) continue;
      name = &it->second;
    }
    for (auto& p : t.partitions) {
      FetchedPartition fp;
      fp.tp = TopicPartition{*name, p.partition_index};
      auto pos = positions.find(fp.tp);
      if (pos == positions.end()) continue;
      fp.fetch_offset = pos->second;
      fp.error_code = p.error_code;
      fp.high_watermark = p.high_watermark;
      fp.last_stable_offset = p.last_stable_offset;
      fp.log_start_offset = p.log_start_offset;
      fp.frame = frame;
      if (p.error_code == 0) {
        DecodeOptions opts;
        opts.check_crcs = config_.check_crcs;
        opts.read_committed = config_.isolation_level == 1;
        if (p.aborted_transactions)
          for (auto& a : *p.aborted_transactions) opts.aborted_transactions.push_back({a.producer_id, a.first_offset});
        fp.records = reusable_decoded();
        fp.records->next_offset = fp.fetch_offset;
        if (p.records.data) {
          try {
            decode_records(*p.records.data, fp.fetch_offset, opts, *fp.records);
          } catch (const CorruptRecordError& e) {
            throw CorruptRecordError(e.base_offset(), e.kind(),
                                     fmt::format("{} (partition {})", e.what(), to_string(fp.tp)));
          }
        }
        // A batch bigger than what was asked for arrives cut off; ask for
        // its full size next time (Kafka brokers from 0.10.1 return at
        // least one whole batch, older ones do not).
        if (fp.records->records.empty() && fp.records->truncated_tail && fp.records->next_offset == fp.fetch_offset &&
            fp.records->truncated_batch_size > 0) {
          const auto need = fp.records->truncated_batch_size;
          if (need > static_cast<std::size_t>(config_.fetch_max_bytes))
            throw ClientError(fmt::format("the batch at offset {} of {} is {} bytes, above fetch.max.bytes ({})",
                                          fp.fetch_offset, to_string(fp.tp), need, config_.fetch_max_bytes));
          partition_max_bytes_[fp.tp] = static_cast<std::int32_t>(need);
        } else if (!fp.records->records.empty()) {
          partition_max_bytes_.erase(fp.tp);
        }
      } else if (refresh_worthy(p.error_code)) {
        refresh = true;
      }
      out.push_back(std::move(fp));
    }
  }
  if (refresh) {
    try {
      refresh_metadata_for(positions);
    } catch (const ClientError&) {
    }
  }
  return out;
}

std::map<TopicPartition, ProduceResult> KafkaClient::produce(const std::map<TopicPartition, Bytes>& batches) {
  std::map<TopicPartition, ProduceResult> out;
  std::set<TopicPartition> todo;
  for (auto& [tp, _] : batches) todo.insert(tp);
  std::map<TopicPartition, std::int16_t> last_error;
  for (int attempt = 0; !todo.empty(); ++attempt) {
    if (attempt > config_.retries) {
      for (auto& tp : todo) out[tp].error_code = last_error.count(tp) ? last_error[tp] : -1;
      break;
    }
    if (attempt > 0) {
      backoff(attempt - 1);
      refresh_metadata_for(todo);
    }
    std::map<std::int32_t, std::vector<TopicPartition>> by_leader;
    for (auto& tp : todo) {
      try {
        by_leader[leader_id(tp)].push_back(tp);
      } catch (const KafkaError& e) {
        last_error[tp] = e.code();
      }
    }
    struct InFlight {
      Connection* conn;
      std::int32_t corr;
      std::int16_t version;
      std::int32_t leader;
    };
    std::vector<InFlight> flights;
    for (auto& [leader, tps] : by_leader) {
      ProduceRequest req;
      req.acks = config_.acks;
      req.timeout_ms = config_.request_timeout_ms;
      for (auto& tp : tps) {
        if (req.topic_data.empty() || req.topic_data.back().name != tp.topic) {
          ProduceRequest::TopicProduceData td;
          td.name = tp.topic;
          auto id = topic_ids_.find(tp.topic);
          if (id != topic_ids_.end()) td.topic_id = id->second;
          req.topic_data.push_back(std::move(td));
        }
        ProduceRequest::PartitionProduceData pd;
        pd.index = tp.partition;
        const auto& b = batches.at(tp);
        pd.records.data = ByteSpan(b);
        req.topic_data.back().partition_data.push_back(std::move(pd));
      }
      try {
        auto& conn = broker(leader);
        auto v = conn.version_for<ProduceRequest>();
        if (v >= 13) {
          bool all_ids =
              std::all_of(req.topic_data.begin(), req.topic_data.end(), [](auto& t) { return !t.topic_id.is_zero(); });
          if (!all_ids) v = 12;
        }
        bool expect = config_.acks != 0;
        auto corr = conn.send(req, v, expect);
        if (expect) flights.push_back({&conn, corr, v, leader});
        else
          for (auto& tp : tps) {
            out[tp] = ProduceResult{};
            todo.erase(tp);
          }
      } catch (const ConnectionError&) {
        drop_broker(leader);
        for (auto& tp : tps) last_error[tp] = static_cast<std::int16_t>(ErrorCode::network_exception);
      }
    }
    for (auto& f : flights) {
      Response<ProduceResponse> resp;
      try {
        resp = f.conn->receive<ProduceResponse>(f.corr, f.version, default_deadline());
      } catch (const ConnectionError&) {
        drop_broker(f.leader);
        continue;
      }
      for (auto& t : resp.body.responses) {
        std::string name = t.name;
        if (f.version >= 13) {
          auto it = names_by_id_.find(t.topic_id.to_base64());
          if (it != names_by_id_.end()) name = it->second;
        }
        for (auto& p : t.partition_responses) {
          TopicPartition tp{name, p.index};
          if (!todo.count(tp)) continue;
          if (p.error_code == 0) {
            out[tp] = ProduceResult{0, p.base_offset, p.log_append_time_ms};
            todo.erase(tp);
          } else if (refresh_worthy(p.error_code) || is_retriable(p.error_code)) {
            last_error[tp] = p.error_code;
          } else {
            out[tp] = ProduceResult{p.error_code, -1, -1};
            todo.erase(tp);
          }
        }
      }
    }
  }
  return out;
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

std::map<TopicPartition, std::int64_t> KafkaClient::delete_records(
    const std::map<TopicPartition, std::int64_t>& before_offsets) {
  std::map<TopicPartition, std::int64_t> out;
  std::map<TopicPartition, std::int64_t> todo = before_offsets;
  std::map<TopicPartition, std::int16_t> last_error;
  for (int attempt = 0; !todo.empty(); ++attempt) {
    if (attempt > config_.retries) {
      auto it = last_error.begin();
      TopicPartition tp = it != last_error.end() ? it->first : todo.begin()->first;
      std::int16_t code = it != last_error.end() ? it->second : static_cast<std::int16_t>(ErrorCode::request_timed_out);
      throw KafkaError(code, fmt::format("DeleteRecords for {} failed after {} attempts: {}", to_string(tp), attempt,
                                         describe(code)));
    }
    if (attempt > 0) {
      backoff(attempt - 1);
      refresh_metadata_for(todo);
    }
    std::map<std::int32_t, std::map<TopicPartition, std::int64_t>> by_leader;
    for (auto& [tp, off] : todo) {
      try {
        by_leader[leader_id(tp)][tp] = off;
      } catch (const KafkaError& e) {
        last_error[tp] = e.code();
        // A partition that is still unknown after a refresh does not exist.
        if (e.code() == static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition) && attempt >= 1) throw;
      }
    }
    struct InFlight {
      Connection* conn;
      std::int32_t corr;
      std::int16_t version;
      std::int32_t leader;
    };
    std::vector<InFlight> flights;
    for (auto& [leader, parts] : by_leader) {
      DeleteRecordsRequest req;
      req.timeout_ms = config_.request_timeout_ms;
      for (auto& [tp, off] : parts) {
        if (req.topics.empty() || req.topics.back().name != tp.topic) {
          DeleteRecordsRequest::DeleteRecordsTopic t;
          t.name = tp.topic;
          req.topics.push_back(std::move(t));
        }
        DeleteRecordsRequest::DeleteRecordsPartition p;
        p.partition_index = tp.partition;
        p.offset = off;
        req.topics.back().partitions.push_back(p);
      }
      try {
        auto& conn = broker(leader);
        auto v = conn.version_for<DeleteRecordsRequest>();
        flights.push_back({&conn, conn.send(req, v), v, leader});
      } catch (const ConnectionError&) {
        drop_broker(leader);
        for (auto& [tp, _] : parts) last_error[tp] = static_cast<std::int16_t>(ErrorCode::network_exception);
      }
    }
    for (auto& f : flights) {
      Response<DeleteRecordsResponse> resp;
      try {
        resp = f.conn->receive<DeleteRecordsResponse>(f.corr, f.version, default_deadline());
      } catch (const ConnectionError&) {
        drop_broker(f.leader);
        continue;
      }
      for (auto& t : resp.body.topics) {
        for (auto& p : t.partitions) {
          TopicPartition tp{t.name, p.partition_index};
          if (!todo.count(tp)) continue;
          if (p.error_code == 0) {
            out[tp] = p.low_watermark;
            todo.erase(tp);
            last_error.erase(tp);
          } else if (refresh_worthy(p.error_code) || is_retriable(p.error_code)) {
            last_error[tp] = p.error_code;
          } else {
            throw KafkaError(p.error_code, fmt::format("DeleteRecords for {} before offset {} failed: {}",
                                                       to_string(tp), todo.at(tp), describe(p.error_code)));
          }
        }
      }
    }
  }
  return out;
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

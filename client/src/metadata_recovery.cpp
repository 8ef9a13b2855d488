// Where KafkaClient finds a broker to ask, and when it gives up the brokers
// it knows for bootstrap.servers: metadata.recovery.strategy and
// metadata.recovery.rebootstrap.trigger.ms, as Java's clients apply them
// since Kafka 4.0 (KIP-899, KIP-1102).
//
// Before any metadata has arrived the client connects to bootstrap.servers.
// Once metadata named brokers, it connects only to those, the least recently
// failed first. With strategy "none" that stays so; with "rebootstrap" the
// client drops its connections and the brokers it knows, and connects to
// bootstrap.servers again (resolving their names again), when
//  - none of the known brokers can be connected to (KIP-899),
//  - Metadata attempts have failed for metadata.recovery.rebootstrap.trigger.ms,
//    counted from the start of the first failed attempt since the last
//    answer (KIP-1102),
//  - a Metadata answer carries the top-level error REBOOTSTRAP_REQUIRED (KIP-1102).
// The retries around it are Metadata's own (KafkaClient::metadata), with the
// client's one back-off rule.
#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kwire/client/connection.hpp"
#include "kwire/client/kafka_client.hpp"

namespace kwire::client {

namespace {

void append_error(std::string& errors, bool& all_tls, const ClientError& e) {
  if (!dynamic_cast<const TlsError*>(&e)) all_tls = false;
  if (!errors.empty()) errors += "; ";
  errors += e.what();
}

[[noreturn]] void unreachable(const std::string& what, const std::string& errors, bool all_tls) {
  if (all_tls && !errors.empty()) throw TlsError(what + ": " + errors);
  throw ConnectionError(what + ": " + errors);
}

std::string join_addresses(const std::vector<BrokerAddress>& list) {
  std::string out;
  for (auto& a : list) {
    if (!out.empty()) out += ",";
    out += a.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", a.host, a.port)
                                                 : fmt::format("{}:{}", a.host, a.port);
  }
  return out;
}

}  // namespace

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
  if (!metadata_.brokers.empty()) {
    if (auto* c = connect_known_broker(errors, all_tls)) return *c;
    if (!rebootstrap_enabled())
      unreachable("could not reach any broker of the cluster metadata (metadata.recovery.strategy=none)", errors,
                  all_tls);
    rebootstrap(fmt::format("none of the {} brokers of the last metadata could be reached ({})",
                            metadata_.brokers.size(), errors));
    errors.clear();
    all_tls = true;
  }
  if (auto* c = connect_bootstrap(errors, all_tls)) return *c;
  unreachable("could not reach any bootstrap server", errors, all_tls);
}

Connection* KafkaClient::connect_known_broker(std::string& errors, bool& all_tls) {
  // A setup cut short by the cap goes on first, then the brokers that have
  // not failed, then the others from the least recently failed.
  auto rank = [&](const BrokerMetadata& b) {
    auto slot = brokers_.find(b.node_id);
    const bool resuming = slot != brokers_.end() && slot->second && slot->second->connecting();
    auto failed = connect_failed_at_.find(b.node_id);
    return std::make_pair(resuming ? 0 : 1,
                          failed == connect_failed_at_.end() ? Clock::time_point::min() : failed->second);
  };
  std::vector<BrokerMetadata> order = metadata_.brokers;
  std::stable_sort(order.begin(), order.end(), [&](auto& a, auto& b) { return rank(a) < rank(b); });
  for (auto& b : order) {
    try {
      auto& c = connect_to(b.host, static_cast<std::uint16_t>(b.port), b.node_id);
      connect_failed_at_.erase(b.node_id);
      return &c;
    } catch (const AuthenticationError&) {
      throw;  // the same credentials would be refused by every broker
    } catch (const ClientError& e) {
      auto slot = brokers_.find(b.node_id);
      if (slot != brokers_.end() && slot->second && slot->second->connecting()) throw;  // cut short by the cap
      if (interrupted_->load()) throw;
      connect_failed_at_[b.node_id] = Clock::now();
      drop_broker(b.node_id);
      append_error(errors, all_tls, e);
    }
  }
  return nullptr;
}

// A bootstrap connection's setup ends by request.timeout.ms from its start;
// one cut short by the cap is taken up again by the next call.
Connection* KafkaClient::connect_bootstrap(std::string& errors, bool& all_tls) {
  const auto setup_deadline = deadline_after(std::chrono::milliseconds(config_.request_timeout_ms));
  auto try_bootstrap = [&]() -> bool {
    try {
      bootstrap_->connect(setup_deadline, cap_);
      ++connection_stats_.connects;
      return true;
    } catch (const AuthenticationError&) {
      throw;
    } catch (const ClientError& e) {
      if (bootstrap_->connecting()) throw;
      append_error(errors, all_tls, e);
      return false;
    }
  };
  if (bootstrap_ && bootstrap_->connecting() && try_bootstrap()) return bootstrap_.get();
  for (auto& addr : config_.bootstrap_servers) {
    bootstrap_ = std::make_unique<Connection>(*io_, addr.host, addr.port, connection_options());
    if (try_bootstrap()) return bootstrap_.get();
  }
  return nullptr;
}

void KafkaClient::rebootstrap(const std::string& why) {
  ++connection_stats_.rebootstraps;
  std::size_t open = bootstrap_ && bootstrap_->is_open() ? 1 : 0;
  for (auto& [id, c] : brokers_)
    if (c && c->is_open()) ++open;
  std::fprintf(stderr,
               "WARN rebootstrap: %s; dropping %zu open connection(s) and %zu known broker(s) of cluster %s, "
               "starting again from bootstrap.servers %s\n",
               why.c_str(), open, metadata_.brokers.size(), metadata_.cluster_id.value_or("(unknown)").c_str(),
               join_addresses(config_.bootstrap_servers).c_str());
  bootstrap_.reset();
  brokers_.clear();
  broker_generation_.clear();
  connect_failed_at_.clear();
  metadata_.brokers.clear();
  metadata_.controller_id = -1;
  metadata_failing_since_.reset();
}

void KafkaClient::metadata_attempt_failed(Clock::time_point started) {
  if (!metadata_failing_since_) metadata_failing_since_ = started;
  // Without known brokers the client is on bootstrap.servers already.
  if (!rebootstrap_enabled() || metadata_.brokers.empty() || interrupted_->load()) return;
  const auto failing =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *metadata_failing_since_).count();
  if (failing >= config_.metadata_recovery_rebootstrap_trigger_ms)
    rebootstrap(fmt::format("no Metadata answer for {} ms (metadata.recovery.rebootstrap.trigger.ms={})", failing,
                            config_.metadata_recovery_rebootstrap_trigger_ms));
}

void KafkaClient::take_cluster_id(const std::optional<std::string>& id, const std::string& answered_by) {
  const auto& known = metadata_.cluster_id;
  if (!known || !id || *known == *id) return;
  std::fprintf(stderr,
               "WARN metadata: %s answered for cluster %s, not cluster %s known so far: the topics, partitions and "
               "leaders of cluster %s are forgotten\n",
               answered_by.c_str(), id->c_str(), known->c_str(), known->c_str());
  leaders_.clear();
  topic_ids_.clear();
  names_by_id_.clear();
  metadata_.topics.clear();
}

}  // namespace kwire::client

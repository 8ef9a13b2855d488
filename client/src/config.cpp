#include "kwire/client/config.hpp"
#include "kwire/client/sasl.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kwire/client/errors.hpp"

namespace kwire::client {

std::vector<BrokerAddress> parse_bootstrap_servers(const std::string& list) {
  std::vector<BrokerAddress> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    auto comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    // trim
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    // strip a scheme like PLAINTEXT://
    if (auto s = item.find("://"); s != std::string::npos) item = item.substr(s + 3);
    BrokerAddress a;
    std::string port_str;
    if (!item.empty() && item[0] == '[') {
      auto close = item.find(']');
      if (close == std::string::npos) throw ConfigError(fmt::format("bootstrap.servers: bad address '{}'", item));
      a.host = item.substr(1, close - 1);
      if (close + 1 < item.size() && item[close + 1] == ':') port_str = item.substr(close + 2);
    } else {
      auto colon = item.rfind(':');
      if (colon == std::string::npos) {
        a.host = item;
      } else {
        a.host = item.substr(0, colon);
        port_str = item.substr(colon + 1);
      }
    }
    if (a.host.empty()) throw ConfigError(fmt::format("bootstrap.servers: empty host in '{}'", item));
    if (!port_str.empty()) {
      unsigned p = 0;
      auto [ptr, ec] = std::from_chars(port_str.data(), port_str.data() + port_str.size(), p);
      if (ec != std::errc() || ptr != port_str.data() + port_str.size() || p == 0 || p > 65535)
        throw ConfigError(fmt::format("bootstrap.servers: bad port in '{}'", item));
      a.port = static_cast<std::uint16_t>(p);
    }
    out.push_back(a);
  }
  if (out.empty()) throw ConfigError("bootstrap.servers is empty");
  return out;
}

namespace {

std::int64_t parse_int(const std::string& key, const std::string& v, std::int64_t lo, std::int64_t hi) {
  std::int64_t x = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty())
    throw ConfigError(fmt::format("invalid value '{}' for {}: expected an integer", v, key));
  if (x < lo || x > hi) throw ConfigError(fmt::format("invalid value {} for {}: must be in [{}, {}]", x, key, lo, hi));
  return x;
}

bool parse_bool(const std::string& key, const std::string& v) {
  std::string l = v;
  std::transform(l.begin(), l.end(), l.begin(), ::tolower);
  if (l == "true") return true;
  if (l == "false") return false;
  throw ConfigError(fmt::format("invalid value '{}' for {}: expected true or false", v, key));
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s;
}

// Every configuration name of Java's KafkaConsumer (ConsumerConfig), the one
// list of them: the source uses it to tell a client option given without
// its "kafka." prefix.
const std::set<std::string_view>& java_consumer_properties() {
  static const std::set<std::string_view> names = {
      "allow.auto.create.topics",
      "auto.commit.interval.ms",
      "auto.include.jmx.reporter",
      "auto.offset.reset",
      "bootstrap.servers",
      "check.crcs",
      "client.dns.lookup",
      "client.id",
      "client.rack",
      "connections.max.idle.ms",
      "default.api.timeout.ms",
      "enable.auto.commit",
      "enable.metrics.push",
      "exclude.internal.topics",
      "fetch.max.bytes",
      "fetch.max.wait.ms",
      "fetch.min.bytes",
      "group.id",
      "group.instance.id",
      "group.protocol",
      "group.remote.assignor",
      "heartbeat.interval.ms",
      "interceptor.classes",
      "isolation.level",
      "key.deserializer",
      "max.partition.fetch.bytes",
      "max.poll.interval.ms",
      "max.poll.records",
      "metadata.max.age.ms",
      "metadata.recovery.rebootstrap.trigger.ms",
      "metadata.recovery.strategy",
      "metric.reporters",
      "metrics.num.samples",
      "metrics.recording.level",
      "metrics.sample.window.ms",
      "partition.assignment.strategy",
      "receive.buffer.bytes",
      "reconnect.backoff.max.ms",
      "reconnect.backoff.ms",
      "request.timeout.ms",
      "retry.backoff.max.ms",
      "retry.backoff.ms",
      "security.providers",
      "send.buffer.bytes",
      "session.timeout.ms",
      "socket.connection.setup.timeout.max.ms",
      "socket.connection.setup.timeout.ms",
      "value.deserializer",
  };
  return names;
}

// Java producer and admin and librdkafka keys that kwire accepts without
// using (the consumer's are in java_consumer_properties()). Prefix entries
// end in '.'.
const std::set<std::string_view>& known_unused_keys() {
  static const std::set<std::string_view> keys = {
      // Java producer
      "key.serializer", "metadata.max.idle.ms", "partitioner.class", "partitioner.ignore.keys",
      "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms", "value.serializer",
      "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
      // Java TLS / SASL settings kwire leaves to OpenSSL / its own mechanisms
      "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.keymanager.algorithm",
      "ssl.trustmanager.algorithm", "ssl.secure.random.implementation", "ssl.provider", "ssl.engine.factory.class",
      "sasl.client.callback.handler.class", "sasl.login.callback.handler.class", "sasl.login.class",
      "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.ticket.renew.jitter",
      "sasl.kerberos.ticket.renew.window.factor",
      // librdkafka
      "debug", "log_level", "log.connection.close", "api.version.request", "api.version.fallback.ms",
      "broker.version.fallback", "statistics.interval.ms", "socket.keepalive.enable", "socket.nagle.disable",
      "topic.metadata.refresh.interval.ms", "enable.partition.eof", "enable.auto.offset.store", "queued.min.messages",
      "queued.max.messages.kbytes", "enable.ssl.certificate.verification", "queue.buffering.max.messages",
      "batch.num.messages", "partitioner", "sticky.partitioning.linger.ms", "builtin.features", "client.software.name",
      "client.software.version", "broker.address.family", "enable.sasl.oauthbearer.unsecure.jwt",
      "sasl.oauthbearer.config", "sasl.oauthbearer.method", "sasl.oauthbearer.client.id",
      "sasl.oauthbearer.client.secret", "sasl.oauthbearer.scope", "sasl.oauthbearer.extensions",
      "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.scope.claim.name",
      "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
      "reconnect.backoff.jitter.ms", "topic.metadata.refresh.sparse", "internal.termination.signal"};
  return keys;
}

constexpr std::string_view kKnownUnusedPrefixes[] = {"metrics.", "sasl.login."};

}  // namespace

bool is_java_consumer_property(std::string_view key) { return java_consumer_properties().count(key) > 0; }

bool is_known_client_config(std::string_view key) {
  if (known_unused_keys().count(key) || is_java_consumer_property(key)) return true;
  for (auto p : kKnownUnusedPrefixes)
    if (key.substr(0, p.size()) == p) return true;
  return false;
}

ClientConfig ClientConfig::from_properties(const std::map<std::string, std::string>& props) {
  ClientConfig c;
  constexpr std::int64_t kMaxInt = 0x7fffffff;
  bool have_bootstrap = false;
  for (const auto& [key, value] : props) {
    if (key == "bootstrap.servers" || key == "metadata.broker.list") {
      c.bootstrap_servers = parse_bootstrap_servers(value);
      have_bootstrap = true;
    } else if (key == "client.id") {
      c.client_id = value;
    } else if (key == "client.rack") {
      c.client_rack = value;
    } else if (key == "group.id") {
      c.group_id = value;
    } else if (key == "security.protocol") {
      std::string up = value;
      std::transform(up.begin(), up.end(), up.begin(), ::toupper);
      if (up != "PLAINTEXT" && up != "SSL" && up != "SASL_PLAINTEXT" && up != "SASL_SSL")
        throw ConfigError(
            fmt::format("invalid value '{}' for security.protocol: expected PLAINTEXT, SSL, "
                        "SASL_PLAINTEXT or SASL_SSL",
                        value));
      c.security_protocol = up;
    } else if (key == "ssl.truststore.location" || key == "ssl.ca.location") {
      c.ssl_ca_location = value;
    } else if (key == "ssl.keystore.location" || key == "ssl.certificate.location") {
      c.ssl_certificate_location = value;
    } else if (key == "ssl.key.location") {
      c.ssl_key_location = value;
    } else if (key == "ssl.key.password" || key == "ssl.keystore.password") {
      c.ssl_key_password = value;
    } else if (key == "ssl.truststore.certificates" || key == "ssl.ca.pem") {
      c.ssl_truststore_certificates = value;
    } else if (key == "ssl.keystore.certificate.chain" || key == "ssl.certificate.pem") {
      c.ssl_keystore_certificate_chain = value;
    } else if (key == "ssl.keystore.key" || key == "ssl.key.pem") {
      c.ssl_keystore_key = value;
    } else if (key == "ssl.endpoint.identification.algorithm") {
      auto l = lower(value);
      if (l != "https" && l != "" && l != "none")
        throw ConfigError(
            fmt::format("invalid value '{}' for ssl.endpoint.identification.algorithm: expected "
                        "https or empty",
                        value));
      c.ssl_endpoint_identification_algorithm = l == "none" ? "" : l;
    } else if (key == "ssl.truststore.type" || key == "ssl.keystore.type") {
      if (lower(value) != "pem")
        throw ConfigError(fmt::format("{}={} is not supported: kwire reads PEM files only", key, value));
    } else if (key == "sasl.mechanism" || key == "sasl.mechanisms") {
      std::string up = value;
      std::transform(up.begin(), up.end(), up.begin(), ::toupper);
      if (up != "PLAIN" && up != "SCRAM-SHA-256" && up != "SCRAM-SHA-512" && up != "OAUTHBEARER" && up != "GSSAPI")
        throw ConfigError(
            fmt::format("{}={} is not supported: expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                        "OAUTHBEARER or GSSAPI",
                        key, value));
      c.sasl_mechanism = up;
    } else if (key == "sasl.username") {
      c.sasl_username = value;
    } else if (key == "sasl.password") {
      c.sasl_password = value;
    } else if (key == "sasl.jaas.config" && value.find("Krb5LoginModule") != std::string::npos) {
      // Java's Kerberos login line: keyTab and principal (sasl.kerberos.* win).
      std::string keytab, principal;
      parse_kerberos_jaas_config(value, keytab, principal);
      if (c.sasl_kerberos_keytab.empty()) c.sasl_kerberos_keytab = keytab;
      if (c.sasl_kerberos_principal.empty()) c.sasl_kerberos_principal = principal;
    } else if (key == "sasl.kerberos.service.name") {
      if (value.empty() || value.find_first_of("/@ \t") != std::string::npos)
        throw ConfigError(
            fmt::format("invalid value '{}' for sasl.kerberos.service.name: expected a bare service "
                        "name such as kafka",
                        value));
      c.sasl_kerberos_service_name = value;
    } else if (key == "sasl.kerberos.keytab") {
      c.sasl_kerberos_keytab = value;
    } else if (key == "sasl.kerberos.principal") {
      c.sasl_kerberos_principal = value;
    } else if (key == "sasl.jaas.config") {
      std::string u, pw;
      parse_jaas_config(value, u, pw);
      if (c.sasl_username.empty()) c.sasl_username = u;
      if (c.sasl_password.empty()) c.sasl_password = pw;
    } else if (key == "sasl.oauthbearer.token") {
      c.sasl_oauthbearer_token = value;
    } else if (key == "request.timeout.ms") {
      c.request_timeout_ms = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "default.api.timeout.ms") {
      c.default_api_timeout_ms = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "socket.connection.setup.timeout.ms" || key == "socket.timeout.ms") {
      c.socket_connection_setup_timeout_ms = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "metadata.max.age.ms") {
      c.metadata_max_age_ms = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "retries" || key == "message.send.max.retries") {
      c.retries = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
      c.producer_retries = c.retries;
    } else if (key == "retry.backoff.ms") {
      c.retry_backoff_ms = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "retry.backoff.max.ms") {
      c.retry_backoff_max_ms = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "metadata.recovery.strategy") {
      auto l = lower(value);
      if (l == "none") c.metadata_recovery_strategy = MetadataRecoveryStrategy::none;
      else if (l == "rebootstrap") c.metadata_recovery_strategy = MetadataRecoveryStrategy::rebootstrap;
      else
        throw ConfigError(
            fmt::format("invalid value '{}' for metadata.recovery.strategy: expected none or rebootstrap", value));
    } else if (key == "metadata.recovery.rebootstrap.trigger.ms") {
      c.metadata_recovery_rebootstrap_trigger_ms = parse_int(key, value, 0, std::numeric_limits<std::int64_t>::max());
    } else if (key == "receive.buffer.bytes" || key == "socket.receive.buffer.bytes") {
      c.receive_buffer_bytes = static_cast<std::int32_t>(parse_int(key, value, -1, kMaxInt));
    } else if (key == "send.buffer.bytes" || key == "socket.send.buffer.bytes") {
      c.send_buffer_bytes = static_cast<std::int32_t>(parse_int(key, value, -1, kMaxInt));
    } else if (key == "fetch.min.bytes") {
      c.fetch_min_bytes = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "fetch.max.bytes") {
      c.fetch_max_bytes = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "fetch.max.wait.ms" || key == "fetch.wait.max.ms") {
      c.fetch_max_wait_ms = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "max.partition.fetch.bytes" || key == "fetch.message.max.bytes") {
      c.max_partition_fetch_bytes = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "isolation.level") {
      auto l = lower(value);
      if (l == "read_uncommitted") c.isolation_level = 0;
      else if (l == "read_committed") c.isolation_level = 1;
      else
        throw ConfigError(
            fmt::format("invalid value '{}' for isolation.level: expected read_uncommitted or read_committed", value));
    } else if (key == "check.crcs") {
      c.check_crcs = parse_bool(key, value);
    } else if (key == "max.poll.records") {
      c.max_poll_records = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "acks" || key == "request.required.acks") {
      auto l = lower(value);
      if (l == "all" || l == "-1") c.acks = -1;
      else if (l == "0") c.acks = 0;
      else if (l == "1") c.acks = 1;
      else throw ConfigError(fmt::format("invalid value '{}' for acks: expected all, -1, 0 or 1", value));
    } else if (key == "compression.type" || key == "compression.codec") {
      auto codec = protocol::parse_compression(lower(value));
      if (!codec)
        throw ConfigError(
            fmt::format("invalid value '{}' for {}: expected none, gzip, snappy, lz4 or zstd", value, key));
      c.compression_type = *codec;
    } else if (key == "batch.size") {
      c.batch_size = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "linger.ms" || key == "queue.buffering.max.ms") {
      c.linger_ms = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "max.request.size" || key == "message.max.bytes") {
      c.max_request_size = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "delivery.timeout.ms" || key == "message.timeout.ms") {
      c.delivery_timeout_ms = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
      c.delivery_timeout_given = true;
    } else if (key == "buffer.memory") {
      c.buffer_memory = parse_int(key, value, 1, std::numeric_limits<std::int64_t>::max());
    } else if (key == "queue.buffering.max.kbytes") {
      c.buffer_memory = parse_int(key, value, 1, std::numeric_limits<std::int64_t>::max() / 1024) * 1024;
    } else if (key == "max.block.ms") {
      c.max_block_ms = static_cast<std::int32_t>(parse_int(key, value, 0, kMaxInt));
    } else if (key == "max.in.flight.requests.per.connection" || key == "max.in.flight") {
      c.max_in_flight_requests_per_connection = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else if (key == "enable.idempotence") {
      c.enable_idempotence = parse_bool(key, value);
    } else if (key == "transactional.id") {
      if (value.empty()) throw ConfigError("transactional.id must not be empty (leave it unset instead)");
      c.transactional_id = value;
    } else if (key == "transaction.timeout.ms") {
      c.transaction_timeout_ms = static_cast<std::int32_t>(parse_int(key, value, 1, kMaxInt));
    } else {
      c.ignored_keys.push_back(key);
      if (!is_known_client_config(key)) {
        c.unknown_keys.push_back(key);
        c.warnings.push_back(fmt::format("The configuration '{}' was supplied but isn't a known config", key));
      }
    }
  }
  if (!have_bootstrap) throw ConfigError("bootstrap.servers must be set");
  if (c.security_protocol.rfind("SASL_", 0) != 0) {
    // Java and librdkafka ignore sasl.* unless the protocol authenticates.
    std::vector<std::string> sasl_keys;
    for (const auto& kv : props)
      if (kv.first.rfind("sasl.", 0) == 0) sasl_keys.push_back(kv.first);
    if (!sasl_keys.empty())
      c.warnings.push_back(
          fmt::format("SASL settings ({}) are ignored: security.protocol is {}; set it to SASL_PLAINTEXT or SASL_SSL "
                      "to authenticate",
                      fmt::join(sasl_keys, ", "), c.security_protocol));
  }
  if (c.security_protocol.rfind("SASL_", 0) == 0 && c.sasl_mechanism.empty())
    throw ConfigError(
        fmt::format("security.protocol={} needs sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                    "OAUTHBEARER or GSSAPI)",
                    c.security_protocol));
  return c;
}

}  // namespace kwire::client

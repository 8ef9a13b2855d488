// Client configuration by the Java client's property names (librdkafka's
// aliases accepted where they differ). Units are in the names: *_ms are
// milliseconds, *_bytes are bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/protocol/compression.hpp"

namespace kwire::client {

struct BrokerAddress {
  std::string host;
  std::uint16_t port = 9092;
  friend bool operator==(const BrokerAddress&, const BrokerAddress&) = default;
};

/// Parse "host:port[,host:port...]" (bracketed IPv6 accepted). Throws ConfigError.
std::vector<BrokerAddress> parse_bootstrap_servers(const std::string& list);

/// True for a key of the Java producer/consumer/admin configs or librdkafka's
/// that kwire accepts without using, so that giving it is not reported as
/// unknown (kwire's own keys are handled by ClientConfig::from_properties).
bool is_known_client_config(std::string_view key);
/// Whether `key` is a configuration name of Java's KafkaConsumer
/// (ConsumerConfig), e.g. "max.poll.records" or "group.id".
bool is_java_consumer_property(std::string_view key);

/// metadata.recovery.strategy (KIP-899): what the client does once it has
/// received metadata and then can no longer get any from the brokers it names.
enum class MetadataRecoveryStrategy {
  /// Ask only the brokers of the last metadata received, for as long as it
  /// takes (each call still ends by its own deadlines): a client whose
  /// brokers have all been replaced stays on their old addresses.
  none,
  /// Drop every connection and the brokers known, and start again from
  /// bootstrap.servers (their names resolved again). The default since Kafka 4.0.
  rebootstrap,
};

struct ClientConfig {
  std::vector<BrokerAddress> bootstrap_servers;  // bootstrap.servers (metadata.broker.list)
  std::string client_id = "kwire";               // client.id
  std::string group_id;                          // group.id (kept for reference; no group protocol yet)
  // client.rack: sent in Fetch (v11+) so that a leader with a rack-aware
  // replica selector (KIP-392) may name a follower in this rack to read from.
  std::string client_rack;
  std::string security_protocol = "PLAINTEXT";  // security.protocol
  // TLS (security.protocol SSL / SASL_SSL); files are PEM.
  std::string ssl_ca_location;           // ssl.truststore.location / ssl.ca.location (empty: system store)
  std::string ssl_certificate_location;  // ssl.keystore.location / ssl.certificate.location (mTLS)
  std::string ssl_key_location;          // ssl.key.location (defaults to the keystore file)
  std::string ssl_key_password;          // ssl.key.password (ssl.keystore.password)
  // The same material as PEM text instead of files (Java's PEM keystore
  // configs; librdkafka's *.pem aliases).
  std::string ssl_truststore_certificates;                      // ssl.truststore.certificates / ssl.ca.pem
  std::string ssl_keystore_certificate_chain;                   // ssl.keystore.certificate.chain / ssl.certificate.pem
  std::string ssl_keystore_key;                                 // ssl.keystore.key / ssl.key.pem
  std::string ssl_endpoint_identification_algorithm = "https";  // "" turns host name verification off
  // SASL (security.protocol SASL_PLAINTEXT / SASL_SSL)
  std::string sasl_mechanism;                                    // sasl.mechanism / sasl.mechanisms
  std::string sasl_username;                                     // sasl.username, or from sasl.jaas.config
  std::string sasl_password;                                     // sasl.password, or from sasl.jaas.config
  std::string sasl_oauthbearer_token;                            // sasl.oauthbearer.token (static OAUTHBEARER token)
  std::function<std::string()> sasl_oauthbearer_token_callback;  // library only: fresh token per authentication
  // GSSAPI (Kerberos through Cyrus SASL; krb5.conf from KRB5_CONFIG or /etc/krb5.conf)
  std::string sasl_kerberos_service_name = "kafka";  // sasl.kerberos.service.name (broker principal SERVICE/HOST)
  std::string sasl_kerberos_keytab;                  // sasl.kerberos.keytab, or keyTab from sasl.jaas.config
  std::string sasl_kerberos_principal;               // sasl.kerberos.principal, or principal from sasl.jaas.config
  std::int32_t request_timeout_ms = 30000;           // request.timeout.ms (one attempt)
  std::int32_t default_api_timeout_ms = 60000;       // default.api.timeout.ms (a whole call, retries included)
  std::int32_t socket_connection_setup_timeout_ms = 10000;  // socket.connection.setup.timeout.ms
  std::int32_t metadata_max_age_ms = 300000;                // metadata.max.age.ms
  std::int32_t retries = 5;                                 // retries (per request, for retriable errors)
  std::int32_t retry_backoff_ms = 100;                      // retry.backoff.ms (first retry's wait)
  std::int32_t retry_backoff_max_ms = 1000;                 // retry.backoff.max.ms (KIP-580 cap)
  // metadata.recovery.strategy: "none" or "rebootstrap" (any case), as Java's
  // clients. With rebootstrap the client goes back to bootstrap.servers when
  // (KIP-899) it cannot connect to any broker of its last metadata, when
  // (KIP-1102) a Metadata answer carries the top-level error
  // REBOOTSTRAP_REQUIRED (129), or when (KIP-1102) Metadata attempts have
  // been failing for metadata_recovery_rebootstrap_trigger_ms.
  MetadataRecoveryStrategy metadata_recovery_strategy = MetadataRecoveryStrategy::rebootstrap;
  // metadata.recovery.rebootstrap.trigger.ms (>= 0, milliseconds; default
  // 300000, 5 minutes): how long Metadata may keep failing, counted from the
  // start of the first attempt that got no answer, before a rebootstrap.
  std::int64_t metadata_recovery_rebootstrap_trigger_ms = 300000;
  // receive.buffer.bytes (-1 = OS default). Default -1, as librdkafka's
  // socket.receive.buffer.bytes=0: the kernel then sizes the TCP window itself;
  // Java's fixed 65536 holds a fast consumer back (64 KiB reads, small window).
  std::int32_t receive_buffer_bytes = -1;
  // send.buffer.bytes (-1 = OS default). Default -1 for the same reason, as
  // librdkafka's socket.send.buffer.bytes=0 and franz-go: a fixed SO_SNDBUF
  // also turns the kernel's send-buffer auto-tuning off, and Java's 131072
  // splits every 1 MB Produce request into several writes, each waiting to be
  // woken when the socket drains (on loopback, 3x the context switches and
  // about 15% more CPU per record).
  std::int32_t send_buffer_bytes = -1;
  // Consumer
  std::int32_t fetch_min_bytes = 1;                  // fetch.min.bytes
  std::int32_t fetch_max_bytes = 52428800;           // fetch.max.bytes
  std::int32_t fetch_max_wait_ms = 500;              // fetch.max.wait.ms
  std::int32_t max_partition_fetch_bytes = 1048576;  // max.partition.fetch.bytes
  std::int8_t isolation_level = 0;                   // isolation.level: 0 read_uncommitted, 1 read_committed
  bool check_crcs = true;                            // check.crcs
  std::int32_t max_poll_records = 500;               // max.poll.records
  // Producer
  std::int16_t acks = -1;                                                // acks: all/-1, 0, 1
  protocol::Compression compression_type = protocol::Compression::none;  // compression.type
  std::int32_t batch_size = 16384;                                       // batch.size (bytes per partition batch)
  std::int32_t linger_ms = 5;                                            // linger.ms
  std::int32_t max_request_size = 1048576;                               // max.request.size
  std::int32_t delivery_timeout_ms = 120000;                             // delivery.timeout.ms
  bool delivery_timeout_given = false;    // delivery.timeout.ms was set (not the default)
  std::int64_t buffer_memory = 33554432;  // buffer.memory (queue.buffering.max.kbytes * 1024)
  std::int32_t max_block_ms = 60000;      // max.block.ms
  // max.in.flight.requests.per.connection (max.in.flight): Produce requests
  // in flight per broker.
  std::int32_t max_in_flight_requests_per_connection = 5;
  // The producer's retries: as `retries` when that is given (message.send.max.retries),
  // else unbounded, as in Java's producer (delivery.timeout.ms ends retrying).
  std::int32_t producer_retries = 2147483647;
  // enable.idempotence: nullopt when not given, and then on unless acks,
  // retries or max.in.flight.requests.per.connection conflict (Java's rule).
  std::optional<bool> enable_idempotence;
  std::string transactional_id;                 // transactional.id (empty: not transactional)
  std::int32_t transaction_timeout_ms = 60000;  // transaction.timeout.ms

  /// Keys that were given but are not used by kwire (reported, not fatal, as
  /// the Java client logs unknown configs): the unknown_keys plus known Java /
  /// librdkafka keys kwire accepts without using (group.id's consumer-group
  /// siblings, serializers, debug, ...; see is_known_client_config).
  std::vector<std::string> ignored_keys;
  /// The ignored keys that no Java client or librdkafka knows: most likely
  /// misspelled. Each has an entry in warnings.
  std::vector<std::string> unknown_keys;
  /// Human-readable notes on settings that have no effect, one per line,
  /// naming keys but never values (a value may be a secret): each unknown key
  /// ("The configuration 'x' was supplied but isn't a known config", the Java
  /// consumer's log line), and sasl.* settings given with a security.protocol
  /// that does not authenticate. Not fatal; callers decide where to print them.
  std::vector<std::string> warnings;

  /// Build from properties. Throws ConfigError naming the key for a bad value,
  /// a missing bootstrap.servers, or a security.protocol kwire cannot use yet.
  static ClientConfig from_properties(const std::map<std::string, std::string>& props);
};

}  // namespace kwire::client

// Cluster and configuration administration, as Kafka's Admin client and its
// kafka-configs / kafka-consumer-groups --delete tools do it: describe the
// cluster, describe and incrementally alter configurations, list the
// resources that have configurations, and delete groups.
//
// Requests: DescribeCluster (any broker; Kafka 2.8+), DescribeConfigs and
// IncrementalAlterConfigs (a broker resource goes to that broker, every other
// resource to any broker, as the Java Admin does), ListConfigResources (any
// broker; v1, KIP-1142, Kafka 4.1+ lists every type, v0 only client metrics
// subscriptions), DeleteGroups (each group's coordinator, found with the
// client's one coordinator lookup; moves and loads are retried with the
// client's back-off, KIP-580, until default.api.timeout.ms).
//
// Access control, leader election and log directories, as kafka-acls,
// kafka-leader-election and kafka-log-dirs do it (acl_admin.cpp):
// DescribeAcls, CreateAcls and DeleteAcls (any broker; KRaft brokers forward
// changes to the controller), ElectLeaders (any broker, which forwards it to
// the controller; KIP-460) and DescribeLogDirs (every broker, KIP-113).
//
// Transactions, as kafka-transactions does: ListTransactions (every
// broker), DescribeTransactions (the id's coordinator), DescribeProducers
// (the partition's leader).
//
// Errors: a resource or group that failed is reported in its result (error
// code and message; the call does not throw for it). UnsupportedVersionError
// when the broker does not offer the API (ListConfigResources before 3.7,
// DescribeCluster before 2.8); KafkaError for a top-level error code;
// TimeoutError, ConnectionError as for every request.
//
// Uses the KafkaClient it is given (not thread-safe, like it). Free of Boost.Asio.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kwire/client/types.hpp"
#include "kwire/protocol/admin_types.hpp"

namespace kwire::client {

class KafkaClient;
class Coordinators;

struct ClusterBroker {
  std::int32_t node_id = -1;
  std::string host;
  std::int32_t port = 0;
  std::optional<std::string> rack;
  bool fenced = false;  // only when fenced brokers were asked for (DescribeCluster v2, Kafka 4.0+)
};

struct ClusterDescription {
  std::string cluster_id;
  std::int32_t controller_id = -1;     // -1: none known
  std::vector<ClusterBroker> brokers;  // sorted by node id
};

/// ConfigResource.Type values (Kafka's ConfigResource.Type).
enum class ConfigResourceKind : std::int8_t {
  topic = 2,
  broker = 4,
  broker_logger = 8,
  client_metrics = 16,
  group = 32,
};

/// "topic", "broker", "broker-logger", "client-metrics", "group" (the names
/// kafka-configs --entity-type takes), or nullopt.
std::optional<ConfigResourceKind> parse_config_resource_kind(const std::string& name);
std::string config_resource_kind_name(std::int8_t kind);

struct ConfigResourceRef {
  ConfigResourceKind kind = ConfigResourceKind::topic;
  std::string name;  // topic or group name, broker node id ("" = cluster-wide default)
};

struct ConfigEntry {
  std::string name;
  std::optional<std::string> value;  // null when sensitive or unset
  std::string source;                // Kafka's ConfigSource name: DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, ...
  bool read_only = false;
  bool sensitive = false;
  bool is_default = false;  // source is DEFAULT_CONFIG (or IsDefault before v1)
};

struct ConfigDescription {
  ConfigResourceRef resource;
  std::int16_t error_code = 0;
  std::string error_message;
  std::vector<ConfigEntry> entries;  // in the broker's order
};

/// One change of IncrementalAlterConfigs.
struct ConfigChange {
  enum class Op : std::int8_t { set = 0, remove = 1, append = 2, subtract = 3 };
  std::string name;
  Op op = Op::set;
  std::optional<std::string> value;  // none for remove
};

struct ResourceResult {
  ConfigResourceRef resource;
  std::int16_t error_code = 0;
  std::string error_message;
};

struct GroupDeletion {
  std::string group_id;
  std::int16_t error_code = 0;  // NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...
  std::string error_message;    // the broker's (DeleteGroups v3+), else the code's name
};

struct ShareGroupMember {
  std::string member_id;
  std::string client_id;
  std::string host;
  std::int32_t member_epoch = 0;
  std::vector<TopicPartition> assignment;  // sorted
};

/// A share group (KIP-932): ShareGroupDescribe and DescribeShareGroupOffsets.
struct ShareGroupDescription {
  std::string group_id;
  std::string state;  // "Empty", "Stable", "Dead" (unknown group)
  std::int32_t group_epoch = 0;
  std::string assignor;
  std::vector<ShareGroupMember> members;
  /// The share-partition start offset of each partition the group has state
  /// for (below it every record is acknowledged or archived); lag where the
  /// broker reports it (DescribeShareGroupOffsets v1, Kafka 4.3+), else -1.
  std::map<TopicPartition, std::int64_t> start_offsets;
  std::map<TopicPartition, std::int64_t> lag;
};

/// One transaction as ListTransactions reports it (Kafka 3.0+, KIP-664).
struct TransactionListing {
  std::string transactional_id;
  std::int64_t producer_id = -1;
  std::string state;                 // "Ongoing", "PrepareCommit", "CompleteAbort", "Empty", ...
  std::int32_t coordinator_id = -1;  // the broker that answered
};

/// What ListTransactions is asked to keep; every filter empty = all.
struct TransactionFilters {
  std::vector<std::string> states;  // e.g. {"Ongoing"}
  std::vector<std::int64_t> producer_ids;
  std::int64_t min_duration_ms = -1;      // running at least this long (v1, KIP-994, Kafka 3.8+)
  std::optional<std::string> id_pattern;  // Java regular expression (v2, KIP-1152, Kafka 4.1+)
};

/// One transactional id as its coordinator describes it (DescribeTransactions).
struct TransactionDescription {
  std::string transactional_id;
  std::int32_t coordinator_id = -1;
  std::string state;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t transaction_timeout_ms = 0;
  std::int64_t transaction_start_time_ms = -1;  // -1 when no transaction is open
  std::vector<TopicPartition> partitions;       // the open transaction's, sorted
};

/// A producer with state on a partition (DescribeProducers, KIP-664).
struct ProducerStateDescription {
  std::int64_t producer_id = -1;
  std::int32_t producer_epoch = -1;
  std::int32_t last_sequence = -1;
  std::int64_t last_timestamp = -1;  // ms since the epoch
  std::int32_t coordinator_epoch = -1;
  std::int64_t current_txn_start_offset = -1;  // first offset of its open transaction; -1: none
};

using protocol::AclOperation;
using protocol::AclPatternType;
using protocol::AclPermissionType;
using protocol::AclResourceType;
using protocol::ElectionType;

/// One ACL binding (KIP-140, KIP-290): a resource pattern and an access
/// entry. Every code must be a concrete one (not UNKNOWN, ANY or MATCH).
struct AclBinding {
  AclResourceType resource_type = AclResourceType::topic;
  std::string resource_name;  // "*" with a literal pattern: every resource of the type
  AclPatternType pattern_type = AclPatternType::literal;
  std::string principal;  // "User:alice", "User:*"
  std::string host = "*";
  AclOperation operation = AclOperation::read;
  AclPermissionType permission = AclPermissionType::allow;
  friend bool operator==(const AclBinding&, const AclBinding&) = default;
};

/// What DescribeAcls and DeleteAcls match: ANY and nullopt match every value;
/// pattern type MATCH matches every pattern that applies to resource_name
/// (literal, prefixed and the "*" wildcard).
struct AclBindingFilter {
  AclResourceType resource_type = AclResourceType::any;
  std::optional<std::string> resource_name;
  AclPatternType pattern_type = AclPatternType::any;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  AclOperation operation = AclOperation::any;
  AclPermissionType permission = AclPermissionType::any;
  friend bool operator==(const AclBindingFilter&, const AclBindingFilter&) = default;
};

/// A binding together with how the broker answered for it.
struct AclBindingResult {
  AclBinding binding;
  std::int16_t error_code = 0;  // SECURITY_DISABLED (no authorizer), CLUSTER_AUTHORIZATION_FAILED, ...
  std::string error_message;    // the broker's, else the code's name ("" when none)
};

/// The bindings one DeleteAcls filter removed.
struct AclDeletion {
  AclBindingFilter filter;
  std::int16_t error_code = 0;  // for the filter as a whole
  std::string error_message;
  std::vector<AclBindingResult> deleted;  // each with its own error code (0: removed)
};

/// One partition's answer to ElectLeaders.
struct ElectionResult {
  TopicPartition partition;
  std::int16_t error_code = 0;  // ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ...
  std::string error_message;
};

/// A replica stored in a log directory.
struct ReplicaLogInfo {
  std::int64_t size_bytes = 0;
  std::int64_t offset_lag = 0;  // of a future replica (being moved here); else 0
  bool is_future = false;
};

/// One log directory of one broker (DescribeLogDirs).
struct LogDirDescription {
  std::int32_t broker = -1;
  std::string path;
  std::int16_t error_code = 0;  // KAFKA_STORAGE_ERROR: the directory is offline
  std::string error_message;
  std::int64_t total_bytes = -1;   // v4+ (Kafka 3.3+, KIP-827); -1: not reported
  std::int64_t usable_bytes = -1;  // idem
  bool cordoned = false;           // v5+ (Kafka 4.4+, KIP-1066)
  std::map<TopicPartition, ReplicaLogInfo> replicas;
};

class Admin {
 public:
  explicit Admin(KafkaClient& client);
  ~Admin();
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;

  /// DescribeCluster at the highest common version.
  ClusterDescription describe_cluster(bool include_fenced_brokers = false);
  /// DescribeConfigs; `keys` empty = every key.
  std::vector<ConfigDescription> describe_configs(const std::vector<ConfigResourceRef>& resources,
                                                  const std::vector<std::string>& keys = {});
  /// IncrementalAlterConfigs of one resource (validate_only: checked, not applied).
  ResourceResult alter_configs(const ConfigResourceRef& resource, const std::vector<ConfigChange>& changes,
                               bool validate_only = false);
  /// ListConfigResources; `kinds` empty = every kind (v1); v0 brokers list
  /// client metrics resources only.
  std::vector<ConfigResourceRef> list_config_resources(const std::vector<ConfigResourceKind>& kinds = {});
  /// DeleteGroups, one request per coordinator.
  std::vector<GroupDeletion> delete_groups(const std::vector<std::string>& groups);

  /// DescribeAcls: the bindings matching `filter`, sorted by resource, then
  /// principal, host, operation and permission. Throws KafkaError for the
  /// broker's error (SECURITY_DISABLED when it has no authorizer,
  /// CLUSTER_AUTHORIZATION_FAILED...), UnsupportedVersionError when the
  /// filter needs a newer version than the broker speaks (a pattern type other
  /// than LITERAL or ANY before v1, the USER resource type before v3).
  std::vector<AclBinding> describe_acls(const AclBindingFilter& filter = {});
  /// CreateAcls: one result per binding, in order (error_code 0: created or
  /// already there). Throws ConfigError for a binding with an UNKNOWN, ANY or
  /// MATCH code, an empty principal or resource name.
  std::vector<AclBindingResult> create_acls(const std::vector<AclBinding>& bindings);
  /// DeleteAcls: one result per filter, in order, with the bindings it removed.
  std::vector<AclDeletion> delete_acls(const std::vector<AclBindingFilter>& filters);

  /// ElectLeaders of `partitions` (nullopt: every partition of the cluster),
  /// one result per partition the controller answered for, sorted. A
  /// preferred election on a partition its preferred replica already leads
  /// answers ELECTION_NOT_NEEDED. Throws KafkaError for a top-level error,
  /// UnsupportedVersionError for an unclean election on a broker that speaks
  /// v0 only (Kafka 2.2).
  std::vector<ElectionResult> elect_leaders(ElectionType type,
                                            const std::optional<std::vector<TopicPartition>>& partitions);
  /// DescribeLogDirs on every broker: each log directory, with the replicas
  /// of `topics` it holds (nullopt: of every topic), sorted by broker then
  /// path. Throws KafkaError UNKNOWN_TOPIC_OR_PARTITION naming a topic that
  /// does not exist, KafkaError for a broker's top-level error (v3+).
  std::vector<LogDirDescription> describe_log_dirs(const std::optional<std::vector<std::string>>& topics);

  /// ShareGroupDescribe and DescribeShareGroupOffsets at the group's
  /// coordinator (share_admin.cpp). Throws KafkaError for a group-level error
  /// (GROUP_ID_NOT_FOUND for a group that is not a share group),
  /// UnsupportedVersionError before Kafka 4.1.
  ShareGroupDescription describe_share_group(const std::string& group);
  /// AlterShareGroupOffsets: the group's start offset of each partition
  /// (the group must have no members: else KafkaError NON_EMPTY_GROUP).
  void alter_share_group_offsets(const std::string& group, const std::map<TopicPartition, std::int64_t>& offsets);

  /// ListTransactions on every broker (each lists the transactional ids it
  /// coordinates), sorted by id, as kafka-transactions list. A filter the
  /// broker's version cannot carry (duration before v1, pattern before v2)
  /// throws UnsupportedVersionError naming it; KafkaError for a broker's
  /// error (e.g. TRANSACTIONAL_ID_AUTHORIZATION_FAILED is not one: ids the
  /// caller may not describe are left out by the broker).
  std::vector<TransactionListing> list_transactions(const TransactionFilters& filters = {});
  /// DescribeTransactions at the id's coordinator (FindCoordinator, moves
  /// retried until default.api.timeout.ms). Throws KafkaError
  /// TRANSACTIONAL_ID_NOT_FOUND for an id the coordinator does not know,
  /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED...
  TransactionDescription describe_transaction(const std::string& transactional_id);
  /// DescribeProducers at the partition's leader: the producers with state on
  /// it (a hanging transaction shows as current_txn_start_offset below the
  /// last stable offset for long). Throws KafkaError for the partition's error.
  std::vector<ProducerStateDescription> describe_producers(const TopicPartition& partition);

 private:
  KafkaClient& client_;
  std::unique_ptr<Coordinators> coordinators_;
};

}  // namespace kwire::client

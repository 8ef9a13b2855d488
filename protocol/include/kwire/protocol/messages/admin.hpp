// Cluster and configuration administration: DescribeCluster (key 60, v0-2,
// always flexible), DescribeConfigs (key 32, v0-4, flexible from v4),
// IncrementalAlterConfigs (key 44, v0-1, flexible from v1), ListConfigResources
// (key 74, v0-1, always flexible), DeleteGroups (key 42, v0-3, flexible
// from v2), ElectLeaders (key 43, v0-2, flexible from v2) and DescribeLogDirs
// (key 35, v0-5, flexible from v2). Source: Kafka's DescribeCluster*,
// DescribeConfigs*, IncrementalAlterConfigs*, ListConfigResources*,
// DeleteGroups*, ElectLeaders*, DescribeLogDirs* .json specs (4.4.0, and 3.9.1
// for the versions 4.0 removed).
//
// Resource types (ConfigResource.Type): 2 topic, 4 broker, 8 broker logger,
// 16 client metrics, 32 group; a broker resource is named by its node id ("1"),
// the empty name meaning the cluster-wide default. DescribeConfigs v0 (gone
// in Kafka 4.0) has IsDefault where v1+ has ConfigSource and synonyms; a null
// key list asks for every key. IncrementalAlterConfigs changes only the keys
// named: operation 0 SET, 1 DELETE (back to the default), 2 APPEND and
// 3 SUBTRACT (list values). ListConfigResources v0 was
// ListClientMetricsResources (client metrics subscriptions only); v1 (KIP-1142)
// filters by type and names each resource's type; an empty filter lists all.
// DescribeCluster v1 asks for the brokers (1) or controllers (2) of KIP-919;
// v2 may include fenced brokers (KIP-1073). DeleteGroups goes to each group's
// coordinator; a group with members is refused with NON_EMPTY_GROUP; v3 adds
// an error message per group.
//
// ElectLeaders (KIP-460) asks the controller to elect leaders of the
// partitions named (a null list: every partition); v0 elects the preferred
// replica only, v1 adds the election type (ElectionType: 0 PREFERRED,
// 1 UNCLEAN) and a top-level error code, v2 is flexible. Each partition
// answers on its own: ELECTION_NOT_NEEDED when the preferred replica already
// leads, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE...
// DescribeLogDirs (KIP-113) asks one broker for its log directories and the
// size (bytes) and lag (offsets behind the log end, for a future replica) of
// the partitions named in each (a null list: every partition); v0 was
// removed by Kafka 4.0, v1 is v0 under KIP-219 throttling, v2 is flexible,
// v3 adds a top-level error code, v4 each directory's total and usable bytes
// (KIP-827; -1 when unknown), v5 whether it is cordoned (KIP-1066: it takes no
// new partitions).
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

/// ConfigResource.Type values.
enum class ConfigResourceType : std::int8_t {
  unknown = 0,
  topic = 2,
  broker = 4,
  broker_logger = 8,
  client_metrics = 16,
  group = 32,
};

/// IncrementalAlterConfigs operations.
enum class AlterConfigOp : std::int8_t { set = 0, remove = 1, append = 2, subtract = 3 };

struct DescribeClusterRequest {
  static constexpr ApiKey api_key = ApiKey::describe_cluster;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 0;

  bool include_cluster_authorized_operations = false;
  std::int8_t endpoint_type = 1;        // v1+: 1 brokers, 2 controllers
  bool include_fenced_brokers = false;  // v2+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(include_cluster_authorized_operations);
    v.since(1, endpoint_type);
    v.since(2, include_fenced_brokers);
  }
  friend bool operator==(const DescribeClusterRequest&, const DescribeClusterRequest&) = default;
};

struct DescribeClusterResponse {
  static constexpr ApiKey api_key = ApiKey::describe_cluster;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 0;

  struct DescribeClusterBroker {
    std::int32_t broker_id = 0;
    std::string host;
    std::int32_t port = 0;
    std::optional<std::string> rack;
    bool is_fenced = false;  // v2+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(broker_id);
      v(host);
      v(port);
      v(rack);
      v.since(2, is_fenced);
    }
    friend bool operator==(const DescribeClusterBroker&, const DescribeClusterBroker&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::int8_t endpoint_type = 1;  // v1+
  std::string cluster_id;
  std::int32_t controller_id = -1;
  std::vector<DescribeClusterBroker> brokers;
  std::int32_t cluster_authorized_operations = INT32_MIN;  // INT32_MIN: not requested
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(error_message);
    v.since(1, endpoint_type);
    v(cluster_id);
    v(controller_id);
    v(brokers);
    v(cluster_authorized_operations);
  }
  friend bool operator==(const DescribeClusterResponse&, const DescribeClusterResponse&) = default;
};

struct DescribeConfigsRequest {
  static constexpr ApiKey api_key = ApiKey::describe_configs;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 4;

  struct DescribeConfigsResource {
    std::int8_t resource_type = 0;  // ConfigResourceType
    std::string resource_name;
    std::optional<std::vector<std::string>> configuration_keys;  // null: every key
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(resource_type);
      v(resource_name);
      v(configuration_keys);
    }
    friend bool operator==(const DescribeConfigsResource&, const DescribeConfigsResource&) = default;
  };

  std::vector<DescribeConfigsResource> resources;
  bool include_synonyms = false;       // v1+
  bool include_documentation = false;  // v3+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(resources);
    v.since(1, include_synonyms);
    v.since(3, include_documentation);
  }
  friend bool operator==(const DescribeConfigsRequest&, const DescribeConfigsRequest&) = default;
};

struct DescribeConfigsResponse {
  static constexpr ApiKey api_key = ApiKey::describe_configs;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 4;

  struct DescribeConfigsSynonym {
    std::string name;
    std::optional<std::string> value;
    std::int8_t source = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(value);
      v(source);
    }
    friend bool operator==(const DescribeConfigsSynonym&, const DescribeConfigsSynonym&) = default;
  };

  struct DescribeConfigsResourceResult {
    std::string name;
    std::optional<std::string> value;  // null for a sensitive value
    bool read_only = false;
    bool is_default = false;         // v0 only
    std::int8_t config_source = -1;  // v1+: 1 dynamic topic, 2 dynamic broker, 3 dynamic default broker,
                                     // 4 static broker, 5 default, 6 dynamic broker logger,
                                     // 7 client metrics, 8 group
    bool is_sensitive = false;
    std::vector<DescribeConfigsSynonym> synonyms;  // v1+
    std::int8_t config_type = 0;                   // v3+: 1 boolean, 2 string, 3 int, 4 short, 5 long,
                                                   // 6 double, 7 list, 8 class, 9 password
    std::optional<std::string> documentation;      // v3+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(value);
      v(read_only);
      v.until(0, is_default);
      v.since(1, config_source);
      v(is_sensitive);
      v.since(1, synonyms);
      v.since(3, config_type);
      v.since(3, documentation);
    }
    friend bool operator==(const DescribeConfigsResourceResult&, const DescribeConfigsResourceResult&) = default;
  };

  struct DescribeConfigsResult {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::int8_t resource_type = 0;
    std::string resource_name;
    std::vector<DescribeConfigsResourceResult> configs;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(error_message);
      v(resource_type);
      v(resource_name);
      v(configs);
    }
    friend bool operator==(const DescribeConfigsResult&, const DescribeConfigsResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<DescribeConfigsResult> results;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(results);
  }
  friend bool operator==(const DescribeConfigsResponse&, const DescribeConfigsResponse&) = default;
};

struct IncrementalAlterConfigsRequest {
  static constexpr ApiKey api_key = ApiKey::incremental_alter_configs;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 1;

  struct AlterableConfig {
    std::string name;
    std::int8_t config_operation = 0;  // AlterConfigOp
    std::optional<std::string> value;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(config_operation);
      v(value);
    }
    friend bool operator==(const AlterableConfig&, const AlterableConfig&) = default;
  };

  struct AlterConfigsResource {
    std::int8_t resource_type = 0;
    std::string resource_name;
    std::vector<AlterableConfig> configs;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(resource_type);
      v(resource_name);
      v(configs);
    }
    friend bool operator==(const AlterConfigsResource&, const AlterConfigsResource&) = default;
  };

  std::vector<AlterConfigsResource> resources;
  bool validate_only = false;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(resources);
    v(validate_only);
  }
  friend bool operator==(const IncrementalAlterConfigsRequest&, const IncrementalAlterConfigsRequest&) = default;
};

struct IncrementalAlterConfigsResponse {
  static constexpr ApiKey api_key = ApiKey::incremental_alter_configs;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 1;

  struct AlterConfigsResourceResponse {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::int8_t resource_type = 0;
    std::string resource_name;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(error_message);
      v(resource_type);
      v(resource_name);
    }
    friend bool operator==(const AlterConfigsResourceResponse&, const AlterConfigsResourceResponse&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<AlterConfigsResourceResponse> responses;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(responses);
  }
  friend bool operator==(const IncrementalAlterConfigsResponse&, const IncrementalAlterConfigsResponse&) = default;
};

struct ListConfigResourcesRequest {
  static constexpr ApiKey api_key = ApiKey::list_config_resources;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  std::vector<std::int8_t> resource_types;  // v1+; empty: every type
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, resource_types);
  }
  friend bool operator==(const ListConfigResourcesRequest&, const ListConfigResourcesRequest&) = default;
};

struct ListConfigResourcesResponse {
  static constexpr ApiKey api_key = ApiKey::list_config_resources;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  struct ConfigResource {
    std::string resource_name;
    std::int8_t resource_type = 16;  // v1+; v0 lists client metrics resources only
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(resource_name);
      v.since(1, resource_type);
    }
    friend bool operator==(const ConfigResource&, const ConfigResource&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::vector<ConfigResource> config_resources;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(config_resources);
  }
  friend bool operator==(const ListConfigResourcesResponse&, const ListConfigResourcesResponse&) = default;
};

struct DeleteGroupsRequest {
  static constexpr ApiKey api_key = ApiKey::delete_groups;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  std::vector<std::string> groups_names;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(groups_names);
  }
  friend bool operator==(const DeleteGroupsRequest&, const DeleteGroupsRequest&) = default;
};

struct DeleteGroupsResponse {
  static constexpr ApiKey api_key = ApiKey::delete_groups;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct DeletableGroupResult {
    std::string group_id;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;  // v3+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(group_id);
      v(error_code);
      v.since(3, error_message);
    }
    friend bool operator==(const DeletableGroupResult&, const DeletableGroupResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<DeletableGroupResult> results;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(results);
  }
  friend bool operator==(const DeleteGroupsResponse&, const DeleteGroupsResponse&) = default;
};

struct ElectLeadersRequest {
  static constexpr ApiKey api_key = ApiKey::elect_leaders;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 2;

  struct TopicPartitions {
    std::string topic;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic);
      v(partitions);
    }
    friend bool operator==(const TopicPartitions&, const TopicPartitions&) = default;
  };

  std::int8_t election_type = 0;                                 // v1+: ElectionType (v0: preferred)
  std::optional<std::vector<TopicPartitions>> topic_partitions;  // null: every partition
  std::int32_t timeout_ms = 60000;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, election_type);
    v(topic_partitions);
    v(timeout_ms);
  }
  friend bool operator==(const ElectLeadersRequest&, const ElectLeadersRequest&) = default;
};

struct ElectLeadersResponse {
  static constexpr ApiKey api_key = ApiKey::elect_leaders;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 2;

  struct PartitionResult {
    std::int32_t partition_id = 0;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_id);
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const PartitionResult&, const PartitionResult&) = default;
  };

  struct ReplicaElectionResult {
    std::string topic;
    std::vector<PartitionResult> partition_result;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic);
      v(partition_result);
    }
    friend bool operator==(const ReplicaElectionResult&, const ReplicaElectionResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;  // v1+
  std::vector<ReplicaElectionResult> replica_election_results;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v.since(1, error_code);
    v(replica_election_results);
  }
  friend bool operator==(const ElectLeadersResponse&, const ElectLeadersResponse&) = default;
};

struct DescribeLogDirsRequest {
  static constexpr ApiKey api_key = ApiKey::describe_log_dirs;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 2;

  struct DescribableLogDirTopic {
    std::string topic;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic);
      v(partitions);
    }
    friend bool operator==(const DescribableLogDirTopic&, const DescribableLogDirTopic&) = default;
  };

  std::optional<std::vector<DescribableLogDirTopic>> topics;  // null: every partition
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(topics);
  }
  friend bool operator==(const DescribeLogDirsRequest&, const DescribeLogDirsRequest&) = default;
};

struct DescribeLogDirsResponse {
  static constexpr ApiKey api_key = ApiKey::describe_log_dirs;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 2;

  struct DescribeLogDirsPartition {
    std::int32_t partition_index = 0;
    std::int64_t partition_size = 0;  // bytes
    std::int64_t offset_lag = 0;      // a future replica's offsets behind the current one; else 0
    bool is_future_key = false;       // a replica being moved to this directory
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(partition_size);
      v(offset_lag);
      v(is_future_key);
    }
    friend bool operator==(const DescribeLogDirsPartition&, const DescribeLogDirsPartition&) = default;
  };

  struct DescribeLogDirsTopic {
    std::string name;
    std::vector<DescribeLogDirsPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const DescribeLogDirsTopic&, const DescribeLogDirsTopic&) = default;
  };

  struct DescribeLogDirsResult {
    std::int16_t error_code = 0;  // KAFKA_STORAGE_ERROR for an offline directory
    std::string log_dir;          // absolute path
    std::vector<DescribeLogDirsTopic> topics;
    std::int64_t total_bytes = -1;   // v4+
    std::int64_t usable_bytes = -1;  // v4+
    bool is_cordoned = false;        // v5+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(log_dir);
      v(topics);
      v.since(4, total_bytes);
      v.since(4, usable_bytes);
      v.since(5, is_cordoned);
    }
    friend bool operator==(const DescribeLogDirsResult&, const DescribeLogDirsResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;  // v3+
  std::vector<DescribeLogDirsResult> results;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v.since(3, error_code);
    v(results);
  }
  friend bool operator==(const DescribeLogDirsResponse&, const DescribeLogDirsResponse&) = default;
};

}  // namespace kwire::protocol

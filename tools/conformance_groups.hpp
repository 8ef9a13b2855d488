// The consumer-group rows of `kwire conformance` (conformance_groups.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "conformance.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/api_keys.hpp"
#include "kwire/protocol/bytes.hpp"

namespace kwire::tools {

template <class M>
ConformanceRow declared_row() {
  ConformanceRow row;
  row.api = std::string(protocol::api_name(M::api_key));
  row.api_key = static_cast<std::int16_t>(M::api_key);
  row.declared_min = M::min_version;
  row.declared_max = M::max_version;
  return row;
}

using RunApi = std::function<void(ConformanceRow, const std::function<std::string(std::int16_t)>&)>;

struct GroupChecks {
  client::KafkaClient* client = nullptr;
  std::string topic;        // one partition with records
  protocol::Uuid topic_id;  // its id (OffsetCommit/OffsetFetch v10)
  std::string prefix;       // group ids start with it
  bool kafka4 = false;      // a 4.x broker (KIP-848 on by default)
  std::string cluster_id;   // from Metadata (the admin rows)
  std::size_t brokers = 0;  // brokers Metadata lists
};

/// Adds the rows of FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
/// LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, ListGroups,
/// DescribeGroups, ConsumerGroupHeartbeat and ConsumerGroupDescribe.
void run_group_conformance(const GroupChecks& g, const RunApi& run_api);

/// Adds the rows of DescribeCluster, IncrementalAlterConfigs, DescribeConfigs,
/// ListConfigResources and DeleteGroups (conformance_admin.cpp). The topic's
/// retention.ms is changed.
void run_admin_conformance(const GroupChecks& g, const RunApi& run_api);

/// Adds the rows of CreateAcls, DescribeAcls, DeleteAcls, ElectLeaders and
/// DescribeLogDirs (conformance_acls.cpp). Bindings are made on topic
/// resources named after `prefix` and deleted; without an authorizer the ACL
/// rows check SECURITY_DISABLED and note "authorizer off".
void run_acl_conformance(const GroupChecks& g, const RunApi& run_api);

/// Adds the share-group rows (KIP-932: ShareGroupHeartbeat, ShareGroupDescribe,
/// ShareFetch, ShareAcknowledge, Alter/Describe/DeleteShareGroupOffsets,
/// conformance_share.cpp); call it only where share.version is finalized >= 1.
void run_share_conformance(const GroupChecks& g, const RunApi& run_api);

}  // namespace kwire::tools

#include "kwire/protocol/api_keys.hpp"

namespace kwire::protocol {

std::string_view api_name(ApiKey key) noexcept {
  switch (key) {
    case ApiKey::produce: return "Produce";
    case ApiKey::fetch: return "Fetch";
    case ApiKey::list_offsets: return "ListOffsets";
    case ApiKey::metadata: return "Metadata";
    case ApiKey::offset_commit: return "OffsetCommit";
    case ApiKey::offset_fetch: return "OffsetFetch";
    case ApiKey::find_coordinator: return "FindCoordinator";
    case ApiKey::join_group: return "JoinGroup";
    case ApiKey::heartbeat: return "Heartbeat";
    case ApiKey::leave_group: return "LeaveGroup";
    case ApiKey::sync_group: return "SyncGroup";
    case ApiKey::describe_groups: return "DescribeGroups";
    case ApiKey::list_groups: return "ListGroups";
    case ApiKey::sasl_handshake: return "SaslHandshake";
    case ApiKey::api_versions: return "ApiVersions";
    case ApiKey::create_topics: return "CreateTopics";
    case ApiKey::delete_topics: return "DeleteTopics";
    case ApiKey::delete_records: return "DeleteRecords";
    case ApiKey::init_producer_id: return "InitProducerId";
    case ApiKey::offset_for_leader_epoch: return "OffsetForLeaderEpoch";
    case ApiKey::add_partitions_to_txn: return "AddPartitionsToTxn";
    case ApiKey::add_offsets_to_txn: return "AddOffsetsToTxn";
    case ApiKey::end_txn: return "EndTxn";
    case ApiKey::write_txn_markers: return "WriteTxnMarkers";
    case ApiKey::txn_offset_commit: return "TxnOffsetCommit";
    case ApiKey::describe_acls: return "DescribeAcls";
    case ApiKey::create_acls: return "CreateAcls";
    case ApiKey::delete_acls: return "DeleteAcls";
    case ApiKey::describe_configs: return "DescribeConfigs";
    case ApiKey::alter_configs: return "AlterConfigs";
    case ApiKey::alter_replica_log_dirs: return "AlterReplicaLogDirs";
    case ApiKey::describe_log_dirs: return "DescribeLogDirs";
    case ApiKey::sasl_authenticate: return "SaslAuthenticate";
    case ApiKey::create_partitions: return "CreatePartitions";
    case ApiKey::delete_groups: return "DeleteGroups";
    case ApiKey::elect_leaders: return "ElectLeaders";
    case ApiKey::incremental_alter_configs: return "IncrementalAlterConfigs";
    case ApiKey::offset_delete: return "OffsetDelete";
    case ApiKey::describe_cluster: return "DescribeCluster";
    case ApiKey::describe_producers: return "DescribeProducers";
    case ApiKey::describe_transactions: return "DescribeTransactions";
    case ApiKey::list_transactions: return "ListTransactions";
    case ApiKey::consumer_group_heartbeat: return "ConsumerGroupHeartbeat";
    case ApiKey::consumer_group_describe: return "ConsumerGroupDescribe";
    case ApiKey::list_config_resources: return "ListConfigResources";
    case ApiKey::share_group_heartbeat: return "ShareGroupHeartbeat";
    case ApiKey::share_group_describe: return "ShareGroupDescribe";
    case ApiKey::share_fetch: return "ShareFetch";
    case ApiKey::share_acknowledge: return "ShareAcknowledge";
    case ApiKey::describe_share_group_offsets: return "DescribeShareGroupOffsets";
    case ApiKey::alter_share_group_offsets: return "AlterShareGroupOffsets";
    case ApiKey::delete_share_group_offsets: return "DeleteShareGroupOffsets";
  }
  return "Unknown";
}

}  // namespace kwire::protocol

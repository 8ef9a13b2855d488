// Kafka API keys (the protocol guide's "Api Keys" table).
#pragma once

#include <cstdint>
#include <string_view>

namespace kwire::protocol {

enum class ApiKey : std::int16_t {
  produce = 0,
  fetch = 1,
  list_offsets = 2,
  metadata = 3,
  offset_commit = 8,
  offset_fetch = 9,
  find_coordinator = 10,
  join_group = 11,
  heartbeat = 12,
  leave_group = 13,
  sync_group = 14,
  describe_groups = 15,
  list_groups = 16,
  sasl_handshake = 17,
  api_versions = 18,
  create_topics = 19,
  delete_topics = 20,
  delete_records = 21,
  init_producer_id = 22,
  offset_for_leader_epoch = 23,
  add_partitions_to_txn = 24,
  add_offsets_to_txn = 25,
  end_txn = 26,
  write_txn_markers = 27,
  txn_offset_commit = 28,
  describe_acls = 29,
  create_acls = 30,
  delete_acls = 31,
  describe_configs = 32,
  alter_configs = 33,
  alter_replica_log_dirs = 34,
  describe_log_dirs = 35,
  sasl_authenticate = 36,
  create_partitions = 37,
  delete_groups = 42,
  elect_leaders = 43,
  incremental_alter_configs = 44,
  offset_delete = 47,
  describe_cluster = 60,
  describe_producers = 61,
  describe_transactions = 65,
  list_transactions = 66,
  consumer_group_heartbeat = 68,
  consumer_group_describe = 69,
  list_config_resources = 74,  // ListClientMetricsResources before Kafka 4.1 (KIP-1142)
  share_group_heartbeat = 76,
  share_group_describe = 77,
  share_fetch = 78,
  share_acknowledge = 79,
  describe_share_group_offsets = 90,
  alter_share_group_offsets = 91,
  delete_share_group_offsets = 92,
};

/// The protocol guide's name for an API key ("Fetch", "ListOffsets"...), or "Unknown".
std::string_view api_name(ApiKey key) noexcept;
inline std::string_view api_name(std::int16_t key) noexcept { return api_name(static_cast<ApiKey>(key)); }

}  // namespace kwire::protocol

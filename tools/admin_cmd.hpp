// kwire cluster, kwire configs and kwire groups delete (admin_cmd.cpp): the
// shape of Kafka's kafka-cluster / kafka-configs / kafka-consumer-groups
// --delete tools on kwire's Admin client.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"

namespace kwire::tools {

struct ClusterArgs {
  bool include_fenced = false;
  bool json = false;
};

struct ConfigsArgs {
  bool describe = false;
  bool alter = false;
  bool list = false;
  std::string entity_type;                // topics, brokers, broker-loggers, client-metrics, groups
  std::vector<std::string> entity_names;  // empty with --describe of brokers: the cluster-wide default
  bool entity_default = false;            // brokers: the cluster-wide default ("")
  std::vector<std::string> keys;          // --describe: only these
  std::string add_config;                 // k=v,k2=[a,b]
  std::string delete_config;              // k,k2
  bool validate_only = false;
  bool all = false;  // --describe: also the keys left at their defaults
  bool json = false;
};

struct DeleteGroupsArgs {
  std::vector<std::string> groups;
  bool json = false;
};

struct ShareGroupsArgs {
  std::string group;
  std::vector<std::string> topics;  // reset-offsets: TOPIC (every partition)
  bool to_earliest = false;
  bool to_latest = false;
  std::optional<std::int64_t> to_offset;
  bool dry_run = false;
  bool json = false;
};

/// kwire transactions list|describe|describe-producers
/// (transactions_cmd.cpp), as kafka-transactions does it.
struct TransactionsArgs {
  std::vector<std::string> states;          // list --state (repeatable)
  std::vector<std::int64_t> producer_ids;   // list --producer-id (repeatable)
  std::optional<std::int64_t> duration_ms;  // list --duration-ms
  std::optional<std::string> pattern;       // list --transactional-id-pattern
  std::string transactional_id;             // describe
  std::string topic;                        // describe-producers
  std::int32_t partition = 0;
  bool json = false;
};
int cmd_transactions_list(const CommonOptions& common, const TransactionsArgs& args);
int cmd_transactions_describe(const CommonOptions& common, const TransactionsArgs& args);
int cmd_transactions_describe_producers(const CommonOptions& common, const TransactionsArgs& args);

/// kwire consume --share GROUP TOPIC...: a share-group member
/// (share_consume_cmd.cpp). Each record is acknowledged once written out.
struct ShareConsumeArgs {
  std::optional<std::string> group;
  std::string ack = "accept";    // accept | release | reject: the type given to every record written
  bool reject_on_error = false;  // a record that could not be written is rejected, not released
};
int cmd_consume_share(const CommonOptions& common, const ConsumeArgs& args, const ShareConsumeArgs& share);

int cmd_cluster(const CommonOptions& common, const ClusterArgs& args);
/// kwire share-groups list|describe|reset-offsets (share_groups_cmd.cpp), as
/// kafka-share-groups does it.
int cmd_share_groups_list(const CommonOptions& common, const ShareGroupsArgs& args);
int cmd_share_groups_describe(const CommonOptions& common, const ShareGroupsArgs& args);
int cmd_share_groups_reset_offsets(const CommonOptions& common, const ShareGroupsArgs& args);
int cmd_configs(const CommonOptions& common, const ConfigsArgs& args);
int cmd_groups_delete(const CommonOptions& common, const DeleteGroupsArgs& args);

/// "k=v,k2=[a,b]" -> pairs, as kafka-configs --add-config splits it (commas
/// inside [] belong to the value). Throws std::invalid_argument on a bad entry.
std::vector<std::pair<std::string, std::string>> parse_config_assignments(const std::string& text);

}  // namespace kwire::tools

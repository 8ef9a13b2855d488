// kwire acls, kwire leader-election and kwire log-dirs (acl_cmd.cpp): the
// shape of Kafka's kafka-acls, kafka-leader-election and kafka-log-dirs tools
// on kwire's Admin client.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"

namespace CLI {
class App;
}

namespace kwire::tools {

/// kwire acls --list|--add|--remove, as kafka-acls (the common options).
struct AclsArgs {
  bool list = false, add = false, remove = false;
  std::vector<std::string> allow_principals, deny_principals;  // TYPE:NAME
  std::vector<std::string> allow_hosts, deny_hosts;            // default "*"
  std::vector<std::string> operations;                         // Read, Write, ..., All
  std::vector<std::string> topics, groups, transactional_ids;
  bool cluster = false;
  std::optional<std::string> pattern_type;  // literal | prefixed | any | match
  std::optional<std::string> principal;     // --list: only this principal's
  bool json = false;
};
int cmd_acls(const CommonOptions& common, const AclsArgs& args);

/// kwire leader-election, as kafka-leader-election.
struct LeaderElectionArgs {
  std::string election_type;  // PREFERRED | UNCLEAN
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  bool all_topic_partitions = false;
  bool json = false;
};
int cmd_leader_election(const CommonOptions& common, const LeaderElectionArgs& args);

/// kwire log-dirs --describe, as kafka-log-dirs (prints its JSON).
struct LogDirsArgs {
  bool describe = false;
  std::optional<std::string> topic_list;   // a,b
  std::optional<std::string> broker_list;  // 1,2
};
int cmd_log_dirs(const CommonOptions& common, const LogDirsArgs& args);

/// The three subcommands on `app` (each given the common options by
/// `add_common`); run() calls the one parsed, or returns nullopt.
struct AclCommands {
  AclsArgs acls;
  LeaderElectionArgs election;
  LogDirsArgs log_dirs;
  CLI::App* acls_cmd = nullptr;
  CLI::App* election_cmd = nullptr;
  CLI::App* log_dirs_cmd = nullptr;
  void add_to(CLI::App& app, const std::function<void(CLI::App*)>& add_common);
  std::optional<int> run(const CommonOptions& common) const;
};

}  // namespace kwire::tools

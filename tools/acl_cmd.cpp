// kwire acls, kwire leader-election, kwire log-dirs (see acl_cmd.hpp).
#include "acl_cmd.hpp"

#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "kwire/client/admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"

namespace kwire::tools {

using namespace kwire::client;
namespace proto = kwire::protocol;

namespace {

template <class E>
std::int8_t code(E e) {
  return static_cast<std::int8_t>(e);
}

std::vector<std::string> split_list(const std::string& text, const char* option) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw std::invalid_argument(fmt::format("{} '{}' has an empty entry", option, text));
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

struct Resource {
  AclResourceType type;
  std::string name;
};

// The resources named by --topic, --group, --transactional-id, --cluster.
std::vector<Resource> resources_of(const AclsArgs& a) {
  std::vector<Resource> out;
  for (auto& t : a.topics) out.push_back({AclResourceType::topic, t});
  for (auto& g : a.groups) out.push_back({AclResourceType::group, g});
  for (auto& t : a.transactional_ids) out.push_back({AclResourceType::transactional_id, t});
  if (a.cluster) out.push_back({AclResourceType::cluster, "kafka-cluster"});
  for (auto& r : out)
    if (r.name.empty()) throw std::invalid_argument("a resource name is empty");
  return out;
}

std::vector<AclOperation> operations_of(const AclsArgs& a, AclOperation fallback) {
  std::vector<AclOperation> out;
  for (auto& name : a.operations) {
    auto op = proto::parse_acl_operation(name);
    if (!op || *op == AclOperation::any)
      throw std::invalid_argument(
          fmt::format("unknown --operation '{}' (Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                      "DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, "
                      "TwoPhaseCommit, All)",
                      name));
    out.push_back(*op);
  }
  if (out.empty()) out.push_back(fallback);
  return out;
}

AclPatternType pattern_of(const AclsArgs& a, AclPatternType fallback) {
  if (!a.pattern_type) return fallback;
  auto p = proto::parse_acl_pattern_type(*a.pattern_type);
  if (!p)
    throw std::invalid_argument(
        fmt::format("unknown --resource-pattern-type '{}' (literal, prefixed, any, match)", *a.pattern_type));
  return *p;
}

void check_principals(const std::vector<std::string>& principals) {
  for (auto& p : principals)
    if (p.find(':') == std::string::npos || p.front() == ':' || p.back() == ':')
      throw std::invalid_argument(fmt::format("principal '{}' is not TYPE:NAME (e.g. User:alice)", p));
}

// (principal, host, permission) triples of --allow-/--deny- options.
std::vector<std::tuple<std::string, std::string, AclPermissionType>> entries_of(const AclsArgs& a) {
  check_principals(a.allow_principals);
  check_principals(a.deny_principals);
  std::vector<std::tuple<std::string, std::string, AclPermissionType>> out;
  auto add = [&](const std::vector<std::string>& principals, const std::vector<std::string>& hosts,
                 AclPermissionType perm) {
    const std::vector<std::string> any_host{"*"};
    for (auto& p : principals)
      for (auto& h : hosts.empty() ? any_host : hosts) out.emplace_back(p, h, perm);
  };
  add(a.allow_principals, a.allow_hosts, AclPermissionType::allow);
  add(a.deny_principals, a.deny_hosts, AclPermissionType::deny);
  return out;
}

std::string pattern_text(AclResourceType type, const std::string& name, AclPatternType pattern) {
  return fmt::format("ResourcePattern(resourceType={}, name={}, patternType={})",
                     proto::acl_resource_type_name(code(type)), name, proto::acl_pattern_type_name(code(pattern)));
}

std::string entry_text(const AclBinding& b) {
  return fmt::format("(principal={}, host={}, operation={}, permissionType={})", b.principal, b.host,
                     proto::acl_operation_name(code(b.operation)), proto::acl_permission_type_name(code(b.permission)));
}

std::string binding_json(const AclBinding& b) {
  return fmt::format(
      "{{\"resourceType\":\"{}\",\"name\":{},\"patternType\":\"{}\",\"principal\":{},\"host\":{},"
      "\"operation\":\"{}\",\"permissionType\":\"{}\"}}",
      proto::acl_resource_type_name(code(b.resource_type)), json_str(b.resource_name),
      proto::acl_pattern_type_name(code(b.pattern_type)), json_str(b.principal), json_str(b.host),
      proto::acl_operation_name(code(b.operation)), proto::acl_permission_type_name(code(b.permission)));
}

// Bindings grouped by resource pattern, as kafka-acls prints them.
std::string listing(const std::vector<AclBinding>& bindings, const char* heading) {
  std::map<std::tuple<AclResourceType, std::string, AclPatternType>, std::vector<const AclBinding*>> by_resource;
  for (auto& b : bindings) by_resource[{b.resource_type, b.resource_name, b.pattern_type}].push_back(&b);
  std::string out;
  for (auto& [key, list] : by_resource) {
    out += fmt::format("{} for resource `{}`:\n", heading,
                       pattern_text(std::get<0>(key), std::get<1>(key), std::get<2>(key)));
    for (auto* b : list) out += "\t" + entry_text(*b) + "\n";
    out += "\n";
  }
  return out;
}

int acls_list(Admin& admin, const AclsArgs& a) {
  auto resources = resources_of(a);
  std::vector<AclBindingFilter> filters;
  if (a.principal) check_principals({*a.principal});
  if (resources.empty()) {
    AclBindingFilter f;
    f.pattern_type = pattern_of(a, AclPatternType::any);
    f.principal = a.principal;
    filters.push_back(f);
  }
  for (auto& r : resources) {
    AclBindingFilter f;
    f.resource_type = r.type;
    f.resource_name = r.name;
    f.pattern_type = pattern_of(a, AclPatternType::literal);
    f.principal = a.principal;
    filters.push_back(f);
  }
  std::vector<AclBinding> all;
  for (auto& f : filters) {
    auto found = admin.describe_acls(f);
    all.insert(all.end(), found.begin(), found.end());
  }
  if (a.json) {
    std::string out = "[";
    for (std::size_t i = 0; i < all.size(); ++i) out += (i ? "," : "") + binding_json(all[i]);
    write_stdout(out + "]\n");
  } else {
    write_stdout(listing(all, "Current ACLs"));
  }
  return 0;
}

int acls_add(Admin& admin, const AclsArgs& a) {
  auto resources = resources_of(a);
  if (resources.empty())
    throw std::invalid_argument("--add needs a resource: --topic, --group, --transactional-id or --cluster");
  auto entries = entries_of(a);
  if (entries.empty()) throw std::invalid_argument("--add needs --allow-principal or --deny-principal");
  const AclPatternType pattern = pattern_of(a, AclPatternType::literal);
  if (pattern != AclPatternType::literal && pattern != AclPatternType::prefixed)
    throw std::invalid_argument("--add takes --resource-pattern-type literal or prefixed");
  std::vector<AclBinding> bindings;
  for (auto& r : resources)
    for (auto op : operations_of(a, AclOperation::all))
      for (auto& [principal, host, perm] : entries)
        bindings.push_back({r.type, r.name, pattern, principal, host, op, perm});
  auto results = admin.create_acls(bindings);
  int rc = 0;
  std::vector<AclBinding> added;
  for (auto& r : results) {
    if (!r.error_code) {
      added.push_back(r.binding);
      continue;
    }
    rc = 1;
    std::fprintf(stderr, "kwire: error: adding %s %s: %s: %s\n",
                 pattern_text(r.binding.resource_type, r.binding.resource_name, r.binding.pattern_type).c_str(),
                 entry_text(r.binding).c_str(), std::string(proto::error_name(r.error_code)).c_str(),
                 r.error_message.c_str());
  }
  if (a.json) {
    std::string out = "[";
    for (std::size_t i = 0; i < added.size(); ++i) out += (i ? "," : "") + binding_json(added[i]);
    write_stdout(out + "]\n");
  } else {
    write_stdout(listing(added, "Adding ACLs"));
  }
  return rc;
}

int acls_remove(Admin& admin, const AclsArgs& a) {
  auto resources = resources_of(a);
  if (resources.empty())
    throw std::invalid_argument("--remove needs a resource: --topic, --group, --transactional-id or --cluster");
  auto entries = entries_of(a);
  const AclPatternType pattern = pattern_of(a, AclPatternType::literal);
  std::vector<AclBindingFilter> filters;
  for (auto& r : resources) {
    AclBindingFilter base;
    base.resource_type = r.type;
    base.resource_name = r.name;
    base.pattern_type = pattern;
    if (entries.empty()) {
      // No principal: every binding of the resource (kafka-acls does the same).
      if (!a.operations.empty()) throw std::invalid_argument("--remove with --operation needs a principal");
      filters.push_back(base);
      continue;
    }
    for (auto op : operations_of(a, AclOperation::any))
      for (auto& [principal, host, perm] : entries) {
        AclBindingFilter f = base;
        f.principal = principal;
        f.host = host;
        f.operation = op;
        f.permission = perm;
        filters.push_back(f);
      }
  }
  auto results = admin.delete_acls(filters);
  int rc = 0;
  std::vector<AclBinding> removed;
  for (auto& d : results) {
    if (d.error_code) {
      rc = 1;
      std::fprintf(
          stderr, "kwire: error: removing ACLs of %s: %s: %s\n",
          pattern_text(d.filter.resource_type, d.filter.resource_name.value_or("*"), d.filter.pattern_type).c_str(),
          std::string(proto::error_name(d.error_code)).c_str(), d.error_message.c_str());
    }
    for (auto& b : d.deleted) {
      if (!b.error_code) {
        removed.push_back(b.binding);
        continue;
      }
      rc = 1;
      std::fprintf(stderr, "kwire: error: removing %s: %s: %s\n", entry_text(b.binding).c_str(),
                   std::string(proto::error_name(b.error_code)).c_str(), b.error_message.c_str());
    }
  }
  if (a.json) {
    std::string out = "[";
    for (std::size_t i = 0; i < removed.size(); ++i) out += (i ? "," : "") + binding_json(removed[i]);
    write_stdout(out + "]\n");
  } else {
    write_stdout(listing(removed, "Removed ACLs"));
  }
  return rc;
}

}  // namespace

int cmd_acls(const CommonOptions& common, const AclsArgs& args) {
  if (args.list + args.add + args.remove != 1)
    throw std::invalid_argument("acls needs exactly one of --list, --add, --remove");
  if (!args.list && args.principal) throw std::invalid_argument("--principal goes with --list");
  KafkaClient client(common.client_properties());
  Admin admin(client);
  if (args.list) return acls_list(admin, args);
  if (args.add) return acls_add(admin, args);
  return acls_remove(admin, args);
}

int cmd_leader_election(const CommonOptions& common, const LeaderElectionArgs& args) {
  auto type = proto::parse_election_type(args.election_type);
  if (!type)
    throw std::invalid_argument(fmt::format("unknown --election-type '{}' (PREFERRED, UNCLEAN)", args.election_type));
  if (args.all_topic_partitions == args.topic.has_value())
    throw std::invalid_argument("leader-election needs either --topic (with --partition) or --all-topic-partitions");
  if (args.topic && !args.partition) throw std::invalid_argument("--topic needs --partition");
  if (args.partition && !args.topic) throw std::invalid_argument("--partition needs --topic");
  std::optional<std::vector<TopicPartition>> partitions;
  if (args.topic) partitions = std::vector<TopicPartition>{{*args.topic, *args.partition}};
  KafkaClient client(common.client_properties());
  auto results = Admin(client).elect_leaders(*type, partitions);
  const std::string type_name(proto::election_type_name(code(*type)));
  std::vector<std::string> elected, not_needed;
  int rc = 0;
  std::string errors;
  std::string json = "[";
  for (auto& r : results) {
    const std::string tp = to_string(r.partition);
    if (args.json)
      json += fmt::format("{}{{\"topic\":{},\"partition\":{},\"error\":{},\"message\":{}}}", json.size() > 1 ? "," : "",
                          json_str(r.partition.topic), r.partition.partition,
                          r.error_code ? json_str(std::string(proto::error_name(r.error_code))) : "null",
                          json_str(r.error_message));
    if (r.error_code == 0) elected.push_back(tp);
    else if (r.error_code == static_cast<std::int16_t>(proto::ErrorCode::election_not_needed)) not_needed.push_back(tp);
    else {
      rc = 1;
      errors += fmt::format("Error completing leader election ({}) for partition: {}: {}: {}\n", type_name, tp,
                            proto::error_name(r.error_code), r.error_message);
    }
  }
  if (args.json) {
    write_stdout(json + "]\n");
  } else {
    std::string out;
    if (!elected.empty())
      out += fmt::format("Successfully completed leader election ({}) for partitions {}\n", type_name,
                         fmt::join(elected, ", "));
    if (!not_needed.empty())
      out += fmt::format("Valid replica already elected for partitions {}\n", fmt::join(not_needed, ", "));
    write_stdout(out);
  }
  if (!errors.empty()) std::fputs(errors.c_str(), stderr);
  return rc;
}

int cmd_log_dirs(const CommonOptions& common, const LogDirsArgs& args) {
  if (!args.describe) throw std::invalid_argument("log-dirs needs --describe");
  std::optional<std::vector<std::string>> topics;
  if (args.topic_list) topics = split_list(*args.topic_list, "--topic-list");
  std::set<std::int32_t> brokers;
  if (args.broker_list)
    for (auto& b : split_list(*args.broker_list, "--broker-list")) {
      std::size_t used = 0;
      int id = -1;
      try {
        id = std::stoi(b, &used);
      } catch (const std::exception&) {
      }
      if (used != b.size() || id < 0)
        throw std::invalid_argument(fmt::format("--broker-list entry '{}' is not a broker id", b));
      brokers.insert(id);
    }
  KafkaClient client(common.client_properties());
  auto dirs = Admin(client).describe_log_dirs(topics);
  std::map<std::int32_t, std::vector<const LogDirDescription*>> by_broker;
  for (auto& d : dirs)
    if (brokers.empty() || brokers.count(d.broker)) by_broker[d.broker].push_back(&d);
  std::string json = "{\"brokers\":[";
  std::vector<std::int32_t> ids;
  for (auto& [broker, list] : by_broker) {
    json += fmt::format("{}{{\"broker\":{},\"logDirs\":[", ids.empty() ? "" : ",", broker);
    ids.push_back(broker);
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto& d = *list[i];
      json += fmt::format("{}{{\"partitions\":[", i ? "," : "");
      bool first = true;
      for (auto& [tp, info] : d.replicas) {
        json += fmt::format("{}{{\"partition\":{},\"size\":{},\"offsetLag\":{},\"isFuture\":{}}}", first ? "" : ",",
                            json_str(to_string(tp)), info.size_bytes, info.offset_lag, info.is_future);
        first = false;
      }
      json += fmt::format("],\"error\":{},\"logDir\":{}", d.error_code ? json_str(d.error_message) : "null",
                          json_str(d.path));
      if (d.total_bytes >= 0)
        json += fmt::format(",\"totalBytes\":{},\"usableBytes\":{}", d.total_bytes, d.usable_bytes);
      json += "}";
    }
    json += "]}";
  }
  json += "],\"version\":1}\n";
  write_stdout(fmt::format("Querying brokers for log directories information\n"
                           "Received log directory information from brokers {}\n",
                           fmt::join(ids, ",")) +
               json);
  return 0;
}

void AclCommands::add_to(CLI::App& app, const std::function<void(CLI::App*)>& add_common) {
  acls_cmd = app.add_subcommand("acls", "List, add or remove ACL bindings, as kafka-acls");
  add_common(acls_cmd);
  auto* c = acls_cmd;
  c->add_flag("--list", acls.list, "List the bindings (of the resources given; else every binding)");
  c->add_flag("--add", acls.add, "Add bindings: each principal x host x operation x resource");
  c->add_flag("--remove", acls.remove, "Remove bindings (without a principal: every binding of the resources)");
  c->add_option("--allow-principal", acls.allow_principals, "TYPE:NAME allowed, e.g. User:alice (repeatable)");
  c->add_option("--deny-principal", acls.deny_principals, "TYPE:NAME denied (repeatable)");
  c->add_option("--allow-host", acls.allow_hosts, "Host the allowed principals may connect from (default *)");
  c->add_option("--deny-host", acls.deny_hosts, "Host the denied principals are denied from (default *)");
  c->add_option("--operation", acls.operations,
                "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                "IdempotentWrite, CreateTokens, DescribeTokens, TwoPhaseCommit or All (repeatable; --add default All)");
  c->add_option("--topic", acls.topics, "Topic resource (repeatable)");
  c->add_option("--group", acls.groups, "Consumer group resource (repeatable)");
  c->add_option("--transactional-id", acls.transactional_ids, "Transactional id resource (repeatable)");
  c->add_flag("--cluster", acls.cluster, "The cluster resource");
  c->add_option("--resource-pattern-type", acls.pattern_type,
                "literal (default) | prefixed; --list and --remove also any | match");
  c->add_option("--principal", acls.principal, "--list: only the bindings of this TYPE:NAME");
  c->add_flag("--json", acls.json, "Print JSON");

  election_cmd = app.add_subcommand("leader-election", "Elect partition leaders, as kafka-leader-election");
  add_common(election_cmd);
  auto* e = election_cmd;
  e->add_option("--election-type", election.election_type, "PREFERRED | UNCLEAN")->required();
  e->add_option("--topic", election.topic, "Topic of the partition");
  e->add_option("--partition", election.partition, "Partition (with --topic)");
  e->add_flag("--all-topic-partitions", election.all_topic_partitions, "Every partition of the cluster");
  e->add_flag("--json", election.json, "Print JSON");

  log_dirs_cmd = app.add_subcommand("log-dirs", "Describe the brokers' log directories, as kafka-log-dirs (JSON)");
  add_common(log_dirs_cmd);
  auto* l = log_dirs_cmd;
  l->add_flag("--describe", log_dirs.describe, "Describe the log directories");
  l->add_option("--topic-list", log_dirs.topic_list, "Only these topics' replicas: a,b (default every topic)");
  l->add_option("--broker-list", log_dirs.broker_list, "Only these brokers: 1,2 (default every broker)");
}

std::optional<int> AclCommands::run(const CommonOptions& common) const {
  if (*acls_cmd) return cmd_acls(common, acls);
  if (*election_cmd) return cmd_leader_election(common, election);
  if (*log_dirs_cmd) return cmd_log_dirs(common, log_dirs);
  return std::nullopt;
}

}  // namespace kwire::tools

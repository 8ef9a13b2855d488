// kwire cluster, kwire configs, kwire groups delete (see admin_cmd.hpp).
#include "admin_cmd.hpp"

#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "kwire/client/admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/json_escape.hpp"

namespace kwire::tools {

using namespace kwire::client;

namespace {

std::string json_opt(const std::optional<std::string>& s) { return s ? json_str(*s) : std::string("null"); }

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char ch : text) {
    if (ch == '[') ++depth;
    if (ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty() || !out.empty()) out.push_back(cur);
  return out;
}

ConfigResourceKind kind_of(const std::string& type) {
  auto k = parse_config_resource_kind(type);
  if (!k)
    throw std::invalid_argument(
        fmt::format("unknown --entity-type '{}' (topics, brokers, broker-loggers, client-metrics, groups)", type));
  return *k;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_config_assignments(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& item : split_commas(text)) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument(fmt::format("--add-config entry '{}' is not KEY=VALUE", item));
    std::string value = item.substr(eq + 1);
    // A list value is written in brackets: [a,b] -> a,b.
    if (value.size() >= 2 && value.front() == '[' && value.back() == ']') value = value.substr(1, value.size() - 2);
    out.emplace_back(item.substr(0, eq), value);
  }
  if (out.empty()) throw std::invalid_argument("--add-config needs KEY=VALUE[,KEY=VALUE...]");
  return out;
}

int cmd_cluster(const CommonOptions& common, const ClusterArgs& args) {
  KafkaClient client(common.client_properties());
  auto d = Admin(client).describe_cluster(args.include_fenced);
  std::string out;
  if (args.json) {
    out = fmt::format("{{\"clusterId\":{},\"controllerId\":{},\"brokers\":[", json_str(d.cluster_id), d.controller_id);
    for (std::size_t i = 0; i < d.brokers.size(); ++i) {
      auto& b = d.brokers[i];
      out += fmt::format("{}{{\"id\":{},\"host\":{},\"port\":{},\"rack\":{},\"fenced\":{}}}", i ? "," : "", b.node_id,
                         json_str(b.host), b.port, json_opt(b.rack), b.fenced);
    }
    out += "]}\n";
  } else {
    out = fmt::format("Cluster ID: {}\nController: {}\n", d.cluster_id, d.controller_id);
    for (auto& b : d.brokers)
      out += fmt::format("Broker {} at {}:{}{}{}\n", b.node_id, b.host, b.port, b.rack ? " rack " + *b.rack : "",
                         b.fenced ? " (fenced)" : "");
  }
  write_stdout(out);
  return 0;
}

int cmd_configs(const CommonOptions& common, const ConfigsArgs& args) {
  if (args.describe + args.alter + args.list != 1)
    throw std::invalid_argument("configs needs exactly one of --describe, --alter, --list");
  KafkaClient client(common.client_properties());
  Admin admin(client);
  if (args.list) {
    std::vector<ConfigResourceKind> kinds;
    if (!args.entity_type.empty()) kinds.push_back(kind_of(args.entity_type));
    auto rs = admin.list_config_resources(kinds);
    std::string out = args.json ? "[" : "";
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const auto type = config_resource_kind_name(static_cast<std::int8_t>(rs[i].kind));
      if (args.json)
        out += fmt::format("{}{{\"type\":{},\"name\":{}}}", i ? "," : "", json_str(type), json_str(rs[i].name));
      else out += fmt::format("{} {}\n", type, rs[i].name);
    }
    if (args.json) out += "]\n";
    write_stdout(out);
    return 0;
  }
  if (args.entity_type.empty()) throw std::invalid_argument("--entity-type is required");
  const ConfigResourceKind kind = kind_of(args.entity_type);
  std::vector<ConfigResourceRef> resources;
  for (auto& n : args.entity_names) resources.push_back({kind, n});
  if (args.entity_default) resources.push_back({kind, ""});
  if (resources.empty()) {
    if (kind != ConfigResourceKind::broker && kind != ConfigResourceKind::broker_logger)
      throw std::invalid_argument("--entity-name is required for this --entity-type");
    resources.push_back({kind, ""});
  }
  if (args.alter) {
    std::vector<ConfigChange> changes;
    if (!args.add_config.empty())
      for (auto& [k, v] : parse_config_assignments(args.add_config)) changes.push_back({k, ConfigChange::Op::set, v});
    if (!args.delete_config.empty())
      for (auto& k : split_commas(args.delete_config)) changes.push_back({k, ConfigChange::Op::remove, std::nullopt});
    if (changes.empty()) throw std::invalid_argument("--alter needs --add-config and/or --delete-config");
    int rc = 0;
    for (auto& r : resources) {
      auto res = admin.alter_configs(r, changes, args.validate_only);
      const std::string what = fmt::format("{} '{}'", args.entity_type, r.name.empty() ? "<default>" : r.name);
      if (res.error_code) {
        std::fprintf(stderr, "kwire: error: altering the configs of %s: %s: %s\n", what.c_str(),
                     std::string(protocol::error_name(res.error_code)).c_str(), res.error_message.c_str());
        rc = 1;
      } else {
        write_stdout(
            fmt::format("{} the config of {}.\n", args.validate_only ? "Validated" : "Completed updating", what));
      }
    }
    return rc;
  }
  auto ds = admin.describe_configs(resources, args.keys);
  std::string out = args.json ? "[" : "";
  int rc = 0;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    auto& d = ds[i];
    if (d.error_code) {
      std::fprintf(stderr, "kwire: error: describing %s '%s': %s: %s\n", args.entity_type.c_str(),
                   d.resource.name.c_str(), std::string(protocol::error_name(d.error_code)).c_str(),
                   d.error_message.c_str());
      rc = 1;
      continue;
    }
    if (args.json) {
      out += fmt::format("{}{{\"type\":{},\"name\":{},\"configs\":[", i ? "," : "",
                         json_str(config_resource_kind_name(static_cast<std::int8_t>(d.resource.kind))),
                         json_str(d.resource.name));
      bool first = true;
      for (auto& e : d.entries) {
        if (!args.all && args.keys.empty() && e.is_default) continue;
        out += fmt::format("{}{{\"name\":{},\"value\":{},\"source\":{},\"readOnly\":{},\"sensitive\":{}}}",
                           first ? "" : ",", json_str(e.name), json_opt(e.value), json_str(e.source), e.read_only,
                           e.sensitive);
        first = false;
      }
      out += "]}";
    } else {
      out += fmt::format("{} configs for {} {} are:\n", args.all || !args.keys.empty() ? "All" : "Dynamic",
                         args.entity_type, d.resource.name.empty() ? "<default>" : d.resource.name);
      for (auto& e : d.entries) {
        if (!args.all && args.keys.empty() && e.is_default) continue;
        out += fmt::format("  {}={} sensitive={} source={}{}\n", e.name,
                           e.sensitive ? std::string("<hidden>") : e.value.value_or("null"), e.sensitive, e.source,
                           e.read_only ? " read-only" : "");
      }
    }
  }
  if (args.json) out += "]\n";
  write_stdout(out);
  return rc;
}

int cmd_groups_delete(const CommonOptions& common, const DeleteGroupsArgs& args) {
  if (args.groups.empty()) throw std::invalid_argument("groups delete needs at least one GROUP");
  KafkaClient client(common.client_properties());
  auto results = Admin(client).delete_groups(args.groups);
  std::string out = args.json ? "[" : "";
  int rc = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto& r = results[i];
    if (r.error_code) rc = 1;
    if (args.json) {
      out += fmt::format("{}{{\"group\":{},\"error\":{},\"message\":{}}}", i ? "," : "", json_str(r.group_id),
                         r.error_code ? json_str(std::string(protocol::error_name(r.error_code))) : "null",
                         json_str(r.error_message));
    } else if (r.error_code) {
      std::fprintf(stderr, "kwire: error: deleting group '%s': %s: %s\n", r.group_id.c_str(),
                   std::string(protocol::error_name(r.error_code)).c_str(), r.error_message.c_str());
    } else {
      out += fmt::format("Deletion of group '{}' was successful.\n", r.group_id);
    }
  }
  if (args.json) out += "]\n";
  write_stdout(out);
  return rc;
}

}  // namespace kwire::tools

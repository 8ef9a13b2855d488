// Admin: DescribeCluster, DescribeConfigs, IncrementalAlterConfigs,
// ListConfigResources and DeleteGroups (see admin.hpp).
#include "kwire/client/admin.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "coordinators.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

// Kafka's ConfigSource names (DescribeConfigsResponse.ConfigSource).
std::string source_name(std::int8_t s) {
  switch (s) {
    case 1: return "DYNAMIC_TOPIC_CONFIG";
    case 2: return "DYNAMIC_BROKER_CONFIG";
    case 3: return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case 4: return "STATIC_BROKER_CONFIG";
    case 5: return "DEFAULT_CONFIG";
    case 6: return "DYNAMIC_BROKER_LOGGER_CONFIG";
    case 7: return "CLIENT_METRICS_CONFIG";
    case 8: return "GROUP_CONFIG";
    default: return "UNKNOWN";
  }
}

// A broker's own resources are answered by that broker only.
Connection& connection_for(KafkaClient& client, const ConfigResourceRef& r) {
  if ((r.kind == ConfigResourceKind::broker || r.kind == ConfigResourceKind::broker_logger) && !r.name.empty()) {
    std::int32_t node = -1;
    try {
      node = std::stoi(r.name);
    } catch (const std::exception&) {
      throw ConfigError(fmt::format("broker resource name '{}' is not a node id", r.name));
    }
    return client.broker(node);
  }
  return client.any_connection();
}

}  // namespace

std::optional<ConfigResourceKind> parse_config_resource_kind(const std::string& name) {
  if (name == "topic" || name == "topics") return ConfigResourceKind::topic;
  if (name == "broker" || name == "brokers") return ConfigResourceKind::broker;
  if (name == "broker-logger" || name == "broker-loggers") return ConfigResourceKind::broker_logger;
  if (name == "client-metrics") return ConfigResourceKind::client_metrics;
  if (name == "group" || name == "groups") return ConfigResourceKind::group;
  return std::nullopt;
}

std::string config_resource_kind_name(std::int8_t kind) {
  switch (kind) {
    case 2: return "topic";
    case 4: return "broker";
    case 8: return "broker-logger";
    case 16: return "client-metrics";
    case 32: return "group";
    default: return fmt::format("type-{}", kind);
  }
}

Admin::Admin(KafkaClient& client) : client_(client), coordinators_(std::make_unique<Coordinators>()) {}

Admin::~Admin() = default;

ClusterDescription Admin::describe_cluster(bool include_fenced_brokers) {
  Connection& c = client_.any_connection();
  const std::int16_t v = c.version_for<DescribeClusterRequest>();
  DescribeClusterRequest req;
  req.include_fenced_brokers = include_fenced_brokers;
  auto r = c.receive<DescribeClusterResponse>(c.send(req, v), v, client_.default_deadline()).body;
  if (r.error_code)
    throw KafkaError(r.error_code, fmt::format("DescribeCluster: {}{}", error_name(r.error_code),
                                               r.error_message ? ": " + *r.error_message : std::string()));
  ClusterDescription out;
  out.cluster_id = r.cluster_id;
  out.controller_id = r.controller_id;
  for (auto& b : r.brokers) out.brokers.push_back({b.broker_id, b.host, b.port, b.rack, b.is_fenced});
  std::sort(out.brokers.begin(), out.brokers.end(), [](auto& a, auto& b) { return a.node_id < b.node_id; });
  return out;
}

std::vector<ConfigDescription> Admin::describe_configs(const std::vector<ConfigResourceRef>& resources,
                                                       const std::vector<std::string>& keys) {
  std::vector<ConfigDescription> out;
  for (auto& res : resources) {
    Connection& c = connection_for(client_, res);
    const std::int16_t v = c.version_for<DescribeConfigsRequest>();
    DescribeConfigsRequest req;
    DescribeConfigsRequest::DescribeConfigsResource dr;
    dr.resource_type = static_cast<std::int8_t>(res.kind);
    dr.resource_name = res.name;
    if (!keys.empty()) dr.configuration_keys = keys;
    req.resources.push_back(dr);
    auto r = c.receive<DescribeConfigsResponse>(c.send(req, v), v, client_.default_deadline()).body;
    if (r.results.size() != 1)
      throw MalformedResponseError(fmt::format("DescribeConfigs answered {} resources for 1", r.results.size()));
    auto& rr = r.results[0];
    ConfigDescription d;
    d.resource = res;
    d.error_code = rr.error_code;
    d.error_message = rr.error_message.value_or(rr.error_code ? std::string(error_name(rr.error_code)) : "");
    for (auto& e : rr.configs) {
      ConfigEntry ce;
      ce.name = e.name;
      ce.value = e.value;
      ce.read_only = e.read_only;
      ce.sensitive = e.is_sensitive;
      ce.is_default = v == 0 ? e.is_default : e.config_source == 5;
      ce.source = v == 0 ? (e.is_default ? "DEFAULT_CONFIG" : "UNKNOWN") : source_name(e.config_source);
      d.entries.push_back(std::move(ce));
    }
    out.push_back(std::move(d));
  }
  return out;
}

ResourceResult Admin::alter_configs(const ConfigResourceRef& resource, const std::vector<ConfigChange>& changes,
                                    bool validate_only) {
  Connection& c = connection_for(client_, resource);
  const std::int16_t v = c.version_for<IncrementalAlterConfigsRequest>();
  IncrementalAlterConfigsRequest req;
  IncrementalAlterConfigsRequest::AlterConfigsResource ar;
  ar.resource_type = static_cast<std::int8_t>(resource.kind);
  ar.resource_name = resource.name;
  for (auto& ch : changes) ar.configs.push_back({ch.name, static_cast<std::int8_t>(ch.op), ch.value, {}});
  req.resources.push_back(ar);
  req.validate_only = validate_only;
  auto r = c.receive<IncrementalAlterConfigsResponse>(c.send(req, v), v, client_.default_deadline()).body;
  if (r.responses.size() != 1)
    throw MalformedResponseError(
        fmt::format("IncrementalAlterConfigs answered {} resources for 1", r.responses.size()));
  auto& rr = r.responses[0];
  return {resource, rr.error_code,
          rr.error_message.value_or(rr.error_code ? std::string(error_name(rr.error_code)) : "")};
}

std::vector<ConfigResourceRef> Admin::list_config_resources(const std::vector<ConfigResourceKind>& kinds) {
  Connection& c = client_.any_connection();
  const std::int16_t v = c.version_for<ListConfigResourcesRequest>();
  ListConfigResourcesRequest req;
  for (auto k : kinds) req.resource_types.push_back(static_cast<std::int8_t>(k));
  auto r = c.receive<ListConfigResourcesResponse>(c.send(req, v), v, client_.default_deadline()).body;
  if (r.error_code) throw KafkaError(r.error_code, fmt::format("ListConfigResources: {}", error_name(r.error_code)));
  std::vector<ConfigResourceRef> out;
  for (auto& cr : r.config_resources) {
    const auto kind = static_cast<ConfigResourceKind>(cr.resource_type);
    // v0 cannot filter: keep what was asked for.
    if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    out.push_back({kind, cr.resource_name});
  }
  std::sort(out.begin(), out.end(),
            [](auto& a, auto& b) { return a.kind != b.kind ? a.kind < b.kind : a.name < b.name; });
  return out;
}

std::vector<GroupDeletion> Admin::delete_groups(const std::vector<std::string>& groups) {
  std::vector<GroupDeletion> out;
  for (auto& group : groups) {
    RetryLoop loop(client_.config(), Clock::now() + std::chrono::milliseconds(client_.config().default_api_timeout_ms),
                   fmt::format("DeleteGroups for group {}", group));
    GroupDeletion d;
    d.group_id = group;
    call_coordinator(client_, *coordinators_, CoordinatorType::group, group, loop, [&](Connection& c) {
      const std::int16_t v = c.version_for<DeleteGroupsRequest>();
      DeleteGroupsRequest req;
      req.groups_names.push_back(group);
      auto r = c.receive<DeleteGroupsResponse>(c.send(req, v), v, loop.request_deadline()).body;
      auto it = std::find_if(r.results.begin(), r.results.end(), [&](auto& x) { return x.group_id == group; });
      if (it == r.results.end())
        throw MalformedResponseError(fmt::format("DeleteGroups did not answer for group {}", group));
      if (coordinator_retriable(it->error_code)) return CoordinatorReply::retry(it->error_code);
      d.error_code = it->error_code;
      d.error_message = it->error_message.value_or(it->error_code ? std::string(error_name(it->error_code)) : "");
      return CoordinatorReply::done();
    });
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace kwire::client

// Admin rows of `kwire conformance`: DescribeCluster, IncrementalAlterConfigs,
// DescribeConfigs, ListConfigResources and DeleteGroups, each checked by what
// the broker does: the cluster id matches Metadata's, a config set at one
// version reads back at every version, a deleted group is gone.
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "conformance_exchange.hpp"
#include "conformance_groups.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::tools {

using namespace kwire::protocol;
using client::Connection;

namespace {

constexpr std::int8_t kTopicResource = static_cast<std::int8_t>(ConfigResourceType::topic);

struct AdminChecker {
  const GroupChecks& g;

  template <class Resp, class Req>
  Resp call(Connection& c, const Req& req, std::int16_t v, std::string& size_error) {
    return checked_exchange<Resp>(c, req, v, g.client->default_deadline(), size_error);
  }

  Connection& coordinator(const std::string& group) { return conformance_coordinator(*g.client, 0, group); }

  // Sets (or, with a null value, deletes) one config of the topic.
  std::string alter(const std::string& key, std::optional<std::string> value, std::int16_t v) {
    IncrementalAlterConfigsRequest req;
    IncrementalAlterConfigsRequest::AlterConfigsResource r;
    r.resource_type = kTopicResource;
    r.resource_name = g.topic;
    r.configs.push_back({key, static_cast<std::int8_t>(value ? AlterConfigOp::set : AlterConfigOp::remove), value, {}});
    req.resources.push_back(r);
    std::string err;
    auto resp = call<IncrementalAlterConfigsResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (resp.responses.size() != 1 || resp.responses[0].resource_name != g.topic) return "wrong shape";
    if (resp.responses[0].error_code)
      return fmt::format("IncrementalAlterConfigs returned {}", error_name(resp.responses[0].error_code));
    return {};
  }

  // The topic's value of `key` (nullopt: not listed), or an error text.
  std::string describe(const std::string& key, std::int16_t v, std::optional<std::string>& value,
                       std::int8_t* source = nullptr) {
    DescribeConfigsRequest req;
    req.resources.push_back({kTopicResource, g.topic, std::vector<std::string>{key}, {}});
    std::string err;
    auto resp = call<DescribeConfigsResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (resp.results.size() != 1 || resp.results[0].resource_name != g.topic) return "wrong shape";
    if (resp.results[0].error_code)
      return fmt::format("DescribeConfigs returned {}", error_name(resp.results[0].error_code));
    value.reset();
    for (auto& c : resp.results[0].configs)
      if (c.name == key) {
        value = c.value.value_or("<null>");
        if (source) *source = c.config_source;
      }
    return {};
  }

  // A group with a committed offset and no members (what DeleteGroups removes).
  std::string make_group(const std::string& group) {
    OffsetCommitRequest req;
    req.group_id = group;
    req.topics.push_back({g.topic, {{0, 1, -1, -1, std::string(), {}}}, {}});
    Connection& c = coordinator(group);
    const std::int16_t v = c.version_for<OffsetCommitRequest>();
    auto r = c.receive<OffsetCommitResponse>(c.send(req, v), v, g.client->default_deadline()).body;
    if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) return "OffsetCommit: wrong shape";
    if (r.topics[0].partitions[0].error_code)
      return fmt::format("OffsetCommit returned {}", error_name(r.topics[0].partitions[0].error_code));
    return {};
  }

  std::string delete_group(const std::string& group, std::int16_t v, std::int16_t& code) {
    DeleteGroupsRequest req;
    req.groups_names = {group};
    std::string err;
    auto r = call<DeleteGroupsResponse>(coordinator(group), req, v, err);
    if (!err.empty()) return err;
    if (r.results.size() != 1 || r.results[0].group_id != group) return "wrong shape";
    code = r.results[0].error_code;
    return {};
  }
};

template <class M>
std::int16_t highest(const GroupChecks& g) {
  return g.client->any_connection().pick_version(static_cast<std::int16_t>(M::api_key), M::min_version, M::max_version);
}

}  // namespace

void run_admin_conformance(const GroupChecks& g, const RunApi& run_api) {
  AdminChecker k{g};
  run_api(declared_row<DescribeClusterRequest>(), [&](std::int16_t v) -> std::string {
    DescribeClusterRequest req;
    req.include_fenced_brokers = v >= 2;
    std::string err;
    auto r = k.call<DescribeClusterResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("DescribeCluster returned {}", error_name(r.error_code));
    if (r.cluster_id != g.cluster_id) return fmt::format("cluster id {} instead of {}", r.cluster_id, g.cluster_id);
    if (r.brokers.size() != g.brokers) return fmt::format("{} brokers instead of {}", r.brokers.size(), g.brokers);
    if (v >= 1 && r.endpoint_type != 1) return fmt::format("endpoint type {} instead of 1 (brokers)", r.endpoint_type);
    return {};
  });
  // Each version sets retention.ms to its own value, read back at the highest
  // DescribeConfigs version; the last one deletes it (back to the default).
  const std::int16_t describe_max = highest<DescribeConfigsRequest>(g);
  run_api(declared_row<IncrementalAlterConfigsRequest>(), [&](std::int16_t v) -> std::string {
    const std::string value = std::to_string(86400000 + v);
    auto res = k.alter("retention.ms", value, v);
    if (!res.empty()) return res;
    // A KRaft broker applies the change once it reaches it through the
    // metadata log: read back for up to 3 s.
    std::optional<std::string> back;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (;;) {
      res = k.describe("retention.ms", describe_max, back);
      if (!res.empty()) return "read back: " + res;
      if (back == value || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (back != value) return fmt::format("set {} but read back {}", value, back.value_or("nothing"));
    return {};
  });
  run_api(declared_row<DescribeConfigsRequest>(), [&](std::int16_t v) -> std::string {
    std::optional<std::string> value;
    std::int8_t source = -1;
    auto res = k.describe("retention.ms", v, value, &source);
    if (!res.empty()) return res;
    if (!value || value->rfind("864000", 0) != 0) return fmt::format("retention.ms is {}", value.value_or("missing"));
    if (v >= 1 && source != 1) return fmt::format("source {} instead of 1 (DYNAMIC_TOPIC_CONFIG)", source);
    return {};
  });
  run_api(declared_row<ListConfigResourcesRequest>(), [&](std::int16_t v) -> std::string {
    ListConfigResourcesRequest req;
    req.resource_types = {kTopicResource};
    std::string err;
    auto r = k.call<ListConfigResourcesResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("ListConfigResources returned {}", error_name(r.error_code));
    if (v == 0) {
      // ListClientMetricsResources: client metrics subscriptions only (none here).
      for (auto& c : r.config_resources)
        if (c.resource_name == g.topic) return "v0 listed a topic";
      return {};
    }
    for (auto& c : r.config_resources)
      if (c.resource_type != kTopicResource) return fmt::format("type {} listed for a topic filter", c.resource_type);
    for (auto& c : r.config_resources)
      if (c.resource_name == g.topic) return {};
    return fmt::format("the topic {} is not listed", g.topic);
  });
  run_api(declared_row<DeleteGroupsRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-delete-v{}", g.prefix, v);
    auto res = k.make_group(group);
    if (!res.empty()) return "setup: " + res;
    std::int16_t code = -1;
    res = k.delete_group(group, v, code);
    if (!res.empty()) return res;
    if (code) return fmt::format("DeleteGroups returned {}", error_name(code));
    res = k.delete_group(group, v, code);
    if (!res.empty()) return res;
    if (code != static_cast<std::int16_t>(ErrorCode::group_id_not_found))
      return fmt::format("deleting it again gave {} instead of GROUP_ID_NOT_FOUND", error_name(code));
    return {};
  });
}

}  // namespace kwire::tools

// Admin: DescribeAcls, CreateAcls, DeleteAcls, ElectLeaders and
// DescribeLogDirs (see admin.hpp).
#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "kwire/client/admin.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

template <class E>
std::int8_t code(E e) {
  return static_cast<std::int8_t>(e);
}

std::string message_of(std::int16_t error_code, const std::optional<std::string>& message) {
  if (message && !message->empty()) return *message;
  return error_code ? std::string(error_name(error_code)) : std::string();
}

// The broker's message after the code's name, for a KafkaError.
std::string described(const char* api, std::int16_t error_code, const std::optional<std::string>& message) {
  std::string out = fmt::format("{}: {}", api, error_name(error_code));
  if (message && !message->empty()) out += ": " + *message;
  return out;
}

auto binding_key(const AclBinding& b) {
  return std::tie(b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host, b.operation, b.permission);
}

// A binding to create must name concrete values (Kafka's AclBinding rules).
void check_binding(const AclBinding& b) {
  auto bad = [&](const char* field, std::string_view value) {
    throw ConfigError(fmt::format("ACL binding for {} '{}': {} {} is not allowed in a binding",
                                  acl_resource_type_name(code(b.resource_type)), b.resource_name, field, value));
  };
  if (b.resource_type == AclResourceType::unknown || b.resource_type == AclResourceType::any)
    bad("resource type", acl_resource_type_name(code(b.resource_type)));
  if (b.pattern_type != AclPatternType::literal && b.pattern_type != AclPatternType::prefixed)
    bad("pattern type", acl_pattern_type_name(code(b.pattern_type)));
  if (b.operation == AclOperation::unknown || b.operation == AclOperation::any)
    bad("operation", acl_operation_name(code(b.operation)));
  if (b.permission != AclPermissionType::allow && b.permission != AclPermissionType::deny)
    bad("permission type", acl_permission_type_name(code(b.permission)));
  if (b.resource_name.empty()) throw ConfigError("ACL binding: the resource name is empty");
  if (b.principal.empty())
    throw ConfigError("ACL binding: the principal is empty (expected TYPE:NAME, e.g. User:alice)");
  if (b.host.empty()) throw ConfigError("ACL binding: the host is empty (\"*\" for every host)");
}

// What an API version can carry: pattern types from v1 (KIP-290), the USER
// resource type from v3.
void check_version(const char* api, std::int16_t v, AclResourceType type, AclPatternType pattern) {
  if (v < 1 && pattern != AclPatternType::literal && pattern != AclPatternType::any)
    throw UnsupportedVersionError(fmt::format("{} v{} (the broker's highest) has no pattern type {}: needs v1+", api, v,
                                              acl_pattern_type_name(code(pattern))));
  if (v < 3 && type == AclResourceType::user)
    throw UnsupportedVersionError(
        fmt::format("{} v{} (the broker's highest) has no USER resource type: needs v3+", api, v));
}

// v0 has no pattern type: its bindings are literal; its ANY filter matches literal ones.
AclPatternType pattern_at(std::int16_t v, std::int8_t wire) {
  return v < 1 ? AclPatternType::literal : static_cast<AclPatternType>(wire);
}

}  // namespace

std::vector<AclBinding> Admin::describe_acls(const AclBindingFilter& filter) {
  Connection& c = client_.any_connection();
  const std::int16_t v = c.version_for<DescribeAclsRequest>();
  check_version("DescribeAcls", v, filter.resource_type, filter.pattern_type);
  DescribeAclsRequest req;
  req.resource_type_filter = code(filter.resource_type);
  req.resource_name_filter = filter.resource_name;
  req.pattern_type_filter = code(filter.pattern_type);
  req.principal_filter = filter.principal;
  req.host_filter = filter.host;
  req.operation = code(filter.operation);
  req.permission_type = code(filter.permission);
  auto r = c.receive<DescribeAclsResponse>(c.send(req, v), v, client_.default_deadline()).body;
  if (r.error_code) throw KafkaError(r.error_code, described("DescribeAcls", r.error_code, r.error_message));
  std::vector<AclBinding> out;
  for (auto& res : r.resources)
    for (auto& a : res.acls)
      out.push_back({static_cast<AclResourceType>(res.resource_type), res.resource_name,
                     pattern_at(v, res.pattern_type), a.principal, a.host, static_cast<AclOperation>(a.operation),
                     static_cast<AclPermissionType>(a.permission_type)});
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return binding_key(a) < binding_key(b); });
  return out;
}

std::vector<AclBindingResult> Admin::create_acls(const std::vector<AclBinding>& bindings) {
  if (bindings.empty()) return {};
  for (auto& b : bindings) check_binding(b);
  Connection& c = client_.any_connection();
  const std::int16_t v = c.version_for<CreateAclsRequest>();
  CreateAclsRequest req;
  for (auto& b : bindings) {
    check_version("CreateAcls", v, b.resource_type, b.pattern_type);
    req.creations.push_back({code(b.resource_type),
                             b.resource_name,
                             code(b.pattern_type),
                             b.principal,
                             b.host,
                             code(b.operation),
                             code(b.permission),
                             {}});
  }
  auto r = c.receive<CreateAclsResponse>(c.send(req, v), v, client_.default_deadline()).body;
  if (r.results.size() != bindings.size())
    throw MalformedResponseError(
        fmt::format("CreateAcls answered {} results for {} bindings", r.results.size(), bindings.size()));
  std::vector<AclBindingResult> out;
  for (std::size_t i = 0; i < bindings.size(); ++i)
    out.push_back(
        {bindings[i], r.results[i].error_code, message_of(r.results[i].error_code, r.results[i].error_message)});
  return out;
}

std::vector<AclDeletion> Admin::delete_acls(const std::vector<AclBindingFilter>& filters) {
  if (filters.empty()) return {};
  Connection& c = client_.any_connection();
  const std::int16_t v = c.version_for<DeleteAclsRequest>();
  DeleteAclsRequest req;
  for (auto& f : filters) {
    check_version("DeleteAcls", v, f.resource_type, f.pattern_type);
    req.filters.push_back({code(f.resource_type),
                           f.resource_name,
                           code(f.pattern_type),
                           f.principal,
                           f.host,
                           code(f.operation),
                           code(f.permission),
                           {}});
  }
  auto r = c.receive<DeleteAclsResponse>(c.send(req, v), v, client_.default_deadline()).body;
  if (r.filter_results.size() != filters.size())
    throw MalformedResponseError(
        fmt::format("DeleteAcls answered {} results for {} filters", r.filter_results.size(), filters.size()));
  std::vector<AclDeletion> out;
  for (std::size_t i = 0; i < filters.size(); ++i) {
    auto& fr = r.filter_results[i];
    AclDeletion d{filters[i], fr.error_code, message_of(fr.error_code, fr.error_message), {}};
    for (auto& m : fr.matching_acls)
      d.deleted.push_back(
          {{static_cast<AclResourceType>(m.resource_type), m.resource_name, pattern_at(v, m.pattern_type), m.principal,
            m.host, static_cast<AclOperation>(m.operation), static_cast<AclPermissionType>(m.permission_type)},
           m.error_code,
           message_of(m.error_code, m.error_message)});
    std::sort(d.deleted.begin(), d.deleted.end(),
              [](auto& a, auto& b) { return binding_key(a.binding) < binding_key(b.binding); });
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<ElectionResult> Admin::elect_leaders(ElectionType type,
                                                 const std::optional<std::vector<TopicPartition>>& partitions) {
  Connection& c = client_.any_connection();
  const std::int16_t v = c.version_for<ElectLeadersRequest>();
  if (v < 1 && type != ElectionType::preferred)
    throw UnsupportedVersionError("ElectLeaders v0 (the broker's highest) elects preferred leaders only");
  ElectLeadersRequest req;
  req.election_type = code(type);
  req.timeout_ms = client_.config().request_timeout_ms;
  if (partitions) {
    auto& list = req.topic_partitions.emplace();
    std::set<TopicPartition> sorted(partitions->begin(), partitions->end());
    for (auto& tp : sorted) {
      if (list.empty() || list.back().topic != tp.topic) list.push_back({tp.topic, {}, {}});
      list.back().partitions.push_back(tp.partition);
    }
  }
  // The controller may wait up to timeout_ms for the elections: allow it that
  // on top of the request time-out.
  const Deadline deadline = client_.capped(deadline_after(
      std::chrono::milliseconds(static_cast<std::int64_t>(client_.config().request_timeout_ms) + req.timeout_ms)));
  auto r = c.receive<ElectLeadersResponse>(c.send(req, v), v, deadline).body;
  if (r.error_code) throw KafkaError(r.error_code, described("ElectLeaders", r.error_code, std::nullopt));
  std::vector<ElectionResult> out;
  for (auto& t : r.replica_election_results)
    for (auto& p : t.partition_result)
      out.push_back({{t.topic, p.partition_id}, p.error_code, message_of(p.error_code, p.error_message)});
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.partition < b.partition; });
  return out;
}

std::vector<LogDirDescription> Admin::describe_log_dirs(const std::optional<std::vector<std::string>>& topics) {
  DescribeLogDirsRequest req;
  ClusterMetadata md;
  if (topics) {
    md = client_.metadata(*topics);
    auto& list = req.topics.emplace();
    for (auto& name : std::set<std::string>(topics->begin(), topics->end())) {
      const TopicMetadata* t = md.topic(name);
      if (!t || t->error_code)
        throw KafkaError(t ? t->error_code : static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition),
                         fmt::format("DescribeLogDirs: topic '{}': {}", name,
                                     error_name(t ? t->error_code
                                                  : static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition))));
      DescribeLogDirsRequest::DescribableLogDirTopic dt;
      dt.topic = name;
      for (auto& p : t->partitions) dt.partitions.push_back(p.partition);
      list.push_back(std::move(dt));
    }
  } else {
    md = client_.metadata(std::vector<std::string>{});
  }
  std::vector<LogDirDescription> out;
  for (auto& b : md.brokers) {
    Connection& c = client_.broker(b.node_id);
    const std::int16_t v = c.version_for<DescribeLogDirsRequest>();
    auto r = c.receive<DescribeLogDirsResponse>(c.send(req, v), v, client_.default_deadline()).body;
    if (r.error_code)
      throw KafkaError(r.error_code,
                       fmt::format("DescribeLogDirs on broker {}: {}", b.node_id, error_name(r.error_code)));
    for (auto& d : r.results) {
      LogDirDescription ld;
      ld.broker = b.node_id;
      ld.path = d.log_dir;
      ld.error_code = d.error_code;
      ld.error_message = message_of(d.error_code, std::nullopt);
      ld.total_bytes = d.total_bytes;
      ld.usable_bytes = d.usable_bytes;
      ld.cordoned = d.is_cordoned;
      for (auto& t : d.topics)
        for (auto& p : t.partitions)
          ld.replicas[{t.name, p.partition_index}] = {p.partition_size, p.offset_lag, p.is_future_key};
      out.push_back(std::move(ld));
    }
  }
  std::sort(out.begin(), out.end(),
            [](auto& a, auto& b) { return std::tie(a.broker, a.path) < std::tie(b.broker, b.path); });
  return out;
}

}  // namespace kwire::client

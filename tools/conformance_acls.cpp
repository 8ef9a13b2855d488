// ACL, leader-election and log-directory rows of `kwire conformance`:
// CreateAcls, DescribeAcls and DeleteAcls, ElectLeaders and DescribeLogDirs,
// each checked by what the broker does. A binding created at each CreateAcls
// version is found by DescribeAcls; DescribeAcls at each version finds a
// binding with every field as created; DeleteAcls at each version removes a
// binding and returns it. The bindings are on topic resources named after the
// run, for a principal of its own, and all are deleted at the end (none on the
// cluster resource: with allow.everyone.if.no.acl.found one such binding
// would deny the broker's own cluster actions). A broker without an
// authorizer answers SECURITY_DISABLED: every version is then checked to say
// exactly that, and the rows note "authorizer off".
//
// ElectLeaders asks for a preferred election of the topic's partition, which
// its preferred replica already leads (one node): ELECTION_NOT_NEEDED.
// DescribeLogDirs lists a log directory holding the partition.
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

constexpr std::int16_t kSecurityDisabled = static_cast<std::int16_t>(ErrorCode::security_disabled);

template <class E>
std::int8_t code(E e) {
  return static_cast<std::int8_t>(e);
}

struct AclChecker {
  const GroupChecks& g;
  std::string principal;  // of every binding made here

  template <class Resp, class Req>
  Resp call(Connection& c, const Req& req, std::int16_t v, std::string& size_error) {
    return checked_exchange<Resp>(c, req, v, g.client->default_deadline(), size_error);
  }

  CreateAclsRequest::AclCreation binding(const std::string& topic) const {
    return {code(AclResourceType::topic),   topic, kLiteralPattern, principal, "*", code(AclOperation::read),
            code(AclPermissionType::allow), {}};
  }

  // Creates the binding of `topic` at version v.
  std::string create(const std::string& topic, std::int16_t v) {
    CreateAclsRequest req;
    req.creations.push_back(binding(topic));
    std::string err;
    auto r = call<CreateAclsResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.results.size() != 1) return fmt::format("{} results for 1 creation", r.results.size());
    if (r.results[0].error_code)
      return fmt::format("CreateAcls returned {}{}", error_name(r.results[0].error_code),
                         r.results[0].error_message ? ": " + *r.results[0].error_message : "");
    return {};
  }

  // The bindings of literal topic `topic` at version v; `code` the top-level error.
  std::string describe(const std::string& topic, std::int16_t v, DescribeAclsResponse& out) {
    DescribeAclsRequest req;
    req.resource_type_filter = code(AclResourceType::topic);
    req.resource_name_filter = topic;
    req.pattern_type_filter = kLiteralPattern;
    std::string err;
    out = call<DescribeAclsResponse>(g.client->any_connection(), req, v, err);
    return err;
  }

  // Waits (up to 5 s: the broker's authorizer learns of a change through the
  // metadata log) until `topic`'s binding is listed, or not.
  std::string await_listed(const std::string& topic, std::int16_t v, bool listed) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      DescribeAclsResponse r;
      auto err = describe(topic, v, r);
      if (!err.empty()) return err;
      if (r.error_code) return fmt::format("DescribeAcls returned {}", error_name(r.error_code));
      const bool found = !r.resources.empty();
      if (found == listed) return {};
      if (std::chrono::steady_clock::now() >= until)
        return fmt::format("the binding of {} is {} after 5 s", topic, listed ? "not listed" : "still listed");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  DeleteAclsRequest::DeleteAclsFilter exact(const std::string& topic) const {
    auto b = binding(topic);
    return {b.resource_type, b.resource_name, b.resource_pattern_type, b.principal,
            b.host,          b.operation,     b.permission_type,       {}};
  }

  // Removes every binding of `principal`.
  void clean_up(std::int16_t v) {
    DeleteAclsRequest req;
    DeleteAclsRequest::DeleteAclsFilter f;
    f.pattern_type_filter = v >= 1 ? code(AclPatternType::any) : kLiteralPattern;
    f.principal_filter = principal;
    req.filters.push_back(f);
    std::string err;
    try {
      call<DeleteAclsResponse>(g.client->any_connection(), req, v, err);
    } catch (const std::exception&) {
    }
  }
};

template <class M>
std::int16_t highest(const GroupChecks& g) {
  return g.client->any_connection().pick_version(static_cast<std::int16_t>(M::api_key), M::min_version, M::max_version);
}

// Every version answers SECURITY_DISABLED (no authorizer on the broker).
void run_without_authorizer(AclChecker& k, const RunApi& run_api) {
  const std::string note =
      "authorizer off: the broker has no authorizer (authorizer.class.name unset); every version sent answered "
      "SECURITY_DISABLED as expected, bindings not checked";
  auto expect = [](std::int16_t got) -> std::string {
    if (got == kSecurityDisabled) return {};
    return fmt::format("{} instead of SECURITY_DISABLED", error_name(got));
  };
  auto row = declared_row<CreateAclsRequest>();
  row.note = note;
  run_api(row, [&](std::int16_t v) -> std::string {
    CreateAclsRequest req;
    req.creations.push_back(k.binding(k.g.prefix + "-acl-off"));
    std::string err;
    auto r = k.call<CreateAclsResponse>(k.g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.results.size() != 1) return "wrong shape";
    return expect(r.results[0].error_code);
  });
  row = declared_row<DescribeAclsRequest>();
  row.note = note;
  run_api(row, [&](std::int16_t v) -> std::string {
    DescribeAclsResponse r;
    auto err = k.describe(k.g.prefix + "-acl-off", v, r);
    return err.empty() ? expect(r.error_code) : err;
  });
  row = declared_row<DeleteAclsRequest>();
  row.note = note;
  run_api(row, [&](std::int16_t v) -> std::string {
    DeleteAclsRequest req;
    req.filters.push_back(k.exact(k.g.prefix + "-acl-off"));
    std::string err;
    auto r = k.call<DeleteAclsResponse>(k.g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.filter_results.size() != 1) return "wrong shape";
    return expect(r.filter_results[0].error_code);
  });
}

void run_with_authorizer(AclChecker& k, const RunApi& run_api) {
  const GroupChecks& g = k.g;
  const std::int16_t describe_max = highest<DescribeAclsRequest>(g);
  const std::int16_t create_max = highest<CreateAclsRequest>(g);
  run_api(declared_row<CreateAclsRequest>(), [&](std::int16_t v) -> std::string {
    const std::string topic = fmt::format("{}-acl-create-v{}", g.prefix, v);
    auto res = k.create(topic, v);
    if (!res.empty()) return res;
    res = k.await_listed(topic, describe_max, true);
    return res.empty() ? res : "read back: " + res;
  });
  // One binding, created at the highest version, read at every version.
  const std::string described = g.prefix + "-acl-describe";
  std::string setup;
  try {
    setup = k.create(described, create_max);
    if (setup.empty()) setup = k.await_listed(described, describe_max, true);
  } catch (const std::exception& e) {
    setup = e.what();
  }
  run_api(declared_row<DescribeAclsRequest>(), [&](std::int16_t v) -> std::string {
    if (!setup.empty()) return "setup: " + setup;
    DescribeAclsResponse r;
    auto err = k.describe(described, v, r);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("DescribeAcls returned {}", error_name(r.error_code));
    if (r.resources.size() != 1 || r.resources[0].acls.size() != 1)
      return fmt::format("{} resources listed instead of 1 with 1 binding", r.resources.size());
    auto& res = r.resources[0];
    auto& a = res.acls[0];
    if (res.resource_type != code(AclResourceType::topic) || res.resource_name != described)
      return fmt::format("resource {} {} listed", acl_resource_type_name(res.resource_type), res.resource_name);
    if (res.pattern_type != kLiteralPattern)
      return fmt::format("pattern type {} instead of LITERAL", acl_pattern_type_name(res.pattern_type));
    if (a.principal != k.principal || a.host != "*" || a.operation != code(AclOperation::read) ||
        a.permission_type != code(AclPermissionType::allow))
      return fmt::format("binding ({}, {}, {}, {}) listed", a.principal, a.host, acl_operation_name(a.operation),
                         acl_permission_type_name(a.permission_type));
    return {};
  });
  run_api(declared_row<DeleteAclsRequest>(), [&](std::int16_t v) -> std::string {
    const std::string topic = fmt::format("{}-acl-delete-v{}", g.prefix, v);
    auto res = k.create(topic, create_max);
    if (res.empty()) res = k.await_listed(topic, describe_max, true);
    if (!res.empty()) return "setup: " + res;
    DeleteAclsRequest req;
    req.filters.push_back(k.exact(topic));
    std::string err;
    auto r = k.call<DeleteAclsResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.filter_results.size() != 1) return "wrong shape";
    auto& fr = r.filter_results[0];
    if (fr.error_code) return fmt::format("DeleteAcls returned {}", error_name(fr.error_code));
    if (fr.matching_acls.size() != 1) return fmt::format("{} bindings removed instead of 1", fr.matching_acls.size());
    auto& m = fr.matching_acls[0];
    if (m.error_code) return fmt::format("the removed binding has {}", error_name(m.error_code));
    if (m.resource_type != code(AclResourceType::topic) || m.resource_name != topic ||
        m.pattern_type != kLiteralPattern || m.principal != k.principal || m.host != "*" ||
        m.operation != code(AclOperation::read) || m.permission_type != code(AclPermissionType::allow))
      return fmt::format("removed binding ({} {} {}, {}, {}, {}, {}) is not the one created",
                         acl_resource_type_name(m.resource_type), m.resource_name,
                         acl_pattern_type_name(m.pattern_type), m.principal, m.host, acl_operation_name(m.operation),
                         acl_permission_type_name(m.permission_type));
    res = k.await_listed(topic, describe_max, false);
    return res.empty() ? res : "after the deletion: " + res;
  });
  k.clean_up(highest<DeleteAclsRequest>(g));
}

}  // namespace

void run_acl_conformance(const GroupChecks& g, const RunApi& run_api) {
  AclChecker k{g, "User:" + g.prefix};
  // Whether the broker has an authorizer: DescribeAcls at its highest version.
  std::int16_t probe = -1;
  try {
    DescribeAclsResponse r;
    if (k.describe(g.prefix + "-acl-probe", highest<DescribeAclsRequest>(g), r).empty()) probe = r.error_code;
  } catch (const std::exception&) {
  }
  if (probe == kSecurityDisabled) run_without_authorizer(k, run_api);
  else run_with_authorizer(k, run_api);

  run_api(declared_row<ElectLeadersRequest>(), [&](std::int16_t v) -> std::string {
    ElectLeadersRequest req;
    req.election_type = code(ElectionType::preferred);
    req.topic_partitions.emplace().push_back({g.topic, {0}, {}});
    req.timeout_ms = 10000;
    std::string err;
    auto r = k.call<ElectLeadersResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("ElectLeaders returned {}", error_name(r.error_code));
    if (r.replica_election_results.size() != 1 || r.replica_election_results[0].topic != g.topic ||
        r.replica_election_results[0].partition_result.size() != 1)
      return "wrong shape";
    auto& p = r.replica_election_results[0].partition_result[0];
    if (p.partition_id != 0) return fmt::format("partition {} answered instead of 0", p.partition_id);
    if (p.error_code != static_cast<std::int16_t>(ErrorCode::election_not_needed))
      return fmt::format("{} instead of ELECTION_NOT_NEEDED (the preferred replica leads)", error_name(p.error_code));
    return {};
  });
  run_api(declared_row<DescribeLogDirsRequest>(), [&](std::int16_t v) -> std::string {
    DescribeLogDirsRequest req;
    req.topics.emplace().push_back({g.topic, {0}, {}});
    std::string err;
    auto r = k.call<DescribeLogDirsResponse>(g.client->leader_for({g.topic, 0}), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("DescribeLogDirs returned {}", error_name(r.error_code));
    for (auto& d : r.results) {
      if (d.error_code) return fmt::format("log dir {} has {}", d.log_dir, error_name(d.error_code));
      if (d.log_dir.empty()) return "a log dir without a path";
      if (v >= 4 && (d.total_bytes <= 0 || d.usable_bytes < 0 || d.usable_bytes > d.total_bytes))
        return fmt::format("log dir {}: total {} usable {} bytes", d.log_dir, d.total_bytes, d.usable_bytes);
      if (d.is_cordoned) return fmt::format("log dir {} is cordoned", d.log_dir);
      for (auto& t : d.topics)
        for (auto& p : t.partitions) {
          if (t.name != g.topic || p.partition_index != 0)
            return fmt::format("{}-{} listed, not asked for", t.name, p.partition_index);
          if (p.partition_size < 0) return fmt::format("partition size {}", p.partition_size);
          if (p.is_future_key) return "the partition is listed as a future replica";
          return {};
        }
    }
    return fmt::format("no log dir lists {}-0 ({} dirs)", g.topic, r.results.size());
  });
}

}  // namespace kwire::tools

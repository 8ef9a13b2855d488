// The ACL APIs (DescribeAcls, CreateAcls, DeleteAcls), ElectLeaders and
// DescribeLogDirs: declared ranges, round trips at every version with every
// field filled, hand-checked bytes of what each version adds, and the names
// of the ACL and election codes.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/admin_types.hpp"
#include "kwire/protocol/messages.hpp"
#include "message_filler.hpp"
#include "message_round_trip.hpp"

using namespace kwire::protocol;
using namespace kwire::protocol::testing;

namespace {

template <class M>
M decoded(const Bytes& body, std::int16_t v) {
  Reader r{ByteSpan(body)};
  M m;
  decode(r, m, v);
  EXPECT_TRUE(r.ok()) << r.error() << " at " << r.error_offset();
  EXPECT_TRUE(r.empty()) << r.remaining() << " bytes left";
  return m;
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST(AclMessages, DeclaredVersionRanges) {
  // Kafka 4.4.0's specs, from the lowest version 3.9.1 accepts.
  EXPECT_EQ(static_cast<int>(DescribeAclsRequest::api_key), 29);
  EXPECT_EQ(static_cast<int>(CreateAclsRequest::api_key), 30);
  EXPECT_EQ(static_cast<int>(DeleteAclsRequest::api_key), 31);
  EXPECT_EQ(static_cast<int>(DescribeLogDirsRequest::api_key), 35);
  EXPECT_EQ(static_cast<int>(ElectLeadersRequest::api_key), 43);
  EXPECT_EQ(DescribeAclsRequest::max_version, 3);
  EXPECT_EQ(CreateAclsRequest::max_version, 3);
  EXPECT_EQ(DeleteAclsRequest::max_version, 3);
  EXPECT_EQ(DescribeAclsRequest::flexible_since, 2);
  EXPECT_EQ(CreateAclsResponse::flexible_since, 2);
  EXPECT_EQ(DeleteAclsResponse::flexible_since, 2);
  EXPECT_EQ(ElectLeadersRequest::max_version, 2);
  EXPECT_EQ(ElectLeadersRequest::flexible_since, 2);
  EXPECT_EQ(DescribeLogDirsRequest::max_version, 5);
  EXPECT_EQ(DescribeLogDirsRequest::flexible_since, 2);
  EXPECT_EQ(api_name(ApiKey::describe_log_dirs), "DescribeLogDirs");
  EXPECT_EQ(api_name(ApiKey::elect_leaders), "ElectLeaders");
}

TEST(AclMessages, RoundTripEveryVersion) {
  EXPECT_EQ((round_trip_all_versions<DescribeAclsRequest, DescribeAclsResponse>()), 4);
  EXPECT_EQ((round_trip_all_versions<CreateAclsRequest, CreateAclsResponse>()), 4);
  EXPECT_EQ((round_trip_all_versions<DeleteAclsRequest, DeleteAclsResponse>()), 4);
  EXPECT_EQ((round_trip_all_versions<ElectLeadersRequest, ElectLeadersResponse>()), 3);
  EXPECT_EQ((round_trip_all_versions<DescribeLogDirsRequest, DescribeLogDirsResponse>()), 6);
}

TEST(AclMessages, DescribeAclsV1AddsThePatternTypeAndV2IsCompact) {
  DescribeAclsRequest m;
  m.resource_type_filter = static_cast<std::int8_t>(AclResourceType::topic);
  m.resource_name_filter = "t";
  m.pattern_type_filter = static_cast<std::int8_t>(AclPatternType::prefixed);
  m.operation = static_cast<std::int8_t>(AclOperation::read);
  m.permission_type = static_cast<std::int8_t>(AclPermissionType::allow);
  // type, name "t", [pattern], principal null, host null, operation, permission
  EXPECT_EQ(encode(m, 0), bytes_of({2, 0, 1, 't', 0xff, 0xff, 0xff, 0xff, 3, 3}));
  EXPECT_EQ(encode(m, 1), bytes_of({2, 0, 1, 't', 4, 0xff, 0xff, 0xff, 0xff, 3, 3}));
  EXPECT_EQ(encode(m, 2), bytes_of({2, 2, 't', 4, 0, 0, 3, 3, 0}));
  EXPECT_EQ(encode(m, 3), encode(m, 2));
  // A v0 binding is literal.
  auto v0 = decoded<DescribeAclsRequest>(encode(m, 0), 0);
  EXPECT_EQ(v0.pattern_type_filter, static_cast<std::int8_t>(AclPatternType::literal));
}

TEST(AclMessages, CreateAclsCarriesOneBinding) {
  CreateAclsRequest m;
  m.creations.push_back({static_cast<std::int8_t>(AclResourceType::group),
                         "g",
                         kLiteralPattern,
                         "User:a",
                         "*",
                         static_cast<std::int8_t>(AclOperation::delete_),
                         static_cast<std::int8_t>(AclPermissionType::deny),
                         {}});
  const Bytes v1 = bytes_of({0, 0, 0, 1, 3, 0, 1, 'g', 3, 0, 6, 'U', 's', 'e', 'r', ':', 'a', 0, 1, '*', 6, 2});
  EXPECT_EQ(encode(m, 1), v1);
  EXPECT_EQ(encode(m, 2), bytes_of({2, 3, 2, 'g', 3, 7, 'U', 's', 'e', 'r', ':', 'a', 2, '*', 6, 2, 0, 0}));
  CreateAclsResponse r;
  r.results.push_back({54, std::string("No Authorizer is configured."), {}});  // SECURITY_DISABLED
  auto back = decoded<CreateAclsResponse>(encode(r, 3), 3);
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0].error_code, static_cast<std::int16_t>(ErrorCode::security_disabled));
}

TEST(AclMessages, DeleteAclsReturnsTheBindingsRemoved) {
  DeleteAclsResponse r;
  DeleteAclsResponse::DeleteAclsMatchingAcl a;
  a.resource_type = 2;
  a.resource_name = "t";
  a.pattern_type = 4;
  a.principal = "User:x";
  a.host = "*";
  a.operation = 3;
  a.permission_type = 3;
  r.filter_results.push_back({0, std::nullopt, {a}, {}});
  auto v1 = decoded<DeleteAclsResponse>(encode(r, 1), 1);
  EXPECT_EQ(v1, r);
  // v0 has no pattern type: the binding reads back literal, one byte shorter.
  EXPECT_EQ(encode(r, 0).size() + 1, encode(r, 1).size());
  auto v0 = decoded<DeleteAclsResponse>(encode(r, 0), 0);
  EXPECT_EQ(v0.filter_results.at(0).matching_acls.at(0).pattern_type, kLiteralPattern);
}

TEST(AclMessages, ElectLeadersV1AddsTheTypeAndANullListMeansEveryPartition) {
  ElectLeadersRequest m;
  m.election_type = static_cast<std::int8_t>(ElectionType::unclean);
  m.timeout_ms = 1000;
  EXPECT_EQ(encode(m, 0), bytes_of({0xff, 0xff, 0xff, 0xff, 0, 0, 0x03, 0xe8}));
  EXPECT_EQ(encode(m, 1), bytes_of({1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x03, 0xe8}));
  EXPECT_EQ(encode(m, 2), bytes_of({1, 0, 0, 0, 0x03, 0xe8, 0}));
  m.topic_partitions.emplace().push_back({"t", {0, 2}, {}});
  EXPECT_EQ(encode(m, 2), bytes_of({1, 2, 2, 't', 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0x03, 0xe8, 0}));

  ElectLeadersResponse r;
  r.error_code = 0;
  r.replica_election_results.push_back({"t", {{0, 84, std::nullopt, {}}}, {}});  // ELECTION_NOT_NEEDED
  const Bytes body = bytes_of({0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 0, 0, 84, 0xff, 0xff});
  EXPECT_EQ(encode(r, 0), body);  // no top-level error before v1
  EXPECT_EQ(encode(r, 1), cat(bytes_of({0, 0, 0, 0, 0, 0}), Bytes(body.begin() + 4, body.end())));
}

TEST(AclMessages, DescribeLogDirsV4AddsTheSpaceAndV5TheCordon) {
  DescribeLogDirsResponse r;
  DescribeLogDirsResponse::DescribeLogDirsResult d;
  d.log_dir = "/d";
  d.topics.push_back({"t", {{0, 77, 0, false, {}}}, {}});
  d.total_bytes = 1000;
  d.usable_bytes = 500;
  d.is_cordoned = true;
  r.results.push_back(d);
  auto v3 = decoded<DescribeLogDirsResponse>(encode(r, 3), 3);
  EXPECT_EQ(v3.results.at(0).total_bytes, -1);
  EXPECT_EQ(v3.results[0].topics.at(0).partitions.at(0).partition_size, 77);
  auto v4 = decoded<DescribeLogDirsResponse>(encode(r, 4), 4);
  EXPECT_EQ(v4.results.at(0).total_bytes, 1000);
  EXPECT_EQ(v4.results[0].usable_bytes, 500);
  EXPECT_FALSE(v4.results[0].is_cordoned);
  EXPECT_EQ(encode(r, 4).size() + 1, encode(r, 5).size());
  EXPECT_TRUE(decoded<DescribeLogDirsResponse>(encode(r, 5), 5).results.at(0).is_cordoned);
  // v3 adds a top-level error code after the throttle time.
  EXPECT_EQ(encode(r, 2).size() + 2, encode(r, 3).size());

  DescribeLogDirsRequest all;
  EXPECT_EQ(encode(all, 1), bytes_of({0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(encode(all, 2), bytes_of({0, 0}));
}

TEST(AclMessages, CodeNamesAreKafkas) {
  EXPECT_EQ(acl_operation_name(static_cast<std::int8_t>(AclOperation::describe_configs)), "DESCRIBE_CONFIGS");
  EXPECT_EQ(acl_operation_name(99), "UNKNOWN");
  EXPECT_EQ(acl_resource_type_name(5), "TRANSACTIONAL_ID");
  EXPECT_EQ(acl_pattern_type_name(4), "PREFIXED");
  EXPECT_EQ(acl_permission_type_name(2), "DENY");
  EXPECT_EQ(election_type_name(1), "UNCLEAN");
  EXPECT_EQ(parse_acl_operation("Read"), AclOperation::read);
  EXPECT_EQ(parse_acl_operation("IdempotentWrite"), AclOperation::idempotent_write);
  EXPECT_EQ(parse_acl_operation("describe-configs"), AclOperation::describe_configs);
  EXPECT_EQ(parse_acl_operation("Delete"), AclOperation::delete_);
  EXPECT_EQ(parse_acl_operation("unknown"), std::nullopt);
  EXPECT_EQ(parse_acl_operation(""), std::nullopt);
  EXPECT_EQ(parse_acl_operation("reed"), std::nullopt);
  EXPECT_EQ(parse_acl_resource_type("transactional-id"), AclResourceType::transactional_id);
  EXPECT_EQ(parse_acl_pattern_type("prefixed"), AclPatternType::prefixed);
  EXPECT_EQ(parse_acl_permission_type("ALLOW"), AclPermissionType::allow);
  EXPECT_EQ(parse_election_type("preferred"), ElectionType::preferred);
  EXPECT_EQ(parse_election_type("UNCLEAN"), ElectionType::unclean);
  EXPECT_EQ(parse_election_type("dirty"), std::nullopt);
}

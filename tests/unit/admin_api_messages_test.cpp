// Kafka 4.4's new versions of old APIs (ApiVersions v5, OffsetCommit and
// OffsetFetch v10) and the cluster/config admin APIs (DescribeCluster,
// DescribeConfigs, IncrementalAlterConfigs, ListConfigResources,
// DeleteGroups): declared ranges, round trips at every version with every
// field filled, and hand-checked bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

Uuid uuid_from(std::uint8_t first) {
  Uuid u;
  for (std::size_t i = 0; i < u.bytes.size(); ++i) u.bytes[i] = static_cast<std::uint8_t>(first + i);
  return u;
}

}  // namespace

TEST(AdminApiMessages, DeclaredVersionRanges) {
  // Kafka 4.4.0's kafka-clients specs, from the lowest version 3.9.1 accepts.
  EXPECT_EQ(ApiVersionsRequest::max_version, 5);
  EXPECT_EQ(OffsetCommitRequest::max_version, 10);
  EXPECT_EQ(OffsetCommitRequest::default_max_version, 9);
  EXPECT_EQ(OffsetFetchRequest::max_version, 10);
  EXPECT_EQ(OffsetFetchRequest::default_max_version, 9);
  EXPECT_EQ(static_cast<int>(DescribeClusterRequest::api_key), 60);
  EXPECT_EQ(DescribeClusterRequest::max_version, 2);
  EXPECT_EQ(DescribeClusterRequest::flexible_since, 0);
  EXPECT_EQ(static_cast<int>(DescribeConfigsRequest::api_key), 32);
  EXPECT_EQ(DescribeConfigsRequest::min_version, 0);
  EXPECT_EQ(DescribeConfigsRequest::max_version, 4);
  EXPECT_EQ(DescribeConfigsRequest::flexible_since, 4);
  EXPECT_EQ(static_cast<int>(IncrementalAlterConfigsRequest::api_key), 44);
  EXPECT_EQ(IncrementalAlterConfigsRequest::max_version, 1);
  EXPECT_EQ(IncrementalAlterConfigsRequest::flexible_since, 1);
  EXPECT_EQ(static_cast<int>(ListConfigResourcesRequest::api_key), 74);
  EXPECT_EQ(ListConfigResourcesRequest::max_version, 1);
  EXPECT_EQ(static_cast<int>(DeleteGroupsRequest::api_key), 42);
  EXPECT_EQ(DeleteGroupsRequest::max_version, 3);
  EXPECT_EQ(DeleteGroupsRequest::flexible_since, 2);
  EXPECT_EQ(api_name(ApiKey::list_config_resources), "ListConfigResources");
}

TEST(AdminApiMessages, RoundTripEveryVersion) {
  EXPECT_EQ((round_trip_all_versions<ApiVersionsRequest, ApiVersionsResponse>()), 6);
  EXPECT_EQ((round_trip_all_versions<OffsetCommitRequest, OffsetCommitResponse>()), 11);
  EXPECT_EQ((round_trip_all_versions<OffsetFetchRequest, OffsetFetchResponse>()), 11);
  EXPECT_EQ((round_trip_all_versions<DescribeClusterRequest, DescribeClusterResponse>()), 3);
  EXPECT_EQ((round_trip_all_versions<DescribeConfigsRequest, DescribeConfigsResponse>()), 5);
  EXPECT_EQ((round_trip_all_versions<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>()), 2);
  EXPECT_EQ((round_trip_all_versions<ListConfigResourcesRequest, ListConfigResourcesResponse>()), 2);
  EXPECT_EQ((round_trip_all_versions<DeleteGroupsRequest, DeleteGroupsResponse>()), 4);
}

TEST(AdminApiMessages, ApiVersionsV5NamesTheNodeToReach) {
  ApiVersionsRequest m;
  m.client_software_name = "k";
  m.client_software_version = "1";
  m.cluster_id = "c";
  m.node_id = 3;
  EXPECT_EQ(encode(m, 4), bytes_of({2, 'k', 2, '1', 0}));  // v4: no cluster or node
  EXPECT_EQ(encode(m, 5), bytes_of({2, 'k', 2, '1', 2, 'c', 0, 0, 0, 3, 0}));
  ApiVersionsRequest unchecked;  // null cluster id, node -1: the broker checks nothing
  EXPECT_EQ(encode(unchecked, 5), bytes_of({1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0}));
}

TEST(AdminApiMessages, OffsetCommitAndFetchV10NameTopicsById) {
  OffsetCommitRequest m;
  m.group_id = "g";
  m.generation_id_or_member_epoch = 2;
  m.member_id = "m";
  m.topics.push_back({"orders", {{0, 42, 5, -1, std::nullopt, {}}}, {}, uuid_from(1)});
  Bytes v10 = encode(m, 10);
  Bytes expected = bytes_of({2, 'g', 0, 0, 0, 2, 2, 'm', 0 /* instance id null */, 2 /* one topic */});
  for (int i = 1; i <= 16; ++i) expected.push_back(static_cast<std::uint8_t>(i));  // topic id, no name
  for (int b : {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 5, 0, 0, 0, 0}) expected.push_back(b);
  EXPECT_EQ(v10, expected);
  // v9 carries the name and no id.
  Bytes v9 = encode(m, 9);
  EXPECT_NE(std::search(v9.begin(), v9.end(), std::begin("orders"), std::end("orders") - 1), v9.end());
  EXPECT_EQ(v9.size() + 16, v10.size() + 7);

  OffsetFetchResponse resp;
  resp.groups.push_back({"g", {{"", {{0, 42, 5, std::string(""), 0, {}}}, {}, uuid_from(1)}}, 0, {}});
  OffsetFetchResponse back = decoded<OffsetFetchResponse>(encode(resp, 10), 10);
  ASSERT_EQ(back.groups.at(0).topics.size(), 1u);
  EXPECT_EQ(back.groups[0].topics[0].topic_id, uuid_from(1));
  EXPECT_EQ(back.groups[0].topics[0].partitions.at(0).committed_offset, 42);
}

TEST(AdminApiMessages, DescribeConfigsV0HasIsDefaultWhereV1HasTheSource) {
  DescribeConfigsResponse::DescribeConfigsResourceResult c;
  c.name = "a";
  c.value = "b";
  c.read_only = false;
  c.is_default = true;
  c.config_source = 5;
  c.is_sensitive = false;
  DescribeConfigsResponse r;
  r.results.push_back({0, std::nullopt, 2, "t", {c}, {}});
  const Bytes head =
      bytes_of({0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 2, 0, 1, 't', 0, 0, 0, 1, 0, 1, 'a', 0, 1, 'b', 0});
  Bytes v0 = head;
  for (int b : {1, 0}) v0.push_back(b);  // is_default, is_sensitive
  EXPECT_EQ(encode(r, 0), v0);
  Bytes v1 = head;
  for (int b : {5, 0, 0, 0, 0, 0}) v1.push_back(b);  // source, is_sensitive, no synonyms
  EXPECT_EQ(encode(r, 1), v1);
}

TEST(AdminApiMessages, ListConfigResourcesV0ListsClientMetricsOnly) {
  ListConfigResourcesRequest req;
  req.resource_types = {2, 4};
  EXPECT_EQ(encode(req, 0), bytes_of({0}));  // v0: no filter at all
  EXPECT_EQ(encode(req, 1), bytes_of({3, 2, 4, 0}));
  auto v0 = decoded<ListConfigResourcesResponse>(bytes_of({0, 0, 0, 0, 0, 0, 2, 2, 'm', 0, 0}), 0);
  ASSERT_EQ(v0.config_resources.size(), 1u);
  EXPECT_EQ(v0.config_resources[0].resource_name, "m");
  EXPECT_EQ(v0.config_resources[0].resource_type, static_cast<std::int8_t>(ConfigResourceType::client_metrics));
}

TEST(AdminApiMessages, DeleteGroupsV3AddsAnErrorMessage) {
  DeleteGroupsResponse r;
  r.results.push_back({"g", 68, std::string("has members"), {}});  // NON_EMPTY_GROUP
  auto v2 = decoded<DeleteGroupsResponse>(encode(r, 2), 2);
  EXPECT_EQ(v2.results.at(0).error_code, 68);
  EXPECT_FALSE(v2.results[0].error_message.has_value());
  auto v3 = decoded<DeleteGroupsResponse>(encode(r, 3), 3);
  EXPECT_EQ(v3.results.at(0).error_message, std::optional<std::string>("has members"));
}

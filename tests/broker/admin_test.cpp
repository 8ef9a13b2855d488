// The admin commands against the real broker (kwire cluster, kwire configs,
// kwire groups delete), checked against Kafka's own tools, and the rows
// `kwire conformance` gained for them and for Kafka 4.4's new versions
// (ApiVersions v5, OffsetCommit/OffsetFetch v10), which skip on older brokers.
#include <set>

#include "common.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/api_keys.hpp"

using namespace kwire_test;

namespace {

struct ConfRow {
  std::set<int> exercised;
  std::string result;
  std::string failures;
};

std::map<std::string, ConfRow> conformance_rows(const std::string& servers) {
  auto r = run_kwire({"conformance", "-b", servers, "--json"}, {}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\nstdout:\n" << r.out;
  std::map<std::string, ConfRow> rows;
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(r.out);
  auto doc = parser.iterate(json);
  for (auto item : doc.get_array()) {
    ConfRow row;
    std::string api(std::string_view(item["api"].get_string()));
    for (auto v : item["exercised"].get_array()) row.exercised.insert(static_cast<int>(int64_t(v.get_int64())));
    row.result = std::string(std::string_view(item["result"].get_string()));
    for (auto f : item["failures"].get_array()) row.failures += std::string(std::string_view(f.get_string())) + "\n";
    rows[api] = row;
  }
  return rows;
}

// The highest version of API `key` the broker under test offers (-1: none).
int offered_max(kwire::protocol::ApiKey key) {
  kwire::client::KafkaClient client({{"bootstrap.servers", bootstrap()}});
  auto& versions = client.any_connection().broker_versions();
  auto it = versions.find(static_cast<std::int16_t>(key));
  return it == versions.end() ? -1 : it->second.max;
}

}  // namespace

class Admin : public BrokerTest {};

TEST_F(Admin, ConformanceCoversTheAdminApisAndKafka44Versions) {
  auto rows = conformance_rows(bootstrap());
  for (const char* api :
       {"DescribeCluster", "DescribeConfigs", "IncrementalAlterConfigs", "ListConfigResources", "DeleteGroups"}) {
    ASSERT_TRUE(rows.count(api)) << api;
    EXPECT_EQ(rows[api].result, "ok") << api << "\n" << rows[api].failures;
    EXPECT_FALSE(rows[api].exercised.empty()) << api;
  }
  EXPECT_TRUE(rows["DescribeConfigs"].exercised.count(4));
  EXPECT_TRUE(rows["IncrementalAlterConfigs"].exercised.count(1));
  // Kafka 4.4 offers ApiVersions v5 and OffsetCommit/OffsetFetch v10; an
  // older broker does not, and then the rows simply stop lower.
  if (offered_max(kwire::protocol::ApiKey::api_versions) >= 5) {
    EXPECT_TRUE(rows["ApiVersions"].exercised.count(5));
  }
  if (offered_max(kwire::protocol::ApiKey::offset_commit) >= 10) {
    EXPECT_TRUE(rows["OffsetCommit"].exercised.count(10));
  }
  if (offered_max(kwire::protocol::ApiKey::offset_fetch) >= 10) {
    EXPECT_TRUE(rows["OffsetFetch"].exercised.count(10));
  }
}

TEST_F(Admin, ClusterDescribesTheBroker) {
  auto r = run_kwire({"cluster", "-b", bootstrap(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(r.out);
  auto doc = parser.iterate(json);
  std::string cluster_id(std::string_view(doc["clusterId"].get_string()));
  int brokers = 0;
  int port = -1;
  for (auto b : doc["brokers"].get_array()) {
    ++brokers;
    port = static_cast<int>(int64_t(b["port"].get_int64()));
  }
  EXPECT_EQ(brokers, 1);
  EXPECT_EQ(port, split_host_port(bootstrap()).second);
  // The same id Metadata reports.
  kwire::client::KafkaClient client({{"bootstrap.servers", bootstrap()}});
  auto md = client.metadata(std::vector<std::string>{});
  EXPECT_EQ(std::optional<std::string>(cluster_id), md.cluster_id);
}

TEST_F(Admin, ConfigsAlterDescribeAndDeleteATopicConfig) {
  auto topic = unique_topic("admin-configs");
  create_topic(topic, 1);
  auto set = run_kwire({"configs", "-b", bootstrap(), "--alter", "--entity-type", "topics", "--entity-name", topic,
                        "--add-config", "retention.ms=123456789,cleanup.policy=[compact,delete]"});
  ASSERT_EQ(set.exit_code, 0) << set.describe();
  EXPECT_NE(set.out.find("Completed updating the config of topics '" + topic + "'"), std::string::npos) << set.out;
  auto d = run_kwire({"configs", "-b", bootstrap(), "--describe", "--entity-type", "topics", "--entity-name", topic});
  ASSERT_EQ(d.exit_code, 0) << d.describe();
  EXPECT_NE(d.out.find("retention.ms=123456789 sensitive=false source=DYNAMIC_TOPIC_CONFIG"), std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("cleanup.policy=compact,delete"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("segment.bytes="), std::string::npos) << "defaults are listed only with --all\n" << d.out;
  // Kafka's own tool sees the same.
  auto java = run_kafka_tool(
      {"configs", "--bootstrap-server", bootstrap(), "--describe", "--entity-type", "topics", "--entity-name", topic});
  ASSERT_EQ(java.exit_code, 0) << java.describe();
  EXPECT_NE(java.out.find("retention.ms=123456789"), std::string::npos) << java.out;
  // Delete one key: back to the default.
  auto del = run_kwire({"configs", "-b", bootstrap(), "--alter", "--entity-type", "topics", "--entity-name", topic,
                        "--delete-config", "retention.ms"});
  ASSERT_EQ(del.exit_code, 0) << del.describe();
  auto after = run_kwire({"configs", "-b", bootstrap(), "--describe", "--entity-type", "topics", "--entity-name", topic,
                          "--key", "retention.ms", "--json"});
  ASSERT_EQ(after.exit_code, 0) << after.describe();
  EXPECT_NE(after.out.find("\"source\":\"DEFAULT_CONFIG\""), std::string::npos) << after.out;
  // A bad value is refused with the broker's error, not applied.
  auto bad = run_kwire({"configs", "-b", bootstrap(), "--alter", "--entity-type", "topics", "--entity-name", topic,
                        "--add-config", "retention.ms=soon"});
  EXPECT_EQ(bad.exit_code, 1) << bad.describe();
  EXPECT_NE(bad.err.find("INVALID_CONFIG"), std::string::npos) << bad.err;
}

TEST_F(Admin, ConfigsListTopicsWhereTheBrokerCanFilter) {
  if (offered_max(kwire::protocol::ApiKey::list_config_resources) < 1)
    GTEST_SKIP() << "ListConfigResources v1 needs Kafka 4.1+";
  auto topic = unique_topic("admin-list");
  create_topic(topic, 1);
  auto r = run_kwire({"configs", "-b", bootstrap(), "--list", "--entity-type", "topics"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("topic " + topic + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("group "), std::string::npos) << r.out;
}

TEST_F(Admin, GroupsDeleteRemovesAnEmptyGroupAndRefusesAMissingOne) {
  auto topic = unique_topic("admin-del");
  create_topic(topic, 1);
  produce_numbered(bootstrap(), topic, 0, 3);
  const std::string group = topic + "-g";
  auto reset = run_kwire({"groups", "reset-offsets", "-b", bootstrap(), group, "--topic", topic, "--to-latest"});
  ASSERT_EQ(reset.exit_code, 0) << reset.describe();
  auto del = run_kwire({"groups", "delete", "-b", bootstrap(), group});
  ASSERT_EQ(del.exit_code, 0) << del.describe();
  EXPECT_EQ(del.out, "Deletion of group '" + group + "' was successful.\n");
  auto list = run_kwire({"groups", "list", "-b", bootstrap()});
  EXPECT_EQ(list.out.find(group), std::string::npos) << list.out;
  auto again = run_kwire({"groups", "delete", "-b", bootstrap(), group, "--json"});
  EXPECT_EQ(again.exit_code, 1) << again.describe();
  EXPECT_NE(again.out.find("\"error\":\"GROUP_ID_NOT_FOUND\""), std::string::npos) << again.out;
}

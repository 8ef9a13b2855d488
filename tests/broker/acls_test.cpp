// ACLs, leader election and log directories against the real broker, which
// scripts/test starts with Kafka's StandardAuthorizer and
// allow.everyone.if.no.acl.found=true: bindings created, listed and deleted
// through the Admin client and the kwire acls command (and seen by Kafka's
// own kafka-acls), a DENY READ binding for the PLAINTEXT listener's principal
// (User:ANONYMOUS) stopping a kwire consumer with TOPIC_AUTHORIZATION_FAILED
// until it is removed, ElectLeaders' per-partition answers and
// DescribeLogDirs' replicas. Every binding is on a topic or group named for
// the test (never the cluster resource, which would deny the broker's own
// cluster actions to everyone else) and is deleted at the end.
#include <set>

#include "common.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"

using namespace kwire_test;
using namespace kwire::client;
using kwire::protocol::ErrorCode;

namespace {

std::int16_t code_of(ErrorCode c) { return static_cast<std::int16_t>(c); }

// The bindings matching `filter`, once `want` of them are listed (the
// broker's authorizer learns of changes through the metadata log), or what
// is listed after 10 s.
std::vector<AclBinding> await_acls(Admin& admin, const AclBindingFilter& filter, std::size_t want) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto found = admin.describe_acls(filter);
    if (found.size() == want || std::chrono::steady_clock::now() >= until) return found;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

AclBindingFilter by_principal(const std::string& principal) {
  AclBindingFilter f;
  f.principal = principal;
  return f;
}

}  // namespace

class Acls : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    if (HasFatalFailure()) return;
    KafkaClient client({{"bootstrap.servers", bootstrap()}});
    try {
      Admin(client).describe_acls(by_principal("User:kwire-acl-probe"));
    } catch (const KafkaError& e) {
      FAIL() << "the broker at " << bootstrap() << " has no authorizer (" << e.what()
             << "): scripts/test starts it with --set "
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";
    }
  }
};

TEST_F(Acls, CreateDescribeAndDeleteThroughTheAdminClient) {
  const std::string topic = unique_topic("acl-admin");
  const std::string principal = "User:" + topic;
  KafkaClient client({{"bootstrap.servers", bootstrap()}});
  Admin admin(client);
  const AclBinding read{AclResourceType::topic,  topic, AclPatternType::literal, principal, "*", AclOperation::read,
                        AclPermissionType::allow};
  const AclBinding describe_group{
      AclResourceType::group, topic + "-g",           AclPatternType::prefixed, principal, "10.1.2.3",
      AclOperation::describe, AclPermissionType::deny};
  auto created = admin.create_acls({read, describe_group});
  ASSERT_EQ(created.size(), 2u);
  for (auto& c : created) EXPECT_EQ(c.error_code, 0) << c.error_message;

  auto listed = await_acls(admin, by_principal(principal), 2);
  ASSERT_EQ(listed.size(), 2u);
  // Sorted by resource type: TOPIC (2) before GROUP (3).
  EXPECT_EQ(listed[0], read);
  EXPECT_EQ(listed[1], describe_group);
  // A MATCH filter on a group name under the prefix finds the prefixed binding.
  AclBindingFilter match;
  match.resource_type = AclResourceType::group;
  match.resource_name = topic + "-g-child";
  match.pattern_type = AclPatternType::match;
  auto matched = admin.describe_acls(match);
  ASSERT_EQ(matched.size(), 1u);
  EXPECT_EQ(matched[0], describe_group);

  // Deleting the topic's binding returns it, and only it.
  AclBindingFilter only_topic = by_principal(principal);
  only_topic.resource_type = AclResourceType::topic;
  auto deleted = admin.delete_acls({only_topic});
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_EQ(deleted[0].error_code, 0) << deleted[0].error_message;
  ASSERT_EQ(deleted[0].deleted.size(), 1u);
  EXPECT_EQ(deleted[0].deleted[0].binding, read);
  EXPECT_EQ(deleted[0].deleted[0].error_code, 0);
  listed = await_acls(admin, by_principal(principal), 1);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0], describe_group);

  deleted = admin.delete_acls({by_principal(principal)});
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_EQ(deleted[0].deleted.size(), 1u);
  EXPECT_TRUE(await_acls(admin, by_principal(principal), 0).empty());
}

TEST_F(Acls, BadBindingsAreRefusedBeforeAnythingIsSent) {
  KafkaClient client({{"bootstrap.servers", bootstrap()}});
  Admin admin(client);
  AclBinding b{AclResourceType::topic,  "t", AclPatternType::literal, "User:x", "*", AclOperation::any,
               AclPermissionType::allow};
  EXPECT_THROW(admin.create_acls({b}), ConfigError);
  b.operation = AclOperation::read;
  b.pattern_type = AclPatternType::match;
  EXPECT_THROW(admin.create_acls({b}), ConfigError);
  b.pattern_type = AclPatternType::literal;
  b.principal.clear();
  try {
    admin.create_acls({b});
    FAIL() << "an empty principal was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("principal"), std::string::npos) << e.what();
  }
}

TEST_F(Acls, DenyReadStopsAConsumerUntilTheBindingIsRemoved) {
  const std::string topic = unique_topic("acl-deny");
  create_topic(topic, 1);
  produce_numbered(bootstrap(), topic, 0, 5);
  KafkaClient client({{"bootstrap.servers", bootstrap()}});
  Admin admin(client);
  const AclBinding deny{AclResourceType::topic, topic, AclPatternType::literal,
                        "User:ANONYMOUS",       "*",   AclOperation::read,
                        AclPermissionType::deny};
  auto created = admin.create_acls({deny});
  ASSERT_EQ(created.at(0).error_code, 0) << created[0].error_message;
  AclBindingFilter on_topic;
  on_topic.resource_type = AclResourceType::topic;
  on_topic.resource_name = topic;
  ASSERT_EQ(await_acls(admin, on_topic, 1).size(), 1u);

  // The PLAINTEXT listener's principal is User:ANONYMOUS: reading is denied.
  std::int16_t denied = 0;
  std::string what;
  {
    Consumer consumer({{"bootstrap.servers", bootstrap()}, {"auto.offset.reset", "earliest"}});
    consumer.assign({{topic, 0}});
    consumer.seek({topic, 0}, 0);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (denied == 0 && std::chrono::steady_clock::now() < until) {
      try {
        auto recs = consumer.poll(std::chrono::milliseconds(500));
        ASSERT_TRUE(recs.empty()) << recs.size() << " records read through a DENY READ binding";
      } catch (const KafkaError& e) {
        denied = e.code();
        what = e.what();
      }
    }
  }
  EXPECT_EQ(denied, code_of(ErrorCode::topic_authorization_failed)) << what;
  EXPECT_NE(what.find("TOPIC_AUTHORIZATION_FAILED"), std::string::npos) << what;

  auto deleted = admin.delete_acls({on_topic});
  ASSERT_EQ(deleted.at(0).deleted.size(), 1u);
  EXPECT_EQ(deleted[0].deleted[0].binding, deny);
  ASSERT_TRUE(await_acls(admin, on_topic, 0).empty());

  // Without the binding (and no other on the topic) everyone may read again.
  std::set<std::int64_t> offsets;
  std::string last_error;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (offsets.size() < 5 && std::chrono::steady_clock::now() < until) {
    try {
      Consumer consumer({{"bootstrap.servers", bootstrap()}, {"auto.offset.reset", "earliest"}});
      consumer.assign({{topic, 0}});
      consumer.seek({topic, 0}, 0);
      for (int i = 0; i < 10 && offsets.size() < 5; ++i)
        for (auto& r : consumer.poll(std::chrono::milliseconds(500))) offsets.insert(r.offset);
    } catch (const KafkaError& e) {
      last_error = e.what();  // the broker has not applied the deletion yet
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  EXPECT_EQ(offsets, (std::set<std::int64_t>{0, 1, 2, 3, 4})) << last_error;
}

TEST_F(Acls, ElectLeadersAnswersPerPartition) {
  const std::string topic = unique_topic("acl-elect");
  create_topic(topic, 2);
  KafkaClient client({{"bootstrap.servers", bootstrap()}});
  Admin admin(client);
  // One node: the preferred replica leads already.
  auto results = admin.elect_leaders(ElectionType::preferred, std::vector<TopicPartition>{{topic, 1}, {topic, 0}});
  ASSERT_EQ(results.size(), 2u);
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(results[p].partition, (TopicPartition{topic, p}));
    EXPECT_EQ(results[p].error_code, code_of(ErrorCode::election_not_needed)) << results[p].error_message;
  }
  // A partition that does not exist is answered on its own.
  results = admin.elect_leaders(ElectionType::preferred, std::vector<TopicPartition>{{topic + "-none", 0}});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error_code, code_of(ErrorCode::unknown_topic_or_partition));
  // Unclean election where the leader is alive: nothing to do either.
  results = admin.elect_leaders(ElectionType::unclean, std::vector<TopicPartition>{{topic, 0}});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error_code, code_of(ErrorCode::election_not_needed));

  auto cli = run_kwire(
      {"leader-election", "-b", bootstrap(), "--election-type", "PREFERRED", "--topic", topic, "--partition", "1"});
  EXPECT_EQ(cli.exit_code, 0) << cli.describe();
  EXPECT_EQ(cli.out, "Valid replica already elected for partitions " + topic + "-1\n");
  auto bad = run_kwire(
      {"leader-election", "-b", bootstrap(), "--election-type", "SOMETIMES", "--topic", topic, "--partition", "1"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown --election-type 'SOMETIMES'"), std::string::npos) << bad.err;
}

TEST_F(Acls, DescribeLogDirsListsTheTopicsReplicas) {
  const std::string topic = unique_topic("acl-logdirs");
  create_topic(topic, 3);
  produce_numbered(bootstrap(), topic, 0, 30);
  KafkaClient client({{"bootstrap.servers", bootstrap()}});
  auto dirs = Admin(client).describe_log_dirs(std::vector<std::string>{topic});
  ASSERT_FALSE(dirs.empty());
  std::set<TopicPartition> seen;
  std::int64_t bytes = 0;
  for (auto& d : dirs) {
    EXPECT_EQ(d.error_code, 0) << d.path << ": " << d.error_message;
    EXPECT_FALSE(d.path.empty());
    for (auto& [tp, info] : d.replicas) {
      EXPECT_EQ(tp.topic, topic) << "a replica of a topic not asked for";
      EXPECT_GE(info.size_bytes, 0);
      EXPECT_FALSE(info.is_future);
      seen.insert(tp);
      bytes += info.size_bytes;
    }
  }
  EXPECT_EQ(seen, (std::set<TopicPartition>{{topic, 0}, {topic, 1}, {topic, 2}}));
  EXPECT_GT(bytes, 0) << "30 records were written";

  EXPECT_THROW(Admin(client).describe_log_dirs(std::vector<std::string>{topic + "-none"}), KafkaError);

  // kwire log-dirs prints kafka-log-dirs' JSON after its two lines.
  auto cli = run_kwire({"log-dirs", "-b", bootstrap(), "--describe", "--topic-list", topic});
  ASSERT_EQ(cli.exit_code, 0) << cli.describe();
  auto lines = split_lines(cli.out);
  ASSERT_EQ(lines.size(), 3u) << cli.out;
  EXPECT_EQ(lines[0], "Querying brokers for log directories information");
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(lines[2]);
  auto doc = parser.iterate(json);
  std::set<std::string> partitions;
  for (auto b : doc["brokers"].get_array())
    for (auto d : b["logDirs"].get_array())
      for (auto p : d["partitions"].get_array()) {
        partitions.insert(std::string(std::string_view(p["partition"].get_string())));
        EXPECT_GE(int64_t(p["size"].get_int64()), 0);
      }
  EXPECT_EQ(partitions, (std::set<std::string>{topic + "-0", topic + "-1", topic + "-2"}));
}

TEST_F(Acls, CommandAddsListsAndRemovesAsKafkaAclsSeesThem) {
  const std::string topic = unique_topic("acl-cli");
  const std::string principal = "User:" + topic;
  auto add = run_kwire({"acls", "-b", bootstrap(), "--add", "--allow-principal", principal, "--operation", "Read",
                        "--operation", "Describe", "--topic", topic, "--group", topic});
  ASSERT_EQ(add.exit_code, 0) << add.describe();
  EXPECT_NE(add.out.find("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=" + topic +
                         ", patternType=LITERAL)`:\n\t(principal=" + principal +
                         ", host=*, operation=READ, permissionType=ALLOW)\n"),
            std::string::npos)
      << add.out;
  auto deny = run_kwire({"acls", "-b", bootstrap(), "--add", "--deny-principal", principal, "--deny-host", "10.9.8.7",
                         "--operation", "Write", "--topic", topic + "-", "--resource-pattern-type", "prefixed"});
  ASSERT_EQ(deny.exit_code, 0) << deny.describe();

  // Five bindings: Read and Describe on the topic and the group, Write denied under the prefix.
  std::string listed;
  for (int i = 0; i < 100; ++i) {
    auto r = run_kwire({"acls", "-b", bootstrap(), "--list", "--principal", principal, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    listed = r.out;
    std::size_t n = 0;
    for (auto pos = listed.find("\"principal\""); pos != std::string::npos; pos = listed.find("\"principal\"", pos + 1))
      ++n;
    if (n == 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(listed.find("{\"resourceType\":\"TOPIC\",\"name\":\"" + topic +
                        "-\",\"patternType\":\"PREFIXED\","
                        "\"principal\":\"" +
                        principal + "\",\"host\":\"10.9.8.7\",\"operation\":\"WRITE\",\"permissionType\":\"DENY\"}"),
            std::string::npos)
      << listed;
  EXPECT_NE(listed.find("{\"resourceType\":\"GROUP\",\"name\":\"" + topic +
                        "\",\"patternType\":\"LITERAL\","
                        "\"principal\":\"" +
                        principal + "\",\"host\":\"*\",\"operation\":\"DESCRIBE\",\"permissionType\":\"ALLOW\"}"),
            std::string::npos)
      << listed;

  // Kafka's own tool lists them too.
  auto java = run_kafka_tool(
      {"org.apache.kafka.tools.AclCommand", "--bootstrap-server", bootstrap(), "--list", "--topic", topic});
  ASSERT_EQ(java.exit_code, 0) << java.describe();
  EXPECT_NE(java.out.find("(principal=" + principal + ", host=*, operation=READ, permissionType=ALLOW)"),
            std::string::npos)
      << java.out;

  // Mistakes are named.
  auto bad = run_kwire(
      {"acls", "-b", bootstrap(), "--add", "--allow-principal", principal, "--operation", "Reed", "--topic", topic});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown --operation 'Reed'"), std::string::npos) << bad.err;
  auto no_type = run_kwire({"acls", "-b", bootstrap(), "--add", "--allow-principal", "alice", "--topic", topic});
  EXPECT_EQ(no_type.exit_code, 1);
  EXPECT_NE(no_type.err.find("principal 'alice' is not TYPE:NAME"), std::string::npos) << no_type.err;

  // Remove everything of the three resources.
  for (auto args : std::vector<std::vector<std::string>>{
           {"--topic", topic, "--group", topic}, {"--topic", topic + "-", "--resource-pattern-type", "prefixed"}}) {
    std::vector<std::string> cmd = {"acls", "-b", bootstrap(), "--remove"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = run_kwire(cmd);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_NE(r.out.find("Removed ACLs for resource"), std::string::npos) << r.out;
  }
  KafkaClient client({{"bootstrap.servers", bootstrap()}});
  Admin admin(client);
  EXPECT_TRUE(await_acls(admin, by_principal(principal), 0).empty());
}

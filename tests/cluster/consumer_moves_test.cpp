// A consumer with every setting at its default while a real cluster moves
// leadership under it (and, below, KIP-951 leader discovery): a controlled shutdown of the partition's leader (the
// old leader answers NOT_LEADER_OR_FOLLOWER, metadata lags behind the move),
// and its return. The Java consumer reads through this without an error; so
// must this one: no error, no gap, no record twice.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster_support.hpp"
#include "kwire/client/consumer.hpp"

using namespace kwire_test;
using kwire::client::Consumer;
using kwire::client::TopicPartition;

TEST_F(ClusterTest, ControlledShutdownOfTheLeaderUnderAConsumerWithDefaultSettings) {
  const auto topic = unique_topic("moves");
  create(topic, 1, 3);
  const int leader = partition(topic, 0).leader_id;
  ASSERT_GE(leader, 1);

  Writer w(servers(), topic, 1, "m");
  w.start();
  Consumer c({{"bootstrap.servers", servers()}, {"auto.offset.reset", "earliest"}});
  const TopicPartition tp{topic, 0};
  c.assign({tp});

  std::vector<std::int64_t> offsets;
  std::vector<std::string> values;
  auto take = [&](std::chrono::milliseconds how_long) {
    const auto end = Clock::now() + how_long;
    while (Clock::now() < end)
      for (auto& r : c.poll(200ms)) {  // any error fails the test here
        offsets.push_back(r.offset);
        values.emplace_back(r.value ? std::string(r.value->begin(), r.value->end()) : std::string());
      }
  };
  take(3s);
  ASSERT_FALSE(offsets.empty());

  // The leader shuts down cleanly while the consumer keeps polling, and
  // comes back; leadership moves away and (preferred leader) back.
  std::thread mover([&] {
    stop_node(leader);
    std::this_thread::sleep_for(4s);
    restart_node(leader);
  });
  take(12s);
  mover.join();
  w.stop();
  ASSERT_EQ(w.error(), "");
  const auto acked = w.acked();
  kwire::client::KafkaClient admin({{"bootstrap.servers", servers()}});
  const auto end = admin.list_offsets({{tp, kwire::client::kLatestTimestamp}}).at(tp).offset;
  const auto deadline = Clock::now() + 30s;
  while ((offsets.empty() || offsets.back() + 1 < end) && Clock::now() < deadline) take(500ms);

  // Every offset of the log once, in order, and every acknowledged value.
  ASSERT_EQ(static_cast<std::int64_t>(offsets.size()), end);
  for (std::size_t i = 0; i < offsets.size(); ++i) ASSERT_EQ(offsets[i], static_cast<std::int64_t>(i));
  const std::set<std::string> seen(values.begin(), values.end());
  EXPECT_EQ(seen.size(), values.size());
  for (auto& v : acked) EXPECT_TRUE(seen.count(v)) << v << " was acknowledged but not read";
}

namespace {

// Requests of one API a client sent to the nodes [first, last], counted in
// their request logs (scripts/kafka cluster start --request-log).
int logged(const std::map<std::string, std::string>& env, int first, int last, const std::string& client_id,
           const std::string& api) {
  int n = 0;
  for (int node = first; node <= last; ++node) {
    std::ifstream in(std::filesystem::path(env.at("KWIRE_CLUSTER_KAFKA_DIR")) /
                     ("cluster-" + env.at("KWIRE_CLUSTER_PORT")) / ("n" + std::to_string(node)) / "requests.log");
    std::string line;
    while (std::getline(in, line))
      if (line.find("\"clientId\":\"" + client_id + "\"") != std::string::npos &&
          line.find("\"requestApiKeyName\":\"" + api + "\"") != std::string::npos)
        ++n;
  }
  return n;
}

}  // namespace

// KIP-951: leadership moves while the old leader stays up (a preferred
// leader election). The old leader refuses the next Fetch and Produce and
// names the new leader; the consumer and the producer go there without a
// Metadata request (counted in the brokers' request logs).
TEST_F(ClusterTest, LeaderElectionIsFollowedFromTheRefusalWithoutMetadata) {
  const auto topic = unique_topic("kip951");
  create(topic, 1, 3);
  const int preferred = partition(topic, 0).replicas.at(0);
  // Move leadership away from the preferred replica, then bring it back in
  // sync: the leader is now another node.
  stop_node(preferred);
  ASSERT_TRUE(wait_until(
      [&] {
        auto m = partition(topic, 0);
        return m.leader_id >= 0 && m.leader_id != preferred;
      },
      60s));
  restart_node(preferred);
  ASSERT_TRUE(wait_isr(topic, 0, 3));
  const int before_leader = partition(topic, 0).leader_id;
  ASSERT_NE(before_leader, preferred);

  const TopicPartition tp{topic, 0};
  const std::string cid = topic + "-consumer", pid = topic + "-producer";
  Consumer c({{"bootstrap.servers", servers()}, {"client.id", cid}, {"auto.offset.reset", "earliest"}});
  c.assign({tp});
  kwire::client::Producer p({{"bootstrap.servers", servers()}, {"client.id", pid}, {"acks", "all"}});
  auto send = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      kwire::client::ProducerMessage m;
      m.topic = topic;
      m.partition = 0;
      const std::string v = "e" + std::to_string(i);
      m.value = kwire::protocol::Bytes(v.begin(), v.end());
      p.send(std::move(m));
    }
    p.flush();
  };
  std::vector<std::int64_t> offsets;
  auto read = [&](std::size_t n) {
    const auto end = Clock::now() + 30s;
    while (offsets.size() < n && Clock::now() < end)
      for (auto& r : c.poll(200ms)) offsets.push_back(r.offset);
  };
  send(0, 5);
  read(5);
  ASSERT_EQ(offsets.size(), 5u);
  std::this_thread::sleep_for(1s);  // the request logs are written as requests complete
  const int consumer_metadata = logged(env_, 1, brokers(), cid, "METADATA");
  const int producer_metadata = logged(env_, 1, brokers(), pid, "METADATA");
  ASSERT_GT(consumer_metadata, 0);  // the log has this client's Metadata requests
  ASSERT_GT(producer_metadata, 0);
  EXPECT_EQ(logged(env_, preferred, preferred, cid, "FETCH"), 0);
  EXPECT_EQ(logged(env_, preferred, preferred, pid, "PRODUCE"), 0);

  auto election = run_kafka_tool({"org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", servers(),
                                  "--election-type", "PREFERRED", "--topic", topic, "--partition", "0"});
  ASSERT_EQ(election.exit_code, 0) << election.describe() << election.out;
  ASSERT_TRUE(wait_until([&] { return partition(topic, 0).leader_id == preferred; }, 30s));

  send(5, 10);
  read(10);
  ASSERT_EQ(offsets.size(), 10u);
  for (std::size_t i = 0; i < offsets.size(); ++i) EXPECT_EQ(offsets[i], static_cast<std::int64_t>(i));
  std::this_thread::sleep_for(1s);
  // Both moved to the new leader, and neither asked for metadata to do so.
  EXPECT_GT(logged(env_, preferred, preferred, cid, "FETCH"), 0);
  EXPECT_GT(logged(env_, preferred, preferred, pid, "PRODUCE"), 0);
  EXPECT_EQ(logged(env_, 1, brokers(), cid, "METADATA"), consumer_metadata);
  EXPECT_EQ(logged(env_, 1, brokers(), pid, "METADATA"), producer_metadata);
}

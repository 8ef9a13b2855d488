// Replication on a real three-broker cluster: follower fetching with
// client.rack (KIP-392), acks=all while the ISR is below min.insync.replicas,
// and an unclean leader election that truncates the log under a consumer and
// under streaming queries (KIP-320 / Spark's failOnDataLoss).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster_support.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/records.hpp"
#include "kwire/source/sink.hpp"
#include "kwire/source/stream.hpp"

namespace fs = std::filesystem;
using namespace kwire_test;
using kwire::client::Consumer;
using kwire::client::TopicPartition;

namespace {

void produce_values(const std::string& servers, const std::string& topic, int from, int to, const std::string& prefix,
                    const std::string& retries = "10") {
  kwire::client::Producer p(
      {{"bootstrap.servers", servers}, {"acks", "all"}, {"retries", retries}, {"retry.backoff.ms", "100"}});
  for (int i = from; i < to; ++i) {
    kwire::client::ProducerMessage m;
    m.topic = topic;
    m.partition = 0;
    std::string v = prefix + std::to_string(i);
    m.value = kwire::protocol::Bytes(v.begin(), v.end());
    p.send(std::move(m));
  }
  p.flush();
}

std::string value_of(const kwire::client::ConsumerRecord& r) {
  return r.value ? std::string(r.value->begin(), r.value->end()) : std::string();
}

// Poll until `n` records came (or 30 s); their values.
std::vector<std::string> read_n(Consumer& c, std::size_t n) {
  std::vector<std::string> out;
  const auto end = Clock::now() + 30s;
  while (out.size() < n && Clock::now() < end)
    for (auto& r : c.poll(200ms)) out.push_back(value_of(r));
  return out;
}

// The FETCH lines of one client in a node's request log (scripts/kafka
// cluster start --request-log), empty when there is none.
std::vector<std::string> fetches_logged(const fs::path& cluster_dir, int node, const std::string& client_id) {
  std::vector<std::string> out;
  std::ifstream in(cluster_dir / ("n" + std::to_string(node)) / "requests.log");
  std::string line;
  while (std::getline(in, line))
    if (line.find("\"clientId\":\"" + client_id + "\"") != std::string::npos &&
        line.find("\"requestApiKeyName\":\"FETCH\"") != std::string::npos)
      out.push_back(line);
  return out;
}

fs::path fresh_dir(const std::string& name) {
  auto p = fs::temp_directory_path() / ("kwire-cluster-test-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

}  // namespace

TEST_F(ClusterTest, FollowerFetchingReadsFromTheFollowerInTheClientsRack) {
  if (!rack_aware()) GTEST_SKIP() << "the cluster was started without --rack-aware";
  const auto topic = unique_topic("rack");
  create(topic, 1, 3);
  produce_values(servers(), topic, 0, 200, "k-");
  const auto md = partition(topic, 0);
  const int leader = md.leader_id;
  int follower = -1;
  for (int r : md.replicas)
    if (r != leader) follower = r;
  ASSERT_GE(follower, 1);
  const TopicPartition tp{topic, 0};

  // From the leader (no client.rack): the reference records.
  Consumer plain(
      {{"bootstrap.servers", servers()}, {"auto.offset.reset", "earliest"}, {"client.id", "plain-" + topic}});
  plain.assign({tp});
  const auto from_leader = read_n(plain, 200);
  ASSERT_EQ(from_leader.size(), 200u);
  EXPECT_EQ(plain.last_fetch_info(tp)->node, leader);
  EXPECT_FALSE(plain.read_replica(tp));

  // With client.rack naming the follower's rack: the leader points there.
  Consumer racked({{"bootstrap.servers", servers()},
                   {"auto.offset.reset", "earliest"},
                   {"client.rack", "rack" + std::to_string(follower)},
                   {"client.id", "racked-" + topic}});
  racked.assign({tp});
  const auto from_follower = read_n(racked, 200);
  EXPECT_EQ(from_follower, from_leader);
  EXPECT_EQ(racked.read_replica(tp), follower);
  ASSERT_TRUE(racked.last_fetch_info(tp));
  EXPECT_EQ(racked.last_fetch_info(tp)->node, follower);
  // New records keep coming from the follower.
  produce_values(servers(), topic, 200, 250, "k-");
  const auto more = read_n(racked, 50);
  ASSERT_EQ(more.size(), 50u);
  EXPECT_EQ(more.front(), "k-200");
  EXPECT_EQ(racked.last_fetch_info(tp)->node, follower);
  std::printf("[ cluster  ] %s-0: leader %d, client.rack=rack%d read from node %d\n", topic.c_str(), leader, follower,
              racked.last_fetch_info(tp)->node);

  // The brokers' side: each node's request log names who served the Fetches.
  if (env_["KWIRE_CLUSTER_REQUEST_LOG"] != "1") return;
  const fs::path dir = env_.at("KWIRE_CLUSTER_DIR");
  const std::string named = "\"preferredReadReplica\":" + std::to_string(follower);
  const std::string rack = "\"rackId\":\"rack" + std::to_string(follower) + "\"";
  std::map<int, std::size_t> racked_fetches, plain_fetches;
  for (int node = 1; node <= brokers(); ++node) {
    racked_fetches[node] = fetches_logged(dir, node, "racked-" + topic).size();
    plain_fetches[node] = fetches_logged(dir, node, "plain-" + topic).size();
  }
  const auto at_leader = fetches_logged(dir, leader, "racked-" + topic);
  ASSERT_FALSE(at_leader.empty());
  EXPECT_NE(at_leader.front().find(rack), std::string::npos) << at_leader.front();
  EXPECT_NE(at_leader.front().find(named), std::string::npos) << at_leader.front();
  EXPECT_GE(racked_fetches[follower], 2u);
  for (int node = 1; node <= brokers(); ++node) {
    if (node != leader && node != follower) {
      EXPECT_EQ(racked_fetches[node], 0u) << "node " << node;
    }
    if (node != leader) {
      EXPECT_EQ(plain_fetches[node], 0u) << "node " << node;
    }
  }
  EXPECT_GE(plain_fetches[leader], 1u);
  std::printf(
      "[ cluster  ] request logs: the racked consumer's Fetches: %zu at leader %d (answered with "
      "preferredReadReplica %d), %zu at follower %d; the plain consumer's: %zu, all at the leader\n",
      racked_fetches[leader], leader, follower, racked_fetches[follower], follower, plain_fetches[leader]);
}

TEST_F(ClusterTest, AcksAllBelowMinInsyncReplicasFailsTypedThenSucceedsOnceTheBrokerIsBack) {
  const auto topic = unique_topic("minisr");
  // Three replicas, all three required: losing one follower is enough.
  create(topic, 1, 3, {{"min.insync.replicas", "3"}});
  produce_values(servers(), topic, 0, 10, "a-");
  const auto md = partition(topic, 0);
  int follower = -1;
  for (int r : md.replicas)
    if (r != md.leader_id) follower = r;
  kill_node(follower);
  ASSERT_TRUE(wait_isr(topic, 0, 2, 30s)) << "the ISR did not shrink";
  const auto t0 = Clock::now();
  try {
    produce_values(servers(), topic, 10, 20, "a-", "3");
    FAIL() << "acks=all succeeded with two of three in-sync replicas";
  } catch (const kwire::client::NotEnoughReplicasError& e) {
    EXPECT_EQ(e.partition(), (TopicPartition{topic, 0}));
    EXPECT_TRUE(e.retriable());
    const std::string what = e.what();
    EXPECT_NE(what.find(topic + "-0"), std::string::npos) << what;
    EXPECT_NE(what.find("NOT_ENOUGH_REPLICAS"), std::string::npos) << what;
    std::printf("[ cluster  ] after %.0f ms: %s\n", ms_since(t0), what.c_str());
  }
  restart_node(follower);
  ASSERT_TRUE(wait_isr(topic, 0, 3)) << "the ISR did not grow back";
  produce_values(servers(), topic, 10, 20, "a-");
  Consumer c({{"bootstrap.servers", servers()}, {"auto.offset.reset", "earliest"}});
  c.assign({{topic, 0}});
  auto got = read_n(c, 20);
  ASSERT_GE(got.size(), 20u);
  EXPECT_EQ(got.back(), "a-19");
}

// The steps of an unclean election with three combined nodes (a: leader,
// b: the other replica, c: no replica of the topic): b stops, records are
// written to a alone, a stops, b comes back and is elected although it
// misses them. b's start restores the controller quorum (b and c).
TEST_F(ClusterTest, UncleanElectionTruncationIsReportedByTheConsumerAndTheStreams) {
  const auto topic = unique_topic("unclean");
  create(topic, 1, 2, {{"min.insync.replicas", "1"}, {"unclean.leader.election.enable", "true"}});
  const TopicPartition tp{topic, 0};
  const auto md = partition(topic, 0);
  const int a = md.leader_id;
  const int b = md.replicas[0] == a ? md.replicas[1] : md.replicas[0];
  produce_values(servers(), topic, 0, 100, "u-");
  stop_node(b);
  ASSERT_TRUE(wait_isr(topic, 0, 1, 30s));
  produce_values(servers(), topic, 100, 200, "u-");

  // A consumer and two queries that have read all 200.
  Consumer consumer({{"bootstrap.servers", servers()}, {"auto.offset.reset", "none"}, {"retry.backoff.ms", "50"}});
  consumer.assign({tp});
  consumer.seek(tp, 0);
  ASSERT_EQ(read_n(consumer, 200).size(), 200u);
  const auto dir = fresh_dir(topic);
  auto opts = [&](bool fail) {
    return std::map<std::string, std::string>{{"kafka.bootstrap.servers", servers()},
                                              {"subscribe", topic},
                                              {"startingOffsets", "earliest"},
                                              {"failOnDataLoss", fail ? "true" : "false"},
                                              {"kafka.retries", "20"}};
  };
  kwire::source::JsonLinesSink strict_sink(dir / "strict-out"), lenient_sink(dir / "lenient-out");
  const auto trigger = kwire::source::Trigger::parse("processing-time=1s");
  {
    kwire::source::StreamingQuery strict(opts(true), dir / "strict-ck", strict_sink, trigger);
    kwire::source::StreamingQuery lenient(opts(false), dir / "lenient-ck", lenient_sink, trigger);
    ASSERT_EQ(strict.run_once_batch()->num_input_rows, 200);
    ASSERT_EQ(lenient.run_once_batch()->num_input_rows, 200);
  }

  stop_node(a);
  restart_node(b);
  kwire::client::PartitionMetadata now;
  ASSERT_TRUE(wait_until(
      [&] {
        now = partition(topic, 0);
        return now.leader_id == b;
      },
      60s))
      << "no unclean election of node " << b;
  produce_values(servers(), topic, 200, 230, "u-");  // offsets 100..129 on the new leader

  // The consumer at 200 (epoch of a): truncation at 100.
  try {
    for (int i = 0; i < 100; ++i) consumer.poll(200ms);
    FAIL() << "no LogTruncationError";
  } catch (const kwire::client::LogTruncationError& e) {
    EXPECT_NE(std::string(e.what()).find(topic + "-0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("offset 100"), std::string::npos) << e.what();
  }

  // failOnDataLoss=true: the latest offset (130) is below the committed 200.
  {
    kwire::source::StreamingQuery strict(opts(true), dir / "strict-ck", strict_sink, trigger);
    try {
      strict.run_once_batch();
      FAIL() << "no KAFKA_DATA_LOSS";
    } catch (const kwire::source::DataLossError& e) {
      EXPECT_EQ(e.topic(), topic);
      EXPECT_EQ(e.partition(), 0);
      const std::string what = e.what();
      EXPECT_NE(what.find("KAFKA_DATA_LOSS"), std::string::npos) << what;
      EXPECT_NE(what.find(topic), std::string::npos) << what;
    }
  }
  // failOnDataLoss=false: a warning, and the query goes on.
  {
    kwire::source::StreamingQuery lenient(opts(false), dir / "lenient-ck", lenient_sink, trigger);
    auto b1 = lenient.run_once_batch();
    ASSERT_TRUE(b1);
    ASSERT_FALSE(b1->warnings.empty());
    EXPECT_NE(b1->warnings.front().find("KAFKA_DATA_LOSS"), std::string::npos) << b1->warnings.front();
    EXPECT_NE(b1->warnings.front().find(topic), std::string::npos) << b1->warnings.front();
    produce_values(servers(), topic, 230, 240, "u-");
    auto b2 = lenient.run_once_batch();
    ASSERT_TRUE(b2);
    EXPECT_EQ(b2->num_input_rows, 10);
    EXPECT_TRUE(b2->warnings.empty());
  }
  std::printf("[ cluster  ] %s-0: leader %d -> %d by unclean election (epoch %d -> %d), log end 200 -> 100\n",
              topic.c_str(), a, b, md.leader_epoch, now.leader_epoch);
  // a comes back (TearDown) and truncates its log to the new leader's.
  fs::remove_all(dir);
}

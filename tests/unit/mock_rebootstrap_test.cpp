// metadata.recovery.strategy against two mock clusters with different cluster
// ids. The client's bootstrap.servers is a forwarder that first leads to
// cluster A; once A is gone it leads to cluster B. With "rebootstrap" the
// client goes back to the forwarder and finds B (KIP-899: no known broker
// reachable; KIP-1102: Metadata failing for trigger.ms, REBOOTSTRAP_REQUIRED);
// with "none" it keeps asking A's brokers only.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../tcp_forwarder.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/mock/mock_cluster.hpp"

using namespace std::chrono_literals;
using kwire::client::ConnectionError;
using kwire::client::KafkaClient;
using kwire::client::Producer;
using kwire::client::ProducerMessage;
using kwire::client::TimeoutError;
using kwire::mock::Fault;
using kwire::mock::MockCluster;
using kwire::protocol::ApiKey;
using kwire::protocol::ErrorCode;
using kwire_test::TcpForwarder;
using Props = std::map<std::string, std::string>;

namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<MockCluster> cluster(const std::string& id, int brokers = 1) {
  auto c = std::make_unique<MockCluster>(brokers);
  c->set_cluster_id(id);
  c->create_topic("t", 1);
  return c;
}

Props client_props(const TcpForwarder& f, const std::string& strategy, const Props& extra = {}) {
  Props p{{"bootstrap.servers", f.address()}, {"metadata.recovery.strategy", strategy},
          {"retry.backoff.ms", "20"},         {"retry.backoff.max.ms", "100"},
          {"request.timeout.ms", "3000"},     {"socket.connection.setup.timeout.ms", "2000"}};
  for (auto& [k, v] : extra) p[k] = v;
  return p;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// A, then B behind the forwarder; the client has A's metadata.
struct TwoClusters {
  std::unique_ptr<MockCluster> a = cluster("cluster-a");
  std::unique_ptr<MockCluster> b = cluster("cluster-b");
  TcpForwarder forwarder{a->port(1)};

  // The forwarder now leads to B; A stays up when `keep_a`.
  void move_to_b(bool keep_a) {
    forwarder.set_target(b->port(1));
    if (!keep_a) a.reset();
    forwarder.drop_connections();
  }
};

}  // namespace

// Every broker of A is gone: the client cannot connect to any known broker,
// goes back to bootstrap.servers and finds B. One WARN line says why, one
// names both cluster ids and the bootstrap address that led to B.
TEST(MockRebootstrap, NoKnownBrokerReachableLeadsBackToBootstrapAndTheNewCluster) {
  TwoClusters tc;
  KafkaClient client(client_props(tc.forwarder, "rebootstrap"));
  ASSERT_EQ(client.metadata(std::vector<std::string>{"t"}).cluster_id, "cluster-a");
  tc.move_to_b(false);

  testing::internal::CaptureStderr();
  const auto md = client.metadata(std::vector<std::string>{"t"});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(md.cluster_id, "cluster-b");
  ASSERT_NE(md.topic("t"), nullptr);
  EXPECT_EQ(md.topic("t")->partitions.at(0).leader_id, 1);
  EXPECT_EQ(client.connection_stats().rebootstraps, 1u);
  EXPECT_TRUE(contains(err, "WARN rebootstrap: none of the 1 brokers of the last metadata could be reached")) << err;
  EXPECT_TRUE(contains(err, "WARN metadata: bootstrap server " + tc.forwarder.address() +
                                " answered for cluster cluster-b, not cluster cluster-a"))
      << err;
  EXPECT_FALSE(tc.b->requests(ApiKey::metadata).empty());
}

// The same move seen by a producer: its next record lands in B.
TEST(MockRebootstrap, ProducerReachesTheNewClusterAfterARebootstrap) {
  TwoClusters tc;
  Producer producer(
      client_props(tc.forwarder, "rebootstrap",
                   {{"enable.idempotence", "false"}, {"linger.ms", "0"}, {"delivery.timeout.ms", "10000"}}));
  auto send = [&](const std::string& v) {
    ProducerMessage m;
    m.topic = "t";
    m.partition = 0;
    m.value = kwire::protocol::Bytes(v.begin(), v.end());
    producer.send(m);
    producer.flush();
  };
  send("to-a");
  ASSERT_EQ(tc.a->high_watermark("t", 0), 1);
  tc.move_to_b(false);
  testing::internal::CaptureStderr();
  const auto started = Clock::now();
  send("to-b");
  const auto took = ms_since(started);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(tc.b->high_watermark("t", 0), 1);
  EXPECT_LT(took, 5000);
  EXPECT_TRUE(contains(err, "WARN rebootstrap:")) << err;
  EXPECT_TRUE(contains(err, "cluster-a") && contains(err, "cluster-b")) << err;
}

// strategy none: A's brokers are the only ones asked, however long they stay
// away; B behind the forwarder is never reached, and each call ends with a
// typed error within its retries.
TEST(MockRebootstrap, NoneNeverGoesBackToBootstrap) {
  TwoClusters tc;
  KafkaClient client(client_props(tc.forwarder, "none", {{"retries", "3"}}));
  ASSERT_EQ(client.metadata(std::vector<std::string>{"t"}).cluster_id, "cluster-a");
  const int accepted = tc.forwarder.accepted();
  tc.move_to_b(false);

  testing::internal::CaptureStderr();
  for (int call = 0; call < 2; ++call) {
    const auto started = Clock::now();
    try {
      client.metadata(std::vector<std::string>{"t"});
      ADD_FAILURE() << "metadata answered";
    } catch (const ConnectionError& e) {
      EXPECT_TRUE(contains(e.what(), "metadata.recovery.strategy=none")) << e.what();
    } catch (const TimeoutError& e) {
      SUCCEED() << e.what();
    }
    EXPECT_LT(ms_since(started), 3000);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(contains(err, "rebootstrap")) << err;
  EXPECT_EQ(client.connection_stats().rebootstraps, 0u);
  EXPECT_EQ(tc.forwarder.accepted(), accepted);
  EXPECT_TRUE(tc.b->requests().empty());
}

// strategy none with one of A's two brokers gone: the other known broker
// answers; the forwarder (now leading to B) is not asked.
TEST(MockRebootstrap, NoneAsksAnotherKnownBrokerWhenOneIsDown) {
  auto a = cluster("cluster-a", 2);
  auto b = cluster("cluster-b");
  TcpForwarder forwarder(a->port(1));
  KafkaClient client(client_props(forwarder, "none"));
  ASSERT_EQ(client.metadata(std::vector<std::string>{"t"}).cluster_id, "cluster-a");
  forwarder.set_target(b->port(1));
  forwarder.drop_connections();
  a->set_broker_down(1, true);
  a->clear_requests();
  const auto md = client.metadata(std::vector<std::string>{"t"});
  EXPECT_EQ(md.cluster_id, "cluster-a");
  const auto asked = a->requests(ApiKey::metadata);
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.back().broker, 2);
  EXPECT_TRUE(b->requests().empty());
  EXPECT_EQ(client.connection_stats().rebootstraps, 0u);
}

// KIP-1102: a Metadata answer with the top-level error REBOOTSTRAP_REQUIRED
// sends a rebootstrapping client back to bootstrap.servers at once, though
// A's broker is still up; a client with strategy none retries A instead.
TEST(MockRebootstrap, RebootstrapRequiredAnswerStartsAgainFromBootstrap) {
  for (const std::string strategy : {"rebootstrap", "none"}) {
    SCOPED_TRACE(strategy);
    TwoClusters tc;
    KafkaClient client(client_props(tc.forwarder, strategy));
    ASSERT_EQ(client.metadata(std::vector<std::string>{"t"}).cluster_id, "cluster-a");
    tc.move_to_b(true);
    Fault f;
    f.api = ApiKey::metadata;
    f.error_code = static_cast<std::int16_t>(ErrorCode::rebootstrap_required);
    tc.a->inject(f);

    testing::internal::CaptureStderr();
    const auto md = client.metadata(std::vector<std::string>{"t"});
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(tc.a->pending_faults(), 0u);
    EXPECT_GE(tc.a->requests(ApiKey::metadata).back().version, 13);
    if (strategy == "rebootstrap") {
      EXPECT_EQ(md.cluster_id, "cluster-b");
      EXPECT_EQ(client.connection_stats().rebootstraps, 1u);
      EXPECT_TRUE(contains(err, "WARN rebootstrap: broker 127.0.0.1:" + std::to_string(tc.a->port(1)) +
                                    " answered Metadata with REBOOTSTRAP_REQUIRED"))
          << err;
    } else {
      EXPECT_EQ(md.cluster_id, "cluster-a");
      EXPECT_EQ(client.connection_stats().rebootstraps, 0u);
      EXPECT_TRUE(tc.b->requests().empty());
    }
  }
}

// KIP-1102: A's broker accepts connections but every Metadata answer is lost.
// Connecting works, so only metadata.recovery.rebootstrap.trigger.ms ends it:
// after 300 ms of failed attempts the client rebootstraps and finds B. With
// the default trigger (5 minutes) the same call fails within its retries and
// B is never asked.
TEST(MockRebootstrap, MetadataFailingForTriggerMsRebootstraps) {
  for (const bool short_trigger : {true, false}) {
    SCOPED_TRACE(short_trigger ? "trigger 300 ms" : "default trigger");
    TwoClusters tc;
    Props extra{{"retries", short_trigger ? "50" : "3"}};
    if (short_trigger) extra["metadata.recovery.rebootstrap.trigger.ms"] = "300";
    KafkaClient client(client_props(tc.forwarder, "rebootstrap", extra));
    ASSERT_EQ(client.metadata(std::vector<std::string>{"t"}).cluster_id, "cluster-a");
    tc.move_to_b(true);
    Fault f;
    f.api = ApiKey::metadata;
    f.drop_connection = true;
    f.times = 1000;
    tc.a->inject(f);

    testing::internal::CaptureStderr();
    const auto started = Clock::now();
    std::optional<kwire::client::ClusterMetadata> md;
    try {
      md = client.metadata(std::vector<std::string>{"t"});
    } catch (const ConnectionError& e) {
      EXPECT_FALSE(short_trigger) << e.what();
    }
    const auto took = ms_since(started);
    const std::string err = testing::internal::GetCapturedStderr();
    if (short_trigger) {
      ASSERT_TRUE(md);
      EXPECT_EQ(md->cluster_id, "cluster-b");
      EXPECT_GE(took, 300);
      EXPECT_LT(took, 3000);
      EXPECT_EQ(client.connection_stats().rebootstraps, 1u);
      EXPECT_TRUE(contains(err, "(metadata.recovery.rebootstrap.trigger.ms=300)")) << err;
      EXPECT_GE(tc.a->requests(ApiKey::metadata).size(), 3u);
    } else {
      EXPECT_FALSE(md);
      EXPECT_EQ(client.connection_stats().rebootstraps, 0u);
      EXPECT_TRUE(tc.b->requests().empty());
    }
  }
}

// Incremental fetch sessions (KIP-227) against a real broker: the consumer
// opens a session with its first full fetch, then sends incremental fetches
// (the epoch grows) and still reads every record exactly once, including
// when partitions are paused (forgotten by the session) and resumed.
#include <set>

#include "common.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/producer.hpp"

using namespace kwire_test;
using namespace kwire;

class FetchSession : public BrokerTest {};

TEST_F(FetchSession, IncrementalFetchesReadEveryRecordOnce) {
  auto topic = unique_topic("fetch-session");
  create_topic(topic, 3);
  {
    client::Producer p({{"bootstrap.servers", bootstrap()}, {"batch.size", "2000"}});
    for (int i = 0; i < 3000; ++i) {
      std::string v = "v";
      v += std::to_string(i);
      client::ProducerMessage m;
      m.topic = topic;
      m.partition = i % 3;
      m.value = protocol::Bytes(v.begin(), v.end());
      p.send(std::move(m));
    }
    p.flush();
  }
  client::Consumer c({{"bootstrap.servers", bootstrap()},
                      {"auto.offset.reset", "earliest"},
                      {"max.partition.fetch.bytes", "4096"},
                      {"max.poll.records", "100"}});
  std::vector<client::TopicPartition> tps{{topic, 0}, {topic, 1}, {topic, 2}};
  c.assign(tps);
  std::multiset<std::string> seen;
  bool paused = false, resumed = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen.size() < 3000 && std::chrono::steady_clock::now() < deadline) {
    for (auto& r : c.poll(std::chrono::milliseconds(500))) seen.insert(std::string(r.value_view()));
    if (!paused && seen.size() > 600) {
      c.pause({{topic, 1}});
      paused = true;
    } else if (paused && !resumed && seen.size() > 1500) {
      c.resume({{topic, 1}});
      resumed = true;
    }
  }
  ASSERT_EQ(seen.size(), 3000u);
  for (int i = 0; i < 3000; ++i) {
    std::string v = "v";
    v += std::to_string(i);
    ASSERT_EQ(seen.count(v), 1u) << i;
  }
  auto leader = c.client().cached_metadata().topic(topic)->partitions.at(0).leader_id;
  auto session = c.fetch_session(leader);
  ASSERT_TRUE(session.has_value()) << "no fetch session is open";
  EXPECT_NE(session->first, 0);
  EXPECT_GT(session->second, 5) << "the session should have served many incremental fetches";
}

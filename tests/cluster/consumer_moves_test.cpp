// A consumer with every setting at its default while a real cluster moves
// leadership under it: a controlled shutdown of the partition's leader (the
// old leader answers NOT_LEADER_OR_FOLLOWER, metadata lags behind the move),
// and its return. The Java consumer reads through this without an error; so
// must this one: no error, no gap, no record twice.
#include <gtest/gtest.h>

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

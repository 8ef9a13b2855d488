// An exactly-once Kafka -> Kafka stream (KafkaSink, exactlyOnce=true) on a
// real three-broker cluster while a producer writes its input: the leader of
// an output partition is killed (SIGKILL). read_committed readers of the
// output then find every acknowledged input value exactly once: nothing
// lost, nothing doubled, no record of an aborted transaction.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster_support.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/source/kafka_sink.hpp"
#include "kwire/source/stream.hpp"

namespace fs = std::filesystem;
using namespace kwire_test;
using kwire::client::TopicPartition;

namespace {

constexpr int kPartitions = 2;

// Values of every record of `topic` a read_committed reader sees.
std::map<std::string, int> committed_values(const std::string& servers, const std::string& topic) {
  kwire::client::Consumer c({{"bootstrap.servers", servers},
                             {"auto.offset.reset", "earliest"},
                             {"isolation.level", "read_committed"},
                             {"retries", "20"}});
  std::vector<TopicPartition> tps;
  for (int p = 0; p < kPartitions; ++p) tps.push_back({topic, p});
  c.assign(tps);
  auto ends = c.end_offsets(tps);
  for (auto& tp : tps) c.seek(tp, 0);
  std::map<std::string, int> out;
  auto done = [&] {
    for (auto& tp : tps)
      if (c.position(tp) < ends.at(tp)) return false;
    return true;
  };
  const auto deadline = Clock::now() + 60s;
  while (!done() && Clock::now() < deadline)
    for (auto& r : c.poll(std::chrono::milliseconds(300))) out[std::string(r.value_view())]++;
  return out;
}

class KafkaSinkFailover : public ClusterTest {};

}  // namespace

TEST_F(KafkaSinkFailover, OutputLeaderKilledUnderAnExactlyOnceStreamLosesAndDoublesNothing) {
  const auto in = unique_topic("eo-in"), out = unique_topic("eo-out");
  create(in, kPartitions, 3, {{"min.insync.replicas", "2"}});
  create(out, kPartitions, 3, {{"min.insync.replicas", "2"}});
  const auto dir = fs::temp_directory_path() / ("kwire-cluster-test-" + out);
  fs::remove_all(dir);
  Writer w(servers(), in, kPartitions, "e-");
  w.start();

  kwire::source::KafkaSink sink({{"kafka.bootstrap.servers", servers()},
                                 {"topic", out},
                                 {"exactlyOnce", "true"},
                                 {"kafka.retry.backoff.ms", "100"}});
  kwire::source::StreamingQuery query({{"kafka.bootstrap.servers", servers()},
                                       {"subscribe", in},
                                       {"startingOffsets", "earliest"},
                                       {"kafka.retries", "30"},
                                       {"kafka.retry.backoff.ms", "100"}},
                                      dir / "ck", sink, kwire::source::Trigger::parse("processing-time=200ms"));
  std::mutex mu;
  std::int64_t rows = 0, batches = 0;
  std::string error;
  std::thread runner([&] {
    try {
      query.run([&](const kwire::source::BatchProgress& p) {
        std::lock_guard lock(mu);
        rows += p.num_input_rows;
        ++batches;
      });
    } catch (const std::exception& e) {
      std::lock_guard lock(mu);
      error = e.what();
    }
  });
  auto read_rows = [&] {
    std::lock_guard lock(mu);
    return rows;
  };
  auto failed = [&] {
    std::lock_guard lock(mu);
    return !error.empty();
  };
  ASSERT_TRUE(wait_until([&] { return read_rows() >= 300 || failed(); }, 60s));

  const auto before = partition(out, 0);
  const int victim = before.leader_id;
  ASSERT_GE(victim, 1);
  const auto acked_at_kill = w.acked().size();
  kill_node(victim);
  ASSERT_TRUE(wait_until(
      [&] {
        auto after = partition(out, 0);
        return after.leader_id >= 0 && after.leader_id != victim;
      },
      30s));
  ASSERT_TRUE(wait_until([&] { return w.acked().size() >= acked_at_kill + 300 || !w.error().empty(); }, 60s));
  w.stop();
  ASSERT_EQ(w.error(), "");
  const auto acked = w.acked();
  ASSERT_TRUE(wait_until([&] { return read_rows() >= static_cast<std::int64_t>(acked.size()) || failed(); }, 90s));
  query.stop();
  runner.join();
  ASSERT_EQ(error, "") << "the stream failed after the kill";

  auto values = committed_values(servers(), out);
  std::size_t missing = 0, doubled = 0;
  for (auto& v : acked) {
    auto it = values.find(v);
    if (it == values.end()) ++missing;
    else if (it->second > 1) ++doubled;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(doubled, 0u);
  EXPECT_EQ(values.size(), acked.size());  // nothing else: no value of an aborted transaction
  std::printf(
      "[ cluster  ] killed leader %d of %s-0 under an exactly-once stream: %zu acknowledged, %zu read "
      "committed, %zu missing, %zu doubled, %lld batches\n",
      victim, out.c_str(), acked.size(), values.size(), missing, doubled, static_cast<long long>(batches));
  fs::remove_all(dir);
}

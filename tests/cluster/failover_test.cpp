// A streaming query (processing-time trigger) reading a replicated topic
// (replication factor 3, min.insync.replicas=2) while a producer writes
// with acks=all, on a real three-broker cluster: the leader of a partition
// is killed (SIGKILL), or every broker is restarted in turn. The stream goes
// on with the new leaders; the sink holds every offset of the log exactly
// once and every acknowledged record; no KAFKA_DATA_LOSS. Under the rolling
// restart, a group member of each protocol reads the same topic while its
// group coordinator moves: every record once, its commits at the log's end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "../broker/group_support.hpp"
#include "cluster_support.hpp"
#include "kwire/source/sink.hpp"
#include "kwire/source/stream.hpp"

namespace fs = std::filesystem;
using namespace kwire_test;
using kwire::client::TopicPartition;

namespace {

// A StreamingQuery run on its own thread, its progress kept with the time
// each batch was committed.
class StreamRun {
 public:
  StreamRun(const std::map<std::string, std::string>& options, const fs::path& dir)
      : sink_(dir / "out"),
        query_(options, dir / "ck", sink_, kwire::source::Trigger::parse("processing-time=300ms")) {}
  ~StreamRun() { stop(); }

  void start() {
    thread_ = std::thread([this] {
      try {
        query_.run([this](const kwire::source::BatchProgress& p) {
          std::lock_guard lock(mu_);
          progress_.emplace_back(Clock::now(), p);
          rows_ += p.num_input_rows;
        });
      } catch (const std::exception& e) {
        std::lock_guard lock(mu_);
        error_ = e.what();
        error_at_ = Clock::now();
      }
    });
  }
  void stop() {
    query_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::int64_t rows() const {
    std::lock_guard lock(mu_);
    return rows_;
  }
  std::string error() const {
    std::lock_guard lock(mu_);
    return error_;
  }
  Clock::time_point error_at() const {
    std::lock_guard lock(mu_);
    return error_at_;
  }
  std::vector<std::pair<Clock::time_point, kwire::source::BatchProgress>> progress() const {
    std::lock_guard lock(mu_);
    return progress_;
  }

 private:
  kwire::source::JsonLinesSink sink_;
  kwire::source::StreamingQuery query_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::pair<Clock::time_point, kwire::source::BatchProgress>> progress_;
  std::int64_t rows_ = 0;
  std::string error_;
  Clock::time_point error_at_{};
};

fs::path fresh_dir(const std::string& name) {
  auto p = fs::temp_directory_path() / ("kwire-cluster-test-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::int64_t log_end(const std::string& servers, const std::string& topic, int partitions) {
  kwire::client::KafkaClient c({{"bootstrap.servers", servers}, {"retries", "20"}});
  std::map<TopicPartition, std::int64_t> q;
  for (int p = 0; p < partitions; ++p) q[{topic, p}] = kwire::client::kLatestTimestamp;
  std::int64_t n = 0;
  for (auto& [tp, lo] : c.list_offsets(q)) n += lo.offset;
  return n;
}

class Failover : public ClusterTest {
 protected:
  static constexpr int kPartitions = 2;

  std::map<std::string, std::string> options(const std::string& topic) const {
    return {{"kafka.bootstrap.servers", servers()},
            {"subscribe", topic},
            {"startingOffsets", "earliest"},
            {"failOnDataLoss", "true"},
            {"kafka.retries", "30"},
            {"kafka.retry.backoff.ms", "100"}};
  }

  // The sink against the log and the producer: each offset once, all of the
  // log, every acknowledged value; no data-loss event or warning.
  void check(const std::string& topic, const fs::path& dir, const Writer& w, const StreamRun& s) {
    ASSERT_EQ(s.error(), "");
    auto rows = read_sink(dir / "out");
    std::set<std::pair<int, std::int64_t>> offsets;
    std::map<std::string, int> values;
    for (auto& r : rows) {
      EXPECT_TRUE(offsets.insert({r.partition, r.offset}).second) << "offset twice: " << r.partition << "/" << r.offset;
      values[r.value]++;
    }
    EXPECT_EQ(static_cast<std::int64_t>(rows.size()), log_end(servers(), topic, kPartitions));
    std::size_t missing = 0, in_log_twice = 0;
    for (auto& v : w.acked()) {
      auto it = values.find(v);
      if (it == values.end()) ++missing;
      else if (it->second > 1) ++in_log_twice;  // written twice by a producer retry, read once per copy
    }
    EXPECT_EQ(missing, 0u);
    // The producer is idempotent (the default): a retry never writes a record twice.
    EXPECT_EQ(in_log_twice, 0u);
    for (auto& [t, p] : s.progress()) {
      EXPECT_EQ(p.data_loss, 0) << "batch " << p.batch_id;
      EXPECT_TRUE(p.warnings.empty()) << "batch " << p.batch_id << ": " << p.warnings.front();
    }
    std::printf("[ cluster  ] %zu records acknowledged, %zu rows in the sink, %zu values written twice by retries\n",
                w.acked().size(), rows.size(), in_log_twice);
  }

  // Wait until the stream has read the whole log.
  void drain(const std::string& topic, const StreamRun& s) {
    std::int64_t end = log_end(servers(), topic, kPartitions);
    EXPECT_TRUE(wait_until([&] { return s.rows() >= end || !s.error().empty(); }, 90s))
        << "stream read " << s.rows() << " of " << end;
  }
};

}  // namespace

TEST_F(Failover, LeaderKilledUnderARunningStreamLosesAndRepeatsNothing) {
  const auto topic = unique_topic("failover");
  create(topic, kPartitions, 3, {{"min.insync.replicas", "2"}});
  const auto dir = fresh_dir(topic);
  Writer w(servers(), topic, kPartitions, "f-");
  w.start();
  StreamRun s(options(topic), dir);
  s.start();
  ASSERT_TRUE(wait_until([&] { return s.rows() >= 300 || !s.error().empty(); }, 60s)) << s.error();

  const auto before = partition(topic, 0);
  const int victim = before.leader_id;
  ASSERT_GE(victim, 1);
  const auto acked_at_kill = w.acked().size();
  const auto t_kill = Clock::now();
  kill_node(victim);

  kwire::client::PartitionMetadata after;
  ASSERT_TRUE(wait_until(
      [&] {
        after = partition(topic, 0);
        return after.leader_id >= 0 && after.leader_id != victim;
      },
      30s));
  const double leader_moved_ms = ms_since(t_kill);
  EXPECT_GT(after.leader_epoch, before.leader_epoch);
  ASSERT_TRUE(wait_until([&] { return w.acked().size() >= acked_at_kill + 300 || !w.error().empty(); }, 60s));
  w.stop();
  ASSERT_EQ(w.error(), "");
  drain(topic, s);
  s.stop();
  if (!s.error().empty())
    ADD_FAILURE() << "the stream failed " << ms_since(t_kill, s.error_at()) << " ms after the kill";
  check(topic, dir, w, s);

  // The failover gap as the stream saw it: the longest pause, after the
  // kill, between two committed batches that read records of partition 0.
  double stream_gap_ms = -1;
  std::optional<Clock::time_point> prev;
  for (auto& [t, p] : s.progress()) {
    bool read_p0 = false;
    for (auto& r : p.ranges) read_p0 = read_p0 || (r.tp.partition == 0 && r.until_offset > r.from_offset);
    if (!read_p0) continue;
    if (prev && t > t_kill) stream_gap_ms = std::max(stream_gap_ms, ms_since(std::max(*prev, t_kill), t));
    prev = t;
  }
  EXPECT_GE(stream_gap_ms, 0) << "no batch read partition 0 after the kill";
  const double producer_gap_ms = w.longest_gap_after(t_kill);
  std::printf(
      "[ cluster  ] killed leader %d of %s-0: new leader %d (epoch %d -> %d) after %.0f ms; longest producer "
      "pause %.0f ms; longest stream pause on partition 0 %.0f ms\n",
      victim, topic.c_str(), after.leader_id, before.leader_epoch, after.leader_epoch, leader_moved_ms, producer_gap_ms,
      stream_gap_ms);
  RecordProperty("leader_moved_ms", static_cast<int>(leader_moved_ms));
  RecordProperty("producer_gap_ms", static_cast<int>(producer_gap_ms));
  RecordProperty("stream_gap_ms", static_cast<int>(stream_gap_ms));
  fs::remove_all(dir);
}

TEST_F(Failover, RollingRestartOfEveryBrokerUnderARunningStreamLosesAndRepeatsNothing) {
  const auto topic = unique_topic("rolling");
  create(topic, kPartitions, 3, {{"min.insync.replicas", "2"}});
  const auto dir = fresh_dir(topic);
  Writer w(servers(), topic, kPartitions, "r-");
  w.start();
  StreamRun s(options(topic), dir);
  s.start();
  groups::Seen classic_seen, kip848_seen;
  groups::Member classic(groups::member_props(servers(), topic + "-classic"), topic, classic_seen);
  groups::Member kip848(groups::consumer_protocol_props(servers(), topic + "-848"), topic, kip848_seen);
  ASSERT_TRUE(wait_until([&] { return s.rows() >= 200 || !s.error().empty(); }, 60s)) << s.error();
  ASSERT_TRUE(wait_until([&] { return classic_seen.total() >= 100 && kip848_seen.total() >= 100; }, 60s))
      << classic.error() << kip848.error();
  for (int node = 1; node <= brokers(); ++node) {
    const auto t0 = Clock::now();
    restart_node(node);
    for (int p = 0; p < kPartitions; ++p)
      ASSERT_TRUE(wait_isr(topic, p, 3)) << "node " << node << " did not rejoin the ISR of partition " << p;
    const auto acked = w.acked().size();
    ASSERT_TRUE(wait_until([&] { return w.acked().size() >= acked + 100 || !w.error().empty(); }, 60s));
    std::printf("[ cluster  ] node %d restarted and back in every ISR in %.0f ms\n", node, ms_since(t0));
  }
  w.stop();
  ASSERT_EQ(w.error(), "");
  drain(topic, s);
  s.stop();
  check(topic, dir, w, s);
  fs::remove_all(dir);

  // The group members: each offset of the log once, then committed at its end.
  const auto end = log_end(servers(), topic, kPartitions);
  for (auto [m, seen, group] :
       {std::tuple{&classic, &classic_seen, topic + "-classic"}, std::tuple{&kip848, &kip848_seen, topic + "-848"}}) {
    EXPECT_TRUE(wait_until([&] { return static_cast<std::int64_t>(seen->total()) >= end; }, 60s))
        << group << " read " << seen->total() << " of " << end;
    m->stop();
    EXPECT_EQ(m->error(), "") << group;
    std::printf("[ cluster  ] %s: %zu records, %d assignments\n", group.c_str(), seen->total(), m->rebalances());
    std::map<std::int32_t, std::int64_t> ends;
    kwire::client::KafkaClient c({{"bootstrap.servers", servers()}});
    std::map<TopicPartition, std::int64_t> q;
    for (int p = 0; p < kPartitions; ++p) q[{topic, p}] = kwire::client::kLatestTimestamp;
    for (auto& [tp, lo] : c.list_offsets(q)) ends[tp.partition] = lo.offset;
    groups::expect_exactly_once(*seen, ends);
    groups::Consumer reader({{"bootstrap.servers", servers()}, {"group.id", group}});
    for (auto& [tp, om] : reader.committed({{topic, 0}, {topic, 1}})) {
      ASSERT_TRUE(om.has_value()) << group << " " << tp.partition;
      EXPECT_EQ(om->offset, ends[tp.partition]) << group << " " << tp.partition;
    }
  }
}

// Helpers for the tests against a real multi-broker cluster that
// `scripts/kafka cluster start` runs: the cluster's description (cluster.env,
// named by KWIRE_CLUSTER_ENV), killing / stopping / restarting one node with
// the same script, waiting on partition metadata (leader, ISR), a producer
// thread that keeps writing, and reading what a JsonLinesSink committed.
//
// Tests skip when KWIRE_CLUSTER_ENV is not set; scripts/test sets it in its
// cluster phase. A node a test took down is started again in TearDown, so
// the next test finds every node up.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../broker/common.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"

namespace kwire_test {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline double ms_since(Clock::time_point t0, Clock::time_point t1 = Clock::now()) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

/// Wait until `pred` holds (checked every 100 ms); false after `timeout`.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return pred();
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("KWIRE_CLUSTER_ENV");
    if (!path || !*path) GTEST_SKIP() << "KWIRE_CLUSTER_ENV not set (scripts/kafka cluster start writes cluster.env)";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "cannot read " << path;
    std::string line;
    while (std::getline(in, line))
      if (auto eq = line.find('='); eq != std::string::npos) env_[line.substr(0, eq)] = line.substr(eq + 1);
    ASSERT_TRUE(env_.count("KWIRE_CLUSTER_BOOTSTRAP")) << path;
    ASSERT_GE(brokers(), 3) << "these tests need a cluster of three";
    for (int i = 1; i <= brokers(); ++i)
      ASSERT_TRUE(tcp_reachable(node_address(i))) << "cluster node " << i << " does not answer at " << node_address(i);
  }

  void TearDown() override {
    for (int node : down_) {
      auto r = cluster({"restart", "--node", std::to_string(node)});
      EXPECT_EQ(r.exit_code, 0) << r.describe() << r.out;
    }
    down_.clear();
  }

  std::string servers() const { return env_.at("KWIRE_CLUSTER_BOOTSTRAP"); }
  int brokers() const { return std::stoi(env_.at("KWIRE_CLUSTER_BROKERS")); }
  bool rack_aware() const {
    return env_.count("KWIRE_CLUSTER_RACK_AWARE") && env_.at("KWIRE_CLUSTER_RACK_AWARE") == "1";
  }
  std::string node_address(int node) const { return env_.at("KWIRE_CLUSTER_NODE_" + std::to_string(node)); }

  /// `scripts/kafka cluster ARGS --port P` with the cluster's run root.
  CommandResult cluster(const std::vector<std::string>& args) const {
    std::string cmd = "KWIRE_KAFKA_DIR=" + shell_quote(env_.at("KWIRE_CLUSTER_KAFKA_DIR")) + " " +
                      shell_quote(source_dir() + "/scripts/kafka") + " cluster " + join_quoted(args) + " --port " +
                      env_.at("KWIRE_CLUSTER_PORT");
    return run(cmd, {}, 180);
  }
  /// SIGKILL node I.
  void kill_node(int node) { node_command("kill", node, true); }
  /// SIGTERM node I (a controlled shutdown) and wait for it to exit.
  void stop_node(int node) { node_command("stop", node, true); }
  /// Start node I on its data (stopping it first if it runs); returns once it is registered.
  void restart_node(int node) { node_command("restart", node, false); }

  /// Fresh metadata of one partition (a new client: nothing cached).
  kwire::client::PartitionMetadata partition(const std::string& topic, int p) const {
    kwire::client::KafkaClient c({{"bootstrap.servers", servers()}, {"retry.backoff.ms", "50"}});
    auto md = c.metadata(std::vector<std::string>{topic});
    auto* t = md.topic(topic);
    if (!t || t->error_code != 0 || static_cast<std::size_t>(p) >= t->partitions.size()) return {};
    return t->partitions[static_cast<std::size_t>(p)];
  }

  /// Create a topic and wait until every partition has a leader and a full ISR.
  void create(const std::string& topic, int partitions, int rf, std::map<std::string, std::string> configs = {}) {
    kwire::client::KafkaClient c({{"bootstrap.servers", servers()}});
    c.create_topics({{topic, partitions, static_cast<std::int16_t>(rf), std::move(configs)}});
    for (int p = 0; p < partitions; ++p)
      ASSERT_TRUE(wait_until([&] { return partition(topic, p).isr.size() == static_cast<std::size_t>(rf); }, 30s))
          << topic << "-" << p << " has no full ISR";
  }

  /// Wait until the partition's ISR has `n` members (and a leader).
  bool wait_isr(const std::string& topic, int p, std::size_t n, std::chrono::milliseconds timeout = 60s) const {
    return wait_until(
        [&] {
          auto m = partition(topic, p);
          return m.leader_id >= 0 && m.isr.size() == n;
        },
        timeout);
  }

  std::map<std::string, std::string> env_;
  std::set<int> down_;  // nodes a test took down: started again in TearDown

 private:
  void node_command(const std::string& what, int node, bool goes_down) {
    auto r = cluster({what, "--node", std::to_string(node)});
    ASSERT_EQ(r.exit_code, 0) << r.describe() << r.out;
    if (goes_down) down_.insert(node);
    else down_.erase(node);
  }
};

/// A producer thread writing "<prefix><i>" to partition i % partitions, a
/// flush (acks=all) every `per_flush` records, until stop(). Keeps the values
/// acknowledged and the time of each successful flush.
class Writer {
 public:
  Writer(std::string servers, std::string topic, int partitions, std::string prefix, int per_flush = 5)
      : servers_(std::move(servers)),
        topic_(std::move(topic)),
        partitions_(partitions),
        prefix_(std::move(prefix)),
        per_flush_(per_flush) {}
  ~Writer() { stop(); }

  void start() {
    thread_ = std::thread([this] { loop(); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> acked() const {
    std::lock_guard lock(mu_);
    return acked_;
  }
  std::vector<Clock::time_point> flush_times() const {
    std::lock_guard lock(mu_);
    return flush_times_;
  }
  std::string error() const {
    std::lock_guard lock(mu_);
    return error_;
  }
  /// The longest time between two successful flushes after `t`, in ms.
  double longest_gap_after(Clock::time_point t) const {
    auto times = flush_times();
    double gap = 0;
    Clock::time_point prev = t;
    for (auto ft : times) {
      if (ft < t) continue;
      gap = std::max(gap, ms_since(prev, ft));
      prev = ft;
    }
    return gap;
  }

 private:
  void loop() {
    try {
      kwire::client::Producer p(
          {{"bootstrap.servers", servers_}, {"acks", "all"}, {"retries", "60"}, {"retry.backoff.ms", "100"}});
      int i = 0;
      while (!stop_) {
        std::vector<std::string> batch;
        for (int k = 0; k < per_flush_; ++k, ++i) {
          kwire::client::ProducerMessage m;
          m.topic = topic_;
          m.partition = i % partitions_;
          std::string v = prefix_ + std::to_string(i);
          m.value = kwire::protocol::Bytes(v.begin(), v.end());
          p.send(std::move(m));
          batch.push_back(std::move(v));
        }
        p.flush();
        std::lock_guard lock(mu_);
        acked_.insert(acked_.end(), batch.begin(), batch.end());
        flush_times_.push_back(Clock::now());
        if (acked_.size() % 100 == 0) std::this_thread::sleep_for(20ms);
      }
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      error_ = e.what();
    }
  }

  std::string servers_, topic_;
  int partitions_;
  std::string prefix_;
  int per_flush_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::string> acked_;
  std::vector<Clock::time_point> flush_times_;
  std::string error_;
};

/// One row a JsonLinesSink committed.
struct SinkRow {
  std::string value;
  int partition = -1;
  std::int64_t offset = -1;
};

/// Every row of the committed part files under `dir`.
inline std::vector<SinkRow> read_sink(const std::filesystem::path& dir) {
  std::vector<SinkRow> out;
  if (!std::filesystem::exists(dir)) return out;
  simdjson::dom::parser parser;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    auto name = e.path().filename().string();
    if (name.rfind("part-", 0) != 0 || e.path().extension() != ".jsonl") continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      simdjson::dom::element doc = parser.parse(line);
      SinkRow r;
      r.value = std::string(std::string_view(doc["value"].get_string()));
      r.partition = static_cast<int>(std::int64_t(doc["partition"].get_int64()));
      r.offset = doc["offset"].get_int64();
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace kwire_test

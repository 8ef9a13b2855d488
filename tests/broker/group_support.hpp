// Shared by the consumer group broker tests (group_test.cpp,
// group_rebalance_test.cpp): group members on their own threads, what they
// consumed, `kwire consume -G` as a child process, and the fixture
// parameterised over the two brokers (Kafka 4.1 at KWIRE_BOOTSTRAP, 3.9 at
// KWIRE_BOOTSTRAP_PREVIOUS).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "common.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/group_admin.hpp"

extern char** environ;

namespace kwire_test::groups {

using kwire::client::Consumer;
using kwire::client::TopicPartition;

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// What every member saw, shared between the member threads.
struct Seen {
  std::mutex mu;
  std::map<std::pair<std::int32_t, std::int64_t>, int> times;  // (partition, offset) -> times consumed
  std::map<std::int32_t, Clock::time_point> last_at;           // partition -> when its last record arrived
  std::size_t total() {
    std::lock_guard lock(mu);
    std::size_t n = 0;
    for (auto& [k, v] : times) n += static_cast<std::size_t>(v);
    return n;
  }
};

// One group member on its own thread: polls, records what it got, commits
// after each poll (and in on_partitions_revoked, as Java applications do).
class Member : public kwire::client::RebalanceListener {
 public:
  Member(std::map<std::string, std::string> props, std::string topic, Seen& seen)
      : props_(std::move(props)), topic_(std::move(topic)), seen_(seen) {
    thread_ = std::thread([this] { run(); });
  }
  ~Member() { stop(); }
  void stop(bool graceful = true) {
    graceful_ = graceful;
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<TopicPartition> assignment() {
    std::lock_guard lock(mu_);
    return {assignment_.begin(), assignment_.end()};
  }
  std::string error() {
    std::lock_guard lock(mu_);
    return error_;
  }
  // Eager rebalances revoke and assign everything; cooperative ones and
  // KIP-848 pass only the partitions that change: keep the union.
  void on_partitions_assigned(const std::vector<TopicPartition>& tps) override {
    std::lock_guard lock(mu_);
    assignment_.insert(tps.begin(), tps.end());
    ++rebalances_;
  }
  int rebalances() {
    std::lock_guard lock(mu_);
    return rebalances_;
  }
  void on_partitions_revoked(const std::vector<TopicPartition>& tps) override {
    try {
      consumer_->commit_sync();
    } catch (const std::exception&) {
    }
    std::lock_guard lock(mu_);
    for (auto& tp : tps) assignment_.erase(tp);
    revoked_.insert(revoked_.end(), tps.begin(), tps.end());
  }
  // Every partition revoked so far (lost ones excluded).
  std::vector<TopicPartition> revoked() {
    std::lock_guard lock(mu_);
    return revoked_;
  }
  void on_partitions_lost(const std::vector<TopicPartition>& tps) override {
    std::lock_guard lock(mu_);
    for (auto& tp : tps) assignment_.erase(tp);
  }

 private:
  void run() {
    try {
      Consumer c(props_);
      consumer_ = &c;
      c.subscribe({topic_}, this);
      while (!stop_) {
        auto recs = c.poll(100ms);
        if (recs.empty()) continue;
        {
          std::lock_guard lock(seen_.mu);
          for (auto& r : recs) {
            ++seen_.times[{r.partition, r.offset}];
            seen_.last_at[r.partition] = Clock::now();
          }
        }
        try {
          c.commit_sync();
        } catch (const kwire::client::RebalanceInProgressError&) {
        } catch (const kwire::client::CommitFailedError&) {
        }
      }
      if (graceful_) c.close();
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      error_ = e.what();
    }
  }
  std::map<std::string, std::string> props_;
  std::string topic_;
  Seen& seen_;
  Consumer* consumer_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<bool> graceful_{true};
  std::mutex mu_;
  std::set<TopicPartition> assignment_;
  std::vector<TopicPartition> revoked_;
  int rebalances_ = 0;
  std::string error_;
  std::thread thread_;
};

inline std::map<std::string, std::string> member_props(const std::string& servers, const std::string& group,
                                                       const std::string& strategy = "range") {
  return {{"bootstrap.servers", servers},
          {"group.id", group},
          {"auto.offset.reset", "earliest"},
          {"enable.auto.commit", "false"},
          {"session.timeout.ms", "6000"},
          {"heartbeat.interval.ms", "500"},
          {"max.poll.interval.ms", "30000"},
          {"fetch.max.wait.ms", "100"},
          {"partition.assignment.strategy", strategy}};
}

// group.protocol=consumer (KIP-848): the broker's heartbeat interval and session timeout apply.
inline std::map<std::string, std::string> consumer_protocol_props(const std::string& servers,
                                                                  const std::string& group) {
  return {{"bootstrap.servers", servers},  {"group.id", group},
          {"group.protocol", "consumer"},  {"auto.offset.reset", "earliest"},
          {"enable.auto.commit", "false"}, {"max.poll.interval.ms", "30000"},
          {"fetch.max.wait.ms", "100"}};
}

// Waits until the members' assignments cover the six partitions once each.
inline bool wait_balanced(const std::vector<Member*>& members, std::size_t partitions, std::chrono::seconds timeout) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    std::multiset<TopicPartition> all;
    bool each = true;
    for (auto* m : members) {
      auto a = m->assignment();
      each = each && !a.empty();
      all.insert(a.begin(), a.end());
    }
    std::set<TopicPartition> distinct(all.begin(), all.end());
    if (each && all.size() == partitions && distinct.size() == partitions) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

inline bool wait_total(Seen& seen, std::size_t n, std::chrono::seconds timeout) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end && seen.total() < n) std::this_thread::sleep_for(50ms);
  return seen.total() >= n;
}

// Every produced record consumed exactly once: `per_partition` offsets in each of 6 partitions.
inline void expect_exactly_once(Seen& seen, const std::map<std::int32_t, std::int64_t>& ends) {
  std::lock_guard lock(seen.mu);
  for (auto& [p, end] : ends)
    for (std::int64_t o = 0; o < end; ++o) {
      auto it = seen.times.find({p, o});
      EXPECT_TRUE(it != seen.times.end() && it->second == 1) << "partition " << p << " offset " << o << " consumed "
                                                             << (it == seen.times.end() ? 0 : it->second) << " times";
    }
}

inline std::map<std::int32_t, std::int64_t> end_offsets(const std::string& servers, const std::string& topic) {
  kwire::client::KafkaClient client({{"bootstrap.servers", servers}});
  std::map<TopicPartition, std::int64_t> q;
  for (int p = 0; p < 6; ++p) q[{topic, p}] = kwire::client::kLatestTimestamp;
  std::map<std::int32_t, std::int64_t> out;
  for (auto& [tp, lo] : client.list_offsets(q)) out[tp.partition] = lo.offset;
  return out;
}

inline std::map<std::int32_t, std::int64_t> committed(const std::string& servers, const std::string& group,
                                                      const std::string& topic) {
  Consumer c({{"bootstrap.servers", servers}, {"group.id", group}});
  std::vector<TopicPartition> tps;
  for (int p = 0; p < 6; ++p) tps.push_back({topic, p});
  std::map<std::int32_t, std::int64_t> out;
  for (auto& [tp, om] : c.committed(tps)) out[tp.partition] = om ? om->offset : -1;
  return out;
}

// `kwire consume -G` as a child process, its stdout in a file.
class GroupProcess {
 public:
  // kwire with `args`, or any program when `program` is given.
  GroupProcess(const std::vector<std::string>& args, const std::filesystem::path& out,
               const std::string& program = kwire_bin()) {
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (out.string() + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, argv[0].c_str(), &fa, nullptr, cargv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~GroupProcess() { kill(SIGKILL); }
  int kill(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

inline std::string previous_broker() {
  const char* prev = std::getenv("KWIRE_BOOTSTRAP_PREVIOUS");
  return prev && *prev ? prev : "";
}

class Groups : public BrokerTest, public ::testing::WithParamInterface<const char*> {
 protected:
  std::string servers() {
    if (std::string(GetParam()) == "current") return bootstrap();
    return previous_broker();
  }
  void SetUp() override {
    BrokerTest::SetUp();
    if (std::string(GetParam()) == "previous") {
      ASSERT_FALSE(previous_broker().empty())
          << "KWIRE_BOOTSTRAP_PREVIOUS is not set (scripts/test starts a 3.9 broker and sets it)";
      ASSERT_TRUE(tcp_reachable(previous_broker())) << "nothing answers at " << previous_broker();
    }
  }
  void killed_member_case(bool kip848);
  void create(const std::string& topic) {
    auto r = run_kwire({"create-topic", "-b", servers(), "-t", topic, "--partitions", "6"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
};

}  // namespace kwire_test::groups

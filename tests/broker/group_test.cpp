// Consumer groups against real brokers (Kafka 4.1 at KWIRE_BOOTSTRAP, 3.9 at
// KWIRE_BOOTSTRAP_PREVIOUS): three members share a six-partition topic, each
// record is consumed once across them, a member that closes or is killed
// hands its partitions over, and the committed offsets read back equal what
// was consumed. Also kwire consume -G and kwire groups.
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

using namespace kwire_test;
using kwire::client::Consumer;
using kwire::client::TopicPartition;

namespace {

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

std::map<std::string, std::string> member_props(const std::string& servers, const std::string& group,
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
std::map<std::string, std::string> consumer_protocol_props(const std::string& servers, const std::string& group) {
  return {{"bootstrap.servers", servers},  {"group.id", group},
          {"group.protocol", "consumer"},  {"auto.offset.reset", "earliest"},
          {"enable.auto.commit", "false"}, {"max.poll.interval.ms", "30000"},
          {"fetch.max.wait.ms", "100"}};
}

// Waits until the members' assignments cover the six partitions once each.
bool wait_balanced(const std::vector<Member*>& members, std::size_t partitions, std::chrono::seconds timeout) {
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

bool wait_total(Seen& seen, std::size_t n, std::chrono::seconds timeout) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end && seen.total() < n) std::this_thread::sleep_for(50ms);
  return seen.total() >= n;
}

// Every produced record consumed exactly once: `per_partition` offsets in each of 6 partitions.
void expect_exactly_once(Seen& seen, const std::map<std::int32_t, std::int64_t>& ends) {
  std::lock_guard lock(seen.mu);
  for (auto& [p, end] : ends)
    for (std::int64_t o = 0; o < end; ++o) {
      auto it = seen.times.find({p, o});
      EXPECT_TRUE(it != seen.times.end() && it->second == 1) << "partition " << p << " offset " << o << " consumed "
                                                             << (it == seen.times.end() ? 0 : it->second) << " times";
    }
}

std::map<std::int32_t, std::int64_t> end_offsets(const std::string& servers, const std::string& topic) {
  kwire::client::KafkaClient client({{"bootstrap.servers", servers}});
  std::map<TopicPartition, std::int64_t> q;
  for (int p = 0; p < 6; ++p) q[{topic, p}] = kwire::client::kLatestTimestamp;
  std::map<std::int32_t, std::int64_t> out;
  for (auto& [tp, lo] : client.list_offsets(q)) out[tp.partition] = lo.offset;
  return out;
}

std::map<std::int32_t, std::int64_t> committed(const std::string& servers, const std::string& group,
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

std::string previous_broker() {
  const char* prev = std::getenv("KWIRE_BOOTSTRAP_PREVIOUS");
  return prev && *prev ? prev : "";
}

}  // namespace

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

TEST_P(Groups, ThreeMembersShareSixPartitionsAndACloseRebalancesAtOnce) {
  auto topic = unique_topic("groups-three");
  auto group = topic + "-g";
  create(topic);
  Seen seen;
  Member a(member_props(servers(), group), topic, seen);
  Member b(member_props(servers(), group), topic, seen);
  auto c = std::make_unique<Member>(member_props(servers(), group), topic, seen);
  ASSERT_TRUE(wait_balanced({&a, &b, c.get()}, 6, 60s)) << a.error() << b.error() << c->error();
  EXPECT_EQ(a.assignment().size(), 2u);  // range: 6 over 3
  produce_numbered(servers(), topic, 0, 600);
  ASSERT_TRUE(wait_total(seen, 600, 60s)) << seen.total();

  // A graceful close: LeaveGroup, so the others take over at once (no session timeout).
  auto moved = c->assignment();
  const auto t0 = Clock::now();
  c->stop(true);
  ASSERT_TRUE(wait_balanced({&a, &b}, 6, 20s));
  const double rebalance_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(rebalance_s, 5.0) << "a graceful leave should not wait for session.timeout.ms (6 s)";
  std::fprintf(stderr, "[groups %s] graceful close -> partitions reassigned in %.3f s\n", GetParam(), rebalance_s);
  produce_numbered(servers(), topic, 600, 900);
  ASSERT_TRUE(wait_total(seen, 900, 60s)) << seen.total();
  std::this_thread::sleep_for(300ms);
  a.stop();
  b.stop();
  EXPECT_EQ(a.error() + b.error() + c->error(), "");
  auto ends = end_offsets(servers(), topic);
  expect_exactly_once(seen, ends);
  EXPECT_EQ(seen.total(), 900u);
  // The committed offsets read back equal what was consumed: every partition's end.
  EXPECT_EQ(committed(servers(), group, topic), ends);
}

// One member is `kwire consume -G` in its own process (auto-commit every
// 200 ms), two are in this process; the process is killed. Classic:
// session.timeout.ms 6 s; KIP-848: the broker's
// group.consumer.session.timeout.ms (45 s by default, also its minimum).
void Groups::killed_member_case(bool kip848) {
  auto topic = unique_topic(kip848 ? "groups-kill848" : "groups-kill");
  auto group = topic + "-g";
  create(topic);
  TempDir dir;
  std::vector<std::string> args{"consume", "-b", servers(), "-G", group, "--json", "-X", "auto.commit.interval.ms=200"};
  for (const char* x : kip848 ? std::vector<const char*>{"group.protocol=consumer"}
                              : std::vector<const char*>{"session.timeout.ms=6000", "heartbeat.interval.ms=500",
                                                         "partition.assignment.strategy=range"}) {
    args.push_back("-X");
    args.push_back(x);
  }
  args.push_back(topic);
  GroupProcess proc(args, dir / "member.jsonl");
  ASSERT_TRUE(proc.running());
  const double session_s = kip848 ? 45.0 : 6.0;
  Seen seen;
  auto props = kip848 ? consumer_protocol_props(servers(), group) : member_props(servers(), group);
  Member a(props, topic, seen);
  Member b(props, topic, seen);
  ASSERT_TRUE(wait_balanced({&a, &b}, 4, 60s)) << a.error() << b.error();  // the process holds the other 2
  std::set<std::int32_t> killed_partitions{0, 1, 2, 3, 4, 5};
  for (auto* m : {&a, &b})
    for (auto& tp : m->assignment()) killed_partitions.erase(tp.partition);
  ASSERT_EQ(killed_partitions.size(), 2u);
  produce_numbered(servers(), topic, 0, 300);
  // Wait until every share is consumed and committed.
  auto ends = end_offsets(servers(), topic);
  auto end = Clock::now() + 60s;
  while (Clock::now() < end && committed(servers(), group, topic) != ends) std::this_thread::sleep_for(200ms);
  ASSERT_EQ(committed(servers(), group, topic), ends);
  auto in_process = parse_json_records(read_file(dir / "member.jsonl"));
  std::int64_t killed_share = 0;
  for (auto p : killed_partitions) killed_share += ends[p];
  EXPECT_EQ(static_cast<std::int64_t>(in_process.size()), killed_share);
  for (auto& r : in_process) EXPECT_TRUE(killed_partitions.count(r.partition)) << r.partition;

  // SIGKILL: no LeaveGroup; the coordinator notices after session.timeout.ms.
  const auto t0 = Clock::now();
  proc.kill(SIGKILL);
  ASSERT_TRUE(wait_balanced({&a, &b}, 6, std::chrono::seconds(static_cast<int>(session_s) + 30)));
  const double rebalance_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(rebalance_s, session_s + 10.0);
  produce_numbered(servers(), topic, 300, 360);
  ASSERT_TRUE(wait_total(seen, 300 - in_process.size() + 60, 60s)) << seen.total();
  Clock::time_point last{};
  {
    std::lock_guard lock(seen.mu);
    for (auto p : killed_partitions) last = std::max(last, seen.last_at[p]);
  }
  std::fprintf(stderr, "[groups %s %s] SIGKILL -> partitions reassigned in %.3f s, consumed elsewhere after %.3f s\n",
               GetParam(), kip848 ? "consumer" : "classic", rebalance_s,
               std::chrono::duration<double>(last - t0).count());
  a.stop();
  b.stop();
  EXPECT_EQ(a.error() + b.error(), "");
  // Each record once across the three members: the survivors resumed the
  // killed member's partitions from its committed offsets.
  for (auto& r : in_process) {
    std::lock_guard lock(seen.mu);
    ++seen.times[{r.partition, r.offset}];
  }
  auto final_ends = end_offsets(servers(), topic);
  expect_exactly_once(seen, final_ends);
  EXPECT_EQ(committed(servers(), group, topic), final_ends);
}

TEST_P(Groups, AKilledMemberLosesItsPartitionsWithinTheSessionTimeout) { killed_member_case(false); }

TEST_P(Groups, AKilledConsumerProtocolMemberLosesItsPartitionsWithinTheSessionTimeout) {
  if (std::string(GetParam()) != "current") GTEST_SKIP() << "group.protocol=consumer needs Kafka 4.0+";
  killed_member_case(true);
}

TEST_P(Groups, CliBalancedConsumerAndGroupsCommands) {
  auto topic = unique_topic("groups-cli");
  auto group = topic + "-g";
  create(topic);
  produce_numbered(servers(), topic, 0, 120);
  // -c: stop after 50 records, committing exactly those.
  auto first = run_kwire(
      {"consume", "-b", servers(), "-G", group, "--json", "-q", "-c", "50", "-X", "session.timeout.ms=6000", topic});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  auto got = parse_json_records(first.out);
  ASSERT_EQ(got.size(), 50u);
  // -e: the rest, from the committed offsets, then exit at the end.
  auto rest = run_kwire({"consume", "-b", servers(), "-G", group, "--json", "-q", "-e", topic});
  ASSERT_EQ(rest.exit_code, 0) << rest.describe();
  auto more = parse_json_records(rest.out);
  std::set<std::pair<std::int32_t, std::int64_t>> all;
  for (auto& r : got) all.insert({r.partition, r.offset});
  for (auto& r : more) EXPECT_TRUE(all.insert({r.partition, r.offset}).second) << "consumed twice";
  EXPECT_EQ(all.size(), 120u);

  auto list = run_kwire({"groups", "list", "-b", servers(), "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.describe();
  EXPECT_NE(list.out.find("\"group\":\"" + group + "\""), std::string::npos) << list.out;

  auto describe = run_kwire({"groups", "describe", "-b", servers(), group, "--json"});
  ASSERT_EQ(describe.exit_code, 0) << describe.describe();
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(describe.out);
  EXPECT_EQ(std::string_view(doc["state"].get_string()), "Empty");
  int partitions = 0;
  for (simdjson::dom::element p : doc["partitions"].get_array()) {
    ++partitions;
    EXPECT_EQ(std::int64_t(p["lag"].get_int64()), 0);
    EXPECT_EQ(std::int64_t(p["committedOffset"].get_int64()), std::int64_t(p["logEndOffset"].get_int64()));
  }
  EXPECT_EQ(partitions, 6);

  // reset-offsets: a dry run commits nothing; then back to the start of partition 0.
  auto dry = run_kwire({"groups", "reset-offsets", "-b", servers(), group, "--topic", topic + ":0", "--to-earliest",
                        "--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.describe();
  auto before = committed(servers(), group, topic);
  EXPECT_GT(before[0], 0);
  auto reset = run_kwire({"groups", "reset-offsets", "-b", servers(), group, "--topic", topic + ":0", "--to-earliest"});
  ASSERT_EQ(reset.exit_code, 0) << reset.describe();
  auto after = committed(servers(), group, topic);
  EXPECT_EQ(after[0], 0);
  EXPECT_EQ(after[1], before[1]);
  auto latest = run_kwire({"groups", "reset-offsets", "-b", servers(), group, "--all-topics", "--to-offset", "3"});
  ASSERT_EQ(latest.exit_code, 0) << latest.describe();
  for (auto& [p, off] : committed(servers(), group, topic)) EXPECT_EQ(off, std::min<std::int64_t>(3, before[p]));

  // Offsets of a group with members cannot be reset.
  Seen seen;
  Member m(member_props(servers(), group), topic, seen);
  ASSERT_TRUE(wait_balanced({&m}, 6, 60s));
  auto busy = run_kwire({"groups", "reset-offsets", "-b", servers(), group, "--all-topics", "--to-latest"});
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_NE(busy.err.find("Stable"), std::string::npos) << busy.err;
  auto live = run_kwire({"groups", "describe", "-b", servers(), group, "--json"});
  ASSERT_EQ(live.exit_code, 0) << live.describe();
  simdjson::dom::element ldoc = parser.parse(live.out);
  EXPECT_EQ(std::string_view(ldoc["state"].get_string()), "Stable");
  int owned = 0;
  for (simdjson::dom::element p : ldoc["partitions"].get_array()) owned += p["memberId"].is_null() ? 0 : 1;
  EXPECT_EQ(owned, 6);
  m.stop();
}

TEST_P(Groups, StreamCommitsItsBatchesToAGroupForLagTools) {
  auto topic = unique_topic("groups-stream");
  auto group = topic + "-lag";
  create(topic);
  produce_numbered(servers(), topic, 0, 90);
  TempDir dir;
  auto r =
      run_kwire({"stream", "-b", servers(), "-o", "subscribe=" + topic, "-o", "startingOffsets=earliest", "-o",
                 "kafka.group.id=" + group, "-o", "commitOffsetsToGroup=true", "--checkpoint", (dir / "cp").string(),
                 "--sink", "jsonl:" + (dir / "out").string(), "--trigger", "available-now"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.err.find("commitOffsetsToGroup"), std::string::npos) << r.err;
  auto ends = end_offsets(servers(), topic);
  EXPECT_EQ(committed(servers(), group, topic), ends);
  // What kafka-consumer-groups would show: lag 0 everywhere.
  auto describe = run_kwire({"groups", "describe", "-b", servers(), group, "--json"});
  ASSERT_EQ(describe.exit_code, 0) << describe.describe();
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(describe.out);
  int partitions = 0;
  for (simdjson::dom::element p : doc["partitions"].get_array()) {
    ++partitions;
    EXPECT_EQ(std::int64_t(p["lag"].get_int64()), 0);
  }
  EXPECT_EQ(partitions, 6);
}

TEST_P(Groups, ConsumerProtocolMembersShareAndRevocationDoesNotStopTheOthers) {
  auto topic = unique_topic("groups-848");
  auto group = topic + "-g";
  create(topic);
  Seen seen;
  if (std::string(GetParam()) == "previous") {
    // Kafka 3.9 as started here does not enable the consumer protocol: a typed error.
    Member m(consumer_protocol_props(servers(), group), topic, seen);
    auto end = Clock::now() + 30s;
    while (Clock::now() < end && m.error().empty()) std::this_thread::sleep_for(100ms);
    EXPECT_NE(m.error().find("group.protocol=consumer"), std::string::npos) << m.error();
    return;
  }
  Member a(consumer_protocol_props(servers(), group), topic, seen);
  Member b(consumer_protocol_props(servers(), group), topic, seen);
  auto c = std::make_unique<Member>(consumer_protocol_props(servers(), group), topic, seen);
  ASSERT_TRUE(wait_balanced({&a, &b, c.get()}, 6, 60s)) << a.error() << b.error() << c->error();
  produce_numbered(servers(), topic, 0, 600);
  ASSERT_TRUE(wait_total(seen, 600, 60s)) << seen.total();
  // c leaves: its partitions are handed to a and b, who keep theirs meanwhile.
  auto a_before = a.assignment(), b_before = b.assignment();
  const auto t0 = Clock::now();
  c->stop(true);
  ASSERT_TRUE(wait_balanced({&a, &b}, 6, 30s)) << a.error() << b.error();
  const double rebalance_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr, "[groups %s] KIP-848 leave -> partitions reassigned in %.3f s\n", GetParam(), rebalance_s);
  auto a_after = a.assignment(), b_after = b.assignment();
  for (auto& tp : a_before) EXPECT_NE(std::find(a_after.begin(), a_after.end(), tp), a_after.end());
  for (auto& tp : b_before) EXPECT_NE(std::find(b_after.begin(), b_after.end(), tp), b_after.end());
  produce_numbered(servers(), topic, 600, 900);
  ASSERT_TRUE(wait_total(seen, 900, 60s)) << seen.total();
  std::this_thread::sleep_for(300ms);
  a.stop();
  b.stop();
  EXPECT_EQ(a.error() + b.error() + c->error(), "");
  auto ends = end_offsets(servers(), topic);
  expect_exactly_once(seen, ends);
  EXPECT_EQ(committed(servers(), group, topic), ends);
}

TEST_P(Groups, StaticMemberRestartWithinTheSessionTimeoutCausesNoRebalance) {
  auto topic = unique_topic("groups-static");
  auto group = topic + "-g";
  create(topic);
  Seen seen;
  auto props_a = member_props(servers(), group);
  props_a["group.instance.id"] = "static-a";
  auto props_b = member_props(servers(), group);
  props_b["group.instance.id"] = "static-b";
  Member a(props_a, topic, seen);
  auto b = std::make_unique<Member>(props_b, topic, seen);
  ASSERT_TRUE(wait_balanced({&a, b.get()}, 6, 60s)) << a.error() << b->error();
  std::this_thread::sleep_for(1500ms);  // settled: a's heartbeats see a stable group
  const int a_rebalances = a.rebalances();
  const auto b_assignment = b->assignment();
  // b stops (a static member sends no LeaveGroup) and comes back at once.
  b->stop(true);
  b = std::make_unique<Member>(props_b, topic, seen);
  ASSERT_TRUE(wait_balanced({&a, b.get()}, 6, 30s)) << a.error() << b->error();
  std::this_thread::sleep_for(3s);  // several of a's heartbeats
  EXPECT_EQ(a.rebalances(), a_rebalances) << "the restart made the group rebalance";
  EXPECT_EQ(b->assignment(), b_assignment);
  produce_numbered(servers(), topic, 0, 120);
  ASSERT_TRUE(wait_total(seen, 120, 60s)) << seen.total();
  EXPECT_EQ(a.error() + b->error(), "");
}

TEST_P(Groups, MixedGroupWithKafkasConsoleConsumer) {
  auto topic = unique_topic("groups-mixed");
  auto group = topic + "-g";
  create(topic);
  produce_numbered(servers(), topic, 0, 60);
  TempDir dir;
  // Kafka's Java console consumer (classic protocol, range + cooperative-sticky) and a kwire member.
  GroupProcess java({"tool", "console-consumer", "--bootstrap-server", servers(), "--topic", topic, "--group", group,
                     "--from-beginning"},
                    dir / "java.out", source_dir() + "/scripts/kafka");
  ASSERT_TRUE(java.running());
  Seen seen;
  Member a(member_props(servers(), group, "range,cooperative-sticky"), topic, seen);
  ASSERT_TRUE(wait_balanced({&a}, 3, 120s)) << a.error();  // the Java member holds the other 3
  // Kafka's own tool sees kwire's member, its assignment and its commits.
  auto end = Clock::now() + 60s;
  std::string out;
  int kwire_rows = 0, java_rows = 0;
  while (Clock::now() < end) {
    auto r = run_kafka_tool({"consumer-groups", "--bootstrap-server", servers(), "--describe", "--group", group});
    out = r.out;
    kwire_rows = java_rows = 0;
    bool committed_all = true;
    for (auto& line : split_lines(out)) {
      if (line.find(topic) == std::string::npos) continue;
      if (line.find(" kwire") != std::string::npos) ++kwire_rows;
      if (line.find("console-consumer") != std::string::npos) ++java_rows;
      if (line.find(" - ") != std::string::npos) committed_all = false;
    }
    if (kwire_rows == 3 && java_rows == 3 && committed_all) break;
    std::this_thread::sleep_for(1s);
  }
  EXPECT_EQ(kwire_rows, 3) << out;
  EXPECT_EQ(java_rows, 3) << out;
  std::size_t kwire_share = 0;
  auto ends = end_offsets(servers(), topic);
  for (auto& tp : a.assignment()) kwire_share += static_cast<std::size_t>(ends[tp.partition]);
  EXPECT_TRUE(wait_total(seen, kwire_share, 30s)) << seen.total() << " of " << kwire_share;
  a.stop();
  java.kill(SIGTERM);
  EXPECT_EQ(a.error(), "");
}

// Cooperative-sticky (KIP-429): a third member joining takes one partition
// from each of the two others; nothing they keep is revoked.
TEST_P(Groups, CooperativeStickyJoinRevokesOnlyThePartitionsThatMove) {
  auto topic = unique_topic("groups-coop");
  auto group = topic + "-g";
  create(topic);
  Seen seen;
  Member a(member_props(servers(), group, "cooperative-sticky"), topic, seen);
  Member b(member_props(servers(), group, "cooperative-sticky"), topic, seen);
  ASSERT_TRUE(wait_balanced({&a, &b}, 6, 60s)) << a.error() << b.error();
  std::this_thread::sleep_for(1500ms);
  const auto a_before = a.assignment();
  const auto b_before = b.assignment();
  ASSERT_EQ(a_before.size(), 3u);
  const auto a_revoked_before = a.revoked().size();
  const auto b_revoked_before = b.revoked().size();
  Member c(member_props(servers(), group, "cooperative-sticky"), topic, seen);
  ASSERT_TRUE(wait_balanced({&a, &b, &c}, 6, 60s)) << a.error() << b.error() << c.error();
  std::this_thread::sleep_for(1500ms);
  for (auto [m, before, revoked_before] :
       {std::tuple{&a, a_before, a_revoked_before}, std::tuple{&b, b_before, b_revoked_before}}) {
    auto now = m->assignment();
    EXPECT_EQ(now.size(), 2u);
    // Sticky: what stays was already owned.
    for (auto& tp : now) EXPECT_TRUE(std::count(before.begin(), before.end(), tp)) << tp.partition;
    // Incremental: only the partition that moved was revoked.
    auto revoked = m->revoked();
    revoked.erase(revoked.begin(), revoked.begin() + static_cast<std::ptrdiff_t>(revoked_before));
    EXPECT_EQ(revoked.size(), 1u);
    for (auto& tp : revoked) EXPECT_FALSE(std::count(now.begin(), now.end(), tp)) << tp.partition;
  }
  produce_numbered(servers(), topic, 0, 120);
  ASSERT_TRUE(wait_total(seen, 120, 60s)) << seen.total();
  a.stop();
  b.stop();
  c.stop();
  EXPECT_EQ(a.error() + b.error() + c.error(), "");
}

// KIP-848 static membership: a member with group.instance.id that leaves
// (epoch -2) and comes back within the session timeout gets its partitions
// back and the other member sees no change.
TEST_P(Groups, ConsumerProtocolStaticMemberRejoinKeepsItsPartitions) {
  if (std::string(GetParam()) != "current") GTEST_SKIP() << "group.protocol=consumer needs Kafka 4.0+";
  auto topic = unique_topic("groups-static848");
  auto group = topic + "-g";
  create(topic);
  Seen seen;
  auto props_a = consumer_protocol_props(servers(), group);
  props_a["group.instance.id"] = "static-a";
  auto props_b = consumer_protocol_props(servers(), group);
  props_b["group.instance.id"] = "static-b";
  Member a(props_a, topic, seen);
  auto b = std::make_unique<Member>(props_b, topic, seen);
  ASSERT_TRUE(wait_balanced({&a, b.get()}, 6, 60s)) << a.error() << b->error();
  std::this_thread::sleep_for(2s);
  const int a_rebalances = a.rebalances();
  const auto a_assignment = a.assignment();
  const auto b_assignment = b->assignment();
  b->stop(true);
  b = std::make_unique<Member>(props_b, topic, seen);
  ASSERT_TRUE(wait_balanced({&a, b.get()}, 6, 30s)) << a.error() << b->error();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(a.rebalances(), a_rebalances) << "the static member's return changed the other member's assignment";
  EXPECT_EQ(a.assignment(), a_assignment);
  EXPECT_EQ(b->assignment(), b_assignment);
  produce_numbered(servers(), topic, 0, 120);
  ASSERT_TRUE(wait_total(seen, 120, 60s)) << seen.total();
  EXPECT_EQ(a.error() + b->error(), "");
}

// GroupAdmin, the API behind kwire groups: list, describe (members,
// assignments, committed offsets) and alter offsets, refused while the group
// has members.
TEST_P(Groups, GroupAdminListsDescribesAndAltersOffsets) {
  auto topic = unique_topic("groups-admin");
  auto group = topic + "-g";
  create(topic);
  produce_numbered(servers(), topic, 0, 60);
  Seen seen;
  auto props = member_props(servers(), group);
  props["group.instance.id"] = "admin-a";
  auto a = std::make_unique<Member>(props, topic, seen);
  ASSERT_TRUE(wait_balanced({a.get()}, 6, 60s)) << a->error();
  ASSERT_TRUE(wait_total(seen, 60, 60s)) << seen.total();
  auto ends = end_offsets(servers(), topic);
  kwire::client::KafkaClient client({{"bootstrap.servers", servers()}});
  kwire::client::GroupAdmin admin(client);
  auto end = Clock::now() + 30s;
  kwire::client::GroupDescription d;
  std::map<std::int32_t, std::int64_t> committed_now;
  while (Clock::now() < end) {
    d = admin.describe_group(group);
    committed_now.clear();
    for (auto& [tp, off] : d.committed) committed_now[tp.partition] = off;
    if (d.state == "Stable" && committed_now == ends) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(d.group_id, group);
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.protocol_type, "consumer");
  EXPECT_EQ(d.assignor, "range");
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].group_instance_id, std::optional<std::string>("admin-a"));
  EXPECT_EQ(d.members[0].assignment.size(), 6u);
  EXPECT_EQ(committed_now, ends);
  bool listed = false;
  for (auto& g : admin.list_groups())
    if (g.group_id == group) listed = g.protocol_type == "consumer";
  EXPECT_TRUE(listed);
  // A group with members refuses offsets from outside.
  EXPECT_THROW(admin.alter_offsets(group, {{TopicPartition{topic, 0}, 0}}), kwire::client::KafkaError);
  a->stop(true);
  a.reset();
  // A static member does not leave: wait for the session timeout to empty the group.
  end = Clock::now() + 30s;
  while (Clock::now() < end && admin.describe_group(group).state != "Empty") std::this_thread::sleep_for(500ms);
  ASSERT_EQ(admin.describe_group(group).state, "Empty");
  admin.alter_offsets(group, {{TopicPartition{topic, 0}, 0}, {TopicPartition{topic, 1}, 1}});
  auto after = admin.committed_offsets(group, {{topic, 0}, {topic, 1}, {topic, 2}});
  EXPECT_EQ(after.at(TopicPartition{topic, 0}).offset, 0);
  EXPECT_EQ(after.at(TopicPartition{topic, 1}).offset, 1);
  EXPECT_EQ(after.at(TopicPartition{topic, 2}).offset, ends[2]);
  EXPECT_EQ(admin.describe_group(group + "-none").state, "Dead");
}

namespace {
// The listener of a member driven from the test's thread.
struct Calls : kwire::client::RebalanceListener {
  std::set<TopicPartition> owned;
  int assigned = 0, revoked = 0, lost = 0;
  void on_partitions_assigned(const std::vector<TopicPartition>& tps) override {
    ++assigned;
    owned.insert(tps.begin(), tps.end());
  }
  void on_partitions_revoked(const std::vector<TopicPartition>& tps) override {
    ++revoked;
    for (auto& tp : tps) owned.erase(tp);
  }
  void on_partitions_lost(const std::vector<TopicPartition>& tps) override {
    ++lost;
    for (auto& tp : tps) owned.erase(tp);
  }
};

// Polls `c` until it owns `n` partitions and `other` the rest of six.
bool poll_until_split(Consumer& c, Calls& calls, std::size_t n, Member& other, std::chrono::seconds timeout) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    c.poll(100ms);
    if (calls.owned.size() == n && other.assignment().size() == 6 - n) return true;
  }
  return false;
}
}  // namespace

// The background heartbeat: a member that processes for twice
// session.timeout.ms between two polls stays in the group (nobody
// rebalances); one that stays away longer than max.poll.interval.ms leaves
// at once, its partitions go to the other member, and its next poll rejoins.
TEST_P(Groups, ProcessingLongerThanTheSessionTimeoutKeepsTheAssignmentButMaxPollIntervalDoesNot) {
  std::vector<std::string> protocols{"classic"};
  if (std::string(GetParam()) == "current") protocols.push_back("consumer");
  for (const auto& protocol : protocols) {
    SCOPED_TRACE(protocol);
    auto topic = unique_topic("groups-slow-" + protocol);
    auto group = topic + "-g";
    create(topic);
    Seen seen;
    const bool classic = protocol == "classic";
    auto props = classic ? member_props(servers(), group) : consumer_protocol_props(servers(), group);
    Member other(props, topic, seen);
    if (classic) {
      // session.timeout.ms 6 s; processing 12 s stays within max.poll.interval.ms 30 s.
      Calls calls;
      Consumer slow(props);
      slow.subscribe({topic}, &calls);
      ASSERT_TRUE(poll_until_split(slow, calls, 3, other, 60s)) << other.error();
      std::this_thread::sleep_for(1500ms);  // settled
      const int other_rebalances = other.rebalances();
      const auto owned = calls.owned;
      const auto slow_rebalances = slow.rebalance_count();
      const int given_up = calls.lost + calls.revoked;
      std::this_thread::sleep_for(12s);  // "processing": no poll() for 2 x session.timeout.ms
      for (int i = 0; i < 10; ++i) slow.poll(100ms);
      EXPECT_EQ(other.rebalances(), other_rebalances) << "the other member saw a rebalance";
      EXPECT_EQ(slow.rebalance_count(), slow_rebalances);
      EXPECT_EQ(calls.owned, owned);
      EXPECT_EQ(calls.lost + calls.revoked, given_up);
      slow.close();
    }
    // max.poll.interval.ms 5 s (also the rebalance timeout); 9 s without poll().
    auto short_props = props;
    short_props["max.poll.interval.ms"] = "5000";
    Calls calls;
    Consumer slow(short_props);
    slow.subscribe({topic}, &calls);
    ASSERT_TRUE(poll_until_split(slow, calls, 3, other, 60s)) << other.error();
    const auto taken = calls.owned;
    const int lost_before = calls.lost;
    const auto t0 = Clock::now();
    // Without polling: the other member must get all six while this one sleeps.
    bool moved = false;
    while (Clock::now() - t0 < 9s) {
      moved = moved || other.assignment().size() == 6;
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(moved) << "the member that stopped polling did not leave the group";
    EXPECT_EQ(calls.lost, lost_before);  // listener calls happen inside poll(), not meanwhile
    ASSERT_TRUE(poll_until_split(slow, calls, 3, other, 60s)) << other.error();
    EXPECT_EQ(calls.lost, lost_before + 1);  // the next poll gave the partitions up as lost, then rejoined
    EXPECT_FALSE(taken.empty());
    slow.close();
    other.stop();
    EXPECT_EQ(other.error(), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Brokers, Groups, ::testing::Values("current", "previous"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param) == "current" ? "Kafka4" : "Kafka39";
                         });

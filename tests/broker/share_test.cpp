// Share groups (KIP-932) against a real broker that has them (Kafka 4.2+,
// share.version finalized): scripts/test names its main broker (Kafka 4.4) in
// KWIRE_SHARE_BOOTSTRAP (and its release in KWIRE_SHARE_VERSION), started with
// the lock duration's lower bound brought down
// (group.share.min.record.lock.duration.ms=1000) so that a lock can end within
// a test. Without that variable these tests skip (e.g. a main broker older
// than 4.2).
//
// Each test uses its own topic (one partition) and group; the group's start
// offset is the earliest (group config share.auto.offset.reset).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common.hpp"
#include "kwire/client/admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/share_consumer.hpp"
#include "kwire/protocol/errors.hpp"

using namespace kwire_test;
using namespace std::chrono_literals;
using kwire::client::AcknowledgeType;
using kwire::client::ShareConsumer;
using kwire::client::ShareRecord;

namespace {

constexpr int kLockMs = 2000;  // the groups' share.record.lock.duration.ms

std::string share_bootstrap() {
  const char* env = std::getenv("KWIRE_SHARE_BOOTSTRAP");
  return env && *env ? std::string(env) : std::string();
}

class Share : public ::testing::Test {
 protected:
  void SetUp() override {
    servers_ = share_bootstrap();
    if (servers_.empty())
      GTEST_SKIP() << "KWIRE_SHARE_BOOTSTRAP is not set (scripts/test sets it for a Kafka 4.2+ main broker)";
    topic_ = unique_topic("share");
    group_ = unique_topic("share-group");
    auto r = run_kwire({"create-topic", "-b", servers_, "-t", topic_, "--partitions", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    kwire::client::KafkaClient client({{"bootstrap.servers", servers_}});
    kwire::client::Admin admin(client);
    auto result = admin.alter_configs(
        {kwire::client::ConfigResourceKind::group, group_},
        {{"share.auto.offset.reset", kwire::client::ConfigChange::Op::set, "earliest"},
         {"share.record.lock.duration.ms", kwire::client::ConfigChange::Op::set, std::to_string(kLockMs)}});
    ASSERT_EQ(result.error_code, 0) << result.error_message;
  }

  std::map<std::string, std::string> props(const std::string& mode = "explicit") const {
    return {{"bootstrap.servers", servers_}, {"group.id", group_}, {"share.acknowledgement.mode", mode}};
  }

  // Polls until `want` records arrived or `limit` passed.
  static std::vector<ShareRecord> poll_for(ShareConsumer& c, std::size_t want, std::chrono::milliseconds limit) {
    std::vector<ShareRecord> got;
    const auto until = std::chrono::steady_clock::now() + limit;
    while (got.size() < want && std::chrono::steady_clock::now() < until) {
      auto records = c.poll(200ms);
      for (auto& r : records) got.push_back(std::move(r));
    }
    return got;
  }

  std::string servers_, topic_, group_;
};

std::string value_of(const ShareRecord& r) { return r.value ? std::string(r.value->begin(), r.value->end()) : ""; }

}  // namespace

// Three members of one group share the topic's only partition: every member
// is assigned it, and each record goes to exactly one of them.
TEST_F(Share, ThreeMembersShareOnePartitionEachRecordOnce) {
  constexpr int kRecords = 600;
  produce_numbered(servers_, topic_, 0, kRecords);
  std::mutex mu;
  std::map<std::int64_t, int> seen;  // offset -> deliveries seen by all members
  std::vector<std::size_t> per_member(3);
  std::vector<std::vector<kwire::client::TopicPartition>> assignments(3);
  std::vector<std::thread> members;
  std::atomic<int> total{0};
  for (int m = 0; m < 3; ++m)
    members.emplace_back([&, m] {
      auto p = props("implicit");
      p["max.poll.records"] = "50";
      ShareConsumer c(p);
      c.subscribe({topic_});
      const auto until = std::chrono::steady_clock::now() + 30s;
      while (total.load() < kRecords && std::chrono::steady_clock::now() < until) {
        auto records = c.poll(200ms);
        std::lock_guard lock(mu);
        for (auto& r : records) {
          ++seen[r.offset];
          ++per_member[m];
          ++total;
        }
        if (assignments[m].empty()) assignments[m] = c.assignment();
      }
      // Stays a member until every record is in, so that all three hold
      // the partition together.
      while (total.load() < kRecords && std::chrono::steady_clock::now() < until) c.poll(100ms);
      c.close(5s);
    });
  for (auto& t : members) t.join();
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kRecords));
  for (auto& [offset, n] : seen) EXPECT_EQ(n, 1) << "offset " << offset << " was delivered " << n << " times";
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(assignments[m], (std::vector<kwire::client::TopicPartition>{{topic_, 0}})) << "member " << m;
  }
  std::cout << "records per member: " << per_member[0] << ", " << per_member[1] << ", " << per_member[2] << "\n";
}

// RELEASE gives records back at once (long before the lock would end) with
// their delivery count raised; REJECT archives them; ACCEPT completes them.
// In explicit mode each poll's records are acknowledged before the next.
TEST_F(Share, ReleaseRedeliversAtOnceRejectNever) {
  produce_numbered(servers_, topic_, 0, 10);
  ShareConsumer c(props());
  c.subscribe({topic_});
  // Offsets 0-4: released, then accepted; 5-9: rejected.
  std::map<std::int64_t, std::vector<int>> deliveries, want;
  for (int o = 0; o < 10; ++o) want[o] = o < 5 ? std::vector<int>{1, 2} : std::vector<int>{1};
  std::map<std::int64_t, std::chrono::steady_clock::time_point> released_at;
  std::chrono::steady_clock::duration slowest_return{};
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (deliveries != want && std::chrono::steady_clock::now() < until) {
    for (auto& r : c.poll(200ms)) {
      deliveries[r.offset].push_back(r.delivery_count);
      EXPECT_EQ(value_of(r), "v-" + std::to_string(r.offset));
      if (r.delivery_count > 1) {
        slowest_return = std::max(slowest_return, std::chrono::steady_clock::now() - released_at[r.offset]);
        c.acknowledge(r, AcknowledgeType::accept);
      } else if (r.offset < 5) {
        released_at[r.offset] = std::chrono::steady_clock::now();
        c.acknowledge(r, AcknowledgeType::release);
      } else {
        c.acknowledge(r, AcknowledgeType::reject);
      }
    }
  }
  ASSERT_EQ(deliveries, want);
  EXPECT_LT(slowest_return, std::chrono::milliseconds(kLockMs)) << "released records came back only after the lock";
  auto results = c.commit_sync(10s);
  for (auto& [tp, code] : results) EXPECT_EQ(code, 0) << tp.topic << "-" << tp.partition;
  // Nothing more: the rejected ones are archived, the accepted ones done.
  auto rest = poll_for(c, 1, std::chrono::milliseconds(2 * kLockMs));
  EXPECT_TRUE(rest.empty()) << rest.size() << " records came back, the first at offset " << rest[0].offset;
}

// A record released again and again is archived once its delivery count
// reaches the group's limit (group.share.delivery.count.limit, 5 by default).
TEST_F(Share, ReleasedRecordIsArchivedAtTheDeliveryLimit) {
  produce_numbered(servers_, topic_, 0, 1);
  ShareConsumer c(props());
  c.subscribe({topic_});
  std::vector<int> counts;
  for (int round = 0; round < 8; ++round) {
    auto got = poll_for(c, 1, round == 0 ? 20s : 5s);
    if (got.empty()) break;
    ASSERT_EQ(got.size(), 1u);
    counts.push_back(got[0].delivery_count);
    c.acknowledge(got[0], AcknowledgeType::release);
  }
  EXPECT_EQ(counts, (std::vector<int>{1, 2, 3, 4, 5}));
}

// An acknowledgement after the lock ended is refused: INVALID_RECORD_STATE
// for the partition, and the record is delivered again.
TEST_F(Share, AcknowledgementAfterTheLockIsInvalidRecordState) {
  produce_numbered(servers_, topic_, 0, 1);
  ShareConsumer c(props());
  c.subscribe({topic_});
  auto got = poll_for(c, 1, 20s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(c.acquisition_lock_ms(), kLockMs);
  std::this_thread::sleep_for(std::chrono::milliseconds(kLockMs + 1500));
  c.acknowledge(got[0], AcknowledgeType::accept);
  auto results = c.commit_sync(10s);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results.begin()->second, static_cast<std::int16_t>(kwire::protocol::ErrorCode::invalid_record_state));
  auto again = poll_for(c, 1, 10s);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].offset, got[0].offset);
  EXPECT_EQ(again[0].delivery_count, 2);
}

// RENEW (KIP-1222) keeps a record acquired past its lock: renewed every
// 0.6 lock durations, four times (2.4 locks in all), it is handed out again
// by each next poll with delivery count 1, never to anyone else, and the
// accept at the end is taken. Without the renewals the lock would have ended
// and the accept been refused (AcknowledgementAfterTheLockIsInvalidRecordState).
TEST_F(Share, RenewedRecordStaysAcquiredPastItsLock) {
  produce_numbered(servers_, topic_, 0, 1);
  ShareConsumer c(props());
  std::vector<kwire::client::AcknowledgementCommit> commits;
  c.set_acknowledgement_offsets_callback(
      [&](const kwire::client::AcknowledgementCommit& commit) { commits.push_back(commit); });
  c.subscribe({topic_});
  auto got = poll_for(c, 1, 20s);
  ASSERT_EQ(got.size(), 1u);
  const auto acquired = std::chrono::steady_clock::now();
  ShareRecord record = got[0];
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kLockMs * 6 / 10));
    c.acknowledge(record, AcknowledgeType::renew);
    auto again = c.poll(5s);
    ASSERT_EQ(again.size(), 1u) << "renewal " << i;
    EXPECT_EQ(again[0].offset, record.offset);
    EXPECT_EQ(again[0].delivery_count, 1);
    EXPECT_EQ(again[0].value, record.value);
    record = again[0];
  }
  EXPECT_GT(std::chrono::steady_clock::now() - acquired, std::chrono::milliseconds(kLockMs * 2));
  EXPECT_EQ(c.acquisition_lock_ms(), kLockMs);
  c.acknowledge(record, AcknowledgeType::accept);
  auto results = c.commit_sync(10s);
  const kwire::client::TopicPartition tp{topic_, 0};
  EXPECT_EQ(results, (kwire::client::AcknowledgementResults{{tp, 0}}));
  ASSERT_EQ(commits.size(), 5u);  // four renewals and the accept, each answered without error
  for (auto& commit : commits) {
    EXPECT_EQ(commit.error_code, 0);
    EXPECT_EQ(commit.offsets, (std::vector<std::int64_t>{record.offset}));
  }
  EXPECT_TRUE(poll_for(c, 1, 3s).empty());  // accepted: never delivered again
  // A renewal is refused in implicit mode, where the next poll accepts.
  ShareConsumer implicit(props("implicit"));
  EXPECT_THROW(implicit.acknowledge(record, AcknowledgeType::renew), kwire::client::ShareAcknowledgementModeError);
}

// The offsets callback gets, once per partition and request, the offsets the
// request acknowledged (every type, ascending) and its outcome, on the thread
// that called commit_sync or poll: first a ShareAcknowledge, then
// acknowledgements carried by the next ShareFetch.
TEST_F(Share, OffsetsCallbackGetsEachRequestsOffsetsOnTheCallersThread) {
  produce_numbered(servers_, topic_, 0, 10);
  ShareConsumer c(props());
  std::vector<kwire::client::AcknowledgementCommit> commits;
  std::vector<kwire::client::AcknowledgementResults> results_seen;
  bool other_thread = false;
  const auto caller = std::this_thread::get_id();
  c.set_acknowledgement_offsets_callback([&](const kwire::client::AcknowledgementCommit& commit) {
    other_thread = other_thread || std::this_thread::get_id() != caller;
    commits.push_back(commit);
  });
  c.set_acknowledgement_commit_callback(
      [&](const kwire::client::AcknowledgementResults& results) { results_seen.push_back(results); });
  c.subscribe({topic_});
  auto got = poll_for(c, 10, 20s);
  ASSERT_EQ(got.size(), 10u);
  for (auto& r : got) c.acknowledge(r, r.offset < 5 ? AcknowledgeType::accept : AcknowledgeType::reject);
  EXPECT_TRUE(commits.empty());
  auto results = c.commit_sync(10s);
  const kwire::client::TopicPartition tp{topic_, 0};
  EXPECT_EQ(results, (kwire::client::AcknowledgementResults{{tp, 0}}));
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_EQ(commits[0].partition, tp);
  EXPECT_EQ(commits[0].offsets, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(commits[0].error_code, 0);
  ASSERT_EQ(results_seen.size(), 1u);
  EXPECT_EQ(results_seen[0], results);

  produce_numbered(servers_, topic_, 10, 13);
  auto more = poll_for(c, 3, 20s);
  ASSERT_EQ(more.size(), 3u);
  for (auto& r : more) c.acknowledge(r, AcknowledgeType::accept);
  c.poll(500ms);  // carries them
  ASSERT_EQ(commits.size(), 2u);
  EXPECT_EQ(commits[1].partition, tp);
  EXPECT_EQ(commits[1].offsets, (std::vector<std::int64_t>{10, 11, 12}));
  EXPECT_EQ(commits[1].error_code, 0);
  EXPECT_FALSE(other_thread);
  c.close(5s);
  EXPECT_EQ(commits.size(), 2u);  // nothing was left to acknowledge
}

// A member killed (SIGKILL) while it holds records: they come back to the
// other member once the lock ends, with delivery count 2, and every record is
// delivered. The killed member is `kwire consume --share` writing into a pipe
// nobody reads, so it blocks with records acquired and unacknowledged.
TEST_F(Share, KilledMembersRecordsComeBackAfterTheLock) {
  constexpr int kRecords = 2000;
  produce_numbered(servers_, topic_, 0, kRecords, std::string(200, 'x') + "-");
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  std::vector<std::string> args = {kwire_bin(), "consume", "-b", servers_, "--share", group_, topic_, "--json"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, out[1]);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  // The child's first output means it acquired records; it then fills the
  // pipe (64 KiB, about 250 records) and blocks.
  pollfd readable{out[0], POLLIN, 0};
  const int ready = ::poll(&readable, 1, 30000);
  if (ready != 1) ::kill(pid, SIGKILL);
  ASSERT_EQ(ready, 1) << "the child wrote nothing in 30 s";
  std::this_thread::sleep_for(500ms);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto killed_at = std::chrono::steady_clock::now();
  // Whatever it had written is not read: those records were acknowledged
  // only locally, and come back too.
  ::close(out[0]);

  ShareConsumer c(props("implicit"));
  c.subscribe({topic_});
  std::map<std::int64_t, int> counts;
  std::optional<std::chrono::steady_clock::duration> first_redelivery;
  const auto until = std::chrono::steady_clock::now() + 40s;
  while (counts.size() < static_cast<std::size_t>(kRecords) && std::chrono::steady_clock::now() < until) {
    for (auto& r : c.poll(200ms)) {
      counts[r.offset] = r.delivery_count;
      if (r.delivery_count >= 2 && !first_redelivery) first_redelivery = std::chrono::steady_clock::now() - killed_at;
    }
  }
  EXPECT_EQ(counts.size(), static_cast<std::size_t>(kRecords));
  std::size_t redelivered = 0;
  for (auto& [offset, n] : counts)
    if (n == 2) ++redelivered;
  EXPECT_GT(redelivered, 0u) << "no record held by the killed member came back";
  ASSERT_TRUE(first_redelivery.has_value());
  // The lock was taken before the kill, so it may end up to kLockMs after it;
  // the records cannot come back before the lock was taken plus kLockMs.
  EXPECT_LT(*first_redelivery, std::chrono::milliseconds(kLockMs + 10000));
  std::cout << redelivered << " records redelivered, the first "
            << std::chrono::duration_cast<std::chrono::milliseconds>(*first_redelivery).count()
            << " ms after the kill\n";
}

// A mixed group: a kwire member and Kafka's own console share consumer
// (Java's KafkaShareConsumer) read one partition together; between them every
// record is delivered once.
TEST_F(Share, MixedGroupWithKafkasConsoleShareConsumer) {
  constexpr int kRecords = 400;
  const char* version = std::getenv("KWIRE_SHARE_VERSION");
  std::vector<std::string> tool = {"--version",
                                   version && *version ? version : "4.4.0",
                                   "console-share-consumer",
                                   "--bootstrap-server",
                                   servers_,
                                   "--topic",
                                   topic_,
                                   "--group",
                                   group_,
                                   "--timeout-ms",
                                   "10000"};
  CommandResult java;
  std::thread java_thread([&] { java = run_kafka_tool(tool, {}, 120); });
  ShareConsumer c(props("implicit"));
  c.subscribe({topic_});
  kwire::client::KafkaClient client({{"bootstrap.servers", servers_}});
  kwire::client::Admin admin(client);
  // Both members joined and were assigned the partition (a new member's
  // assignment comes with a heartbeat, every group.share.heartbeat.interval.ms).
  std::size_t assigned = 0;
  std::vector<std::string> mine;
  for (int i = 0; i < 150 && assigned < 2; ++i) {
    for (auto& r : c.poll(200ms)) mine.push_back(value_of(r));
    try {
      assigned = 0;
      for (auto& m : admin.describe_share_group(group_).members)
        if (!m.assignment.empty()) ++assigned;
    } catch (const kwire::client::KafkaError&) {
    }
  }
  ASSERT_EQ(assigned, 2u) << "Kafka's console share consumer never joined";
  // Records produced a few at a time while both members fetch.
  std::thread producer([&] {
    for (int from = 0; from < kRecords; from += 20) {
      produce_numbered(servers_, topic_, from, from + 20);
      std::this_thread::sleep_for(100ms);
    }
  });
  // kwire's member pauses between polls, so that the Java member's fetches
  // find records too.
  auto last = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - last < 8s) {
    for (auto& r : c.poll(200ms)) {
      mine.push_back(value_of(r));
      last = std::chrono::steady_clock::now();
    }
    std::this_thread::sleep_for(150ms);
  }
  producer.join();
  c.close(5s);
  java_thread.join();
  ASSERT_EQ(java.exit_code, 0) << java.describe();
  std::map<std::string, int> seen;
  for (auto& v : mine) ++seen[v];
  std::size_t theirs = 0;
  for (auto& line : split_lines(java.out))
    if (!line.empty()) {
      ++seen[line];
      ++theirs;
    }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kRecords));
  for (auto& [v, n] : seen) EXPECT_EQ(n, 1) << v << " was delivered " << n << " times";
  EXPECT_GT(theirs, 0u) << "Kafka's console share consumer got nothing\n" << java.err;
  std::cout << "kwire took " << mine.size() << " records, Kafka's console share consumer " << theirs << "\n";
}

// Crash safety of `kwire stream` on a real broker: SIGKILL at random points
// with restarts, a broker that stops and comes back while a stream runs, a
// broker down longer than the retry budget, and a full disk (RLIMIT_FSIZE)
// while a batch is written. Every test ends by checking the JSON Lines sink
// against the topic itself: every record exactly once, by topic, partition,
// offset and value, and the checkpoint's last commit at the topic's end.
//
// KWIRE_KILL_POINTS sets the number of SIGKILLs (default 50); KWIRE_KILL_SEED
// replays a run (the seed is printed).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include "child_process.hpp"
#include "common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"

namespace fs = std::filesystem;
using namespace kwire;
using namespace kwire_test;

namespace {

using Clock = std::chrono::steady_clock;
// (topic, partition, offset)
using Position = std::tuple<std::string, std::int32_t, std::int64_t>;

void create_topic_at(const std::string& servers, const std::string& topic, int partitions) {
  client::KafkaClient c({{"bootstrap.servers", servers}});
  c.create_topics({{topic, partitions, 1, {}}});
}

// Values "v-<i>" for i in [from, to), keyed by i so they spread over the partitions.
void produce_at(const std::string& servers, const std::string& topic, int from, int to) {
  produce_numbered(servers, topic, from, to, "v-", {{"acks", "all"}});
}

// The whole topic as the broker has it: position -> value.
std::map<Position, std::string> topic_contents(const std::string& servers, const std::string& topic) {
  client::KafkaClient admin({{"bootstrap.servers", servers}});
  auto md = admin.metadata(std::vector<std::string>{topic});
  std::vector<client::TopicPartition> tps;
  for (auto& p : md.topic(topic)->partitions) tps.push_back({topic, p.partition});
  client::Consumer consumer({{"bootstrap.servers", servers}, {"auto.offset.reset", "earliest"}});
  consumer.assign(tps);
  auto ends = consumer.end_offsets(tps);
  for (auto& tp : tps) consumer.seek(tp, 0);
  std::map<Position, std::string> out;
  std::size_t want = 0;
  for (auto& [_, end] : ends) want += static_cast<std::size_t>(end);
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (out.size() < want && Clock::now() < deadline)
    for (auto& r : consumer.poll(std::chrono::milliseconds(500)))
      out[{*r.topic, r.partition, r.offset}] = std::string(r.value_view());
  return out;
}

checkpoint::PartitionOffsets end_offsets_at(const std::string& servers, const std::string& topic) {
  client::KafkaClient admin({{"bootstrap.servers", servers}});
  auto md = admin.metadata(std::vector<std::string>{topic});
  std::map<client::TopicPartition, std::int64_t> req;
  for (auto& p : md.topic(topic)->partitions) req[{topic, p.partition}] = client::kLatestTimestamp;
  checkpoint::PartitionOffsets out;
  for (auto& [tp, lo] : admin.list_offsets(req)) out[tp.topic][tp.partition] = lo.offset;
  return out;
}

struct SinkRows {
  std::map<Position, std::vector<std::string>> by_position;  // every value seen at a position
  std::size_t lines = 0;
  std::vector<std::string> bad_lines;  // lines that are not a complete JSON object
};

SinkRows read_sink(const fs::path& dir) {
  SinkRows s;
  if (!fs::exists(dir)) return s;
  simdjson::dom::parser parser;
  for (auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.rfind("part-", 0) != 0 || e.path().extension() != ".jsonl") continue;
    for (auto& line : split_lines(read_file(e.path()))) {
      ++s.lines;
      simdjson::dom::element doc;
      std::string_view topic, value;
      std::int64_t partition = 0, offset = 0;
      if (parser.parse(line).get(doc) || doc["topic"].get_string().get(topic) ||
          doc["partition"].get_int64().get(partition) || doc["offset"].get_int64().get(offset) ||
          doc["value"].get_string().get(value)) {
        s.bad_lines.push_back(name + ": " + line);
        continue;
      }
      s.by_position[{std::string(topic), static_cast<std::int32_t>(partition), offset}].emplace_back(value);
    }
  }
  return s;
}

// Asserts that the sink holds exactly the topic's records, each once, with
// the value the broker has at that position.
void expect_sink_matches_topic(const fs::path& sink_dir, const std::map<Position, std::string>& topic,
                               std::size_t expected_records) {
  ASSERT_EQ(topic.size(), expected_records) << "the topic itself does not hold what was produced";
  auto sink = read_sink(sink_dir);
  EXPECT_TRUE(sink.bad_lines.empty()) << "first bad line: " << sink.bad_lines.front();
  std::size_t duplicates = 0, missing = 0, wrong = 0, extra = 0;
  for (auto& [pos, value] : topic) {
    auto it = sink.by_position.find(pos);
    if (it == sink.by_position.end()) {
      if (missing++ < 5)
        ADD_FAILURE() << "missing " << std::get<0>(pos) << "-" << std::get<1>(pos) << "@" << std::get<2>(pos);
      continue;
    }
    if (it->second.size() > 1 && duplicates++ < 5)
      ADD_FAILURE() << it->second.size() << " copies of " << std::get<1>(pos) << "@" << std::get<2>(pos);
    for (auto& v : it->second)
      if (v != value && wrong++ < 5)
        ADD_FAILURE() << "value " << v << " at " << std::get<2>(pos) << ", broker has " << value;
  }
  for (auto& [pos, _] : sink.by_position)
    if (!topic.count(pos)) ++extra;
  EXPECT_EQ(duplicates, 0u);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(extra, 0u);
  EXPECT_EQ(sink.lines, expected_records);
}

// Temp files (".<name>.<16 hex>.tmp") under `dir`, recursively.
std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.size() > 4 && name.front() == '.' && name.substr(name.size() - 4) == ".tmp")
      out.push_back(e.path().string());
  }
  return out;
}

// (b) and (c): the last commit is the last logged batch, its offsets are the
// topic's end offsets, no temp file is left and the progress log parses.
void expect_checkpoint_complete(const fs::path& ck, const checkpoint::PartitionOffsets& topic_end) {
  checkpoint::Checkpoint cp(ck);
  auto last_offsets = cp.latest_offsets_batch();
  auto last_commit = cp.latest_commit_batch();
  ASSERT_TRUE(last_offsets.has_value());
  ASSERT_TRUE(last_commit.has_value());
  EXPECT_EQ(*last_commit, *last_offsets);
  EXPECT_EQ(checkpoint::offsets_to_json(cp.read_offsets(*last_commit)), checkpoint::offsets_to_json(topic_end));
  auto rp = cp.resume();
  EXPECT_FALSE(rp.replay_batch.has_value());
  EXPECT_EQ(rp.next_batch_id, *last_commit + 1);
  EXPECT_EQ(temp_files(ck), std::vector<std::string>{});
  simdjson::dom::parser parser;
  for (auto& line : split_lines(read_file(ck / "progress.jsonl"))) {
    simdjson::dom::element doc;
    EXPECT_FALSE(parser.parse(line).get(doc)) << "progress.jsonl line does not parse: " << line;
  }
}

std::vector<std::string> stream_args(const std::string& servers, const std::string& topic, const fs::path& dir,
                                     std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"stream",
                                   "-b",
                                   servers,
                                   "-o",
                                   "subscribe=" + topic,
                                   "-o",
                                   "startingOffsets=earliest",
                                   "--checkpoint",
                                   (dir / "ck").string(),
                                   "--sink",
                                   "jsonl:" + (dir / "out").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// ------------------------------------------------------ kill -9 at random points

// What a kill interrupted, read from what it left behind.
struct Snapshot {
  std::optional<std::int64_t> last_offsets, last_commit;
  std::map<std::string, fs::file_time_type> sink_files;
};

Snapshot snapshot(const fs::path& dir) {
  Snapshot s;
  auto latest = [](const fs::path& d) -> std::optional<std::int64_t> {
    std::optional<std::int64_t> best;
    if (!fs::exists(d)) return best;
    for (auto& e : fs::directory_iterator(d)) {
      auto n = e.path().filename().string();
      if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) continue;
      auto id = std::stoll(n);
      if (!best || id > *best) best = id;
    }
    return best;
  };
  s.last_offsets = latest(dir / "ck" / "offsets");
  s.last_commit = latest(dir / "ck" / "commits");
  if (fs::exists(dir / "out"))
    for (auto& e : fs::directory_iterator(dir / "out"))
      if (e.path().extension() == ".jsonl") s.sink_files[e.path().filename().string()] = e.last_write_time();
  return s;
}

std::string classify_kill(const fs::path& dir, const Snapshot& before, const Snapshot& after) {
  auto has_temp = [&](const fs::path& d) { return !temp_files(d).empty(); };
  if (has_temp(dir / "ck" / "offsets")) return "offset-log write";
  if (has_temp(dir / "ck" / "commits")) return "commit-log write";
  if (has_temp(dir / "out")) return "sink write";
  if (!fs::exists(dir / "ck" / "sources" / "0" / "0")) return "startup";
  if (after.last_offsets && (!after.last_commit || *after.last_commit < *after.last_offsets)) {
    const auto part = fmt::format("part-{:020d}.jsonl", *after.last_offsets);
    auto now = after.sink_files.find(part);
    auto was = before.sink_files.find(part);
    const bool written_now =
        now != after.sink_files.end() && (was == before.sink_files.end() || was->second != now->second);
    return written_now ? "after sink write, before commit" : "reading (offsets logged)";
  }
  if (after.last_offsets == before.last_offsets) return "startup/planning (no new batch logged)";
  return "planning (after a commit)";
}

}  // namespace

TEST(Crash, KillNineAtRandomPointsStillExactlyOnce) {
  const std::string servers = bootstrap();
  ASSERT_TRUE(tcp_reachable(servers)) << "no broker at " << servers;
  const int points = env_int("KWIRE_KILL_POINTS", 50);
  const char* seed_env = std::getenv("KWIRE_KILL_SEED");
  const std::uint64_t seed = seed_env && *seed_env ? std::strtoull(seed_env, nullptr, 10) : std::random_device{}();
  std::cout << "kill points " << points << ", seed " << seed << " (replay: KWIRE_KILL_SEED=" << seed << ")\n";
  RecordProperty("kill_seed", std::to_string(seed));
  std::mt19937_64 rng(seed);

  const auto topic = unique_topic("crash-kill");
  create_topic_at(servers, topic, 3);
  int produced = 3000;
  produce_at(servers, topic, 0, produced);
  TempDir dir;
  // Small batches back to back (processing-time 0: the next trigger at once,
  // the process never ends by itself), so a random delay lands in any phase
  // of some batch. The final run drains the rest with AvailableNow.
  const auto final_args = stream_args(servers, topic, dir.path(), {"-o", "maxOffsetsPerTrigger=150"});
  auto args = final_args;
  args.insert(args.end(), {"--trigger", "processing-time=0"});

  std::map<std::string, int> phases;
  int kills = 0, finished = 0;
  const auto t0 = Clock::now();
  for (int round = 0; round < points; ++round) {
    // New records now and then, so a run always has work and batches plan
    // over data that grew since the previous run.
    if (round % 2 == 0) {
      produce_at(servers, topic, produced, produced + 400);
      produced += 400;
    }
    // One kill in five early (process start, checkpoint open, metadata), the
    // rest anywhere in the run.
    const int delay_ms = rng() % 5 == 0 ? static_cast<int>(rng() % 40) : 40 + static_cast<int>(rng() % 300);
    const auto before = snapshot(dir.path());
    Child child(args, dir / "stderr.log");
    ASSERT_TRUE(child.valid());
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (child.poll()) {
      ADD_FAILURE() << "the stream ended by itself (status " << *child.poll() << "):\n"
                    << read_file(dir / "stderr.log");
      ++finished;
      continue;
    }
    child.kill_now(SIGKILL);
    ++kills;
    phases[classify_kill(dir.path(), before, snapshot(dir.path()))]++;
    // (c) what the kill left must not break the next start: every logged
    // batch and the resume point read cleanly.
    if (fs::exists(dir / "ck" / "metadata")) {
      checkpoint::Checkpoint cp(dir / "ck");
      ASSERT_NO_THROW({
        auto rp = cp.resume();
        if (auto n = cp.latest_offsets_batch())
          for (std::int64_t b = std::max<std::int64_t>(0, *n - 3); b <= *n; ++b) cp.read_offsets(b);
        (void)rp;
      }) << "after kill "
         << kills << " (seed " << seed << ")";
    }
  }
  // The final run drains everything and exits cleanly.
  Child last(final_args, dir / "stderr.log");
  ASSERT_EQ(last.wait(std::chrono::seconds(120)), 0) << read_file(dir / "stderr.log");
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  std::string summary =
      fmt::format("{} kills, {} runs ended before their kill point, {} records, {:.1f} s; phases:", kills, finished,
                  produced, seconds);
  for (auto& [phase, n] : phases) summary += fmt::format(" [{}: {}]", phase, n);
  std::cout << summary << "\n";
  RecordProperty("kill_summary", summary);
  EXPECT_EQ(kills, points) << summary;

  expect_sink_matches_topic(dir / "out", topic_contents(servers, topic), static_cast<std::size_t>(produced));
  expect_checkpoint_complete(dir / "ck", end_offsets_at(servers, topic));
}

// ------------------------------------------------------------ full disk

// The checkpoint's offset log cannot be written (EFBIG past RLIMIT_FSIZE, as
// ENOSPC would): the batch fails naming the file and the reason, nothing is
// logged or committed, and a run with room finishes exactly-once. Then the
// same with room for the offset log but not for the sink file.
TEST(Crash, FullDiskFailsTheBatchCleanlyAndTheNextRunIsExactlyOnce) {
  const std::string servers = bootstrap();
  ASSERT_TRUE(tcp_reachable(servers)) << "no broker at " << servers;
  const auto topic = unique_topic("crash-disk");
  create_topic_at(servers, topic, 2);
  produce_at(servers, topic, 0, 2000);
  TempDir dir;
  const auto args = stream_args(servers, topic, dir.path(), {"-o", "maxOffsetsPerTrigger=1000"});
  {
    Child ok(args, dir / "run1.log");
    ASSERT_EQ(ok.wait(std::chrono::seconds(60)), 0) << read_file(dir / "run1.log");
  }
  const auto ck = dir / "ck";
  const auto first_runs = checkpoint::Checkpoint(ck).latest_commit_batch();
  ASSERT_TRUE(first_runs.has_value());
  const std::int64_t next = *first_runs + 1;  // the batch the full disk hits
  const auto next_name = std::to_string(next);
  const auto part = fmt::format("part-{:020d}.jsonl", next);

  produce_at(servers, topic, 2000, 3000);
  {
    // No byte can be written: offsets/<next> fails.
    Child full(args, dir / "run2.log", 0);
    ASSERT_EQ(full.wait(std::chrono::seconds(60)), 1) << read_file(dir / "run2.log");
    const auto err = read_file(dir / "run2.log");
    EXPECT_NE(err.find((ck / "offsets" / next_name).string()), std::string::npos) << err;
    EXPECT_NE(err.find("File too large"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(ck / "offsets" / next_name));
    EXPECT_FALSE(fs::exists(ck / "commits" / next_name));
    EXPECT_EQ(temp_files(dir.path()), std::vector<std::string>{});
  }
  {
    // Room for the offset log (about 1.1 KB with Spark's conf map) but not
    // for the batch file (1000 rows, tens of KB).
    Child full(args, dir / "run3.log", 4096);
    ASSERT_EQ(full.wait(std::chrono::seconds(60)), 1) << read_file(dir / "run3.log");
    const auto err = read_file(dir / "run3.log");
    EXPECT_NE(err.find((dir / "out" / part).string()), std::string::npos) << err;
    EXPECT_NE(err.find("File too large"), std::string::npos) << err;
    checkpoint::Checkpoint cp(ck);
    EXPECT_EQ(cp.latest_offsets_batch(), std::optional<std::int64_t>(next));  // logged, complete
    EXPECT_FALSE(fs::exists(ck / "commits" / next_name));                     // not committed
    EXPECT_FALSE(fs::exists(dir / "out" / part));
    EXPECT_EQ(temp_files(dir.path()), std::vector<std::string>{});
    auto rp = cp.resume();
    ASSERT_TRUE(rp.replay_batch.has_value());
    EXPECT_EQ(*rp.replay_batch, next);
  }
  produce_at(servers, topic, 3000, 3500);
  {
    Child ok(args, dir / "run4.log");
    ASSERT_EQ(ok.wait(std::chrono::seconds(60)), 0) << read_file(dir / "run4.log");
    EXPECT_NE(read_file(dir / "run4.log").find("batch " + next_name + " (replayed)"), std::string::npos)
        << read_file(dir / "run4.log");
  }
  expect_sink_matches_topic(dir / "out", topic_contents(servers, topic), 3500);
  expect_checkpoint_complete(ck, end_offsets_at(servers, topic));
}

// ------------------------------------------------- broker stop and restart

namespace {

bool port_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A broker of this test's own on a free port in 29500..29900 (P and P+1),
// stopped when the object goes away. Its data survives stop()/start().
class OwnBroker {
 public:
  OwnBroker() {
    std::mt19937 rng(std::random_device{}());
    for (int attempt = 0; attempt < 20 && port_ < 0; ++attempt) {
      const int p = 29500 + static_cast<int>(rng() % 200) * 2;
      if (port_free(p) && port_free(p + 1)) port_ = p;
    }
  }
  ~OwnBroker() {
    if (port_ > 0) run(script() + " stop --port " + std::to_string(port_), {}, 90);
  }
  OwnBroker(const OwnBroker&) = delete;
  OwnBroker& operator=(const OwnBroker&) = delete;

  int port() const { return port_; }
  std::string servers() const { return "127.0.0.1:" + std::to_string(port_); }
  CommandResult start(bool keep_data) {
    return run(script() + " start --port " + std::to_string(port_) + (keep_data ? " --keep-data" : ""), {}, 180);
  }
  CommandResult stop() { return run(script() + " stop --port " + std::to_string(port_), {}, 90); }

 private:
  static std::string script() { return shell_quote(source_dir() + "/scripts/kafka"); }
  int port_ = -1;
};

// Sink lines so far (complete batch files only).
std::size_t sink_lines(const fs::path& dir) { return read_sink(dir).lines; }

bool wait_for_lines(const fs::path& out, std::size_t n, Child& child, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (sink_lines(out) >= n) return true;
    if (child.poll()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

}  // namespace

class CrashBroker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    broker_ = new OwnBroker();
    if (broker_->port() < 0) return;
    auto r = broker_->start(false);
    if (r.exit_code != 0) start_error_ = r.describe() + r.out;
  }
  static void TearDownTestSuite() {
    delete broker_;
    broker_ = nullptr;
  }
  void SetUp() override {
    ASSERT_GT(broker_->port(), 0) << "no free port pair in 29500..29900";
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    if (!tcp_reachable(broker_->servers())) {
      auto r = broker_->start(true);
      ASSERT_EQ(r.exit_code, 0) << r.describe() << r.out;
    }
  }
  static OwnBroker* broker_;
  static std::string start_error_;
};
OwnBroker* CrashBroker::broker_ = nullptr;
std::string CrashBroker::start_error_;

// The broker stops for a few seconds while a processing-time stream runs and
// comes back with its data: the stream retries, resumes and stays exactly-once.
TEST_F(CrashBroker, BrokerRestartWhileStreamingResumesExactlyOnce) {
  const auto servers = broker_->servers();
  const auto topic = unique_topic("crash-restart");
  create_topic_at(servers, topic, 2);
  produce_at(servers, topic, 0, 3000);
  TempDir dir;
  // Retry budget well above a broker restart: 240 x 500 ms for listing
  // partitions and offsets.
  Child stream(stream_args(servers, topic, dir.path(),
                           {"--trigger", "processing-time=500 milliseconds", "-o", "maxOffsetsPerTrigger=1000", "-o",
                            "fetchOffset.numRetries=240", "-o", "fetchOffset.retryIntervalMs=500"}),
               dir / "stream.log");
  ASSERT_TRUE(wait_for_lines(dir / "out", 3000, stream, std::chrono::seconds(60))) << read_file(dir / "stream.log");

  auto stopped = broker_->stop();
  ASSERT_EQ(stopped.exit_code, 0) << stopped.describe();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_FALSE(stream.poll().has_value()) << "the stream ended while the broker was down:\n"
                                          << read_file(dir / "stream.log");
  auto started = broker_->start(true);
  ASSERT_EQ(started.exit_code, 0) << started.describe() << started.out;

  produce_at(servers, topic, 3000, 6000);
  ASSERT_TRUE(wait_for_lines(dir / "out", 6000, stream, std::chrono::seconds(90))) << read_file(dir / "stream.log");
  EXPECT_EQ(stream.kill_now(SIGTERM), 0) << read_file(dir / "stream.log");
  const auto log = read_file(dir / "stream.log");
  EXPECT_NE(log.find("failed (attempt"), std::string::npos) << "no retry was logged:\n" << log;

  expect_sink_matches_topic(dir / "out", topic_contents(servers, topic), 6000);
  expect_checkpoint_complete(dir / "ck", end_offsets_at(servers, topic));
}

// A broker down longer than a small retry budget stops the stream with a
// clear error; once the broker is back the checkpoint resumes exactly-once.
TEST_F(CrashBroker, BrokerDownBeyondTheRetryBudgetFailsClearlyThenResumes) {
  const auto servers = broker_->servers();
  const auto topic = unique_topic("crash-down");
  create_topic_at(servers, topic, 2);
  produce_at(servers, topic, 0, 2000);
  TempDir dir;
  const std::vector<std::string> budget = {"-X", "retries=2",
                                           "-X", "retry.backoff.ms=100",
                                           "-X", "request.timeout.ms=2000",
                                           "-X", "default.api.timeout.ms=3000",
                                           "-X", "socket.connection.setup.timeout.ms=1000",
                                           "-o", "fetchOffset.numRetries=2",
                                           "-o", "fetchOffset.retryIntervalMs=200",
                                           "-o", "kafkaConsumer.pollTimeoutMs=5000",
                                           "-o", "maxOffsetsPerTrigger=1000"};
  auto args = stream_args(servers, topic, dir.path(), budget);
  args.insert(args.end(), {"--trigger", "processing-time=300 milliseconds"});
  {
    Child stream(args, dir / "stream.log");
    ASSERT_TRUE(wait_for_lines(dir / "out", 2000, stream, std::chrono::seconds(60))) << read_file(dir / "stream.log");
    auto stopped = broker_->stop();
    ASSERT_EQ(stopped.exit_code, 0) << stopped.describe();
    const auto t = Clock::now();
    const int status = stream.wait(std::chrono::seconds(60));
    const double waited = std::chrono::duration<double>(Clock::now() - t).count();
    const auto log = read_file(dir / "stream.log");
    EXPECT_EQ(status, 1) << log;
    EXPECT_LT(waited, 30.0) << log;
    EXPECT_NE(log.find("kwire: error:"), std::string::npos) << log;
    // Either the broker is gone (the error names it and the refused
    // connection) or the budget ran out while it was shutting down, when it
    // still answers ListOffsets with LEADER_NOT_AVAILABLE (the error names
    // the partition and the code).
    const bool refused = log.find(servers) != std::string::npos && log.find("Connection refused") != std::string::npos;
    const bool leaving = log.find("ListOffsets for " + topic) != std::string::npos &&
                         log.find("LEADER_NOT_AVAILABLE") != std::string::npos;
    EXPECT_TRUE(refused || leaving) << "the error names neither the broker nor the partition's error:\n" << log;
    std::cout << "stream stopped " << waited << " s after the broker; last line: " << split_lines(log).back() << "\n";
  }
  auto started = broker_->start(true);
  ASSERT_EQ(started.exit_code, 0) << started.describe() << started.out;
  produce_at(servers, topic, 2000, 3000);
  {
    auto once = stream_args(servers, topic, dir.path(), {"-o", "maxOffsetsPerTrigger=1000"});
    Child rerun(once, dir / "rerun.log");
    ASSERT_EQ(rerun.wait(std::chrono::seconds(90)), 0) << read_file(dir / "rerun.log");
  }
  expect_sink_matches_topic(dir / "out", topic_contents(servers, topic), 3000);
  expect_checkpoint_complete(dir / "ck", end_offsets_at(servers, topic));
}

// Consumer groups against real brokers (Kafka 4.1 at KWIRE_BOOTSTRAP, 3.9 at
// KWIRE_BOOTSTRAP_PREVIOUS): three members share a six-partition topic, each
// record is consumed once across them, a member that closes or is killed
// hands its partitions over, and the committed offsets read back equal what
// was consumed. Also kwire consume -G and kwire groups.
#include <signal.h>

#include <set>
#include <thread>

#include "group_support.hpp"

using namespace kwire_test;
using namespace kwire_test::groups;

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
// group.consumer.session.timeout.ms, which scripts/kafka sets to 6 s.
void kwire_test::groups::Groups::killed_member_case(bool kip848) {
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
  const double session_s = 6.0;
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

INSTANTIATE_TEST_SUITE_P(Brokers, Groups, ::testing::Values("current", "previous"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param) == "current" ? "Kafka4" : "Kafka39";
                         });

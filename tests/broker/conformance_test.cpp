// The API x version matrix against real brokers, and dump-log on real segment
// files. The current broker is KWIRE_BOOTSTRAP; scripts/test also starts a
// broker of the previous major (3.9.x, which still speaks the old versions
// 4.0 removed) and names it in KWIRE_BOOTSTRAP_PREVIOUS.
#include <set>

#include "common.hpp"

using namespace kwire_test;

namespace {

struct Row {
  std::string api;
  std::set<int> exercised;
  std::set<int> skipped;
  std::string result;
  std::vector<std::string> failures;
  std::string note;
};

std::map<std::string, Row> conformance(const std::string& bootstrap_servers) {
  auto r = run_kwire({"conformance", "-b", bootstrap_servers, "--json"}, {}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\nstdout:\n" << r.out;
  std::map<std::string, Row> rows;
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(r.out);
  auto doc = parser.iterate(json);
  for (auto item : doc.get_array()) {
    Row row;
    row.api = std::string(std::string_view(item["api"].get_string()));
    for (auto v : item["exercised"].get_array()) row.exercised.insert(static_cast<int>(int64_t(v.get_int64())));
    for (auto v : item["skipped"].get_array()) row.skipped.insert(static_cast<int>(int64_t(v.get_int64())));
    row.result = std::string(std::string_view(item["result"].get_string()));
    for (auto f : item["failures"].get_array()) row.failures.emplace_back(std::string_view(f.get_string()));
    std::string_view note;
    if (!item["note"].get_string().get(note)) row.note = std::string(note);
    rows[row.api] = row;
  }
  return rows;
}

bool contains_range(const std::set<int>& s, int lo, int hi) {
  for (int v = lo; v <= hi; ++v)
    if (!s.count(v)) return false;
  return true;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (auto& s : v) out += s + "\n";
  return out;
}

}  // namespace

class Conformance : public BrokerTest {};

TEST_F(Conformance, EveryDeclaredVersionTheCurrentBrokerOffersWorks) {
  auto rows = conformance(bootstrap());
  const char* apis[] = {"ApiVersions",
                        "Metadata",
                        "Produce",
                        "ListOffsets",
                        "Fetch",
                        "CreateTopics",
                        "DeleteTopics",
                        "CreatePartitions",
                        "DeleteRecords",
                        "OffsetForLeaderEpoch",
                        "FindCoordinator",
                        "JoinGroup",
                        "SyncGroup",
                        "Heartbeat",
                        "LeaveGroup",
                        "OffsetCommit",
                        "OffsetFetch",
                        "OffsetDelete",
                        "ListGroups",
                        "DescribeGroups",
                        "ConsumerGroupHeartbeat",
                        "ConsumerGroupDescribe"};
  for (auto* api : apis) {
    ASSERT_TRUE(rows.count(api)) << api;
    EXPECT_EQ(rows[api].result, "ok") << api << "\n" << joined(rows[api].failures);
    EXPECT_FALSE(rows[api].exercised.empty()) << api;
  }
  // Kafka 4.x: Fetch 4..17+ (topic ids from 13), Metadata up to 12+, ListOffsets 1..9+.
  EXPECT_TRUE(contains_range(rows["Fetch"].exercised, 4, 17));
  EXPECT_TRUE(contains_range(rows["Metadata"].exercised, 4, 12));
  EXPECT_TRUE(contains_range(rows["ListOffsets"].exercised, 1, 9));
  EXPECT_TRUE(contains_range(rows["Produce"].exercised, 3, 11));
  EXPECT_TRUE(contains_range(rows["ApiVersions"].exercised, 0, 4));
  // OffsetForLeaderEpoch: 4.0 removed v0-v1 (KIP-896); 2-4 remain.
  EXPECT_TRUE(contains_range(rows["OffsetForLeaderEpoch"].exercised, 2, 4));
  // Consumer groups (Kafka 4.1: OffsetCommit from v2, OffsetFetch from v1;
  // JoinGroup v0-v1 back since 4.1; KIP-848 APIs on by default).
  EXPECT_TRUE(contains_range(rows["FindCoordinator"].exercised, 0, 6));
  EXPECT_TRUE(contains_range(rows["JoinGroup"].exercised, 0, 9));
  EXPECT_TRUE(contains_range(rows["SyncGroup"].exercised, 0, 5));
  EXPECT_TRUE(contains_range(rows["Heartbeat"].exercised, 0, 4));
  EXPECT_TRUE(contains_range(rows["LeaveGroup"].exercised, 0, 5));
  EXPECT_TRUE(contains_range(rows["OffsetCommit"].exercised, 2, 9));
  EXPECT_TRUE(contains_range(rows["OffsetFetch"].exercised, 1, 9));
  EXPECT_TRUE(contains_range(rows["OffsetDelete"].exercised, 0, 0));
  EXPECT_TRUE(contains_range(rows["ListGroups"].exercised, 0, 5));
  EXPECT_TRUE(contains_range(rows["DescribeGroups"].exercised, 0, 6));
  EXPECT_TRUE(contains_range(rows["ConsumerGroupHeartbeat"].exercised, 0, 1));
  EXPECT_TRUE(contains_range(rows["ConsumerGroupDescribe"].exercised, 0, 1));
  // Idempotence and transactions (4.1: transactions v2 on, so EndTxn v5 and
  // TxnOffsetCommit v5 run the KIP-890 flow; AddPartitionsToTxn v4-5 are the
  // brokers' own versions, accepted without an authorizer).
  const std::pair<const char*, int> txn[] = {
      {"InitProducerId", 5}, {"AddPartitionsToTxn", 5},   {"AddOffsetsToTxn", 4},  {"TxnOffsetCommit", 5},
      {"EndTxn", 5},         {"DescribeTransactions", 0}, {"ListTransactions", 2}, {"DescribeProducers", 0}};
  for (auto& [api, max] : txn) {
    ASSERT_TRUE(rows.count(api)) << api;
    EXPECT_EQ(rows[api].result, "ok") << api << "\n" << joined(rows[api].failures);
    EXPECT_TRUE(contains_range(rows[api].exercised, 0, max)) << api;
  }
  // ACLs (Kafka 4.0 removed v0; scripts/test runs the broker with Kafka's
  // StandardAuthorizer, so bindings are really created, listed and deleted),
  // ElectLeaders (ELECTION_NOT_NEEDED on one node) and DescribeLogDirs.
  const std::tuple<const char*, int, int> admin[] = {{"CreateAcls", 1, 3},
                                                     {"DescribeAcls", 1, 3},
                                                     {"DeleteAcls", 1, 3},
                                                     {"ElectLeaders", 0, 2},
                                                     {"DescribeLogDirs", 1, 4}};
  for (auto& [api, lo, hi] : admin) {
    ASSERT_TRUE(rows.count(api)) << api;
    EXPECT_EQ(rows[api].result, "ok") << api << "\n" << joined(rows[api].failures);
    EXPECT_TRUE(contains_range(rows[api].exercised, lo, hi)) << api;
    EXPECT_EQ(rows[api].note, "") << api << " (the broker under test must run an authorizer)";
  }
}

TEST_F(Conformance, PreviousMajorStillSpeaksTheOldVersions) {
  const char* prev = std::getenv("KWIRE_BOOTSTRAP_PREVIOUS");
  ASSERT_TRUE(prev && *prev) << "KWIRE_BOOTSTRAP_PREVIOUS is not set (scripts/test starts a 3.9 broker and sets it)";
  ASSERT_TRUE(tcp_reachable(prev)) << "nothing answers at " << prev;
  auto rows = conformance(prev);
  for (auto& [api, row] : rows) EXPECT_EQ(row.result, "ok") << api << "\n" << joined(row.failures);
  // The old versions 4.0 removed: Fetch v0-v3 return message sets (magic 0/1,
  // converted down by the broker), Produce v0-v2 carry them.
  EXPECT_TRUE(contains_range(rows["Fetch"].exercised, 0, 17));
  EXPECT_TRUE(contains_range(rows["Produce"].exercised, 0, 11));
  EXPECT_TRUE(rows["Produce"].skipped.empty());
  EXPECT_TRUE(contains_range(rows["ListOffsets"].exercised, 0, 9));
  EXPECT_TRUE(contains_range(rows["Metadata"].exercised, 0, 12));
  EXPECT_TRUE(contains_range(rows["CreateTopics"].exercised, 0, 7));
  ASSERT_TRUE(rows.count("OffsetForLeaderEpoch"));
  EXPECT_TRUE(contains_range(rows["OffsetForLeaderEpoch"].exercised, 0, 4));
  // The group APIs' old versions 4.0 removed.
  EXPECT_TRUE(contains_range(rows["OffsetCommit"].exercised, 0, 9));
  EXPECT_TRUE(contains_range(rows["OffsetFetch"].exercised, 0, 9));
  EXPECT_TRUE(contains_range(rows["JoinGroup"].exercised, 0, 9));
  EXPECT_TRUE(contains_range(rows["DescribeGroups"].exercised, 0, 5));
  EXPECT_TRUE(contains_range(rows["ConsumerGroupHeartbeat"].exercised, 0, 0));
  // 3.9 has no transactions v2: EndTxn and TxnOffsetCommit stop at v4.
  EXPECT_TRUE(contains_range(rows["EndTxn"].exercised, 0, 4));
  EXPECT_TRUE(contains_range(rows["TxnOffsetCommit"].exercised, 0, 4));
  EXPECT_TRUE(contains_range(rows["ListTransactions"].exercised, 0, 1));
  EXPECT_TRUE(contains_range(rows["InitProducerId"].exercised, 0, 5));
  // The ACL APIs' v0 (no pattern types), with or without an authorizer: this
  // broker runs none under scripts/test, so every version is checked to
  // answer SECURITY_DISABLED and the rows say "authorizer off".
  for (const char* api : {"CreateAcls", "DescribeAcls", "DeleteAcls"}) {
    EXPECT_TRUE(contains_range(rows[api].exercised, 0, 3)) << api;
    if (!rows[api].note.empty()) {
      EXPECT_EQ(rows[api].note.rfind("authorizer off:", 0), 0u) << rows[api].note;
    }
  }
  EXPECT_TRUE(contains_range(rows["ElectLeaders"].exercised, 0, 2));
  EXPECT_TRUE(contains_range(rows["DescribeLogDirs"].exercised, 0, 4));
}

class DumpLog : public BrokerTest {};

TEST_F(DumpLog, ReadsTheBrokersOwnSegmentFile) {
  const char* kafka_dir = std::getenv("KWIRE_KAFKA_DIR");
  ASSERT_TRUE(kafka_dir && *kafka_dir) << "KWIRE_KAFKA_DIR is not set (scripts/test sets it)";
  auto topic = unique_topic("dump-log");
  create_topic(topic, 1);
  std::string lines;
  for (int i = 0; i < 50; ++i) lines += "line-" + std::to_string(i) + "\n";
  auto p = run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-z", "zstd"}, lines);
  ASSERT_EQ(p.exit_code, 0) << p.describe();
  auto port = split_host_port(bootstrap()).second;
  auto segment =
      std::filesystem::path(kafka_dir) / std::to_string(port) / "data" / (topic + "-0") / "00000000000000000000.log";
  ASSERT_TRUE(std::filesystem::exists(segment)) << segment;
  auto r = run_kwire({"dump-log", "--json", segment.string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(r.out);
  auto doc = parser.iterate(json);
  int records = 0;
  int64_t expect_offset = 0;
  for (auto batch : doc["batches"].get_array()) {
    EXPECT_EQ(int64_t(batch["magic"].get_int64()), 2);
    EXPECT_TRUE(bool(batch["crcValid"].get_bool()));
    EXPECT_EQ(std::string_view(batch["compression"].get_string()), "zstd");
    for (auto rec : batch["records"].get_array()) {
      EXPECT_EQ(int64_t(rec["offset"].get_int64()), expect_offset);
      EXPECT_EQ(std::string(std::string_view(rec["value"].get_string())), "line-" + std::to_string(expect_offset));
      ++expect_offset;
      ++records;
    }
  }
  EXPECT_EQ(records, 50);
  // A damaged copy: the CRC is reported invalid, and the text form says so.
  auto copy = std::filesystem::temp_directory_path() / (topic + ".log");
  std::string bytes = read_file(segment);
  bytes[bytes.size() - 3] ^= 0x40;
  write_file(copy, bytes);
  auto bad = run_kwire({"dump-log", copy.string()});
  EXPECT_NE(bad.out.find("isvalid: false"), std::string::npos) << bad.out;
  std::filesystem::remove(copy);
}

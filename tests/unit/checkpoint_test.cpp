#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "../files.hpp"
#include "../temp_dir.hpp"
#include "kwire/checkpoint/checkpoint.hpp"

using namespace kwire::checkpoint;
namespace fs = std::filesystem;

namespace {

using kwire_test::names_in;
using kwire_test::read_all;
using kwire_test::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
}

const std::string kExpectedPrefix = R"(Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got )";

void expect_malformed(const std::string& input) {
  try {
    offsets_from_json(input);
    ADD_FAILURE() << "accepted: " << input;
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), kExpectedPrefix + input);
  }
}

}  // namespace

// ---- JSON ----

TEST(OffsetsJson, WritesSparkShapeSortedAndCompact) {
  PartitionOffsets o{{"b", {{10, 7}, {2, 5}}}, {"a", {{0, 123}, {1, 45}}}};
  EXPECT_EQ(offsets_to_json(o), R"({"a":{"0":123,"1":45},"b":{"2":5,"10":7}})");
  EXPECT_EQ(offsets_to_json({}), "{}");
  EXPECT_EQ(offsets_to_json({{"t", {}}}), R"({"t":{}})");
}

TEST(OffsetsJson, RoundTrip) {
  PartitionOffsets o{
      {"topicA", {{0, 23}, {1, -1}}}, {"topicB", {{0, -2}}}, {"big", {{2147483647, INT64_MAX}, {-5, INT64_MIN}}}};
  EXPECT_EQ(offsets_from_json(offsets_to_json(o)), o);
}

TEST(OffsetsJson, EscapesTopicNames) {
  PartitionOffsets o{{"we\"ird\\t\n", {{0, 1}}}};
  const std::string json = offsets_to_json(o);
  EXPECT_EQ(json, R"({"we\"ird\\t\n":{"0":1}})");
  EXPECT_EQ(offsets_from_json(json), o);
}

TEST(OffsetsJson, ParsesAnyKeyOrderAndWhitespace) {
  auto o = offsets_from_json(R"(  { "t2" : { "1" : 5 , "0" : 4 } , "t1" : { "0" : 9 } } )");
  PartitionOffsets expected{{"t1", {{0, 9}}}, {"t2", {{0, 4}, {1, 5}}}};
  EXPECT_EQ(o, expected);
  EXPECT_TRUE(offsets_from_json("{}").empty());
}

TEST(OffsetsJson, RejectsMalformedWithSparkMessage) {
  expect_malformed("");
  expect_malformed("[]");
  expect_malformed("null");
  expect_malformed("42");
  expect_malformed(R"({"t":[0,1]})");
  expect_malformed(R"({"t":5})");
  expect_malformed(R"({"t":null})");
  expect_malformed(R"({"t":{"0":"5"}})");
  expect_malformed(R"({"t":{"0":1.5}})");
  expect_malformed(R"({"t":{"0":1e3}})");
  expect_malformed(R"({"t":{"0":true}})");
  expect_malformed(R"({"t":{"0":9223372036854775808}})");
  expect_malformed(R"({"t":{"x":1}})");
  expect_malformed(R"({"t":{"":1}})");
  expect_malformed(R"({"t":{" 1":1}})");
  expect_malformed(R"({"t":{"+1":1}})");
  expect_malformed(R"({"t":{"2147483648":1}})");
  expect_malformed(R"({"t":{"1.0":1}})");
  expect_malformed(R"({"t":{"0":1})");
  expect_malformed(R"({"t":{"0":1}} trailing)");
}

TEST(OffsetsJson, NeverCrashesOnArbitraryBytes) {
  std::mt19937 rng(12345);
  const std::string seed = R"({"topicA":{"0":23,"1":-1},"topicB":{"0":-2}})";
  for (int i = 0; i < 3000; ++i) {
    std::string s = seed;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const auto pos = rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0: s.insert(pos, 1, static_cast<char>(rng() & 0xff)); break;
        case 1:
          if (pos < s.size()) s.erase(pos, 1);
          break;
        default:
          if (pos < s.size()) s[pos] = static_cast<char>(rng() & 0xff);
          break;
      }
    }
    try {
      (void)offsets_from_json(s);
    } catch (const CheckpointError&) {
    }
  }
  std::string deep(100000, '{');
  EXPECT_THROW(offsets_from_json(deep), CheckpointError);
  std::string nul("{\"t\":{\"0\":1}}\0", 14);
  try {
    (void)offsets_from_json(nul);
  } catch (const CheckpointError&) {
  }
}

// ---- atomic_write_file ----

TEST(AtomicWrite, WritesReplacesAndLeavesNoTempFile) {
  TempDir dir;
  const fs::path f = dir.path() / "file";
  atomic_write_file(f, "hello");
  EXPECT_EQ(slurp(f), "hello");
  atomic_write_file(f, std::string("bin\0ary", 7));
  EXPECT_EQ(slurp(f), std::string("bin\0ary", 7));
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"file"});
}

TEST(AtomicWrite, ErrorNamesPathAndErrno) {
  TempDir dir;
  const fs::path f = dir.path() / "missing-folder" / "file";
  try {
    atomic_write_file(f, "x");
    FAIL() << "expected an error";
  } catch (const CheckpointError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(f.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  }
}

// ---- Checkpoint layout ----

TEST(Checkpoint, CreatesLayoutAndStableId) {
  TempDir dir;
  std::string id;
  {
    Checkpoint c(dir.path() / "q");
    id = c.id();
    EXPECT_EQ(id.size(), 36u);
    EXPECT_EQ(id[14], '4');  // UUID v4
    EXPECT_TRUE(id[19] == '8' || id[19] == '9' || id[19] == 'a' || id[19] == 'b');
    EXPECT_TRUE(fs::is_directory(dir.path() / "q" / "offsets"));
    EXPECT_TRUE(fs::is_directory(dir.path() / "q" / "commits"));
    EXPECT_TRUE(fs::is_directory(dir.path() / "q" / "sources" / "0"));
    EXPECT_EQ(slurp(dir.path() / "q" / "metadata"), "{\"id\":\"" + id + "\"}");
  }
  Checkpoint again(dir.path() / "q");
  EXPECT_EQ(again.id(), id);
}

TEST(Checkpoint, CorruptMetadataNamesFile) {
  TempDir dir;
  fs::create_directories(dir.path() / "q");
  spit(dir.path() / "q" / "metadata", "garbage");
  try {
    Checkpoint c(dir.path() / "q");
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("metadata"), std::string::npos);
  }
}

TEST(Checkpoint, InitialOffsetsFormatAndOldFormat) {
  TempDir dir;
  Checkpoint c(dir.path());
  EXPECT_FALSE(c.initial_offsets().has_value());
  PartitionOffsets init{{"t", {{0, 5}, {1, 0}}}};
  c.write_initial_offsets(init);
  EXPECT_EQ(slurp(dir.path() / "sources" / "0" / "0"), std::string("\0v1\n", 4) + R"({"t":{"0":5,"1":0}})");
  EXPECT_EQ(c.initial_offsets(), init);
  // Same offsets again: fine. Different: refused, file kept.
  c.write_initial_offsets(init);
  EXPECT_THROW(c.write_initial_offsets({{"t", {{0, 6}}}}), CheckpointError);
  EXPECT_EQ(c.initial_offsets(), init);

  // Old formats: plain JSON, or 0x00 followed by JSON.
  spit(dir.path() / "sources" / "0" / "0", R"({"t":{"0":7}})");
  EXPECT_EQ(c.initial_offsets(), (PartitionOffsets{{"t", {{0, 7}}}}));
  spit(dir.path() / "sources" / "0" / "0", std::string("\0", 1) + R"({"t":{"0":8}})");
  EXPECT_EQ(c.initial_offsets(), (PartitionOffsets{{"t", {{0, 8}}}}));
  spit(dir.path() / "sources" / "0" / "0", std::string("\0v9\n{}", 6));
  EXPECT_THROW(c.initial_offsets(), CheckpointError);
}

TEST(Checkpoint, OffsetsAndCommitFileFormats) {
  TempDir dir;
  Checkpoint c(dir.path());
  PartitionOffsets end{{"t", {{0, 10}, {1, 20}}}};
  c.write_offsets(0, end, 1700000000123);
  // The conf map carries the 15 settings Spark 4.2 records, with a default
  // session's values, so Spark can resume the checkpoint (even mid-batch).
  EXPECT_EQ(slurp(dir.path() / "offsets" / "0"),
            "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1700000000123,\"conf\":{"
            R"("spark.sql.function.protobufExtensions.enabled":"false",)"
            R"("spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan":"false",)"
            R"("spark.sql.shuffle.partitions":"200",)"
            R"("spark.sql.streaming.aggregation.stateFormatVersion":"2",)"
            R"("spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion":"2",)"
            R"("spark.sql.streaming.join.stateFormatVersion":"2",)"
            R"("spark.sql.streaming.multipleWatermarkPolicy":"min",)"
            R"("spark.sql.streaming.queryEvolution.enableSourceEvolution":"false",)"
            R"("spark.sql.streaming.stateStore.compression.codec":"lz4",)"
            R"("spark.sql.streaming.stateStore.encodingFormat":"unsaferow",)"
            R"("spark.sql.streaming.stateStore.providerClass":)"
            R"("org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",)"
            R"("spark.sql.streaming.stateStore.rocksdb.formatVersion":"5",)"
            R"("spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion":"2",)"
            R"("spark.sql.streaming.stateStore.rowChecksum.enabled":"false",)"
            R"("spark.sql.streaming.statefulOperator.useStrictDistribution":"true"}})"
            "\n"
            R"({"t":{"0":10,"1":20}})");
  EXPECT_EQ(c.read_offsets(0), end);
  EXPECT_EQ(c.read_offsets_timestamp(0), 1700000000123);
  EXPECT_FALSE(c.has_commit(0));
  c.write_commit(0);
  EXPECT_TRUE(c.has_commit(0));
  EXPECT_EQ(slurp(dir.path() / "commits" / "0"), "v1\n{\"nextBatchWatermarkMs\":0}");
  c.write_commit(0);  // idempotent
  EXPECT_EQ(names_in(dir.path() / "offsets"), std::vector<std::string>{"0"});
  EXPECT_EQ(names_in(dir.path() / "commits"), std::vector<std::string>{"0"});
}

TEST(Checkpoint, ReadsSparkWrittenOffsetsWithConf) {
  TempDir dir;
  Checkpoint c(dir.path());
  spit(dir.path() / "offsets" / "3",
       "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":42,\"conf\":{\"spark.sql.shuffle."
       "partitions\":\"200\"}}\n{\"t\":{\"1\":4,\"0\":3}}\n");
  EXPECT_EQ(c.read_offsets(3), (PartitionOffsets{{"t", {{0, 3}, {1, 4}}}}));
  EXPECT_EQ(c.read_offsets_timestamp(3), 42);
}

TEST(Checkpoint, ReadsOffsetsWithoutConf) {
  TempDir dir;
  Checkpoint c(dir.path());
  spit(dir.path() / "offsets" / "0", "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":7}\n{\"t\":{\"0\":3}}");
  EXPECT_EQ(c.read_offsets(0), (PartitionOffsets{{"t", {{0, 3}}}}));
  spit(dir.path() / "offsets" / "1",
       "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":8,\"conf\":{}}\n{\"t\":{\"0\":4}}");
  EXPECT_EQ(c.read_offsets(1), (PartitionOffsets{{"t", {{0, 4}}}}));
  // An existing file without conf is write-once like any other: same offsets keep it.
  c.write_offsets(1, {{"t", {{0, 4}}}}, 9);
  EXPECT_EQ(c.read_offsets_timestamp(1), 8);
}

TEST(Checkpoint, WriteOnce) {
  TempDir dir;
  Checkpoint c(dir.path());
  PartitionOffsets end{{"t", {{0, 10}}}};
  c.write_offsets(4, end, 100);
  c.write_offsets(4, end, 100);  // identical: fine
  c.write_offsets(4, end, 999);  // same offsets: kept, original timestamp stays
  EXPECT_EQ(c.read_offsets_timestamp(4), 100);
  try {
    c.write_offsets(4, {{"t", {{0, 11}}}}, 100);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find((dir.path() / "offsets" / "4").string()), std::string::npos);
  }
  EXPECT_EQ(c.read_offsets(4), end);
  EXPECT_EQ(names_in(dir.path() / "offsets"), std::vector<std::string>{"4"});
}

TEST(Checkpoint, LatestBatchIgnoresTempAndNonNumericNames) {
  TempDir dir;
  Checkpoint c(dir.path());
  EXPECT_FALSE(c.latest_offsets_batch().has_value());
  EXPECT_FALSE(c.latest_commit_batch().has_value());
  c.write_offsets(0, {{"t", {{0, 1}}}}, 1);
  c.write_offsets(1, {{"t", {{0, 2}}}}, 2);
  c.write_offsets(2, {{"t", {{0, 3}}}}, 3);
  c.write_commit(0);
  c.write_commit(1);
  spit(dir.path() / "offsets" / ".7.abc.tmp", "junk");
  spit(dir.path() / "offsets" / "9.tmp", "junk");
  spit(dir.path() / "offsets" / "abc", "junk");
  spit(dir.path() / "offsets" / "010", "junk");
  fs::create_directories(dir.path() / "offsets" / "12");
  EXPECT_EQ(c.latest_offsets_batch(), 2);
  EXPECT_EQ(c.latest_commit_batch(), 1);
}

TEST(Checkpoint, CorruptFilesNameTheFile) {
  TempDir dir;
  Checkpoint c(dir.path());
  const fs::path f = dir.path() / "offsets" / "0";
  for (const std::string bad : {"", "v1", "v2\n{}\n{}", "v1\nnot json\n{\"t\":{\"0\":1}}", "v1\n{}\n{\"t\":{\"0\":x}}",
                                "v1\n{}\n-", "v1\n{}\n{}\n{}"}) {
    spit(f, bad);
    try {
      c.read_offsets(0);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
    }
    EXPECT_THROW(c.resume(), CheckpointError);
  }
  EXPECT_THROW(c.read_offsets(5), CheckpointError);  // missing
  spit(dir.path() / "commits" / "0", "garbage");
  EXPECT_THROW(c.has_commit(0), CheckpointError);
}

// ---- resume ----

TEST(Resume, FreshQueryStartsFromInitialOffsets) {
  TempDir dir;
  Checkpoint c(dir.path());
  ResumePoint rp = c.resume();
  EXPECT_EQ(rp.next_batch_id, 0);
  EXPECT_FALSE(rp.replay_batch);
  EXPECT_TRUE(rp.start.empty());
  EXPECT_FALSE(rp.replay_end);

  PartitionOffsets init{{"t", {{0, 3}}}};
  c.write_initial_offsets(init);
  rp = c.resume();
  EXPECT_EQ(rp.next_batch_id, 0);
  EXPECT_FALSE(rp.replay_batch);
  EXPECT_EQ(rp.start, init);
}

TEST(Resume, ReplaysUncommittedFirstBatchFromSources) {
  TempDir dir;
  PartitionOffsets init{{"t", {{0, 3}, {1, 0}}}};
  PartitionOffsets end0{{"t", {{0, 8}, {1, 4}}}};
  {
    Checkpoint c(dir.path());
    c.write_initial_offsets(init);
    c.write_offsets(0, end0, 1000);
  }  // crash before commit
  Checkpoint c(dir.path());
  ResumePoint rp = c.resume();
  EXPECT_EQ(rp.next_batch_id, 0);
  ASSERT_TRUE(rp.replay_batch);
  EXPECT_EQ(*rp.replay_batch, 0);
  EXPECT_EQ(rp.start, init);
  ASSERT_TRUE(rp.replay_end);
  EXPECT_EQ(*rp.replay_end, end0);
  EXPECT_EQ(c.read_offsets_timestamp(0), 1000);
}

TEST(Resume, ReplaysUncommittedBatchWithIdenticalRange) {
  TempDir dir;
  PartitionOffsets e0{{"t", {{0, 5}}}}, e1{{"t", {{0, 9}}}}, e2{{"t", {{0, 14}}}};
  {
    Checkpoint c(dir.path());
    c.write_initial_offsets({{"t", {{0, 0}}}});
    c.write_offsets(0, e0, 1);
    c.write_commit(0);
    c.write_offsets(1, e1, 2);
    c.write_commit(1);
    c.write_offsets(2, e2, 3);
  }
  Checkpoint c(dir.path());
  ResumePoint rp = c.resume();
  EXPECT_EQ(rp.next_batch_id, 2);
  ASSERT_TRUE(rp.replay_batch);
  EXPECT_EQ(*rp.replay_batch, 2);
  EXPECT_EQ(rp.start, e1);
  EXPECT_EQ(rp.replay_end, e2);
  // Replaying re-logs the same end: accepted, nothing changes.
  c.write_offsets(2, *rp.replay_end, 12345);
  EXPECT_EQ(c.read_offsets_timestamp(2), 3);
  c.write_commit(2);
  rp = c.resume();
  EXPECT_EQ(rp.next_batch_id, 3);
  EXPECT_FALSE(rp.replay_batch);
  EXPECT_EQ(rp.start, e2);
}

TEST(Resume, NextBatchAfterCommit) {
  TempDir dir;
  Checkpoint c(dir.path());
  c.write_initial_offsets({{"t", {{0, 0}}}});
  c.write_offsets(0, {{"t", {{0, 5}}}}, 1);
  c.write_commit(0);
  ResumePoint rp = c.resume();
  EXPECT_EQ(rp.next_batch_id, 1);
  EXPECT_FALSE(rp.replay_batch);
  EXPECT_FALSE(rp.replay_end);
  EXPECT_EQ(rp.start, (PartitionOffsets{{"t", {{0, 5}}}}));
}

TEST(Resume, MissingStartOfReplayIsAnError) {
  TempDir dir;
  Checkpoint c(dir.path());
  c.write_offsets(0, {{"t", {{0, 5}}}}, 1);  // no sources/0/0
  EXPECT_THROW(c.resume(), CheckpointError);
  TempDir dir2;
  Checkpoint c2(dir2.path());
  c2.write_offsets(7, {{"t", {{0, 5}}}}, 1);  // no offsets/6
  try {
    c2.resume();
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find((dir2.path() / "offsets" / "6").string()), std::string::npos);
  }
}

// ---- retention ----

TEST(Retention, KeepsMinBatchesToRetainOldFiles) {
  TempDir dir;
  Checkpoint c(dir.path(), 3);
  for (std::int64_t b = 0; b < 10; ++b) {
    c.write_offsets(b, {{"t", {{0, b + 1}}}}, b);
    c.write_commit(b);
  }
  // Spark keeps batches [current - minBatchesToRetain, current].
  EXPECT_EQ(names_in(dir.path() / "offsets"), (std::vector<std::string>{"6", "7", "8", "9"}));
  EXPECT_EQ(names_in(dir.path() / "commits"), (std::vector<std::string>{"6", "7", "8", "9"}));
  ResumePoint rp = c.resume();
  EXPECT_EQ(rp.next_batch_id, 10);
  EXPECT_EQ(rp.start, (PartitionOffsets{{"t", {{0, 10}}}}));
}

TEST(Retention, UncommittedBatchStillReplayableAfterPurge) {
  TempDir dir;
  {
    Checkpoint c(dir.path(), 1);
    for (std::int64_t b = 0; b < 5; ++b) {
      c.write_offsets(b, {{"t", {{0, b + 1}}}}, b);
      if (b < 4) c.write_commit(b);
    }
  }
  Checkpoint c(dir.path(), 1);
  ResumePoint rp = c.resume();
  EXPECT_EQ(rp.replay_batch, 4);
  EXPECT_EQ(rp.start, (PartitionOffsets{{"t", {{0, 4}}}}));
  EXPECT_EQ(rp.replay_end, (PartitionOffsets{{"t", {{0, 5}}}}));
  EXPECT_THROW(Checkpoint(dir.path(), 0), CheckpointError);
}

TEST(Retention, DefaultKeepsOneHundredOld) {
  TempDir dir;
  Checkpoint c(dir.path());
  for (std::int64_t b = 0; b < 105; ++b) c.write_offsets(b, {{"t", {{0, b}}}}, b);
  auto names = names_in(dir.path() / "offsets");
  EXPECT_EQ(names.size(), 101u);
  EXPECT_FALSE(fs::exists(dir.path() / "offsets" / "3"));
  EXPECT_TRUE(fs::exists(dir.path() / "offsets" / "4"));
}

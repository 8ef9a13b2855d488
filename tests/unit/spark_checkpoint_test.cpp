// Reading a checkpoint folder written by Spark itself for a query with one
// Kafka source: the files below are byte for byte what Spark writes
// (HDFSMetadataLog / OffsetSeqLog / CommitLog / KafkaSourceInitialOffsetWriter),
// including the hidden .crc side files of Hadoop's checksummed file system.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kwire/checkpoint/checkpoint.hpp"

namespace fs = std::filesystem;
using namespace kwire::checkpoint;

namespace {

class SparkCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kwire-spark-ck-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "offsets");
    fs::create_directories(root_ / "commits");
    fs::create_directories(root_ / "sources" / "0");
  }
  void TearDown() override { fs::remove_all(root_); }

  void put(const fs::path& rel, const std::string& bytes) {
    std::ofstream out(root_ / rel, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // offsets/N as OffsetSeqLog writes it: "v1", the metadata line with Spark's
  // session settings in "conf", one line per source; no final newline.
  void spark_offsets(int batch, long long timestamp, const std::string& source_json) {
    put(fs::path("offsets") / std::to_string(batch),
        "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":" + std::to_string(timestamp) +
            ",\"conf\":{\"spark.sql.streaming.stateStore.providerClass\":\"org.apache.spark.sql.execution.streaming."
            "state.HDFSBackedStateStoreProvider\",\"spark.sql.streaming.join.stateFormatVersion\":\"2\","
            "\"spark.sql.streaming.stateStore.compression.codec\":\"lz4\","
            "\"spark.sql.streaming.stateStore.rocksdb.formatVersion\":\"5\","
            "\"spark.sql.streaming.statefulOperator.useStrictDistribution\":\"true\","
            "\"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion\":\"2\","
            "\"spark.sql.streaming.multipleWatermarkPolicy\":\"min\","
            "\"spark.sql.streaming.aggregation.stateFormatVersion\":\"2\",\"spark.sql.shuffle.partitions\":\"200\"}}"
            "\n" +
            source_json);
    put(fs::path("offsets") / crc_name(batch), std::string("crc\0\0\0\x01", 7));
  }
  // Spark's checksum side file ".<batch>.crc", built piecewise: GCC 12 at -O3
  // reports a false -Wrestrict for `"." + std::string&&`.
  static std::string crc_name(int batch) {
    std::string name = ".";
    name += std::to_string(batch);
    name += ".crc";
    return name;
  }
  void spark_commit(int batch) {
    put(fs::path("commits") / std::to_string(batch), "v1\n{\"nextBatchWatermarkMs\":0}");
    put(fs::path("commits") / crc_name(batch), std::string("crc\0\0\0\x02", 7));
  }

  fs::path root_;
};

const char* kQueryId = "8c4f2e6a-1b3d-4c5e-9f7a-0d2b4e6f8a1c";

}  // namespace

TEST_F(SparkCheckpoint, ReadsSparkLayoutWithCurrentInitialOffsetFormat) {
  put("metadata", std::string("{\"id\":\"") + kQueryId + "\"}");
  put(".metadata.crc", std::string("crc\0\0\0\x03", 7));
  // KafkaSourceInitialOffsetWriter: a 0x00 byte, "v1\n", then the offsets JSON
  // (Jackson from a HashMap: key order is arbitrary).
  put(fs::path("sources") / "0" / "0", std::string(1, '\0') + "v1\n{\"events\":{\"1\":0,\"0\":0}}");
  put(fs::path("sources") / "0" / ".0.crc", std::string("crc\0\0\0\x04", 7));
  spark_offsets(0, 1714557600000, R"({"events":{"1":40,"0":60}})");
  spark_commit(0);
  spark_offsets(1, 1714557601000, R"({"events":{"0":100,"1":80}})");
  spark_commit(1);

  Checkpoint cp(root_);
  EXPECT_EQ(cp.id(), kQueryId);
  PartitionOffsets initial = {{"events", {{0, 0}, {1, 0}}}};
  ASSERT_TRUE(cp.initial_offsets());
  EXPECT_EQ(*cp.initial_offsets(), initial);
  EXPECT_EQ(cp.latest_offsets_batch(), 1);
  EXPECT_EQ(cp.latest_commit_batch(), 1);
  EXPECT_EQ(cp.read_offsets(0), (PartitionOffsets{{"events", {{0, 60}, {1, 40}}}}));
  EXPECT_EQ(cp.read_offsets_timestamp(1), 1714557601000);
  auto r = cp.resume();
  EXPECT_EQ(r.next_batch_id, 2);
  EXPECT_FALSE(r.replay_batch);
  EXPECT_EQ(r.start, (PartitionOffsets{{"events", {{0, 100}, {1, 80}}}}));
  // The metadata file is kept as Spark wrote it.
  std::ifstream in(root_ / "metadata");
  std::string meta((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(meta, std::string("{\"id\":\"") + kQueryId + "\"}");
}

TEST_F(SparkCheckpoint, UncommittedSparkBatchIsReplayedFromThePreviousOffsets) {
  put("metadata", std::string("{\"id\":\"") + kQueryId + "\"}\n");
  put(fs::path("sources") / "0" / "0", std::string(1, '\0') + "v1\n{\"t\":{\"0\":5}}");
  spark_offsets(0, 1000, R"({"t":{"0":10}})");
  spark_commit(0);
  spark_offsets(1, 2000, R"({"t":{"0":25}})");  // Spark stopped before commits/1
  Checkpoint cp(root_);
  auto r = cp.resume();
  ASSERT_TRUE(r.replay_batch);
  EXPECT_EQ(*r.replay_batch, 1);
  EXPECT_EQ(r.next_batch_id, 1);
  EXPECT_EQ(r.start, (PartitionOffsets{{"t", {{0, 10}}}}));
  EXPECT_EQ(*r.replay_end, (PartitionOffsets{{"t", {{0, 25}}}}));
  // kwire continues the log in Spark's format.
  cp.write_commit(1);
  cp.write_offsets(2, {{"t", {{0, 30}}}}, 3000);
  std::ifstream in(root_ / "offsets" / "2");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "v1");
  EXPECT_EQ(cp.resume().next_batch_id, 2);
}

TEST_F(SparkCheckpoint, ReadsSpark21InitialOffsets) {
  // Spark 2.1.0 wrote the JSON without the version line (with or without the 0x00 byte).
  put("metadata", std::string("{\"id\":\"") + kQueryId + "\"}");
  put(fs::path("sources") / "0" / "0", std::string(1, '\0') + "{\"t\":{\"0\":3,\"1\":4}}");
  Checkpoint cp(root_);
  ASSERT_TRUE(cp.initial_offsets());
  EXPECT_EQ(*cp.initial_offsets(), (PartitionOffsets{{"t", {{0, 3}, {1, 4}}}}));
  put(fs::path("sources") / "0" / "0", R"({"t":{"0":3,"1":4}})");
  ASSERT_TRUE(cp.initial_offsets());
  EXPECT_EQ(*cp.initial_offsets(), (PartitionOffsets{{"t", {{0, 3}, {1, 4}}}}));
  auto r = cp.resume();
  EXPECT_EQ(r.next_batch_id, 0);
  EXPECT_EQ(r.start, (PartitionOffsets{{"t", {{0, 3}, {1, 4}}}}));
}

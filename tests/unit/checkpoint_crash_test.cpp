// The checkpoint under a full disk and after a killed writer: a write that
// fails leaves no partial or truncated offsets/N or commits/N file, names the
// file and the OS reason, and the resume point is unchanged; temp files a
// killed writer left are removed when the checkpoint is opened.
//
// A full disk is simulated with RLIMIT_FSIZE (SIGXFSZ ignored): past the
// limit write() fails with EFBIG, or writes short first, as with ENOSPC.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../files.hpp"
#include "../temp_dir.hpp"
#include "kwire/checkpoint/checkpoint.hpp"

namespace fs = std::filesystem;
using namespace kwire::checkpoint;

namespace {

using kwire_test::FileSizeLimit;
using kwire_test::names_in;
using kwire_test::read_all;
using kwire_test::TempDir;

PartitionOffsets offsets(std::int64_t base) { return {{"events", {{0, base}, {1, base + 1}, {2, base + 2}}}}; }

// A checkpoint with batches 0 and 1 logged and committed.
void two_committed_batches(Checkpoint& cp) {
  cp.write_initial_offsets(offsets(0));
  cp.write_offsets(0, offsets(100), 1);
  cp.write_commit(0);
  cp.write_offsets(1, offsets(200), 2);
  cp.write_commit(1);
}

const std::string kTooLarge = std::strerror(EFBIG);

}  // namespace

TEST(CheckpointCrash, OffsetLogWriteOnAFullDiskFailsCleanly) {
  TempDir dir;
  Checkpoint cp(dir.path() / "ck");
  two_committed_batches(cp);
  // 0 bytes fail at the first write; 20 bytes first write short, then fail.
  for (rlim_t limit : {rlim_t{0}, rlim_t{20}}) {
    SCOPED_TRACE("RLIMIT_FSIZE " + std::to_string(limit));
    try {
      FileSizeLimit full(limit);
      ASSERT_TRUE(full.ok());
      cp.write_offsets(2, offsets(300), 3);
      FAIL() << "expected a CheckpointError";
    } catch (const CheckpointError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find((dir.path() / "ck" / "offsets" / "2").string()), std::string::npos) << what;
      EXPECT_NE(what.find(kTooLarge), std::string::npos) << what;
    }
    EXPECT_EQ(names_in(dir.path() / "ck" / "offsets"), (std::vector<std::string>{"0", "1"}));
    EXPECT_EQ(cp.latest_offsets_batch(), std::optional<std::int64_t>(1));
    const auto rp = cp.resume();
    EXPECT_EQ(rp.next_batch_id, 2);
    EXPECT_FALSE(rp.replay_batch.has_value());
    EXPECT_EQ(rp.start, offsets(200));
  }
  // With room again the same batch is logged as if nothing happened.
  cp.write_offsets(2, offsets(300), 3);
  EXPECT_EQ(cp.read_offsets(2), offsets(300));
  EXPECT_EQ(cp.read_offsets_timestamp(2), 3);
}

TEST(CheckpointCrash, CommitLogWriteOnAFullDiskLeavesTheBatchToReplay) {
  TempDir dir;
  Checkpoint cp(dir.path() / "ck");
  two_committed_batches(cp);
  cp.write_offsets(2, offsets(300), 3);
  try {
    FileSizeLimit full(0);
    ASSERT_TRUE(full.ok());
    cp.write_commit(2);
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir.path() / "ck" / "commits" / "2").string()), std::string::npos) << what;
    EXPECT_NE(what.find(kTooLarge), std::string::npos) << what;
  }
  EXPECT_EQ(names_in(dir.path() / "ck" / "commits"), (std::vector<std::string>{"0", "1"}));
  EXPECT_FALSE(cp.has_commit(2));
  auto rp = cp.resume();
  ASSERT_TRUE(rp.replay_batch.has_value());
  EXPECT_EQ(*rp.replay_batch, 2);
  EXPECT_EQ(rp.start, offsets(200));
  EXPECT_EQ(rp.replay_end, offsets(300));
  cp.write_commit(2);
  EXPECT_TRUE(cp.has_commit(2));
  EXPECT_EQ(cp.resume().next_batch_id, 3);
}

TEST(CheckpointCrash, InitialOffsetsAndMetadataOnAFullDiskFailCleanly) {
  TempDir dir;
  const auto root = dir.path() / "ck";
  try {
    FileSizeLimit full(0);
    ASSERT_TRUE(full.ok());
    Checkpoint cp(root);
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find((root / "metadata").string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(kTooLarge), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(root / "metadata"));
  Checkpoint cp(root);
  try {
    FileSizeLimit full(0);
    ASSERT_TRUE(full.ok());
    cp.write_initial_offsets(offsets(0));
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find((root / "sources" / "0" / "0").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(names_in(root / "sources" / "0"), std::vector<std::string>{});
  EXPECT_FALSE(cp.initial_offsets().has_value());
  cp.write_initial_offsets(offsets(0));
  EXPECT_EQ(cp.initial_offsets(), offsets(0));
}

TEST(CheckpointCrash, AtomicWriteOnAFullDiskKeepsTheOldContent) {
  TempDir dir;
  const auto file = dir.path() / "part-00000000000000000007.jsonl";
  atomic_write_file(file, "{\"old\":1}\n");
  try {
    FileSizeLimit full(5);
    ASSERT_TRUE(full.ok());
    atomic_write_file(file, std::string(4096, 'x'));
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(kTooLarge), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_all(file), "{\"old\":1}\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{file.filename().string()});
}

TEST(CheckpointCrash, OpeningRemovesTempFilesAKilledWriterLeft) {
  TempDir dir;
  const auto root = dir.path() / "ck";
  {
    Checkpoint cp(root);
    two_committed_batches(cp);
  }
  // What a writer killed between creating and renaming its temp files leaves.
  std::ofstream(root / "offsets" / ".2.0123456789abcdef.tmp") << "v1\n{\"batchWatermarkMs\":0,\"batchTi";
  std::ofstream(root / "commits" / ".2.fedcba9876543210.tmp") << "";
  std::ofstream(root / ".starting-options.00112233445566ff.tmp") << "startingoffsets=ear";
  std::ofstream(root / "sources" / "0" / ".0.aaaaaaaaaaaaaaaa.tmp") << "";
  // Not temp files of ours: kept.
  std::ofstream(root / "offsets" / ".notes.tmp") << "x";
  std::ofstream(root / "offsets" / ".2.0123456789ABCDEF.tmp") << "x";
  std::ofstream(root / "commits" / "README") << "x";

  Checkpoint cp(root);
  EXPECT_EQ(names_in(root / "offsets"), (std::vector<std::string>{".2.0123456789ABCDEF.tmp", ".notes.tmp", "0", "1"}));
  EXPECT_EQ(names_in(root / "commits"), (std::vector<std::string>{"0", "1", "README"}));
  EXPECT_EQ(names_in(root / "sources" / "0"), std::vector<std::string>{"0"});
  EXPECT_FALSE(fs::exists(root / ".starting-options.00112233445566ff.tmp"));
  auto rp = cp.resume();
  EXPECT_EQ(rp.next_batch_id, 2);
  EXPECT_FALSE(rp.replay_batch.has_value());
}

TEST(CheckpointCrash, RemoveStaleTempFilesOnlyTouchesTempNames) {
  TempDir dir;
  std::ofstream(dir.path() / ".part-00000000000000000003.jsonl.0123456789abcdef.tmp") << "{\"half";
  std::ofstream(dir.path() / "part-00000000000000000002.jsonl") << "{}\n";
  std::ofstream(dir.path() / ".x.0123456789abcde.tmp") << "15 hex digits";
  remove_stale_temp_files(dir.path());
  EXPECT_EQ(names_in(dir.path()),
            (std::vector<std::string>{".x.0123456789abcde.tmp", "part-00000000000000000002.jsonl"}));
  EXPECT_NO_THROW(remove_stale_temp_files(dir.path() / "missing"));
}

TEST(CheckpointCrash, CheckpointUnderARegularFileFailsWithTheReason) {
  TempDir dir;
  std::ofstream(dir.path() / "file") << "not a folder";
  try {
    Checkpoint cp(dir.path() / "file" / "ck");
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir.path() / "file" / "ck").string()), std::string::npos) << what;
    EXPECT_NE(what.find(std::strerror(ENOTDIR)), std::string::npos) << what;
  }
}

TEST(CheckpointCrash, ATruncatedLogFileIsReportedNotSkipped) {
  // Not something this writer leaves (it renames complete files only), but a
  // file cut short by another tool must stop the query with the file's name.
  TempDir dir;
  const auto root = dir.path() / "ck";
  Checkpoint cp(root);
  two_committed_batches(cp);
  std::ofstream(root / "offsets" / "2")
      << "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":3,\"conf\":{}}\n{\"events\":{\"0\":3";
  try {
    (void)cp.resume();
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find((root / "offsets" / "2").string()), std::string::npos) << e.what();
  }
}

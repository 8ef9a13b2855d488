// The checkpoint's writer lock, read-only access, empty paths and offsets no
// Kafka partition can have.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../temp_dir.hpp"
#include "kwire/checkpoint/checkpoint.hpp"

using kwire::checkpoint::Checkpoint;
using kwire::checkpoint::CheckpointError;
using kwire_test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string error_of_open(const fs::path& root) {
  try {
    Checkpoint cp(root);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "<no error>";
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::size_t entries_under(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& e : fs::recursive_directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST(CheckpointLock, SecondWriterOfTheSameCheckpointFailsAndNamesTheOwner) {
  TempDir dir;
  const auto root = dir / "ck";
  Checkpoint first(root);
  // flock locks belong to the open file description: a second open in the
  // same process conflicts just as one in another process does.
  EXPECT_EQ(error_of_open(root), "checkpoint " + root.string() + " is in use by another running query (pid " +
                                     std::to_string(::getpid()) + ")");
  // The first owner is untouched and keeps writing.
  first.write_initial_offsets({{"t", {{0, 0}}}});
  first.write_offsets(0, {{"t", {{0, 5}}}}, 1);
  first.write_commit(0);
  EXPECT_EQ(first.latest_commit_batch(), std::optional<std::int64_t>(0));
  EXPECT_TRUE(fs::exists(root / ".kwire.lock"));
}

TEST(CheckpointLock, LockIsReleasedWhenTheOwnerGoesAway) {
  TempDir dir;
  const auto root = dir / "ck";
  { Checkpoint first(root); }
  Checkpoint second(root);  // the lock file left behind is reused
  EXPECT_NE(error_of_open(root).find("is in use by another running query"), std::string::npos);
}

TEST(CheckpointLock, ReadOnlyViewNeitherLocksNorCreatesAnything) {
  TempDir dir;
  const auto missing = dir / "none";
  auto view = Checkpoint::open_read_only(missing);
  EXPECT_TRUE(view.read_only());
  EXPECT_EQ(view.id(), "");
  EXPECT_FALSE(view.latest_offsets_batch().has_value());
  EXPECT_FALSE(view.initial_offsets().has_value());
  EXPECT_EQ(view.resume().next_batch_id, 0);
  EXPECT_THROW(view.write_initial_offsets({{"t", {{0, 0}}}}), CheckpointError);
  EXPECT_THROW(view.write_offsets(0, {{"t", {{0, 1}}}}, 1), CheckpointError);
  EXPECT_THROW(view.write_commit(0), CheckpointError);
  EXPECT_FALSE(fs::exists(missing));

  // An empty folder stays empty.
  const auto empty = dir / "empty";
  fs::create_directory(empty);
  auto empty_view = Checkpoint::open_read_only(empty);
  EXPECT_EQ(empty_view.resume().next_batch_id, 0);
  EXPECT_EQ(entries_under(empty), 0u);

  // A running writer does not stop a reader.
  const auto root = dir / "ck";
  Checkpoint writer(root);
  writer.write_initial_offsets({{"t", {{0, 0}}}});
  writer.write_offsets(0, {{"t", {{0, 5}}}}, 1);
  writer.write_commit(0);
  auto reader = Checkpoint::open_read_only(root);
  EXPECT_EQ(reader.id(), writer.id());
  EXPECT_EQ(reader.resume().next_batch_id, 1);
}

TEST(CheckpointLock, EmptyPathIsRejected) {
  EXPECT_EQ(error_of_open(""), "Checkpoint path is empty");
  EXPECT_THROW(Checkpoint::open_read_only(""), CheckpointError);
}

TEST(CheckpointLock, OffsetBelowMinusTwoMakesTheFileCorrupt) {
  TempDir dir;
  const auto root = dir / "ck";
  Checkpoint cp(root);
  cp.write_initial_offsets({{"t", {{0, 0}, {1, 0}}}});
  const auto file = root / "offsets" / "0";
  write_text(file, "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"t\":{\"0\":-1,\"1\":-3}}");
  const std::string expected = "Corrupt checkpoint file " + file.string() + ": invalid offset -3 for t-1";
  try {
    cp.read_offsets(0);
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  try {
    cp.resume();
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  // -1 and -2 are Spark's markers and still read.
  write_text(file, "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"t\":{\"0\":-1,\"1\":-2}}");
  EXPECT_EQ(cp.read_offsets(0), (kwire::checkpoint::PartitionOffsets{{"t", {{0, -1}, {1, -2}}}}));

  // The same rule for sources/0/0.
  TempDir other;
  Checkpoint cp2(other / "ck");
  const auto initial = other / "ck" / "sources" / "0" / "0";
  write_text(initial, std::string("\0v1\n{\"t\":{\"0\":-7}}", 18));
  try {
    cp2.initial_offsets();
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), "Corrupt checkpoint file " + initial.string() + ": invalid offset -7 for t-0");
  }
}

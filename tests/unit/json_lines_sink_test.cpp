// JsonLinesSink and checkpoint::AtomicFileWriter: rows reach the batch's temp
// file as they arrive (memory bounded by the write buffer), the part file
// appears whole at commit, a replayed batch replaces it with identical
// content, and a failed or killed batch leaves no file behind once the next
// batch or sink starts. A full disk is simulated with RLIMIT_FSIZE.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../files.hpp"
#include "../temp_dir.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/sink.hpp"

namespace fs = std::filesystem;
using kwire::checkpoint::AtomicFileWriter;
using kwire::checkpoint::CheckpointError;
using kwire::source::JsonLinesSink;
using kwire::source::RecordJsonWriter;
using kwire::source::Row;
using kwire::source::Sink;
using kwire_test::FileSizeLimit;
using kwire_test::names_in;
using kwire_test::read_all;
using kwire_test::TempDir;

namespace {

// The temp files in `dir` (".<name>.<16 hex>.tmp").
std::vector<fs::path> temp_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().front() == '.' && e.path().extension() == ".tmp") out.push_back(e.path());
  return out;
}

// Rows with values "value-<offset>" for offsets [from, until) of t-0.
struct Rows {
  std::vector<std::string> values;
  std::vector<Row> rows;
  Rows(std::int64_t from, std::int64_t until) {
    for (auto o = from; o < until; ++o) values.push_back(fmt::format("value-{}", o));
    for (std::size_t i = 0; i < values.size(); ++i) {
      Row r;
      r.value = kwire::protocol::ByteSpan(reinterpret_cast<const std::uint8_t*>(values[i].data()), values[i].size());
      r.topic = "t";
      r.offset = from + static_cast<std::int64_t>(i);
      r.timestamp = 1000 + r.offset;
      r.timestamp_type = 0;
      rows.push_back(r);
    }
  }
};

std::string expected_lines(std::int64_t from, std::int64_t until) {
  std::string out;
  for (auto o = from; o < until; ++o)
    out += fmt::format(
        "{{\"value\":\"value-{}\",\"topic\":\"t\",\"partition\":0,\"offset\":{},"
        "\"timestamp\":\"1970-01-01T00:00:{:02}.{:03}Z\",\"timestampType\":0}}\n",
        o, o, (1000 + o) / 1000, (1000 + o) % 1000);
  return out;
}

// Formatters that call `before(row)` and then write the row's default line.
JsonLinesSink::FormatterFactory writing_after(std::function<void(const Row&)> before) {
  return [before = std::move(before)]() -> JsonLinesSink::Formatter {
    return [before, writer = RecordJsonWriter()](std::string& out, const Row& row) {
      before(row);
      writer.append(out, row);
      return true;
    };
  };
}

}  // namespace

TEST(AtomicFileWriter, AppendsGoToTheTempFileAndCommitRenamesIt) {
  TempDir dir;
  const auto target = dir / "out.txt";
  AtomicFileWriter w(target, 100);
  const std::string piece(30, 'a');
  for (int i = 0; i < 10; ++i) {
    w.append(piece);
    EXPECT_LE(w.buffered(), 100u);
  }
  EXPECT_EQ(w.size(), 300u);
  EXPECT_FALSE(fs::exists(target));
  ASSERT_TRUE(fs::exists(w.temp_path()));
  // Everything but the buffered tail is in the temp file already.
  EXPECT_EQ(fs::file_size(w.temp_path()) + w.buffered(), 300u);
  EXPECT_GE(fs::file_size(w.temp_path()), 200u);
  // A piece larger than the buffer is written through.
  w.append(std::string(250, 'b'));
  EXPECT_LE(w.buffered(), 100u);
  w.commit();
  EXPECT_EQ(read_all(target), std::string(300, 'a') + std::string(250, 'b'));
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.txt"});
  EXPECT_THROW(w.append("x"), CheckpointError);
  EXPECT_THROW(w.commit(), CheckpointError);
}

TEST(AtomicFileWriter, AFileThatGrowsPastSyncBytesIsSyncedByItsThreadWhileItGrows) {
  TempDir dir;
  const auto target = dir / "big.txt";
  AtomicFileWriter w(target, 1024, 64 * 1024);
  std::string expected;
  for (int i = 0; i < 64; ++i) {
    const std::string piece = fmt::format("{:05}", i) + std::string(4000, static_cast<char>('a' + i % 26));
    w.append(piece);
    expected += piece;
  }
  // 256 KB written: the thread was asked four times; its calls come as it
  // gets to run (waited for, with a bound).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (w.background_syncs() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(w.background_syncs(), 1u);
  EXPECT_LE(w.background_syncs(), 4u);
  w.append("tail\n");
  w.commit();
  EXPECT_EQ(read_all(target), expected + "tail\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"big.txt"});

  // Dropped while its thread runs: the thread ends, the temp file goes.
  {
    AtomicFileWriter dropped(dir / "dropped.txt", 1024, 64 * 1024);
    dropped.append(std::string(200 * 1024, 'd'));
  }
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"big.txt"});

  // A file that stays below sync_bytes starts no thread.
  AtomicFileWriter small(dir / "small.txt", 1024, 64 * 1024);
  small.append(std::string(60 * 1024, 's'));
  EXPECT_EQ(small.background_syncs(), 0u);
  small.commit();
  EXPECT_EQ(read_all(dir / "small.txt"), std::string(60 * 1024, 's'));
}

TEST(AtomicFileWriter, AbortOrDestructionKeepsTheOldFile) {
  TempDir dir;
  const auto target = dir / "out.txt";
  kwire::checkpoint::atomic_write_file(target, "old\n");
  {
    AtomicFileWriter w(target, 8);
    w.append("new content that is longer than the buffer\n");
    EXPECT_EQ(temp_files(dir.path()).size(), 1u);
  }
  EXPECT_EQ(read_all(target), "old\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.txt"});
  AtomicFileWriter w(target);
  w.append("x");
  w.abort();
  EXPECT_EQ(read_all(target), "old\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFileWriter, FullDiskFailsNamingTheFileAndLeavesNoTempFile) {
  TempDir dir;
  const auto target = dir / "part-00000000000000000004.jsonl";
  kwire::checkpoint::atomic_write_file(target, "{\"old\":1}\n");
  AtomicFileWriter w(target, 64);
  try {
    FileSizeLimit full(100);
    ASSERT_TRUE(full.ok());
    for (int i = 0; i < 10; ++i) w.append(std::string(50, 'x'));
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("Cannot write " + target.string() + ": File too large"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_all(target), "{\"old\":1}\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{target.filename().string()});
  EXPECT_THROW(w.commit(), CheckpointError);
}

TEST(AtomicFileWriter, MissingFolderIsReportedAtOnce) {
  TempDir dir;
  try {
    AtomicFileWriter w(dir / "no" / "such" / "f");
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("Cannot create temp file for " + (dir / "no" / "such" / "f").string()),
              std::string::npos)
        << e.what();
  }
}

TEST(JsonLinesSink, RowsReachTheTempFileBeforeCommitWithBoundedMemory) {
  TempDir dir;
  JsonLinesSink sink(dir / "out", RecordJsonWriter(), 4096);
  Rows rows(0, 5000);
  sink.begin_batch(3);
  for (std::size_t i = 0; i < rows.rows.size(); i += 100)
    sink.write(std::span<const Row>(rows.rows).subspan(i, std::min<std::size_t>(100, rows.rows.size() - i)));
  const auto expected = expected_lines(0, 5000);
  ASSERT_GT(expected.size(), 200000u);
  // Before the commit: no part file, and all but at most one buffer and the
  // lines still waiting to be appended is already in the temp file: at most
  // seven writes' here, the last Sink::kWritesBehind still being formatted,
  // four queued for the appender and one being appended.
  EXPECT_FALSE(fs::exists(sink.part_path(3)));
  auto temps = temp_files(dir / "out");
  ASSERT_EQ(temps.size(), 1u);
  EXPECT_EQ(temps[0].filename().string().rfind(".part-00000000000000000003.jsonl.", 0), 0u) << temps[0];
  constexpr std::int64_t kWritesOut = Sink::kWritesBehind + 4 + 1;
  EXPECT_GE(fs::file_size(temps[0]) + 4096 + expected_lines(5000 - 100 * kWritesOut, 5000).size(), expected.size());
  EXPECT_EQ(sink.commit_batch(3), 5000);
  EXPECT_EQ(read_all(sink.part_path(3)), expected);
  EXPECT_EQ(names_in(dir / "out"), std::vector<std::string>{"part-00000000000000000003.jsonl"});
}

TEST(JsonLinesSink, SeveralFormattingThreadsWriteTheLinesInRowOrder) {
  TempDir dir;
  int made = 0;
  RecordJsonWriter writer;
  JsonLinesSink::FormatterFactory factory = [&]() -> JsonLinesSink::Formatter {
    ++made;
    return [writer](std::string& out, const Row& row) {
      writer.append(out, row);
      return true;
    };
  };
  JsonLinesSink sink(dir / "out", factory, 3, 1000);
  EXPECT_EQ(made, 3);
  EXPECT_EQ(sink.format_threads(), 3u);
  // More rows than one round (3 x kRowsPerThread), in writes of uneven sizes.
  Rows rows(0, 30001);
  sink.begin_batch(0);
  const std::size_t sizes[] = {1, 13000, 17, 16983};
  std::size_t at = 0;
  for (std::size_t n : sizes) {
    sink.write(std::span<const Row>(rows.rows).subspan(at, n));
    at += n;
  }
  sink.write(std::span<const Row>(rows.rows).subspan(at));
  EXPECT_EQ(sink.commit_batch(0), 30001);
  EXPECT_EQ(read_all(sink.part_path(0)), expected_lines(0, 30001));
}

TEST(JsonLinesSink, AFormattingThreadHeldUpDoesNotHoldBackTheOthersBeyondTheirWindow) {
  TempDir dir;
  constexpr std::int64_t kChunk = JsonLinesSink::kRowsPerThread;
  std::mutex mu;
  std::condition_variable changed;
  std::int64_t highest = -1;  // the highest offset formatted before row 0 is
  bool row0_done = false, released = false;
  JsonLinesSink sink(dir / "out", writing_after([&](const Row& row) {
                       std::unique_lock lock(mu);
                       if (row.offset == 0) {
                         // The thread with the first chunk waits until the
                         // other has formatted the start of chunk 3.
                         released =
                             changed.wait_for(lock, std::chrono::seconds(10), [&] { return highest >= 3 * kChunk; });
                         row0_done = true;
                       } else if (!row0_done) {
                         highest = std::max(highest, row.offset);
                         changed.notify_all();
                       }
                     }),
                     2);
  Rows rows(0, 10 * kChunk + 5);
  sink.begin_batch(0);
  sink.write(rows.rows);
  EXPECT_EQ(sink.commit_batch(0), 10 * kChunk + 5);
  EXPECT_TRUE(released) << "the other thread stopped before chunk 3";
  // Two chunks per thread: chunks 1-3 at most while chunk 0 is not done.
  EXPECT_LT(highest, 4 * kChunk);
  EXPECT_EQ(read_all(sink.part_path(0)), expected_lines(0, 10 * kChunk + 5));
}

TEST(JsonLinesSink, TheNextWritesRowsAreFormattedWhileTheLastChunkOfTheWriteBeforeIsAndTheWriteAfterReturnsAfterIt) {
  TempDir dir;
  std::mutex mu;
  std::condition_variable changed;
  bool next_started = false, released = false, first_done = false;
  JsonLinesSink sink(dir / "out", writing_after([&](const Row& row) {
                       std::unique_lock lock(mu);
                       if (row.offset == 0) {
                         // The first write's only chunk waits until the other
                         // thread has started on the second write.
                         released = changed.wait_for(lock, std::chrono::seconds(10), [&] { return next_started; });
                       } else if (row.offset == 100) {
                         next_started = true;
                         changed.notify_all();
                       }
                       if (row.offset == 99) first_done = true;
                     }),
                     2);
  Rows rows(0, 300);
  const std::span<const Row> all(rows.rows);
  sink.begin_batch(0);
  sink.write(all.first(100));
  sink.write(all.subspan(100, 100));  // returns at once: two writes may be read at a time
  sink.write(all.subspan(200));
  // The third write returned: the first one's rows are read no more.
  {
    std::lock_guard lock(mu);
    EXPECT_TRUE(first_done);
  }
  EXPECT_EQ(sink.commit_batch(0), 300);
  EXPECT_TRUE(released) << "the second write was not formatted before the first was done";
  EXPECT_EQ(read_all(sink.part_path(0)), expected_lines(0, 300));
}

TEST(JsonLinesSink, RowsDroppedByFormattersOnSeveralThreadsAreNotCounted) {
  TempDir dir;
  RecordJsonWriter writer;
  JsonLinesSink sink(
      dir / "out",
      [&]() -> JsonLinesSink::Formatter {
        return [writer](std::string& out, const Row& row) {
          const std::size_t mark = out.size();
          out += "partial";  // dropped with the row
          if (row.offset % 2 == 1) return false;
          out.resize(mark);
          writer.append(out, row);
          return true;
        };
      },
      2);
  Rows rows(0, 10000);
  sink.begin_batch(1);
  sink.write(rows.rows);
  EXPECT_EQ(sink.commit_batch(1), 5000);
  std::string expected;
  for (std::int64_t o = 0; o < 10000; o += 2) expected += expected_lines(o, o + 1);
  EXPECT_EQ(read_all(sink.part_path(1)), expected);
}

TEST(JsonLinesSink, FormatterErrorOnAnotherThreadFailsTheWrite) {
  TempDir dir;
  RecordJsonWriter writer;
  JsonLinesSink sink(
      dir / "out",
      [&]() -> JsonLinesSink::Formatter {
        return [writer](std::string& out, const Row& row) {
          if (row.offset == 7000) throw std::runtime_error("bad row 7000");
          writer.append(out, row);
          return true;
        };
      },
      2);
  Rows rows(0, 8000);
  sink.begin_batch(2);
  // The sink writes behind: the error comes with the commit.
  ASSERT_TRUE(sink.writes_behind());
  sink.write(rows.rows);
  try {
    sink.commit_batch(2);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad row 7000");
  }
  // Or with one of the next two writes (the second waits for the failed one).
  sink.begin_batch(2);
  sink.write(rows.rows);
  int writes = 0;
  try {
    for (; writes < 2; ++writes) sink.write(std::span<const Row>(rows.rows).first(10));
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad row 7000");
  }
  EXPECT_LT(writes, 2);
  // The batch runs again without the bad row; the failed one leaves nothing.
  sink.begin_batch(2);
  sink.write(std::span<const Row>(rows.rows).first(7000));
  EXPECT_EQ(sink.commit_batch(2), 7000);
  EXPECT_EQ(read_all(sink.part_path(2)), expected_lines(0, 7000));
  EXPECT_EQ(names_in(dir / "out"), std::vector<std::string>{"part-00000000000000000002.jsonl"});
}

TEST(JsonLinesSink, WriteReturnsBeforeTheRowsAreFormattedAndReleaseRowsWaitsForThem) {
  TempDir dir;
  RecordJsonWriter writer;
  std::atomic<bool> go{false};
  std::atomic<int> formatted{0};
  JsonLinesSink sink(
      dir / "out",
      [&]() -> JsonLinesSink::Formatter {
        return [&, writer](std::string& out, const Row& row) {
          while (!go.load()) std::this_thread::yield();
          writer.append(out, row);
          formatted.fetch_add(1);
          return true;
        };
      },
      2);
  ASSERT_TRUE(sink.writes_behind());
  Rows rows(0, 3000);
  sink.begin_batch(3);
  sink.write(rows.rows);  // returns although no row can be formatted yet
  EXPECT_EQ(formatted.load(), 0);
  go.store(true);
  sink.release_rows();
  EXPECT_EQ(formatted.load(), 3000);
  // A single custom formatter runs in write().
  JsonLinesSink plain(dir / "plain", [&](std::string& out, const Row& row) {
    writer.append(out, row);
    return true;
  });
  EXPECT_FALSE(plain.writes_behind());
  EXPECT_EQ(sink.commit_batch(3), 3000);
  EXPECT_EQ(read_all(sink.part_path(3)), expected_lines(0, 3000));
}

TEST(JsonLinesSink, ReplayedBatchReplacesItsFileWithIdenticalContent) {
  TempDir dir;
  JsonLinesSink sink(dir / "out", RecordJsonWriter(), 1000);
  Rows rows(10, 400);
  sink.begin_batch(0);
  sink.write(rows.rows);
  EXPECT_EQ(sink.commit_batch(0), 390);
  const auto first = read_all(sink.part_path(0));
  EXPECT_EQ(first, expected_lines(10, 400));
  // Replay: a new sink object, as after a restart, writes the same rows again.
  JsonLinesSink again(dir / "out", RecordJsonWriter(), 64);
  again.begin_batch(0);
  again.write(std::span<const Row>(rows.rows).first(200));
  again.write(std::span<const Row>(rows.rows).subspan(200));
  EXPECT_EQ(again.commit_batch(0), 390);
  EXPECT_EQ(read_all(sink.part_path(0)), first);
  EXPECT_EQ(names_in(dir / "out"), std::vector<std::string>{"part-00000000000000000000.jsonl"});
}

TEST(JsonLinesSink, FailedBatchLeavesNothingOnceTheNextBatchBegins) {
  TempDir dir;
  Rows rows(0, 50);
  {
    JsonLinesSink sink(dir / "out", RecordJsonWriter(), 16);
    sink.begin_batch(5);
    sink.write(rows.rows);
    EXPECT_EQ(temp_files(dir / "out").size(), 1u);
    // The batch failed before its commit; its replay begins.
    sink.begin_batch(5);
    EXPECT_EQ(temp_files(dir / "out").size(), 1u);  // the new batch's file only
    sink.write(std::span<const Row>(rows.rows).first(10));
    EXPECT_EQ(sink.commit_batch(5), 10);
    EXPECT_EQ(read_all(sink.part_path(5)), expected_lines(0, 10));
    sink.begin_batch(6);
    sink.write(rows.rows);
  }
  // Destroyed mid-batch: its temp file goes with it.
  EXPECT_EQ(names_in(dir / "out"), std::vector<std::string>{"part-00000000000000000005.jsonl"});
}

TEST(JsonLinesSink, KilledMidBatchLeavesATempFileTheNextSinkRemoves) {
  TempDir dir;
  const auto out = dir / "out";
  {
    JsonLinesSink sink(out);
    sink.begin_batch(0);
    Rows rows(0, 3);
    sink.write(rows.rows);
    sink.commit_batch(0);
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A process that dies mid-batch: no destructor runs.
    JsonLinesSink sink(out, RecordJsonWriter(), 128);
    Rows rows(3, 1000);
    sink.begin_batch(1);
    sink.write(rows.rows);
    // The lines reach the temp file on the sink's own thread: the process
    // dies once some have.
    for (int i = 0; i < 500; ++i) {
      bool written = false;
      for (auto& f : temp_files(out)) written = written || fs::file_size(f) > 0;
      if (written) break;
      ::usleep(10'000);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  auto left = temp_files(out);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_GT(fs::file_size(left[0]), 0u);
  EXPECT_FALSE(fs::exists(out / "part-00000000000000000001.jsonl"));
  JsonLinesSink next(out);
  EXPECT_EQ(names_in(out), std::vector<std::string>{"part-00000000000000000000.jsonl"});
  EXPECT_EQ(read_all(out / "part-00000000000000000000.jsonl"), expected_lines(0, 3));
}

TEST(JsonLinesSink, FormatterFiltersAndReplacesLines) {
  TempDir dir;
  JsonLinesSink sink(dir / "out", [](std::string& out, const Row& r) {
    out += fmt::format("{}:{}", r.offset, r.value_string());
    return r.offset % 2 == 0;  // what a dropped row appended is not kept
  });
  Rows rows(0, 5);
  sink.begin_batch(1);
  sink.write(rows.rows);
  EXPECT_EQ(sink.commit_batch(1), 3);
  EXPECT_EQ(read_all(sink.part_path(1)), "0:value-0\n2:value-2\n4:value-4\n");
}

TEST(JsonLinesSink, CommitWithoutRowsWritesAnEmptyFile) {
  TempDir dir;
  JsonLinesSink sink(dir / "out");
  sink.begin_batch(2);
  EXPECT_EQ(sink.commit_batch(2), 0);
  EXPECT_TRUE(fs::exists(sink.part_path(2)));
  EXPECT_EQ(fs::file_size(sink.part_path(2)), 0u);
  sink.begin_batch(3);
  EXPECT_THROW(sink.commit_batch(4), std::logic_error);
}

// SIGKILL at random points of a `kwire stream` into an exactly-once (or
// at-least-once) sink, shared by the sink tests: each round adds input, starts
// the stream, kills it 20-320 ms later and notes which phase of the
// checkpoint the kill hit; a last run drains the input.
//
// KWIRE_SINK_KILL_POINTS sets the number of kills (default 8; the full sweep
// is 50); KWIRE_KILL_SEED replays a run.
#pragma once

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.hpp"
#include "common.hpp"

namespace kwire_test {

struct KillSweep {
  int kills = 0;
  int produced = 0;               // input rows
  std::size_t batches_found = 0;  // restarts whose batch was already in the sink
  std::map<std::string, int> phases;
};

/// `stream_args`: kwire's arguments for a stream over the input with its
/// checkpoint at `checkpoint` (without --trigger); `produce(from, to)` adds
/// input rows [from, to). Each of the kills runs with a processing-time=0
/// trigger; the last run drains the input (and must exit 0).
inline KillSweep kill_sweep(const std::vector<std::string>& stream_args, const std::filesystem::path& checkpoint,
                            const std::function<void(int, int)>& produce, int rows_per_round = 300) {
  namespace fs = std::filesystem;
  const char* points_env = std::getenv("KWIRE_SINK_KILL_POINTS");
  const int points = points_env && *points_env ? std::atoi(points_env) : 8;
  const char* seed_env = std::getenv("KWIRE_KILL_SEED");
  const std::uint64_t seed = seed_env && *seed_env ? std::strtoull(seed_env, nullptr, 10) : std::random_device{}();
  std::cout << "kill points " << points << ", seed " << seed << " (replay: KWIRE_KILL_SEED=" << seed << ")\n";
  std::mt19937_64 rng(seed);
  const fs::path log = checkpoint.parent_path() / "stream-stderr.log";
  auto args = stream_args;
  args.insert(args.end(), {"--trigger", "processing-time=0"});
  auto latest = [&](const char* dir) -> std::int64_t {
    std::int64_t best = -1;
    if (!fs::exists(checkpoint / dir)) return best;
    for (auto& e : fs::directory_iterator(checkpoint / dir)) {
      const auto n = e.path().filename().string();
      if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos)
        best = std::max<std::int64_t>(best, std::stoll(n));
    }
    return best;
  };
  KillSweep out;
  for (int round = 0; round < points; ++round) {
    produce(out.produced, out.produced + rows_per_round);
    out.produced += rows_per_round;
    const int delay_ms = 20 + static_cast<int>(rng() % 300);
    const std::int64_t committed_before = latest("commits");
    Child child(args, log);
    EXPECT_TRUE(child.valid());
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    EXPECT_FALSE(child.poll().has_value()) << "the stream ended by itself:\n" << read_file(log);
    child.kill_now(SIGKILL);
    ++out.kills;
    const std::int64_t logged = latest("offsets"), committed = latest("commits");
    if (committed == committed_before && logged <= committed) out.phases["before any batch"]++;
    else if (logged > committed) out.phases["inside a batch (offsets/N logged, commits/N not)"]++;
    else out.phases["between batches"]++;
  }
  for (auto& [phase, n] : out.phases) std::cout << "  " << n << " kills " << phase << "\n";
  // A kill between the sink's commit and commits/N: the restart finds the
  // batch in the sink and says so.
  const std::string text = read_file(log);
  for (auto at = text.find("its rows are not written again"); at != std::string::npos;
       at = text.find("its rows are not written again", at + 1))
    ++out.batches_found;
  std::cout << "  " << out.batches_found << " restarts found their batch committed and did not write it again\n";
  Child last(stream_args, log);
  EXPECT_EQ(last.wait(std::chrono::seconds(120)), 0) << read_file(log);
  std::cout << out.kills << " kills, " << out.produced << " input rows\n";
  return out;
}

}  // namespace kwire_test

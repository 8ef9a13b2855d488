// Every libFuzzer harness in fuzz/ (the list in fuzz/targets.cmake), built
// with the normal compiler, replays its seed corpus (fuzz/corpus/<target>/)
// and every input a fuzzing run found and kept (fuzz/regressions/<target>/,
// one test each). A broken invariant aborts the test (KWIRE_FUZZ_CHECK); an
// unexpected exception fails it. Under the sanitizer build this is the same
// check the fuzzers make, on inputs known to have mattered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#define KWIRE_REPLAY_TARGET(name) extern "C" int kwire_replay_##name(const std::uint8_t* data, std::size_t size);
#include "fuzz_replay_targets.inc"
#undef KWIRE_REPLAY_TARGET

namespace {

namespace fs = std::filesystem;

using Harness = int (*)(const std::uint8_t*, std::size_t);

struct Target {
  std::string name;
  Harness run;
};

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
#define KWIRE_REPLAY_TARGET(name) {#name, &kwire_replay_##name},
#include "fuzz_replay_targets.inc"
#undef KWIRE_REPLAY_TARGET
  };
  return all;
}

std::vector<std::uint8_t> read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const Target& t, const fs::path& file) {
  const auto bytes = read_all(file);
  // libFuzzer never passes a null pointer, even for an empty input.
  static const std::uint8_t empty = 0;
  EXPECT_EQ(t.run(bytes.empty() ? &empty : bytes.data(), bytes.size()), 0) << file;
}

struct Regression {
  const Target* target;
  fs::path file;
};

std::vector<Regression> regressions() {
  std::vector<Regression> out;
  for (const auto& t : targets())
    for (const auto& f : files_in(fs::path(KWIRE_FUZZ_DIR) / "regressions" / t.name)) out.push_back({&t, f});
  return out;
}

}  // namespace

TEST(FuzzReplay, EveryTargetReplaysItsSeedCorpus) {
  ASSERT_FALSE(targets().empty());
  for (const auto& t : targets()) {
    const auto files = files_in(fs::path(KWIRE_FUZZ_DIR) / "corpus" / t.name);
    EXPECT_FALSE(files.empty()) << t.name << " has no seed corpus";
    for (const auto& f : files) replay(t, f);
  }
}

class FuzzRegression : public ::testing::TestWithParam<Regression> {};

TEST_P(FuzzRegression, Replays) { replay(*GetParam().target, GetParam().file); }

INSTANTIATE_TEST_SUITE_P(Kept, FuzzRegression, ::testing::ValuesIn(regressions()),
                         [](const ::testing::TestParamInfo<Regression>& info) {
                           std::string name = info.param.target->name + "_" + info.param.file.filename().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FuzzRegression);

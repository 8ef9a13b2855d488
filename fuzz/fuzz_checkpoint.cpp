// A checkpoint folder filled with files from the input, then opened and read
// the way a restarting query does. Only CheckpointError may escape.
//
// Input: records of [kind u8][length u16 big-endian][content]. The low three
// bits of kind pick what to write: 0 metadata, 1 sources/0/0, 2 offsets/N,
// 3 commits/N, 4 offsets/<odd name>, 5 commits/<odd name>, 6 a folder where
// offsets/N would be, 7 a folder where commits/N would be; N (or the odd name)
// comes from the upper bits.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"

namespace {

namespace fs = std::filesystem;
using namespace kwire::checkpoint;

const char* const kOddNames[] = {"00", "-1", ".0.tmp",    "1.tmp", "9223372036854775807", "9223372036854775808", "+1",
                                 "1 ", "x",  "2.compact", "007",   "18446744073709551616"};

const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "kwire-fuzz-checkpoint-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(scratch(), ec);
    });
    return fs::path(tmpl);
  }();
  return dir;
}

void write_file(const fs::path& path, std::span<const std::uint8_t> content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
}

template <class F>
void allowed(F&& f) {
  try {
    f();
  } catch (const CheckpointError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path root = scratch() / "cp";
  std::error_code ec;
  fs::remove_all(root, ec);
  for (const char* sub : {"offsets", "commits", "sources/0"}) fs::create_directories(root / sub);

  kwire::fuzz::Input in(data, size);
  for (int i = 0; i < 12 && !in.empty(); ++i) {
    const std::uint8_t kind = in.u8();
    const std::size_t len = in.u16() % 4096;
    const auto content = in.take(len);
    const std::string n = std::to_string((kind >> 3) % 4);
    const std::string odd = kOddNames[(kind >> 3) % std::size(kOddNames)];
    switch (kind & 7) {
      case 0: write_file(root / "metadata", content); break;
      case 1: write_file(root / "sources" / "0" / "0", content); break;
      case 2: write_file(root / "offsets" / n, content); break;
      case 3: write_file(root / "commits" / n, content); break;
      case 4: write_file(root / "offsets" / odd, content); break;
      case 5: write_file(root / "commits" / odd, content); break;
      case 6: fs::create_directories(root / "offsets" / n, ec); break;
      case 7: fs::create_directories(root / "commits" / n, ec); break;
    }
  }

  std::optional<Checkpoint> cp;
  allowed([&] { cp.emplace(root, 2); });
  if (!cp) return 0;
  allowed([&] { (void)cp->id(); });
  allowed([&] { (void)cp->initial_offsets(); });
  allowed([&] { (void)cp->latest_offsets_batch(); });
  allowed([&] { (void)cp->latest_commit_batch(); });
  for (std::int64_t batch = -1; batch < 4; ++batch) {
    allowed([&] { (void)cp->read_offsets(batch); });
    allowed([&] { (void)cp->read_offsets_timestamp(batch); });
    allowed([&] { (void)cp->has_commit(batch); });
  }
  std::optional<ResumePoint> resume;
  allowed([&] { resume = cp->resume(); });
  if (resume) {
    // Carry on as the query would: log the batch, commit it, resume again.
    PartitionOffsets end = resume->replay_end ? *resume->replay_end : resume->start;
    allowed([&] {
      if (!resume->replay_batch) cp->write_offsets(resume->next_batch_id, end, 1);
      cp->write_commit(resume->next_batch_id);
      const ResumePoint next = cp->resume();
      KWIRE_FUZZ_CHECK(next.next_batch_id == resume->next_batch_id + 1);
      KWIRE_FUZZ_CHECK(!next.replay_batch);
    });
  }
  return 0;
}

// The checkpoint's file formats parsed from memory, as a restarting query
// reads them: metadata, offsets/N, commits/N, sources/0/0 and batch file
// names. Only CheckpointError may escape; whatever parses must survive a
// write and a second read unchanged.
//
// Input: one byte choosing the format (low three bits), then the content.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "kwire/checkpoint/log_files.hpp"

namespace {

using namespace kwire::checkpoint;

constexpr std::string_view kName = "fuzz";

template <class F>
void allowed(F&& f) {
  try {
    f();
  } catch (const CheckpointError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t kind = data[0];
  const std::string_view content(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (kind % 5) {
    case 0:
      allowed([&] {
        const std::string id = parse_metadata(kName, content);
        KWIRE_FUZZ_CHECK(!id.empty());
        KWIRE_FUZZ_CHECK(parse_metadata(kName, metadata_content(id)) == id);
      });
      break;
    case 1:
      allowed([&] {
        const OffsetLogEntry entry = parse_offsets_log(kName, content);
        const OffsetLogEntry again =
            parse_offsets_log(kName, offsets_log_content(entry.offsets, entry.batch_timestamp_ms));
        KWIRE_FUZZ_CHECK(again == entry);
      });
      break;
    case 2: allowed([&] { parse_commit_log(kName, content); }); break;
    case 3:
      allowed([&] {
        const PartitionOffsets offsets = parse_initial_offsets(kName, content);
        KWIRE_FUZZ_CHECK(parse_initial_offsets(kName, initial_offsets_content(offsets)) == offsets);
      });
      break;
    default:
      if (const auto batch = parse_batch_name(content)) {
        KWIRE_FUZZ_CHECK(*batch >= 0);
        KWIRE_FUZZ_CHECK(std::to_string(*batch) == content);
      }
      break;
  }
  return 0;
}

// Spark offsets JSON: offsets_from_json() on arbitrary text. Only
// CheckpointError may escape; what parses must survive
// offsets_to_json() -> offsets_from_json() unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kwire::checkpoint;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  PartitionOffsets parsed;
  try {
    parsed = offsets_from_json(text);
  } catch (const CheckpointError&) {
    return 0;
  }
  const std::string json = offsets_to_json(parsed);
  PartitionOffsets again;
  try {
    again = offsets_from_json(json);
  } catch (const CheckpointError&) {
    kwire::fuzz::finding("offsets_to_json() output does not parse");
  }
  KWIRE_FUZZ_CHECK(again == parsed);
  KWIRE_FUZZ_CHECK(offsets_to_json(again) == json);
  return 0;
}

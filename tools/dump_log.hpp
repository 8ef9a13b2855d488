#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kwire::tools {

struct DumpLogArgs {
  std::vector<std::string> files;
  bool json = false;
  std::optional<std::int16_t> fetch_response_version;  // files are Fetch response bodies
};

/// Exit code 1 when a file holds a bad entry (printed with its position).
int cmd_dump_log(const DumpLogArgs& args);

}  // namespace kwire::tools

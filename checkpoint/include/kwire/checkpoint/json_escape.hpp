// JSON string escaping: the one escaper of the project (checkpoint files,
// sinks, progress output and the CLI's JSON).
#pragma once

#include <string>
#include <string_view>

namespace kwire::checkpoint {

/// Append `s` as a JSON string literal (quotes included): ", \ and control
/// characters escaped; bytes that are not valid UTF-8 written as \u00XX
/// escapes of the byte value.
void append_json_string(std::string& out, std::string_view s);
std::string json_string(std::string_view s);

}  // namespace kwire::checkpoint

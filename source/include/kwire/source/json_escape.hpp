// JSON string escaping for sinks and tools.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kwire::source {

/// Append `s` as a JSON string literal (quotes included). Bytes that are not
/// valid UTF-8 are written as \u00XX escapes of the byte value.
void append_json_string(std::string& out, std::string_view s);
std::string json_string(std::string_view s);

}  // namespace kwire::source

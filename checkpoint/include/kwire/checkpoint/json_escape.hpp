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
/// The same literal written to `w`, which must have room for at least
/// 2 * s.size() + 2 bytes before `limit` (the stores may use all of it):
/// returns the end of the literal, or nullptr when it needs more room than
/// that (only \u00XX escapes can), having written a part of it.
char* write_json_string(char* w, char* limit, std::string_view s);
std::string json_string(std::string_view s);

}  // namespace kwire::checkpoint

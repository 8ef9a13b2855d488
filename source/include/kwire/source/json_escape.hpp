// JSON string escaping for sinks and tools: the checkpoint module's escaper.
#pragma once

#include "kwire/checkpoint/json_escape.hpp"

namespace kwire::source {

using checkpoint::append_json_string;
using checkpoint::json_string;
using checkpoint::write_json_string;

}  // namespace kwire::source

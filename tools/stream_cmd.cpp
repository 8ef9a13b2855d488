#include "commands.hpp"

#include <stdexcept>

namespace kwire::tools {

int cmd_stream(const CommonOptions&, const StreamArgs&) { throw std::runtime_error("stream: not built yet"); }
int cmd_lag(const CommonOptions&, const LagArgs&) { throw std::runtime_error("lag: not built yet"); }

}  // namespace kwire::tools

#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kwire::tools {

/// One API's line of the conformance matrix.
struct ConformanceRow {
  std::string api;
  std::int16_t api_key = 0;
  std::int16_t declared_min = 0, declared_max = -1;  // what kwire declares
  std::int16_t offered_min = 0, offered_max = -1;    // what the broker offers (-1: not at all)
  std::vector<std::int16_t> exercised;               // versions sent
  std::vector<std::int16_t> skipped;                 // advertised but known to be removed
  std::vector<std::string> failures;                 // "vN: what went wrong"
};

/// Runs the matrix against the broker given by `properties` (client config).
/// Creates (and deletes) topics named kwire-conformance-*.
std::vector<ConformanceRow> run_conformance(const std::map<std::string, std::string>& properties);

/// Prints the matrix; exit code 1 when any exercised version failed.
int cmd_conformance(const std::map<std::string, std::string>& properties, bool json);

}  // namespace kwire::tools

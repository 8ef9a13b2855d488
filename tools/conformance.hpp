#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kwire::tools {

/// A feature of the broker (ApiVersions v3+ tagged fields): the range it
/// supports and the level finalized for the cluster (-1: not finalized).
/// Kafka 4.x gates protocol behaviour on them: transaction.version (KIP-890
/// transactions v2), group.version (KIP-848), share.version (KIP-932),
/// eligible.leader.replicas.version, kraft.version, metadata.version.
struct FeatureLevel {
  std::string name;
  std::int16_t supported_min = 0, supported_max = 0;
  std::int16_t finalized = -1;
};

/// One API's line of the conformance matrix.
struct ConformanceRow {
  std::string api;
  std::int16_t api_key = 0;
  std::int16_t declared_min = 0, declared_max = -1;  // what kwire declares
  std::int16_t offered_min = 0, offered_max = -1;    // what the broker offers (-1: not at all)
  std::vector<std::int16_t> exercised;               // versions sent
  std::vector<std::int16_t> skipped;                 // advertised but known to be removed
  std::vector<std::string> failures;                 // "vN: what went wrong"
  std::vector<FeatureLevel> features;                // ApiVersions only: at the highest version sent
  std::string note;                                  // why offered versions were not sent, if so
};

/// Runs the matrix against the broker given by `properties` (client config).
/// Creates (and deletes) topics named kwire-conformance-*.
std::vector<ConformanceRow> run_conformance(const std::map<std::string, std::string>& properties);

/// Prints the matrix; exit code 1 when any exercised version failed.
int cmd_conformance(const std::map<std::string, std::string>& properties, bool json);

}  // namespace kwire::tools

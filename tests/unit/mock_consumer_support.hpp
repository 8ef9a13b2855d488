// Helpers shared by the consumer tests that run against the in-process mock
// cluster: client properties tuned for fast retries, polled records as
// comparable values, and a readable dump of the requests the mock received.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "kwire/client/consumer.hpp"
#include "kwire/mock/mock_cluster.hpp"

namespace kwire::mock_support {

using namespace std::chrono_literals;
using Props = std::map<std::string, std::string>;

/// Short waits, backoffs and timeouts so failure paths run in milliseconds;
/// `extra` overrides or adds properties.
inline Props props(const mock::MockCluster& c, const Props& extra = {}) {
  Props p{{"bootstrap.servers", c.bootstrap_servers()},
          {"fetch.max.wait.ms", "20"},
          {"retry.backoff.ms", "20"},
          {"request.timeout.ms", "3000"},
          {"socket.connection.setup.timeout.ms", "2000"}};
  for (auto& [k, v] : extra) p[k] = v;
  return p;
}

/// One consumed record: "topic-partition", offset and value.
struct Got {
  std::string tp;
  std::int64_t offset;
  std::string value;
  friend bool operator==(const Got&, const Got&) = default;
  friend bool operator<(const Got& a, const Got& b) { return std::tie(a.tp, a.offset) < std::tie(b.tp, b.offset); }
};

inline void PrintTo(const Got& g, std::ostream* os) { *os << g.tp << "@" << g.offset << "=" << g.value; }

inline void take(const client::ConsumerRecords& recs, std::vector<Got>& out) {
  for (auto& r : recs)
    out.push_back({*r.topic + "-" + std::to_string(r.partition), r.offset, std::string(r.value_view())});
}

/// Polls until `n` records arrived or `timeout` passed.
inline std::vector<Got> poll_until(client::Consumer& c, std::size_t n, std::chrono::milliseconds timeout = 5000ms) {
  std::vector<Got> out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) take(c.poll(100ms), out);
  return out;
}

/// The records MockCluster::append_values wrote: value prefix + offset, for offsets [from, until).
inline std::vector<Got> expected(const std::string& tp, std::int64_t from, std::int64_t until,
                                 const std::string& prefix = "v") {
  std::vector<Got> out;
  for (auto o = from; o < until; ++o) out.push_back({tp, o, prefix + std::to_string(o)});
  return out;
}

inline std::vector<Got> sorted(std::vector<Got> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// One line per request, for failure messages.
inline std::string dump(const std::vector<mock::RequestRecord>& reqs) {
  std::string out;
  for (auto& r : reqs) out += "  " + mock::describe(r) + "\n";
  return out;
}

}  // namespace kwire::mock_support

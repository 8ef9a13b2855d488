// One exchange of `kwire conformance`, shared by every group of rows: a
// request at one version, its answer decoded, and the check that the decoded
// answer encodes back to the size of the frame (every byte understood).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "kwire/client/connection.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::tools {

/// Sends `req` at version `v` on `c` and returns the decoded answer (waiting
/// until `deadline`). When the answer does not re-encode to the size it came
/// in, `size_error` says so (it is left alone otherwise).
template <class Resp, class Req, class Deadline>
Resp checked_exchange(client::Connection& c, const Req& req, std::int16_t v, Deadline deadline,
                      std::string& size_error) {
  auto resp = c.receive<Resp>(c.send(req, v), v, deadline);
  const std::size_t header =
      protocol::response_header_version(Resp::api_key, protocol::is_flexible<Resp>(v)) == 1 ? 5 : 4;
  const std::size_t body = protocol::encoded_size(resp.body, v);
  if (body + header != resp.frame->size())
    size_error =
        fmt::format("response has {} bytes but its decoded form encodes to {}", resp.frame->size(), body + header);
  return resp.body;
}

/// The coordinator of `key` (key_type 0: a group, 1: a transactional id),
/// asked with FindCoordinator at the highest version both sides speak (v1+
/// for a transactional id) until it answers without error: every 200 ms, up
/// to 100 times (a fresh broker loads its coordinators first).
inline client::Connection& conformance_coordinator(client::KafkaClient& client, std::int8_t key_type,
                                                   const std::string& key) {
  for (int attempt = 0;; ++attempt) {
    protocol::FindCoordinatorRequest req;
    req.key = key;
    req.key_type = key_type;
    req.coordinator_keys = {key};
    client::Connection& any = client.any_connection();
    std::int16_t v = any.version_for<protocol::FindCoordinatorRequest>();
    if (key_type != 0) v = std::max<std::int16_t>(v, 1);
    auto r = any.receive<protocol::FindCoordinatorResponse>(any.send(req, v), v, client.default_deadline()).body;
    const std::int16_t code = v >= 4 ? (r.coordinators.empty() ? -1 : r.coordinators[0].error_code) : r.error_code;
    const std::int32_t node = v >= 4 ? (r.coordinators.empty() ? -1 : r.coordinators[0].node_id) : r.node_id;
    if (code == 0) return client.broker(node);
    if (attempt >= 100)
      throw std::runtime_error(fmt::format("FindCoordinator for {}: {}", key, protocol::error_name(code)));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace kwire::tools

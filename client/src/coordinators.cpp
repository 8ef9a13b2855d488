#include "coordinators.hpp"

#include <fmt/format.h>

#include "kwire/client/connection.hpp"
#include "kwire/client/group.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {

bool is(std::int16_t code, ErrorCode e) { return code == static_cast<std::int16_t>(e); }

const char* key_name(CoordinatorType type) {
  return type == CoordinatorType::group ? "group" : "transactional id";
}

}  // namespace

bool coordinator_moved(std::int16_t code) {
  return is(code, ErrorCode::not_coordinator) || is(code, ErrorCode::coordinator_not_available);
}

bool coordinator_retriable(std::int16_t code) {
  return coordinator_moved(code) || is(code, ErrorCode::coordinator_load_in_progress);
}

std::optional<std::int32_t> Coordinators::cached(CoordinatorType type, const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find({type, key});
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

void Coordinators::forget(CoordinatorType type, const std::string& key) {
  std::lock_guard lock(mu_);
  nodes_.erase({type, key});
}

bool Coordinators::answered(CoordinatorType type, const std::string& key, std::int16_t code) {
  if (coordinator_moved(code)) forget(type, key);
  return coordinator_retriable(code);
}

std::uint64_t Coordinators::lookups() const {
  std::lock_guard lock(mu_);
  return lookups_;
}

std::optional<std::int32_t> Coordinators::try_lookup(KafkaClient& via, CoordinatorType type, const std::string& key,
                                                     Deadline deadline, std::int16_t& code) {
  code = -1;
  if (auto node = cached(type, key)) return node;
  try {
    Connection& c = via.any_connection();
    const std::int16_t v = c.version_for<FindCoordinatorRequest>();
    if (type != CoordinatorType::group && v < 1)
      throw UnsupportedVersionError(
          fmt::format("broker {} cannot name a transaction coordinator (FindCoordinator v0 only)", c.endpoint()));
    FindCoordinatorRequest req;
    req.key = key;
    req.key_type = static_cast<std::int8_t>(type);
    req.coordinator_keys = {key};
    {
      std::lock_guard lock(mu_);
      ++lookups_;
    }
    auto r = c.receive<FindCoordinatorResponse>(c.send(req, v), v, std::min(deadline, via.default_deadline())).body;
    std::int32_t node = r.node_id;
    code = r.error_code;
    if (v >= 4) {
      if (r.coordinators.size() != 1)
        throw MalformedResponseError(fmt::format("FindCoordinator answered {} coordinators for one key (from {})",
                                                 r.coordinators.size(), c.endpoint()));
      node = r.coordinators[0].node_id;
      code = r.coordinators[0].error_code;
    }
    if (code == 0 && node >= 0) {
      std::lock_guard lock(mu_);
      nodes_[{type, key}] = node;
      return node;
    }
    if (code == 0) code = static_cast<std::int16_t>(ErrorCode::coordinator_not_available);
  } catch (const ConnectionError&) {
    return std::nullopt;
  } catch (const TimeoutError&) {
    return std::nullopt;
  }
  if (coordinator_retriable(code)) return std::nullopt;
  const std::string what = fmt::format("FindCoordinator for {} {}: {}", key_name(type), key, error_name(code));
  if (is(code, ErrorCode::group_authorization_failed)) throw GroupAuthorizationError(code, what);
  throw KafkaError(code, what);
}

std::int32_t Coordinators::lookup(KafkaClient& via, CoordinatorType type, const std::string& key, RetryLoop& loop) {
  for (;;) {
    std::int16_t code = -1;
    if (auto node = try_lookup(via, type, key, loop.request_deadline(), code)) return *node;
    loop.back_off(code);
  }
}

}  // namespace kwire::client

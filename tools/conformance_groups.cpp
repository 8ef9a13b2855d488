// Consumer-group rows of `kwire conformance`. Each version is checked by what
// the coordinator does with it, not only by decoding: a join elects the sole
// member leader and returns its metadata, a sync returns the assignment the
// leader sent, commits read back, a heartbeat from a wrong generation is
// refused, listings and descriptions show the groups just made.
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "conformance_exchange.hpp"
#include "conformance_groups.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::tools {

using namespace kwire::protocol;
using client::Connection;

namespace {

constexpr std::int32_t kSessionTimeoutMs = 10000;
// OffsetCommit v0 and OffsetFetch v0 kept offsets in ZooKeeper; a KRaft broker
// that still advertises them (3.9) refuses them per partition with
// UNSUPPORTED_VERSION, a complete and well-formed answer.
const std::string kZooKeeperOnly = "zookeeper-only version";

struct Checker {
  const GroupChecks& g;

  Connection& coordinator(const std::string& group) { return conformance_coordinator(*g.client, 0, group); }

  template <class Resp, class Req>
  Resp call(Connection& c, const Req& req, std::int16_t v, std::string& size_error) {
    return checked_exchange<Resp>(c, req, v, g.client->default_deadline(), size_error);
  }

  static Bytes subscription(const std::string& topic) {
    ConsumerProtocolSubscription s;
    s.topics = {topic};
    return encode_consumer_subscription(s, 0);
  }

  struct Joined {
    std::string member_id;
    std::int32_t generation = -1;
    std::string error;
  };

  // Joins `group` as its only member at JoinGroup version v (MEMBER_ID_REQUIRED
  // handshake from v4) and checks what a sole member must get.
  Joined join(const std::string& group, std::int16_t v) {
    Joined out;
    Connection& c = coordinator(group);
    JoinGroupRequest req;
    req.group_id = group;
    req.session_timeout_ms = kSessionTimeoutMs;
    req.rebalance_timeout_ms = kSessionTimeoutMs;
    req.protocol_type = "consumer";
    const Bytes metadata = subscription(g.topic);
    req.protocols.push_back({"range", metadata, {}});
    for (int round = 0, waits = 0; round < 2; ++round) {
      auto r = call<JoinGroupResponse>(c, req, v, out.error);
      if (!out.error.empty()) return out;
      // A fresh broker loads its __consumer_offsets partition first: asked
      // again for up to 10 s, as a client does.
      if ((r.error_code == static_cast<std::int16_t>(ErrorCode::coordinator_load_in_progress) ||
           r.error_code == static_cast<std::int16_t>(ErrorCode::coordinator_not_available)) &&
          waits++ < 100) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        --round;
        continue;
      }
      if (r.error_code == static_cast<std::int16_t>(ErrorCode::member_id_required) && round == 0) {
        if (v < 4) {
          out.error = "MEMBER_ID_REQUIRED before v4";
          return out;
        }
        if (r.member_id.empty()) {
          out.error = "MEMBER_ID_REQUIRED without a member id";
          return out;
        }
        req.member_id = r.member_id;
        continue;
      }
      if (r.error_code) {
        out.error = fmt::format("JoinGroup returned {}", error_name(r.error_code));
        return out;
      }
      if (v >= 4 && round == 0) {
        out.error = "no MEMBER_ID_REQUIRED handshake from v4";
        return out;
      }
      if (r.generation_id < 1) out.error = fmt::format("generation {}", r.generation_id);
      else if (r.leader != r.member_id) out.error = "the sole member is not the leader";
      else if (r.protocol_name != std::optional<std::string>("range")) out.error = "protocol is not range";
      else if (r.members.size() != 1 || r.members[0].metadata != metadata)
        out.error = "the leader did not get its own subscription back";
      out.member_id = r.member_id;
      out.generation = r.generation_id;
      return out;
    }
    out.error = "join did not complete";
    return out;
  }

  std::string sync(const std::string& group, const Joined& j, std::int16_t v, Bytes* got = nullptr) {
    Connection& c = coordinator(group);
    SyncGroupRequest req;
    req.group_id = group;
    req.generation_id = j.generation;
    req.member_id = j.member_id;
    req.protocol_type = "consumer";
    req.protocol_name = "range";
    ConsumerProtocolAssignment a;
    a.assigned_partitions.push_back({g.topic, {0}, {}});
    const Bytes assignment = encode_consumer_assignment(a, 0);
    req.assignments.push_back({j.member_id, assignment, {}});
    std::string err;
    auto r = call<SyncGroupResponse>(c, req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("SyncGroup returned {}", error_name(r.error_code));
    if (r.assignment != assignment) return "the assignment sent by the leader did not come back";
    if (got) *got = r.assignment;
    return {};
  }

  std::string leave(const std::string& group, const Joined& j, std::int16_t v) {
    Connection& c = coordinator(group);
    LeaveGroupRequest req;
    req.group_id = group;
    req.member_id = j.member_id;
    req.members.push_back({j.member_id, std::nullopt, std::string("conformance"), {}});
    std::string err;
    auto r = call<LeaveGroupResponse>(c, req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("LeaveGroup returned {}", error_name(r.error_code));
    if (v >= 3 && (r.members.size() != 1 || r.members[0].error_code || r.members[0].member_id != j.member_id))
      return "the member's own result is missing or failed";
    return {};
  }

  std::string commit(const std::string& group, std::int64_t offset, std::int16_t v) {
    Connection& c = coordinator(group);
    OffsetCommitRequest req;
    req.group_id = group;
    req.topics.push_back({g.topic, {{0, offset, -1, -1, std::string("conformance"), {}}}, {}});
    if (v >= 10) req.topics[0].topic_id = g.topic_id;  // v10 names topics by id only
    std::string err;
    auto r = call<OffsetCommitResponse>(c, req, v, err);
    if (!err.empty()) return err;
    if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) return "wrong shape";
    if (v >= 10 && r.topics[0].topic_id != g.topic_id) return "the answer names another topic id";
    const std::int16_t code = r.topics[0].partitions[0].error_code;
    if (v == 0 && code == static_cast<std::int16_t>(ErrorCode::unsupported_version)) return kZooKeeperOnly;
    if (code) return fmt::format("partition returned {}", error_name(code));
    return {};
  }

  // The committed offset of partition 0 (-1 = none), or an error text.
  std::string fetch(const std::string& group, std::int16_t v, std::int64_t& offset) {
    Connection& c = coordinator(group);
    OffsetFetchRequest req;
    std::vector<OffsetFetchRequest::OffsetFetchRequestTopic> topics{{g.topic, {0}, {}}};
    if (v >= 10) topics[0].topic_id = g.topic_id;  // v10 names topics by id only
    req.group_id = group;
    req.topics = topics;
    req.groups.push_back({group, std::nullopt, -1, topics, {}});
    std::string err;
    auto r = call<OffsetFetchResponse>(c, req, v, err);
    if (!err.empty()) return err;
    const std::vector<OffsetFetchResponse::OffsetFetchResponseTopic>* ts = &r.topics;
    if (v >= 8) {
      if (r.groups.size() != 1 || r.groups[0].group_id != group) return "wrong group";
      if (r.groups[0].error_code) return fmt::format("group returned {}", error_name(r.groups[0].error_code));
      ts = &r.groups[0].topics;
    } else if (r.error_code) {
      return fmt::format("OffsetFetch returned {}", error_name(r.error_code));
    }
    if (ts->size() != 1 || (*ts)[0].partitions.size() != 1) return "wrong shape";
    if (v >= 10 && (*ts)[0].topic_id != g.topic_id) return "the answer names another topic id";
    auto& p = (*ts)[0].partitions[0];
    if (v == 0 && p.error_code == static_cast<std::int16_t>(ErrorCode::unsupported_version)) return kZooKeeperOnly;
    if (p.error_code) return fmt::format("partition returned {}", error_name(p.error_code));
    offset = p.committed_offset;
    return {};
  }
};

std::int16_t highest(const GroupChecks& g, std::int16_t api_key, std::int16_t ours_min, std::int16_t ours_max) {
  return g.client->any_connection().pick_version(api_key, ours_min, ours_max);
}

template <class M>
std::int16_t highest(const GroupChecks& g) {
  return highest(g, static_cast<std::int16_t>(M::api_key), M::min_version, M::max_version);
}

}  // namespace

void run_group_conformance(const GroupChecks& g, const RunApi& run_api) {
  Checker k{g};
  const std::int16_t join_max = highest<JoinGroupRequest>(g);
  const std::int16_t sync_max = highest<SyncGroupRequest>(g);
  const std::int16_t leave_max = highest<LeaveGroupRequest>(g);
  const std::int16_t commit_max = highest<OffsetCommitRequest>(g);
  const std::int16_t fetch_max = highest<OffsetFetchRequest>(g);

  run_api(declared_row<FindCoordinatorRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-fc", g.prefix);
    Connection& expected = k.coordinator(group);
    FindCoordinatorRequest req;
    req.key = group;
    req.coordinator_keys = {group};
    std::string err;
    auto r = k.call<FindCoordinatorResponse>(g.client->any_connection(), req, v, err);
    if (!err.empty()) return err;
    std::int16_t code = r.error_code;
    std::int32_t port = r.port;
    if (v >= 4) {
      if (r.coordinators.size() != 1 || r.coordinators[0].key != group) return "wrong shape";
      code = r.coordinators[0].error_code;
      port = r.coordinators[0].port;
    }
    if (code) return fmt::format("FindCoordinator returned {}", error_name(code));
    if (port != expected.port()) return fmt::format("coordinator port {} instead of {}", port, expected.port());
    return {};
  });
  run_api(declared_row<JoinGroupRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-join-v{}", g.prefix, v);
    auto j = k.join(group, v);
    if (!j.error.empty()) return j.error;
    return k.leave(group, j, leave_max);
  });
  run_api(declared_row<SyncGroupRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-sync-v{}", g.prefix, v);
    auto j = k.join(group, join_max);
    if (!j.error.empty()) return "setup: " + j.error;
    auto res = k.sync(group, j, v);
    k.leave(group, j, leave_max);
    return res;
  });
  run_api(declared_row<HeartbeatRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-hb-v{}", g.prefix, v);
    auto j = k.join(group, join_max);
    if (!j.error.empty()) return "setup: " + j.error;
    auto res = k.sync(group, j, sync_max);
    if (!res.empty()) return "setup: " + res;
    Connection& c = k.coordinator(group);
    HeartbeatRequest req;
    req.group_id = group;
    req.generation_id = j.generation;
    req.member_id = j.member_id;
    auto r = k.call<HeartbeatResponse>(c, req, v, res);
    if (res.empty() && r.error_code) res = fmt::format("Heartbeat returned {}", error_name(r.error_code));
    if (res.empty()) {
      req.generation_id = j.generation + 1;
      auto stale = k.call<HeartbeatResponse>(c, req, v, res);
      if (res.empty() && stale.error_code != static_cast<std::int16_t>(ErrorCode::illegal_generation))
        res = fmt::format("a wrong generation gave {} instead of ILLEGAL_GENERATION", error_name(stale.error_code));
    }
    k.leave(group, j, leave_max);
    return res;
  });
  run_api(declared_row<LeaveGroupRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-leave-v{}", g.prefix, v);
    auto j = k.join(group, join_max);
    if (!j.error.empty()) return "setup: " + j.error;
    return k.leave(group, j, v);
  });
  // Offsets: commits from outside the group (generation -1, no member id),
  // which the coordinator accepts while the group has no members.
  run_api(declared_row<OffsetCommitRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-commit-v{}", g.prefix, v);
    auto res = k.commit(group, 2 + v % 3, v);
    if (res == kZooKeeperOnly) return {};
    if (!res.empty()) return res;
    std::int64_t back = -2;
    res = k.fetch(group, fetch_max, back);
    if (!res.empty()) return "read back: " + res;
    if (back != 2 + v % 3) return fmt::format("committed {} but {} read back", 2 + v % 3, back);
    return {};
  });
  const std::string offsets_group = fmt::format("{}-offsets", g.prefix);
  run_api(declared_row<OffsetFetchRequest>(), [&](std::int16_t v) -> std::string {
    std::int64_t back = -2;
    auto res = k.fetch(offsets_group, v, back);
    if (res == kZooKeeperOnly) return {};
    if (!res.empty()) return res;
    if (back != -1) return fmt::format("offset {} before any commit", back);
    res = k.commit(offsets_group, 4, commit_max);
    if (!res.empty()) return "setup: " + res;
    res = k.fetch(offsets_group, v, back);
    if (!res.empty()) return res;
    if (back != 4) return fmt::format("committed 4 but {} read back", back);
    OffsetDeleteRequest del;
    del.group_id = offsets_group;
    del.topics.push_back({g.topic, {{0, {}}}, {}});
    k.call<OffsetDeleteResponse>(k.coordinator(offsets_group), del, 0, res);
    return res;
  });
  run_api(declared_row<OffsetDeleteRequest>(), [&](std::int16_t v) -> std::string {
    auto res = k.commit(offsets_group, 5, commit_max);
    if (!res.empty()) return "setup: " + res;
    OffsetDeleteRequest del;
    del.group_id = offsets_group;
    del.topics.push_back({g.topic, {{0, {}}}, {}});
    auto r = k.call<OffsetDeleteResponse>(k.coordinator(offsets_group), del, v, res);
    if (!res.empty()) return res;
    if (r.error_code) return fmt::format("OffsetDelete returned {}", error_name(r.error_code));
    if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1 || r.topics[0].partitions[0].error_code)
      return "the partition's result is missing or failed";
    std::int64_t back = -2;
    res = k.fetch(offsets_group, fetch_max, back);
    if (!res.empty()) return "read back: " + res;
    if (back != -1) return fmt::format("offset {} after the delete", back);
    return {};
  });
  // A stable group of one member for the listing and description checks.
  const std::string stable_group = fmt::format("{}-stable", g.prefix);
  auto member = k.join(stable_group, join_max);
  std::string stable_error = member.error;
  if (stable_error.empty()) stable_error = k.sync(stable_group, member, sync_max);
  run_api(declared_row<ListGroupsRequest>(), [&](std::int16_t v) -> std::string {
    if (!stable_error.empty()) return "setup: " + stable_error;
    ListGroupsRequest req;
    std::string err;
    auto r = k.call<ListGroupsResponse>(k.coordinator(stable_group), req, v, err);
    if (!err.empty()) return err;
    if (r.error_code) return fmt::format("ListGroups returned {}", error_name(r.error_code));
    for (auto& lg : r.groups) {
      if (lg.group_id != stable_group) continue;
      if (lg.protocol_type != "consumer") return "protocol type is not consumer";
      if (v >= 4 && lg.group_state != "Stable") return fmt::format("state {} instead of Stable", lg.group_state);
      if (v >= 5 && lg.group_type != "classic") return fmt::format("type {} instead of classic", lg.group_type);
      return {};
    }
    return "the stable group is not listed";
  });
  run_api(declared_row<DescribeGroupsRequest>(), [&](std::int16_t v) -> std::string {
    if (!stable_error.empty()) return "setup: " + stable_error;
    DescribeGroupsRequest req;
    req.groups = {stable_group};
    std::string err;
    auto r = k.call<DescribeGroupsResponse>(k.coordinator(stable_group), req, v, err);
    if (!err.empty()) return err;
    if (r.groups.size() != 1) return "wrong shape";
    auto& d = r.groups[0];
    if (d.error_code) return fmt::format("group returned {}", error_name(d.error_code));
    if (d.group_state != "Stable" || d.protocol_data != "range")
      return fmt::format("state {} protocol {} instead of Stable range", d.group_state, d.protocol_data);
    if (d.members.size() != 1 || d.members[0].member_id != member.member_id) return "the member is not described";
    ConsumerProtocolAssignment a;
    decode_consumer_assignment(ByteSpan(d.members[0].member_assignment), a);
    if (a.assigned_partitions.size() != 1 || a.assigned_partitions[0].topic != g.topic)
      return "the member's assignment is not described";
    return {};
  });
  if (member.error.empty()) k.leave(stable_group, member, leave_max);

  // KIP-848: on by default from Kafka 4.0; 3.9 advertises the API but answers
  // UNSUPPORTED_VERSION unless the broker enabled the consumer protocol.
  const std::string cgroup = fmt::format("{}-consumer", g.prefix);
  std::string consumer_member;
  std::int32_t consumer_epoch = -1;
  run_api(declared_row<ConsumerGroupHeartbeatRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-v{}", cgroup, v);
    Connection& c = k.coordinator(group);
    ConsumerGroupHeartbeatRequest req;
    req.group_id = group;
    // v1: the member names itself (a base64 UUID of 22 characters, KIP-1082).
    if (v >= 1) req.member_id = fmt::format("kwireConformance{:06d}", v);
    req.member_epoch = 0;
    req.rebalance_timeout_ms = 30000;
    req.subscribed_topic_names = std::vector<std::string>{g.topic};
    req.topic_partitions.emplace();
    std::string err;
    auto r = k.call<ConsumerGroupHeartbeatResponse>(c, req, v, err);
    if (!err.empty()) return err;
    if (!g.kafka4 && r.error_code == static_cast<std::int16_t>(ErrorCode::unsupported_version)) return {};
    if (r.error_code) return fmt::format("ConsumerGroupHeartbeat returned {}", error_name(r.error_code));
    if (r.member_epoch < 1 || !r.member_id || r.member_id->empty() || r.heartbeat_interval_ms <= 0)
      return fmt::format("join answered epoch {} interval {}", r.member_epoch, r.heartbeat_interval_ms);
    if (v >= 1 && *r.member_id != req.member_id) return "the member's own id was not kept";
    consumer_member = *r.member_id;
    consumer_epoch = r.member_epoch;
    // Heartbeat until the single partition is assigned (the assignor runs
    // asynchronously), then leave.
    for (int i = 0; i < 50 && !(r.assignment && !r.assignment->topic_partitions.empty()); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ConsumerGroupHeartbeatRequest hb;
      hb.group_id = group;
      hb.member_id = consumer_member;
      hb.member_epoch = r.member_epoch;
      r = k.call<ConsumerGroupHeartbeatResponse>(c, hb, v, err);
      if (!err.empty()) return err;
      if (r.error_code) return fmt::format("heartbeat returned {}", error_name(r.error_code));
    }
    if (!r.assignment || r.assignment->topic_partitions.size() != 1 ||
        r.assignment->topic_partitions[0].partitions != std::vector<std::int32_t>{0})
      return "partition 0 was never assigned";
    if (v == highest<ConsumerGroupHeartbeatRequest>(g)) {
      // Keep the last member for ConsumerGroupDescribe.
      consumer_epoch = r.member_epoch;
      return {};
    }
    ConsumerGroupHeartbeatRequest bye;
    bye.group_id = group;
    bye.member_id = consumer_member;
    bye.member_epoch = ConsumerGroupHeartbeatRequest::kLeaveEpoch;
    auto l = k.call<ConsumerGroupHeartbeatResponse>(c, bye, v, err);
    if (!err.empty()) return err;
    if (l.error_code) return fmt::format("leaving returned {}", error_name(l.error_code));
    if (l.member_epoch != ConsumerGroupHeartbeatRequest::kLeaveEpoch)
      return fmt::format("leaving answered epoch {}", l.member_epoch);
    return {};
  });
  run_api(declared_row<ConsumerGroupDescribeRequest>(), [&](std::int16_t v) -> std::string {
    const std::string group = fmt::format("{}-v{}", cgroup, highest<ConsumerGroupHeartbeatRequest>(g));
    ConsumerGroupDescribeRequest req;
    req.group_ids = {group};
    std::string err;
    auto r = k.call<ConsumerGroupDescribeResponse>(k.coordinator(group), req, v, err);
    if (!err.empty()) return err;
    if (r.groups.size() != 1) return "wrong shape";
    auto& d = r.groups[0];
    if (consumer_member.empty()) {
      // No KIP-848 group could be made (3.9 without the consumer protocol).
      if (d.error_code == static_cast<std::int16_t>(ErrorCode::group_id_not_found) ||
          d.error_code == static_cast<std::int16_t>(ErrorCode::unsupported_version))
        return {};
      return fmt::format("an unknown group gave {}", error_name(d.error_code));
    }
    if (d.error_code) return fmt::format("group returned {}", error_name(d.error_code));
    if (d.members.size() != 1 || d.members[0].member_id != consumer_member) return "the member is not described";
    if (d.members[0].subscribed_topic_names != std::vector<std::string>{g.topic}) return "wrong subscription";
    if (d.members[0].member_epoch != consumer_epoch)
      return fmt::format("member epoch {} instead of {}", d.members[0].member_epoch, consumer_epoch);
    if (v >= 1 && d.members[0].member_type != 1) return fmt::format("member type {}", d.members[0].member_type);
    return {};
  });
}

}  // namespace kwire::tools

// A scripted classic group coordinator on the mock cluster, and the test
// fixture around it: one group "g" whose only member is the consumer under
// test, its coordinator broker 1 of a one-broker cluster holding topic "t"
// (two partitions of 10 records each).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kwire/client/group.hpp"
#include "kwire/protocol/messages.hpp"
#include "mock_consumer_support.hpp"

namespace kwire::mock_support {

using namespace kwire::protocol;
using client::TopicPartition;

// A coordinator for one group with one member (this consumer): it elects the
// member leader, returns the assignment the leader sends, stores commits, and
// answers with queued errors first.
struct Coordinator {
  std::mutex mu;
  std::map<ApiKey, std::deque<std::int16_t>> errors;  // next error codes per API
  std::map<TopicPartition, std::int64_t> committed;
  std::int32_t generation = 0;
  std::string member_id;
  Bytes assignment;
  std::vector<std::string> join_member_ids;  // member id of every JoinGroup received
  std::vector<std::int32_t> commit_generations;
  int find_coordinator = 0, heartbeats = 0, leaves = 0;

  std::int16_t next_error(ApiKey api) {
    auto& q = errors[api];
    if (q.empty()) return 0;
    auto e = q.front();
    q.pop_front();
    return e;
  }

  template <class Req>
  static Req request(const Bytes& payload, std::int16_t v) {
    Reader r{ByteSpan(payload)};
    Req req;
    RequestHeader h;
    decode_request(r, req, v, &h);
    return req;
  }

  void install(mock::MockCluster& c) {
    c.set_handler(ApiKey::find_coordinator, 0, 6,
                  [this, &c](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes&) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    ++find_coordinator;
                    FindCoordinatorResponse r;
                    const auto e = next_error(ApiKey::find_coordinator);
                    (void)c;
                    r.error_code = e;
                    r.node_id = 1;
                    r.host = "127.0.0.1";
                    r.port = port;
                    r.coordinators.push_back({"g", 1, "127.0.0.1", port, e, std::nullopt, {}});
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(ApiKey::join_group, 0, 9,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    auto req = request<JoinGroupRequest>(p, v);
                    join_member_ids.push_back(req.member_id);
                    JoinGroupResponse r;
                    r.error_code = next_error(ApiKey::join_group);
                    if (!r.error_code && req.member_id.empty()) {
                      r.error_code = static_cast<std::int16_t>(ErrorCode::member_id_required);
                      r.member_id = "member-" + std::to_string(join_member_ids.size());
                    } else if (!r.error_code) {
                      member_id = req.member_id;
                      r.generation_id = ++generation;
                      r.protocol_name = req.protocols.at(0).name;
                      r.leader = r.member_id = member_id;
                      r.members.push_back({member_id, req.group_instance_id, req.protocols.at(0).metadata, {}});
                    }
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(ApiKey::sync_group, 0, 5,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    auto req = request<SyncGroupRequest>(p, v);
                    SyncGroupResponse r;
                    r.error_code = next_error(ApiKey::sync_group);
                    if (!r.error_code) {
                      for (auto& a : req.assignments)
                        if (a.member_id == member_id) assignment = a.assignment;
                      r.assignment = assignment;
                    }
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(ApiKey::heartbeat, 0, 4,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes&) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    ++heartbeats;
                    HeartbeatResponse r;
                    r.error_code = next_error(ApiKey::heartbeat);
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(ApiKey::leave_group, 0, 5,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes&) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    ++leaves;
                    LeaveGroupResponse r;
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(ApiKey::offset_commit, 0, 9,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    auto req = request<OffsetCommitRequest>(p, v);
                    commit_generations.push_back(req.generation_id_or_member_epoch);
                    const auto e = next_error(ApiKey::offset_commit);
                    OffsetCommitResponse r;
                    for (auto& t : req.topics) {
                      r.topics.push_back({t.name, {}, {}});
                      for (auto& part : t.partitions) {
                        r.topics.back().partitions.push_back({part.partition_index, e, {}});
                        if (!e) committed[{t.name, part.partition_index}] = part.committed_offset;
                      }
                    }
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(ApiKey::offset_fetch, 0, 9,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    auto req = request<OffsetFetchRequest>(p, v);
                    OffsetFetchResponse r;
                    const auto& topics = v >= 8 ? req.groups.at(0).topics : req.topics;
                    std::vector<OffsetFetchResponse::OffsetFetchResponseTopic> out;
                    for (auto& t : *topics) {
                      out.push_back({t.name, {}, {}});
                      for (auto part : t.partition_indexes) {
                        auto it = committed.find({t.name, part});
                        out.back().partitions.push_back(
                            {part, it == committed.end() ? -1 : it->second, -1, std::string(), 0, {}});
                      }
                    }
                    if (v >= 8) r.groups.push_back({"g", out, next_error(ApiKey::offset_fetch), {}});
                    else r.topics = out;
                    return encode_response_frame(r, v, corr);
                  });
  }
  std::int32_t port = 0;
};

struct Listener : client::RebalanceListener {
  std::vector<std::string> calls;
  static std::string list(const std::vector<TopicPartition>& tps) {
    std::string s;
    for (auto& tp : tps) s += (s.empty() ? "" : ",") + tp.topic + "-" + std::to_string(tp.partition);
    return s;
  }
  void on_partitions_assigned(const std::vector<TopicPartition>& tps) override {
    calls.push_back("assigned " + list(tps));
  }
  void on_partitions_revoked(const std::vector<TopicPartition>& tps) override {
    calls.push_back("revoked " + list(tps));
  }
  void on_partitions_lost(const std::vector<TopicPartition>& tps) override { calls.push_back("lost " + list(tps)); }
};

class MockGroup : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster.create_topic("t", 2);
    cluster.append_values("t", 0, 10);
    cluster.append_values("t", 1, 10);
    coord.port = cluster.port(1);
    coord.install(cluster);
  }
  Props group_props(const Props& extra = {}) {
    Props p{{"group.id", "g"},
            {"auto.offset.reset", "earliest"},
            {"session.timeout.ms", "6000"},
            {"heartbeat.interval.ms", "50"},
            {"partition.assignment.strategy", "range"}};
    for (auto& [k, v] : extra) p[k] = v;
    return props(cluster, p);
  }
  void fail_next(ApiKey api, std::vector<ErrorCode> codes) {
    std::lock_guard lock(coord.mu);
    for (auto c : codes) coord.errors[api].push_back(static_cast<std::int16_t>(c));
  }
  /// Waits (at most 5 s) until `pred` holds, looked at under coord.mu.
  template <class Pred>
  bool wait_for_coord(Pred pred) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      {
        std::lock_guard lock(coord.mu);
        if (pred()) return true;
      }
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  mock::MockCluster cluster{1};
  Coordinator coord;
};

}  // namespace kwire::mock_support

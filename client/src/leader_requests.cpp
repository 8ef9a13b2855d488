// KafkaClient's requests routed to partition leaders: ListOffsets, Produce
// and DeleteRecords, over one retry loop (route_to_leaders).
#include <fmt/format.h>

#include "kwire/client/connection.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "kwire/protocol/messages/delete_records.hpp"
#include "retriable.hpp"

namespace kwire::client {

using namespace kwire::protocol;

namespace {
constexpr auto kNetworkException = static_cast<std::int16_t>(ErrorCode::network_exception);
constexpr auto kUnknownTopicOrPartition = static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition);

template <class Map>
std::set<TopicPartition> keys(const Map& m) {
  std::set<TopicPartition> out;
  for (auto& [tp, _] : m) out.insert(tp);
  return out;
}
}  // namespace

std::map<TopicPartition, std::int16_t> KafkaClient::route_to_leaders(std::set<TopicPartition> todo,
                                                                     const LeaderRequest& request) {
  std::map<TopicPartition, std::int16_t> last_error;
  for (int attempt = 0; !todo.empty(); ++attempt) {
    if (attempt > config_.retries) {
      std::map<TopicPartition, std::int16_t> left;
      for (auto& tp : todo) {
        auto it = last_error.find(tp);
        left[tp] = it != last_error.end() ? it->second : kNetworkException;
      }
      return left;
    }
    if (attempt > 0) {
      backoff(attempt - 1);
      refresh_metadata_for(todo);
    }
    std::map<std::int32_t, std::vector<TopicPartition>> by_leader;
    for (auto& tp : todo) {
      try {
        by_leader[leader_id(tp)].push_back(tp);
      } catch (const KafkaError& e) {
        last_error[tp] = e.code();
        // Still unknown after a metadata refresh: the partition does not exist.
        if (request.unknown_partition_fails && e.code() == kUnknownTopicOrPartition && attempt >= 1) throw;
      }
    }
    struct InFlight {
      Connection* conn;
      std::int32_t corr;
      std::int16_t version;
      std::int32_t leader;
    };
    std::vector<InFlight> flights;
    for (auto& [leader, parts] : by_leader) {
      try {
        auto& conn = broker(leader);
        if (auto sent = request.send(conn, parts, todo)) flights.push_back({&conn, sent->first, sent->second, leader});
      } catch (const ConnectionError&) {
        drop_broker(leader);
        for (auto& tp : parts) last_error[tp] = kNetworkException;
      }
    }
    for (auto& f : flights) {
      try {
        request.receive(*f.conn, f.corr, f.version, todo, last_error);
      } catch (const ConnectionError&) {
        // Lost mid-request: retried next round, on a new connection.
        drop_broker(f.leader);
        for (auto& tp : by_leader[f.leader])
          if (todo.count(tp)) last_error[tp] = kNetworkException;
      }
    }
  }
  return {};
}

std::map<TopicPartition, ListedOffset> KafkaClient::list_offsets(const std::map<TopicPartition, std::int64_t>& targets,
                                                                 std::optional<std::int8_t> isolation_level) {
  std::map<TopicPartition, ListedOffset> out;
  LeaderRequest r;
  r.send = [&](Connection& conn, const std::vector<TopicPartition>& parts,
               std::set<TopicPartition>&) -> std::optional<std::pair<std::int32_t, std::int16_t>> {
    ListOffsetsRequest req;
    req.replica_id = -1;
    req.isolation_level = isolation_level.value_or(config_.isolation_level);
    req.timeout_ms = config_.request_timeout_ms;
    for (auto& tp : parts) {
      if (req.topics.empty() || req.topics.back().name != tp.topic) req.topics.push_back({tp.topic, {}, {}});
      ListOffsetsRequest::ListOffsetsPartition p;
      p.partition_index = tp.partition;
      p.timestamp = targets.at(tp);
      req.topics.back().partitions.push_back(p);
    }
    const auto v = std::max<std::int16_t>(conn.version_for<ListOffsetsRequest>(), 1);
    return std::make_pair(conn.send(req, v), v);
  };
  r.receive = [&](Connection& conn, std::int32_t corr, std::int16_t v, std::set<TopicPartition>& todo,
                  std::map<TopicPartition, std::int16_t>& last_error) {
    auto resp = conn.receive<ListOffsetsResponse>(corr, v, default_deadline());
    for (auto& t : resp.body.topics)
      for (auto& p : t.partitions) {
        TopicPartition tp{t.name, p.partition_index};
        if (!todo.count(tp)) continue;
        if (p.error_code == 0) {
          out[tp] = ListedOffset{p.offset, p.timestamp, p.leader_epoch};
          todo.erase(tp);
          last_error.erase(tp);
        } else if (refresh_worthy(p.error_code) || is_retriable(p.error_code)) {
          last_error[tp] = p.error_code;
        } else {
          throw KafkaError(p.error_code,
                           fmt::format("ListOffsets for {} failed: {}", to_string(tp), error_name(p.error_code)));
        }
      }
  };
  auto left = route_to_leaders(keys(targets), r);
  if (!left.empty()) {
    auto& [tp, code] = *left.begin();
    throw KafkaError(code, fmt::format("ListOffsets for {} failed after {} attempts: {}", to_string(tp),
                                       config_.retries + 1, error_name(code)));
  }
  return out;
}

std::map<TopicPartition, ProduceResult> KafkaClient::produce(const std::map<TopicPartition, Bytes>& batches) {
  std::map<TopicPartition, ProduceResult> out;
  LeaderRequest r;
  r.unknown_partition_fails = false;  // reported in the results
  r.send = [&](Connection& conn, const std::vector<TopicPartition>& parts,
               std::set<TopicPartition>& todo) -> std::optional<std::pair<std::int32_t, std::int16_t>> {
    ProduceRequest req;
    req.acks = config_.acks;
    req.timeout_ms = config_.request_timeout_ms;
    for (auto& tp : parts) {
      if (req.topic_data.empty() || req.topic_data.back().name != tp.topic) {
        ProduceRequest::TopicProduceData td;
        td.name = tp.topic;
        auto id = topic_ids_.find(tp.topic);
        if (id != topic_ids_.end()) td.topic_id = id->second;
        req.topic_data.push_back(std::move(td));
      }
      ProduceRequest::PartitionProduceData pd;
      pd.index = tp.partition;
      pd.records.data = ByteSpan(batches.at(tp));
      req.topic_data.back().partition_data.push_back(std::move(pd));
    }
    auto v = conn.version_for<ProduceRequest>();
    // Topic ids are required from v13; stay at v12 while one is unknown.
    if (v >= 13 &&
        !std::all_of(req.topic_data.begin(), req.topic_data.end(), [](auto& t) { return !t.topic_id.is_zero(); }))
      v = 12;
    const bool expect = config_.acks != 0;
    const auto corr = conn.send(req, v, expect);
    if (expect) return std::make_pair(corr, v);
    for (auto& tp : parts) {
      out[tp] = ProduceResult{};
      todo.erase(tp);
    }
    return std::nullopt;
  };
  r.receive = [&](Connection& conn, std::int32_t corr, std::int16_t v, std::set<TopicPartition>& todo,
                  std::map<TopicPartition, std::int16_t>& last_error) {
    auto resp = conn.receive<ProduceResponse>(corr, v, default_deadline());
    for (auto& t : resp.body.responses) {
      std::string name = t.name;
      if (v >= 13) {
        auto it = names_by_id_.find(t.topic_id.to_base64());
        if (it != names_by_id_.end()) name = it->second;
      }
      for (auto& p : t.partition_responses) {
        TopicPartition tp{name, p.index};
        if (!todo.count(tp)) continue;
        if (p.error_code == 0) {
          out[tp] = ProduceResult{0, p.base_offset, p.log_append_time_ms};
          todo.erase(tp);
        } else if (refresh_worthy(p.error_code) || is_retriable(p.error_code)) {
          last_error[tp] = p.error_code;
        } else {
          out[tp] = ProduceResult{p.error_code, -1, -1};
          todo.erase(tp);
        }
      }
    }
  };
  for (auto& [tp, code] : route_to_leaders(keys(batches), r)) out[tp].error_code = code;
  return out;
}

std::map<TopicPartition, std::int64_t> KafkaClient::delete_records(
    const std::map<TopicPartition, std::int64_t>& before_offsets) {
  std::map<TopicPartition, std::int64_t> out;
  LeaderRequest r;
  r.send = [&](Connection& conn, const std::vector<TopicPartition>& parts,
               std::set<TopicPartition>&) -> std::optional<std::pair<std::int32_t, std::int16_t>> {
    DeleteRecordsRequest req;
    req.timeout_ms = config_.request_timeout_ms;
    for (auto& tp : parts) {
      if (req.topics.empty() || req.topics.back().name != tp.topic) {
        DeleteRecordsRequest::DeleteRecordsTopic t;
        t.name = tp.topic;
        req.topics.push_back(std::move(t));
      }
      DeleteRecordsRequest::DeleteRecordsPartition p;
      p.partition_index = tp.partition;
      p.offset = before_offsets.at(tp);
      req.topics.back().partitions.push_back(p);
    }
    const auto v = conn.version_for<DeleteRecordsRequest>();
    return std::make_pair(conn.send(req, v), v);
  };
  r.receive = [&](Connection& conn, std::int32_t corr, std::int16_t v, std::set<TopicPartition>& todo,
                  std::map<TopicPartition, std::int16_t>& last_error) {
    auto resp = conn.receive<DeleteRecordsResponse>(corr, v, default_deadline());
    for (auto& t : resp.body.topics)
      for (auto& p : t.partitions) {
        TopicPartition tp{t.name, p.partition_index};
        if (!todo.count(tp)) continue;
        if (p.error_code == 0) {
          out[tp] = p.low_watermark;
          todo.erase(tp);
          last_error.erase(tp);
        } else if (refresh_worthy(p.error_code) || is_retriable(p.error_code)) {
          last_error[tp] = p.error_code;
        } else {
          throw KafkaError(p.error_code, fmt::format("DeleteRecords for {} before offset {} failed: {}", to_string(tp),
                                                     before_offsets.at(tp), error_name(p.error_code)));
        }
      }
  };
  auto left = route_to_leaders(keys(before_offsets), r);
  if (!left.empty()) {
    auto& [tp, code] = *left.begin();
    throw KafkaError(code, fmt::format("DeleteRecords for {} failed after {} attempts: {}", to_string(tp),
                                       config_.retries + 1, error_name(code)));
  }
  return out;
}

}  // namespace kwire::client

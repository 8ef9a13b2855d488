// kwire conformance: for every API kwire declares, send a request at every
// version that both kwire and the broker speak, and check that the response
// decodes completely, round-trips byte for byte, and reports success.
#include "conformance.hpp"
#include "conformance_exchange.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "conformance_groups.hpp"
#include "conformance_txn.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "kwire/protocol/messages/create_partitions.hpp"
#include "kwire/protocol/messages/delete_records.hpp"
#include "kwire/protocol/record_batch.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/version.hpp"

namespace kwire::tools {

using namespace kwire::protocol;
using client::Connection;
using client::KafkaClient;

namespace {

struct Context {
  KafkaClient* client;
  Connection* conn;
  std::string topic;  // one partition, `records` records
  Uuid topic_id;
  std::int32_t leader_epoch = -1;  // of the topic's partition, from Metadata
  std::int32_t node_id = -1;       // the node `conn` talks to (its leader)
  std::optional<std::string> cluster_id;
  std::int64_t records = 0;
  std::string scratch_prefix;  // for topics created/deleted by the checks
};

std::string fail_code(const char* what, std::int16_t code) {
  return fmt::format("{} returned {}", what, error_name(code));
}

// Sends `req` at version v, decodes the response, checks it re-encodes to the
// same size (every byte understood), then applies `check` (empty = ok).
template <class Resp, class Req>
std::string exchange(Context& c, const Req& req, std::int16_t v, const std::function<std::string(const Resp&)>& check) {
  std::string size_error;
  auto body = checked_exchange<Resp>(*c.conn, req, v, c.client->default_deadline(), size_error);
  if (!size_error.empty()) return size_error;
  return check(body);
}

Bytes one_batch(int n, std::int16_t produce_version, const std::string& tag) {
  std::vector<ProducerRecord> recs;
  for (int i = 0; i < n; ++i) {
    std::string v = fmt::format("{}-{}", tag, i);
    ProducerRecord r;
    r.value = Bytes(v.begin(), v.end());
    recs.push_back(std::move(r));
  }
  Bytes out;
  if (produce_version >= 3) {
    encode_record_batch(recs, BatchOptions{}, out);
  } else {
    // Produce v0-v1 carry magic-0 message sets, v2 magic 1.
    const std::int8_t magic = produce_version == 2 ? 1 : 0;
    auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    for (int i = 0; i < n; ++i) encode_legacy_message(out, i, magic, 0, now, std::nullopt, recs[i].value);
  }
  return out;
}

// From v5 (KIP-1242) the request may name the node it means to reach: the
// right node id is accepted, another one answers REBOOTSTRAP_REQUIRED.
std::string check_api_versions(Context& c, std::int16_t v, std::vector<FeatureLevel>& features) {
  ApiVersionsRequest req;
  req.client_software_name = "kwire-conformance";
  req.client_software_version = KWIRE_VERSION_STRING;
  auto res = exchange<ApiVersionsResponse>(c, req, v, [&](const ApiVersionsResponse& r) -> std::string {
    if (r.error_code) return fail_code("ApiVersions", r.error_code);
    if (r.api_keys.empty()) return "no API keys listed";
    if (v < 3) return {};
    features.clear();
    for (auto& f : r.supported_features) features.push_back({f.name, f.min_version, f.max_version, -1});
    for (auto& f : r.finalized_features) {
      auto it = std::find_if(features.begin(), features.end(), [&](auto& x) { return x.name == f.name; });
      if (it == features.end()) it = features.insert(features.end(), {f.name, 0, 0, -1});
      it->finalized = f.max_version_level;
    }
    std::sort(features.begin(), features.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return {};
  });
  if (!res.empty() || v < 5) return res;
  req.cluster_id = c.cluster_id;
  req.node_id = c.node_id;
  res = exchange<ApiVersionsResponse>(c, req, v, [&](const ApiVersionsResponse& r) -> std::string {
    if (r.error_code) return fail_code("ApiVersions naming its own node", r.error_code);
    return {};
  });
  if (!res.empty()) return res;
  req.node_id = c.node_id + 1000;
  return exchange<ApiVersionsResponse>(c, req, v, [&](const ApiVersionsResponse& r) -> std::string {
    if (r.error_code != static_cast<std::int16_t>(ErrorCode::rebootstrap_required))
      return fmt::format("naming another node gave {} instead of REBOOTSTRAP_REQUIRED", error_name(r.error_code));
    return {};
  });
}

std::string check_metadata(Context& c, std::int16_t v) {
  MetadataRequest req;
  req.topics.emplace();
  MetadataRequest::MetadataRequestTopic t;
  t.name = c.topic;
  if (v >= 10) t.topic_id = Uuid{};
  req.topics->push_back(t);
  req.allow_auto_topic_creation = false;
  return exchange<MetadataResponse>(c, req, v, [&](const MetadataResponse& r) -> std::string {
    if (r.brokers.empty()) return "no brokers";
    if (r.topics.size() != 1) return fmt::format("{} topics instead of 1", r.topics.size());
    if (r.topics[0].error_code) return fail_code("topic", r.topics[0].error_code);
    if (r.topics[0].partitions.size() != 1) return "partition count is not 1";
    if (v >= 10 && r.topics[0].topic_id != c.topic_id) return "topic id differs";
    return {};
  });
}

std::string check_list_offsets(Context& c, std::int16_t v) {
  ListOffsetsRequest req;
  req.replica_id = -1;
  ListOffsetsRequest::ListOffsetsTopic t;
  t.name = c.topic;
  ListOffsetsRequest::ListOffsetsPartition p;
  p.partition_index = 0;
  p.timestamp = -1;
  p.max_num_offsets = 1;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  return exchange<ListOffsetsResponse>(c, req, v, [&](const ListOffsetsResponse& r) -> std::string {
    if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) return "wrong shape";
    auto& pr = r.topics[0].partitions[0];
    if (pr.error_code) return fail_code("partition", pr.error_code);
    std::int64_t latest = v == 0 ? (pr.old_style_offsets.empty() ? -1 : pr.old_style_offsets[0]) : pr.offset;
    if (latest != c.records) return fmt::format("latest offset {} instead of {}", latest, c.records);
    return {};
  });
}

std::string check_fetch(Context& c, std::int16_t v) {
  // Read the partition from 0 to its end as a consumer would: a response may
  // end in a partial entry (always possible, and routine when an older broker
  // converts batches down for Fetch v0-v3), after which the next fetch starts
  // at the next offset.
  std::int64_t next = 0;
  std::int64_t seen = 0;
  for (int round = 0; round < 200 && next < c.records; ++round) {
    FetchRequest req;
    req.max_wait_ms = 100;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    FetchRequest::FetchTopic t;
    if (v >= 13) t.topic_id = c.topic_id;
    else t.topic = c.topic;
    FetchRequest::FetchPartition p;
    p.partition = 0;
    p.fetch_offset = next;
    p.partition_max_bytes = 1 << 20;
    t.partitions.push_back(p);
    req.topics.push_back(t);
    std::int64_t got = 0;
    auto res = exchange<FetchResponse>(c, req, v, [&](const FetchResponse& r) -> std::string {
      if (r.error_code) return fail_code("Fetch", r.error_code);
      if (r.responses.size() != 1 || r.responses[0].partitions.size() != 1) return "wrong shape";
      auto& pd = r.responses[0].partitions[0];
      if (pd.error_code) return fail_code("partition", pd.error_code);
      if (pd.high_watermark != c.records)
        return fmt::format("high watermark {} instead of {}", pd.high_watermark, c.records);
      DecodedRecords d;
      d.next_offset = next;
      if (pd.records.data) decode_records(*pd.records.data, next, DecodeOptions{}, d);
      for (auto& rec : d.records) {
        if (rec.offset != next + got) return fmt::format("offset {} where {} was expected", rec.offset, next + got);
        ++got;
      }
      next = d.next_offset;
      return {};
    });
    if (!res.empty()) return res;
    if (got == 0) return fmt::format("no progress at offset {}", next);
    seen += got;
  }
  if (seen != c.records) return fmt::format("{} records read instead of {}", seen, c.records);
  return {};
}

std::string check_produce(Context& c, std::int16_t v) {
  Bytes batch = one_batch(3, v, fmt::format("produce-v{}", v));
  ProduceRequest req;
  req.acks = -1;
  req.timeout_ms = 10000;
  ProduceRequest::TopicProduceData td;
  if (v >= 13) td.topic_id = c.topic_id;
  else td.name = c.topic;
  ProduceRequest::PartitionProduceData pd;
  pd.index = 0;
  pd.records.data = ByteSpan(batch);
  td.partition_data.push_back(pd);
  req.topic_data.push_back(td);
  auto res = exchange<ProduceResponse>(c, req, v, [&](const ProduceResponse& r) -> std::string {
    if (r.responses.size() != 1 || r.responses[0].partition_responses.size() != 1) return "wrong shape";
    auto& p = r.responses[0].partition_responses[0];
    if (p.error_code) return fail_code("partition", p.error_code);
    if (p.base_offset != c.records) return fmt::format("base offset {} instead of {}", p.base_offset, c.records);
    return {};
  });
  if (res.empty()) c.records += 3;
  return res;
}

std::string check_create_delete(Context& c, std::int16_t create_v, std::int16_t delete_v, bool check_create) {
  std::string name = fmt::format("{}-c{}-d{}", c.scratch_prefix, create_v, delete_v);
  CreateTopicsRequest creq;
  CreateTopicsRequest::CreatableTopic ct;
  ct.name = name;
  ct.num_partitions = 1;
  ct.replication_factor = 1;
  creq.topics.push_back(ct);
  creq.timeout_ms = 10000;
  auto res = exchange<CreateTopicsResponse>(c, creq, create_v, [&](const CreateTopicsResponse& r) -> std::string {
    if (r.topics.size() != 1) return "wrong shape";
    if (r.topics[0].error_code) return fail_code("topic", r.topics[0].error_code);
    return {};
  });
  if (!res.empty()) return check_create ? res : "setup (CreateTopics) failed: " + res;
  if (check_create) {
    // clean up at the highest version
    c.client->delete_topics({name});
    return {};
  }
  DeleteTopicsRequest dreq;
  dreq.timeout_ms = 10000;
  if (delete_v >= 6) {
    DeleteTopicsRequest::DeleteTopicState s;
    s.name = name;
    dreq.topics.push_back(s);
  } else {
    dreq.topic_names.push_back(name);
  }
  return exchange<DeleteTopicsResponse>(c, dreq, delete_v, [&](const DeleteTopicsResponse& r) -> std::string {
    if (r.responses.size() != 1) return "wrong shape";
    if (r.responses[0].error_code) return fail_code("topic", r.responses[0].error_code);
    return {};
  });
}

std::string check_delete_records(Context& c, std::int16_t v) {
  DeleteRecordsRequest req;
  DeleteRecordsRequest::DeleteRecordsTopic t;
  t.name = c.topic;
  t.partitions.push_back({0, 0, {}});  // "delete" below offset 0: nothing is removed
  req.topics.push_back(t);
  req.timeout_ms = 10000;
  return exchange<DeleteRecordsResponse>(c, req, v, [&](const DeleteRecordsResponse& r) -> std::string {
    if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) return "wrong shape";
    auto& p = r.topics[0].partitions[0];
    if (p.error_code) return fail_code("partition", p.error_code);
    if (p.low_watermark != 0) return fmt::format("low watermark {} instead of 0", p.low_watermark);
    return {};
  });
}

std::string check_create_partitions(Context& c, std::int16_t v, std::int32_t& count) {
  CreatePartitionsRequest req;
  CreatePartitionsRequest::CreatePartitionsTopic t;
  t.name = c.scratch_prefix + "-partitions";
  t.count = count + 1;
  req.topics.push_back(t);
  req.timeout_ms = 10000;
  auto res = exchange<CreatePartitionsResponse>(c, req, v, [&](const CreatePartitionsResponse& r) -> std::string {
    if (r.results.size() != 1) return "wrong shape";
    if (r.results[0].error_code) return fail_code("topic", r.results[0].error_code);
    return {};
  });
  if (res.empty()) ++count;
  return res;
}

// Asks where the partition's current leader epoch ends: the log end offset,
// as all records were written in it. From v2 the current leader epoch is sent
// as a consumer does; one epoch above it is then refused as unknown (fencing).
std::string check_offset_for_leader_epoch(Context& c, std::int16_t v) {
  auto request = [&](std::int32_t current_leader_epoch) {
    OffsetForLeaderEpochRequest req;
    req.replica_id = OffsetForLeaderEpochRequest::kConsumerReplicaId;
    OffsetForLeaderEpochRequest::OffsetForLeaderPartition p;
    p.partition = 0;
    p.current_leader_epoch = current_leader_epoch;
    p.leader_epoch = c.leader_epoch;
    req.topics.push_back({c.topic, {p}, {}});
    return req;
  };
  auto partition_of = [](const OffsetForLeaderEpochResponse& r) -> const OffsetForLeaderEpochResponse::EpochEndOffset* {
    if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) return nullptr;
    return &r.topics[0].partitions[0];
  };
  auto res = exchange<OffsetForLeaderEpochResponse>(
      c, request(c.leader_epoch), v, [&](const OffsetForLeaderEpochResponse& r) -> std::string {
        const auto* p = partition_of(r);
        if (!p || r.topics[0].topic != c.topic || p->partition != 0) return "wrong shape";
        if (p->error_code) return fail_code("partition", p->error_code);
        if (v >= 1 && p->leader_epoch != c.leader_epoch)
          return fmt::format("leader epoch {} instead of {}", p->leader_epoch, c.leader_epoch);
        if (p->end_offset != c.records) return fmt::format("end offset {} instead of {}", p->end_offset, c.records);
        return {};
      });
  if (!res.empty() || v < 2) return res;
  return exchange<OffsetForLeaderEpochResponse>(
      c, request(c.leader_epoch + 1), v, [&](const OffsetForLeaderEpochResponse& r) -> std::string {
        const auto* p = partition_of(r);
        if (!p) return "wrong shape";
        if (p->error_code != static_cast<std::int16_t>(ErrorCode::unknown_leader_epoch))
          return fmt::format("a newer current leader epoch gave {} instead of UNKNOWN_LEADER_EPOCH",
                             error_name(p->error_code));
        return {};
      });
}

}  // namespace

std::vector<ConformanceRow> run_conformance(const std::map<std::string, std::string>& properties) {
  KafkaClient client(properties);
  auto md = client.metadata(std::vector<std::string>{});
  Context c;
  c.client = &client;
  c.conn = &client.any_connection();
  c.scratch_prefix = fmt::format("kwire-conformance-{}-{}", getpid(),
                                 std::chrono::steady_clock::now().time_since_epoch().count() % 1000000);
  c.topic = c.scratch_prefix + "-data";
  client.create_topics({{c.topic, 1, 1, {}}, {c.scratch_prefix + "-partitions", 1, 1, {}}});
  std::int32_t partition_count = 1;
  {
    auto tmd = client.metadata(std::vector<std::string>{c.topic});
    c.topic_id = tmd.topics.at(0).topic_id;
    c.leader_epoch = tmd.topics.at(0).partitions.at(0).leader_epoch;
    c.node_id = tmd.topics.at(0).partitions.at(0).leader_id;
    c.cluster_id = tmd.cluster_id;
    // Seed records through the regular path.
    Bytes b = one_batch(5, 3, "seed");
    auto r = client.produce({{client::TopicPartition{c.topic, 0}, b}});
    if (r.begin()->second.error_code) throw std::runtime_error("seeding the conformance topic failed");
    c.records = 5;
  }
  c.conn = &client.leader_for(client::TopicPartition{c.topic, 0});
  const auto offered = c.conn->broker_versions();
  // Kafka 4 removed Produce v0-v2 (KIP-896) yet still advertises them, so that
  // clients checking the advertised range keep connecting; it closes the
  // connection when they are used. Recognise a 4.x broker by its Fetch minimum.
  const auto fetch_range = offered.find(static_cast<std::int16_t>(ApiKey::fetch));
  const bool removed_old_produce = fetch_range != offered.end() && fetch_range->second.min >= 4;

  std::vector<ConformanceRow> rows;
  auto run_api = [&](ConformanceRow row, const std::function<std::string(std::int16_t)>& check) {
    auto it = offered.find(row.api_key);
    if (it != offered.end()) {
      row.offered_min = it->second.min;
      row.offered_max = it->second.max;
      for (std::int16_t v = std::max(row.declared_min, row.offered_min);
           v <= std::min(row.declared_max, row.offered_max); ++v) {
        if (removed_old_produce && row.api_key == 0 && v <= 2) {
          row.skipped.push_back(v);
          continue;
        }
        std::string result;
        try {
          result = check(v);
        } catch (const std::exception& e) {
          result = e.what();
          // The connection may be gone: take a fresh one for the next check.
          c.conn = &client.leader_for(client::TopicPartition{c.topic, 0});
        }
        row.exercised.push_back(v);
        if (!result.empty()) row.failures.push_back(fmt::format("v{}: {}", v, result));
      }
    }
    rows.push_back(std::move(row));
  };
  std::vector<FeatureLevel> features;
  run_api(declared_row<ApiVersionsRequest>(), [&](std::int16_t v) { return check_api_versions(c, v, features); });
  rows.back().features = features;
  run_api(declared_row<MetadataRequest>(), [&](std::int16_t v) { return check_metadata(c, v); });
  run_api(declared_row<ProduceRequest>(), [&](std::int16_t v) { return check_produce(c, v); });
  run_api(declared_row<ListOffsetsRequest>(), [&](std::int16_t v) { return check_list_offsets(c, v); });
  run_api(declared_row<FetchRequest>(), [&](std::int16_t v) { return check_fetch(c, v); });
  const std::int16_t delete_max = c.conn->version_for<DeleteTopicsRequest>();
  run_api(declared_row<CreateTopicsRequest>(),
          [&](std::int16_t v) { return check_create_delete(c, v, delete_max, true); });
  const std::int16_t create_max = c.conn->version_for<CreateTopicsRequest>();
  run_api(declared_row<DeleteTopicsRequest>(),
          [&](std::int16_t v) { return check_create_delete(c, create_max, v, false); });
  run_api(declared_row<CreatePartitionsRequest>(),
          [&](std::int16_t v) { return check_create_partitions(c, v, partition_count); });
  run_api(declared_row<DeleteRecordsRequest>(), [&](std::int16_t v) { return check_delete_records(c, v); });
  run_api(declared_row<OffsetForLeaderEpochRequest>(),
          [&](std::int16_t v) { return check_offset_for_leader_epoch(c, v); });
  GroupChecks groups;
  groups.client = &client;
  groups.topic = c.topic;
  groups.topic_id = c.topic_id;
  groups.prefix = c.scratch_prefix;
  groups.kafka4 = removed_old_produce;
  run_group_conformance(groups, [&](ConformanceRow row, const std::function<std::string(std::int16_t)>& check) {
    run_api(std::move(row), check);
  });
  groups.cluster_id = md.cluster_id.value_or("");
  groups.brokers = md.brokers.size();
  run_admin_conformance(groups, [&](ConformanceRow row, const std::function<std::string(std::int16_t)>& check) {
    run_api(std::move(row), check);
  });
  run_acl_conformance(groups, [&](ConformanceRow row, const std::function<std::string(std::int16_t)>& check) {
    run_api(std::move(row), check);
  });
  // Share groups: only where the cluster finalized share.version >= 1 (the
  // default from Kafka 4.2; 4.1 offers the APIs with the feature off).
  auto share = std::find_if(features.begin(), features.end(), [](auto& f) { return f.name == "share.version"; });
  const bool share_on = share != features.end() && share->finalized >= 1;
  run_share_conformance(groups, [&](ConformanceRow row, const std::function<std::string(std::int16_t)>& check) {
    if (share_on) return run_api(std::move(row), check);
    auto it = offered.find(row.api_key);
    if (it != offered.end()) {
      row.offered_min = it->second.min;
      row.offered_max = it->second.max;
      row.note = "share groups are off on this broker (share.version not finalized): not sent";
    }
    rows.push_back(std::move(row));
  });
  TxnChecks txn;
  txn.client = &client;
  txn.prefix = c.scratch_prefix;
  run_txn_conformance(txn, [&](ConformanceRow row, const std::function<std::string(std::int16_t)>& check) {
    run_api(std::move(row), check);
  });
  try {
    client.delete_topics({c.topic, c.scratch_prefix + "-partitions"});
  } catch (const std::exception&) {
  }
  return rows;
}

int cmd_conformance(const std::map<std::string, std::string>& properties, bool json) {
  auto rows = run_conformance(properties);
  bool ok = true;
  std::string out;
  if (json) out += "[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto& r = rows[i];
    ok = ok && r.failures.empty();
    std::string exercised =
        r.exercised.empty() ? std::string("none") : fmt::format("{}-{}", r.exercised.front(), r.exercised.back());
    if (json) {
      out += fmt::format("{}{{\"api\":\"{}\",\"apiKey\":{},\"declared\":[{},{}],\"offered\":", i ? "," : "", r.api,
                         r.api_key, r.declared_min, r.declared_max);
      out += r.offered_max >= 0 ? fmt::format("[{},{}]", r.offered_min, r.offered_max) : std::string("null");
      if (!r.note.empty()) {
        out += ",\"note\":";
        kwire::source::append_json_string(out, r.note);
      }
      out += fmt::format(",\"exercised\":[{}],\"skipped\":[{}],\"result\":\"{}\",\"failures\":[",
                         fmt::join(r.exercised, ","), fmt::join(r.skipped, ","), r.failures.empty() ? "ok" : "failed");
      for (std::size_t f = 0; f < r.failures.size(); ++f) {
        if (f) out += ",";
        kwire::source::append_json_string(out, r.failures[f]);
      }
      out += "]";
      if (!r.features.empty()) {
        out += ",\"features\":[";
        for (std::size_t f = 0; f < r.features.size(); ++f) {
          auto& fl = r.features[f];
          out += fmt::format("{}{{\"name\":", f ? "," : "");
          kwire::source::append_json_string(out, fl.name);
          out += fmt::format(",\"supported\":[{},{}],\"finalized\":{}}}", fl.supported_min, fl.supported_max,
                             fl.finalized >= 0 ? std::to_string(fl.finalized) : std::string("null"));
        }
        out += "]";
      }
      out += "}";
    } else {
      if (i == 0)
        out += fmt::format("{:<24} {:>9} {:>9} {:>10}  {}\n", "API", "declared", "offered", "exercised", "result");
      out += fmt::format("{:<24} {:>9} {:>9} {:>10}  {}\n", r.api, fmt::format("{}-{}", r.declared_min, r.declared_max),
                         r.offered_max >= 0 ? fmt::format("{}-{}", r.offered_min, r.offered_max) : std::string("-"),
                         exercised, r.failures.empty() ? "ok" : "FAILED");
      for (auto& f : r.failures) out += "    " + f + "\n";
      if (!r.note.empty()) out += "    " + r.note + "\n";
      for (auto& f : r.features)
        out += fmt::format("    feature {} supported {}-{}, finalized {}\n", f.name, f.supported_min, f.supported_max,
                           f.finalized >= 0 ? std::to_string(f.finalized) : std::string("-"));
      if (!r.skipped.empty())
        out += fmt::format("    v{}-v{} advertised by the broker but removed from it (KIP-896): not sent\n",
                           r.skipped.front(), r.skipped.back());
    }
  }
  if (json) out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return ok ? 0 : 1;
}

}  // namespace kwire::tools

#include "kwire/mock/mock_cluster.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include "kwire/protocol/messages.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::mock {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace kwire::protocol;
using std::chrono::milliseconds;

bool RequestRecord::mentions(const std::string& topic, std::int32_t partition) const {
  return std::any_of(partitions.begin(), partitions.end(),
                     [&](const RequestedPartition& p) { return p.topic == topic && p.partition == partition; });
}

std::string describe(const RequestRecord& r) {
  std::string parts;
  for (auto& p : r.partitions) {
    if (!parts.empty()) parts += ' ';
    parts += fmt::format("{}-{}@{}", p.topic, p.partition, p.offset);
  }
  for (auto& t : r.topics) {
    if (!parts.empty()) parts += ' ';
    parts += t;
  }
  return fmt::format("{} v{} -> broker {}{} [{}]", api_name(r.api_key), r.version, r.broker,
                     r.by_topic_id ? " (by id)" : "", parts);
}

namespace {

constexpr std::int16_t err(ErrorCode c) { return static_cast<std::int16_t>(c); }

struct StoredBatch {
  std::int64_t base = 0;
  std::int64_t last = 0;
  std::int32_t epoch = 0;  // the partition leader epoch it was appended under
  std::int64_t max_timestamp = -1;
  Bytes bytes;
};

struct PartitionLog {
  std::int32_t leader = 1;
  std::int32_t epoch = 0;
  // Leader and epoch before the last move_leader / bump_leader_epoch (what a
  // broker with stale metadata still answers).
  std::int32_t previous_leader = 1;
  std::int32_t previous_epoch = 0;
  std::int64_t log_start = 0;
  std::int64_t hwm = 0;
  std::vector<StoredBatch> batches;
};

struct TopicLog {
  Uuid id;
  std::vector<PartitionLog> partitions;
};

// Offsets inside a magic-2 batch header.
constexpr std::size_t kBatchLengthAt = 8;
constexpr std::size_t kLeaderEpochAt = 12;
constexpr std::size_t kMagicAt = 16;
constexpr std::size_t kLastOffsetDeltaAt = 23;
constexpr std::size_t kMaxTimestampAt = 35;

void store_be64(std::uint8_t* p, std::int64_t v) {
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<std::uint8_t>(u & 0xff);
    u >>= 8;
  }
}

// Splits RECORDS bytes into whole magic-2 batches; false when malformed.
bool split_batches(ByteSpan data, std::vector<Bytes>& out) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < kRecordBatchHeaderSize) return false;
    auto len = static_cast<std::int32_t>(load_be32(data.data() + pos + kBatchLengthAt));
    if (len < static_cast<std::int32_t>(kRecordBatchHeaderSize - kLogOverhead)) return false;
    std::size_t total = kLogOverhead + static_cast<std::size_t>(len);
    if (data.size() - pos < total) return false;
    if (data[pos + kMagicAt] != 2) return false;
    out.emplace_back(data.begin() + static_cast<std::ptrdiff_t>(pos),
                     data.begin() + static_cast<std::ptrdiff_t>(pos + total));
    pos += total;
  }
  return !out.empty();
}

// Assigns offsets from `p.hwm` on: rewrites baseOffset and appends.
std::int64_t append_batch(PartitionLog& p, Bytes bytes) {
  StoredBatch b;
  b.base = p.hwm;
  store_be64(bytes.data(), b.base);
  // The leader stamps its epoch (outside the CRC, as a broker does).
  b.epoch = p.epoch;
  for (int i = 0; i < 4; ++i)
    bytes[kLeaderEpochAt + static_cast<std::size_t>(i)] =
        static_cast<std::uint8_t>(static_cast<std::uint32_t>(p.epoch) >> (24 - 8 * i));
  auto delta = static_cast<std::int32_t>(load_be32(bytes.data() + kLastOffsetDeltaAt));
  b.last = b.base + std::max(delta, 0);
  b.max_timestamp = static_cast<std::int64_t>(load_be64(bytes.data() + kMaxTimestampAt));
  b.bytes = std::move(bytes);
  p.hwm = b.last + 1;
  p.batches.push_back(std::move(b));
  return p.batches.back().base;
}

Uuid random_uuid(std::mt19937_64& rng) {
  Uuid u;
  for (auto& b : u.bytes) b = static_cast<std::uint8_t>(rng() & 0xff);
  u.bytes[0] |= 1;  // never the zero id
  return u;
}

// What the faults matching one request ask for.
struct Effects {
  std::optional<std::int16_t> all_error;
  std::map<std::pair<std::string, std::int32_t>, std::int16_t> errors;
  std::map<std::string, std::int16_t> topic_errors;  // fault with a topic and no partition
  bool truncate_all = false;
  std::set<std::pair<std::string, std::int32_t>> truncate;
  std::set<std::pair<std::string, std::int32_t>> corrupt;
  std::set<std::pair<std::string, std::int32_t>> duplicate;
  std::set<std::pair<std::string, std::int32_t>> stale;  // Metadata: previous leader and epoch
  milliseconds delay{0};
  std::int32_t throttle_ms = 0;
  bool drop = false;
  bool append_anyway = false;  // Produce: append, then answer the error
  bool any = false;

  std::int16_t error_for(const std::string& t, std::int32_t p) const {
    auto it = errors.find({t, p});
    if (it != errors.end()) return it->second;
    auto ti = topic_errors.find(t);
    if (ti != topic_errors.end()) return ti->second;
    return all_error.value_or(0);
  }
  bool truncates(const std::string& t, std::int32_t p) const { return truncate_all || truncate.count({t, p}); }
};

struct Reply {
  std::optional<Bytes> frame;  // nullopt: no response (Produce acks=0)
  milliseconds delay{0};
  bool drop = false;
  bool close = false;
  // Fetch long poll: rebuild every few ms until it has data or `wait` passes.
  milliseconds wait{0};
  std::function<std::pair<Bytes, bool>()> rebuild;
};

template <class M>
Bytes response_frame(const M& body, std::int16_t version, std::int32_t corr) {
  return encode_response_frame(body, version, corr);
}

}  // namespace

struct MockCluster::State {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;

  struct BrokerSocket {
    std::int32_t node = 0;
    std::uint16_t port = 0;
    std::unique_ptr<tcp::acceptor> acceptor;
  };
  std::vector<BrokerSocket> brokers;  // fixed after construction

  mutable std::mutex mu;
  std::map<std::string, TopicLog> topics;
  std::map<std::string, std::string> retired_ids;  // base64 id of a deleted topic -> name (for the log)
  std::map<std::int16_t, std::pair<std::int16_t, std::int16_t>> versions;
  std::map<std::int16_t, MockCluster::Handler> handlers;  // scripted APIs (set_handler)
  MockCluster::ProduceCheck produce_check;                // set_produce_check
  std::map<std::string, std::int16_t> finalized_features;
  std::vector<Fault> faults;
  std::vector<RequestRecord> log;
  int accepted = 0;
  std::string cluster_id = "kwire-mock-cluster";
  std::set<std::int32_t> down;
  std::mt19937_64 rng{0x6b77697265ULL};

  struct FetchSessionState {
    std::int32_t epoch = 1;  // expected epoch of the next request
    // (topic, partition) -> (fetch offset, partition max bytes), in request order by key
    std::map<std::pair<std::string, std::int32_t>, std::pair<std::int64_t, std::int32_t>> partitions;
    std::map<std::pair<std::string, std::int32_t>, protocol::Uuid> ids;
  };
  bool sessions_enabled = false;
  bool strict_fetch_size = false;
  std::int32_t next_session_id = 1;
  std::map<std::int32_t, std::map<std::int32_t, FetchSessionState>> sessions;  // node -> id -> state
  std::map<std::int32_t, int> sessions_opened;

  // ---- helpers (mu held) ----

  std::vector<std::int32_t> node_ids() const {
    std::vector<std::int32_t> out;
    for (auto& b : brokers) out.push_back(b.node);
    return out;
  }

  const std::string* name_for_id(const Uuid& id) const {
    for (auto& [name, t] : topics)
      if (t.id == id) return &name;
    return nullptr;
  }

  std::string log_name_for_id(const Uuid& id) const {
    if (auto* n = name_for_id(id)) return *n;
    auto it = retired_ids.find(id.to_base64());
    return it != retired_ids.end() ? it->second : std::string();
  }

  PartitionLog* find(const std::string& topic, std::int32_t partition) {
    auto it = topics.find(topic);
    if (it == topics.end() || partition < 0 || partition >= static_cast<std::int32_t>(it->second.partitions.size()))
      return nullptr;
    return &it->second.partitions[static_cast<std::size_t>(partition)];
  }

  PartitionLog& get(const std::string& topic, std::int32_t partition) {
    auto* p = find(topic, partition);
    if (!p) throw std::invalid_argument(fmt::format("mock: no partition {}-{}", topic, partition));
    return *p;
  }

  Uuid create(const std::string& name, std::int32_t partitions, const std::vector<std::int32_t>& leaders) {
    if (topics.count(name)) throw std::invalid_argument("mock: topic exists: " + name);
    TopicLog t;
    t.id = random_uuid(rng);
    auto ids = node_ids();
    for (std::int32_t p = 0; p < partitions; ++p) {
      PartitionLog pl;
      pl.leader = static_cast<std::size_t>(p) < leaders.size() ? leaders[static_cast<std::size_t>(p)]
                                                               : ids[static_cast<std::size_t>(p) % ids.size()];
      pl.previous_leader = pl.leader;
      t.partitions.push_back(std::move(pl));
    }
    auto id = t.id;
    topics.emplace(name, std::move(t));
    return id;
  }

  void remove(const std::string& name) {
    auto it = topics.find(name);
    if (it == topics.end()) return;
    retired_ids[it->second.id.to_base64()] = name;
    topics.erase(it);
  }

  bool version_ok(std::int16_t api, std::int16_t v) const {
    auto it = versions.find(api);
    return it != versions.end() && v >= it->second.first && v <= it->second.second;
  }

  Effects take_faults(ApiKey api, std::int32_t node, const std::vector<RequestedPartition>& parts) {
    Effects e;
    std::set<std::tuple<std::string, std::int32_t, std::int32_t>> seen;
    for (auto& f : faults) {
      if (f.times <= 0 || f.api != api) continue;
      if (f.broker && *f.broker != node) continue;
      auto key = std::make_tuple(f.topic.value_or("\x01*"), f.partition.value_or(-1000), f.broker.value_or(-1000));
      if (seen.count(key)) continue;
      std::vector<std::pair<std::string, std::int32_t>> matched;
      if (f.topic) {
        for (auto& p : parts)
          if (p.topic == *f.topic && (!f.partition || *f.partition == p.partition))
            matched.push_back({p.topic, p.partition});
        if (matched.empty()) continue;
      }
      seen.insert(key);
      --f.times;
      e.any = true;
      if (f.error_code) {
        if (!f.topic) e.all_error = f.error_code;
        else if (!f.partition) e.topic_errors[*f.topic] = f.error_code;
        else
          for (auto& m : matched) e.errors[m] = f.error_code;
      }
      if (f.truncate_last_batch) {
        if (!f.topic) e.truncate_all = true;
        else
          for (auto& m : matched) e.truncate.insert(m);
      }
      for (auto& m : matched) {
        if (f.corrupt_last_batch) e.corrupt.insert(m);
        if (f.duplicate_partition) e.duplicate.insert(m);
        if (f.stale_metadata) e.stale.insert(m);
      }
      e.delay = std::max(e.delay, f.delay);
      e.throttle_ms = std::max(e.throttle_ms, f.throttle_ms);
      e.drop = e.drop || f.drop_connection;
      e.append_anyway = e.append_anyway || f.append_anyway;
    }
    std::erase_if(faults, [](const Fault& f) { return f.times <= 0; });
    return e;
  }

  RequestRecord& record(ApiKey api, std::int16_t version, std::int32_t node, std::int32_t corr) {
    RequestRecord r;
    r.api_key = api;
    r.version = version;
    r.broker = node;
    r.correlation_id = corr;
    r.received = MockClock::now();
    log.push_back(std::move(r));
    return log.back();
  }

  static Reply finish(Bytes frame, const Effects& e) {
    Reply r;
    r.frame = std::move(frame);
    r.delay = e.delay;
    r.drop = e.drop;
    return r;
  }

  // ---- request handling ----

  Reply handle(std::int32_t node, const Bytes& payload) {
    std::lock_guard lock(mu);
    auto api = static_cast<std::int16_t>(load_be16(payload.data()));
    auto version = static_cast<std::int16_t>(load_be16(payload.data() + 2));
    auto corr = static_cast<std::int32_t>(load_be32(payload.data() + 4));
    if (static_cast<ApiKey>(api) == ApiKey::api_versions) return api_versions(node, version, corr);
    if (!version_ok(api, version)) {
      // Like a broker that cannot parse the request: log it and hang up.
      record(static_cast<ApiKey>(api), version, node, corr);
      Reply r;
      r.close = true;
      return r;
    }
    switch (static_cast<ApiKey>(api)) {
      case ApiKey::metadata: return metadata(node, payload, version);
      case ApiKey::list_offsets: return list_offsets(node, payload, version);
      case ApiKey::offset_for_leader_epoch: return offset_for_leader_epoch(node, payload, version);
      case ApiKey::fetch: return fetch(node, payload, version);
      case ApiKey::produce: return produce(node, payload, version);
      case ApiKey::create_topics: return create_topics(node, payload, version);
      case ApiKey::delete_topics: return delete_topics(node, payload, version);
      default: {
        record(static_cast<ApiKey>(api), version, node, corr);
        Reply r;
        if (auto h = handlers.find(api); h != handlers.end()) {
          // Faults without a topic apply to scripted APIs too (a delay, a drop).
          const Effects e = take_faults(static_cast<ApiKey>(api), node, {});
          r.frame = h->second(node, version, corr, payload);
          r.delay = e.delay;
          r.drop = e.drop;
          if (r.frame) return r;
        }
        r.close = true;
        return r;
      }
    }
  }

  template <class M>
  bool decode_body(const Bytes& payload, M& m, std::int16_t version, RequestHeader& h) {
    Reader r{ByteSpan(payload)};
    return decode_request(r, m, version, &h);
  }

  Reply api_versions(std::int32_t node, std::int16_t version, std::int32_t corr) {
    record(ApiKey::api_versions, version, node, corr);
    auto self = versions.find(static_cast<std::int16_t>(ApiKey::api_versions));
    ApiVersionsResponse resp;
    if (self == versions.end() || version > self->second.second) {
      // A broker that does not know this version answers in the v0 layout with
      // UNSUPPORTED_VERSION and the ApiVersions range it does speak.
      resp.error_code = err(ErrorCode::unsupported_version);
      ApiVersionsResponse::ApiVersion av;
      av.api_key = static_cast<std::int16_t>(ApiKey::api_versions);
      av.min_version = 0;
      av.max_version = self == versions.end() ? 0 : self->second.second;
      resp.api_keys.push_back(av);
      return finish(response_frame(resp, 0, corr), Effects{});
    }
    auto e = take_faults(ApiKey::api_versions, node, {});
    if (e.all_error) resp.error_code = *e.all_error;
    for (auto& [k, range] : versions) {
      ApiVersionsResponse::ApiVersion av;
      av.api_key = k;
      av.min_version = range.first;
      av.max_version = range.second;
      resp.api_keys.push_back(av);
    }
    resp.throttle_time_ms = e.throttle_ms;
    for (auto& [name, level] : finalized_features) {
      ApiVersionsResponse::FinalizedFeatureKey f;
      f.name = name;
      f.min_version_level = level;
      f.max_version_level = level;
      resp.finalized_features.push_back(f);
    }
    if (!finalized_features.empty()) resp.finalized_features_epoch = 1;
    return finish(response_frame(resp, version, corr), e);
  }

  Reply metadata(std::int32_t node, const Bytes& payload, std::int16_t version) {
    MetadataRequest req;
    RequestHeader h;
    if (!decode_body(payload, req, version, h)) return Reply{std::nullopt, {}, false, true, {}, {}};
    auto& rec = record(ApiKey::metadata, version, node, h.correlation_id);
    std::vector<std::string> names;
    bool all = !req.topics || (version == 0 && req.topics->empty());
    if (all) {
      for (auto& [n, _] : topics) names.push_back(n);
    } else {
      for (auto& t : *req.topics) {
        if (t.name) names.push_back(*t.name);
        else if (auto* n = name_for_id(t.topic_id)) names.push_back(*n);
      }
    }
    rec.topics = names;
    std::vector<RequestedPartition> parts;
    for (auto& n : names) {
      auto it = topics.find(n);
      if (it == topics.end()) {
        parts.push_back({n, -1, -1});
        continue;
      }
      for (std::int32_t p = 0; p < static_cast<std::int32_t>(it->second.partitions.size()); ++p)
        parts.push_back({n, p, -1});
    }
    auto e = take_faults(ApiKey::metadata, node, parts);
    MetadataResponse resp;
    resp.throttle_time_ms = e.throttle_ms;
    for (auto& b : brokers) {
      MetadataResponse::MetadataResponseBroker mb;
      mb.node_id = b.node;
      mb.host = "127.0.0.1";
      mb.port = b.port;
      resp.brokers.push_back(std::move(mb));
    }
    resp.cluster_id = cluster_id;
    resp.controller_id = brokers.front().node;
    if (e.all_error && version >= 13) resp.error_code = *e.all_error;
    for (auto& n : names) {
      MetadataResponse::MetadataResponseTopic mt;
      mt.name = n;
      auto it = topics.find(n);
      if (it == topics.end()) {
        mt.error_code = err(ErrorCode::unknown_topic_or_partition);
        resp.topics.push_back(std::move(mt));
        continue;
      }
      mt.topic_id = it->second.id;
      if (auto te = e.topic_errors.find(n); te != e.topic_errors.end()) mt.error_code = te->second;
      for (std::int32_t p = 0; p < static_cast<std::int32_t>(it->second.partitions.size()); ++p) {
        auto& pl = it->second.partitions[static_cast<std::size_t>(p)];
        MetadataResponse::MetadataResponsePartition mp;
        mp.partition_index = p;
        auto perr = e.errors.find({n, p});
        mp.error_code = perr != e.errors.end() ? perr->second : 0;
        const bool stale = e.stale.count({n, p}) > 0;
        mp.leader_id = mp.error_code == err(ErrorCode::leader_not_available) ? -1
                       : stale                                               ? pl.previous_leader
                                                                             : pl.leader;
        mp.leader_epoch = stale ? pl.previous_epoch : pl.epoch;
        mp.replica_nodes = {pl.leader};
        mp.isr_nodes = {pl.leader};
        mt.partitions.push_back(std::move(mp));
      }
      resp.topics.push_back(std::move(mt));
    }
    return finish(response_frame(resp, version, h.correlation_id), e);
  }

  // Offset of the first record with timestamp >= ts at or above log start (-1 if none).
  std::pair<std::int64_t, std::int64_t> offset_for_time(const PartitionLog& pl, std::int64_t ts) {
    DecodeOptions opts;
    opts.check_crcs = false;
    for (auto& b : pl.batches) {
      if (b.last < pl.log_start || b.max_timestamp < ts) continue;
      DecodedRecords dr;
      decode_records(ByteSpan(b.bytes), pl.log_start, opts, dr);
      for (auto& r : dr.records)
        if (r.timestamp >= ts) return {r.offset, r.timestamp};
    }
    return {-1, -1};
  }

  std::pair<std::int64_t, std::int64_t> max_timestamp_offset(const PartitionLog& pl) {
    DecodeOptions opts;
    opts.check_crcs = false;
    std::pair<std::int64_t, std::int64_t> best{-1, -1};
    for (auto& b : pl.batches) {
      DecodedRecords dr;
      decode_records(ByteSpan(b.bytes), pl.log_start, opts, dr);
      for (auto& r : dr.records)
        if (r.timestamp > best.second) best = {r.offset, r.timestamp};
    }
    return best;
  }

  Reply list_offsets(std::int32_t node, const Bytes& payload, std::int16_t version) {
    ListOffsetsRequest req;
    RequestHeader h;
    if (!decode_body(payload, req, version, h)) return Reply{std::nullopt, {}, false, true, {}, {}};
    auto& rec = record(ApiKey::list_offsets, version, node, h.correlation_id);
    for (auto& t : req.topics)
      for (auto& p : t.partitions) rec.partitions.push_back({t.name, p.partition_index, p.timestamp});
    auto e = take_faults(ApiKey::list_offsets, node, rec.partitions);
    ListOffsetsResponse resp;
    resp.throttle_time_ms = e.throttle_ms;
    for (auto& t : req.topics) {
      ListOffsetsResponse::ListOffsetsTopicResponse rt;
      rt.name = t.name;
      for (auto& p : t.partitions) {
        ListOffsetsResponse::ListOffsetsPartitionResponse rp;
        rp.partition_index = p.partition_index;
        rp.error_code = e.error_for(t.name, p.partition_index);
        auto* pl = find(t.name, p.partition_index);
        if (!rp.error_code && !pl) rp.error_code = err(ErrorCode::unknown_topic_or_partition);
        if (!rp.error_code && pl->leader != node) rp.error_code = err(ErrorCode::not_leader_or_follower);
        if (!rp.error_code) {
          std::pair<std::int64_t, std::int64_t> found{-1, -1};
          if (p.timestamp == ListOffsetsRequest::kTimestampEarliest ||
              p.timestamp == ListOffsetsRequest::kTimestampEarliestLocal)
            found = {pl->log_start, -1};
          else if (p.timestamp == ListOffsetsRequest::kTimestampLatest ||
                   p.timestamp == ListOffsetsRequest::kTimestampLatestTiered)
            found = {pl->hwm, -1};
          else if (p.timestamp == ListOffsetsRequest::kTimestampMax) found = max_timestamp_offset(*pl);
          else found = offset_for_time(*pl, p.timestamp);
          rp.offset = found.first;
          rp.timestamp = found.second;
          rp.leader_epoch = pl->epoch;
          if (version == 0 && found.first >= 0) rp.old_style_offsets = {found.first};
        }
        rt.partitions.push_back(std::move(rp));
      }
      resp.topics.push_back(std::move(rt));
    }
    return finish(response_frame(resp, version, h.correlation_id), e);
  }

  // Builds a Fetch response; `has_data` tells whether any partition carries
  // records or an error (a broker answers at once then).
  Bytes build_fetch(std::int32_t node, const FetchRequest& req, std::int16_t version, std::int32_t corr,
                    const Effects& e, bool& has_data, std::int32_t session_id = 0) {
    has_data = false;
    FetchResponse resp;
    resp.session_id = session_id;
    resp.throttle_time_ms = e.throttle_ms;
    std::deque<Bytes> buffers;  // records of the response (views point here)
    std::int64_t budget = std::max<std::int32_t>(req.max_bytes, 1);
    bool first = true;
    for (auto& t : req.topics) {
      FetchResponse::FetchableTopicResponse rt;
      rt.topic = t.topic;
      rt.topic_id = t.topic_id;
      std::string name = t.topic;
      bool unknown_id = false;
      if (version >= 13) {
        auto* n = name_for_id(t.topic_id);
        unknown_id = n == nullptr;
        name = n ? *n : log_name_for_id(t.topic_id);
      }
      for (auto& p : t.partitions) {
        FetchResponse::PartitionData rp;
        rp.partition_index = p.partition;
        rp.error_code = e.error_for(name, p.partition);
        auto* pl = unknown_id ? nullptr : find(name, p.partition);
        if (!rp.error_code && unknown_id) rp.error_code = err(ErrorCode::unknown_topic_id);
        if (!rp.error_code && !pl) rp.error_code = err(ErrorCode::unknown_topic_or_partition);
        if (!rp.error_code && pl->leader != node) rp.error_code = err(ErrorCode::not_leader_or_follower);
        // KIP-320: a request naming an older leader epoch is fenced, a newer one unknown.
        if (!rp.error_code && version >= 9 && p.current_leader_epoch >= 0 && p.current_leader_epoch != pl->epoch)
          rp.error_code = err(p.current_leader_epoch < pl->epoch ? ErrorCode::fenced_leader_epoch
                                                                 : ErrorCode::unknown_leader_epoch);
        if (!rp.error_code && (p.fetch_offset < pl->log_start || p.fetch_offset > pl->hwm))
          rp.error_code = err(ErrorCode::offset_out_of_range);
        if (pl) {
          rp.high_watermark = pl->hwm;
          rp.last_stable_offset = pl->hwm;
          rp.log_start_offset = pl->log_start;
          rp.current_leader.leader_id = pl->leader;
          rp.current_leader.leader_epoch = pl->epoch;
        } else {
          rp.high_watermark = -1;
        }
        if (rp.error_code) {
          has_data = true;
        } else {
          Bytes out;
          std::int64_t part_budget = std::max<std::int32_t>(p.partition_max_bytes, 1);
          std::size_t last_size = 0;
          for (auto& b : pl->batches) {
            if (b.last < p.fetch_offset) continue;
            auto size = static_cast<std::int64_t>(b.bytes.size());
            bool must = first && out.empty();  // progress: the first batch always goes
            if (!must && (static_cast<std::int64_t>(out.size()) + size > part_budget || size > budget)) break;
            out.insert(out.end(), b.bytes.begin(), b.bytes.end());
            last_size = b.bytes.size();
            budget -= size;
            first = false;
          }
          if (!out.empty() && e.truncates(name, p.partition)) out.resize(out.size() - (last_size + 1) / 2);
          if (!out.empty() && e.corrupt.count({name, p.partition})) out.back() ^= 0x5a;
          if (strict_fetch_size && static_cast<std::int64_t>(out.size()) > part_budget)
            out.resize(static_cast<std::size_t>(part_budget));
          if (!out.empty()) {
            has_data = true;
            buffers.push_back(std::move(out));
            rp.records.data = ByteSpan(buffers.back());
          }
        }
        if (e.duplicate.count({name, p.partition})) rt.partitions.push_back(rp);
        rt.partitions.push_back(std::move(rp));
      }
      resp.responses.push_back(std::move(rt));
    }
    // KIP-951 (v16+): the endpoint of each new leader an error answer names.
    if (version >= 16)
      for (auto& t : resp.responses)
        for (auto& p : t.partitions) {
          const std::int32_t id = p.current_leader.leader_id;
          if (!p.error_code || id < 0) continue;
          if (std::any_of(resp.node_endpoints.begin(), resp.node_endpoints.end(),
                          [&](auto& n) { return n.node_id == id; }))
            continue;
          for (auto& b : brokers)
            if (b.node == id) resp.node_endpoints.push_back({id, "127.0.0.1", b.port, std::nullopt, {}});
        }
    return response_frame(resp, version, corr);
  }

  // With sessions on: resolves the request against its session (or opens
  // one), replacing `req` by the full partition list the broker would fetch.
  // Returns a top-level error code (0 = fine) and sets `session_id`.
  std::int16_t apply_session(std::int32_t node, FetchRequest& req, std::int16_t version, std::int32_t& session_id) {
    session_id = 0;
    if (!sessions_enabled || version < 7) return 0;
    auto& mine = sessions[node];
    FetchSessionState* st = nullptr;
    if (req.session_id == 0) {
      if (req.session_epoch != 0) return 0;  // sessionless full fetch
      session_id = next_session_id++;
      st = &mine[session_id];
      ++sessions_opened[node];
    } else {
      auto it = mine.find(req.session_id);
      if (it == mine.end()) return err(ErrorCode::fetch_session_id_not_found);
      if (req.session_epoch != it->second.epoch) return err(ErrorCode::invalid_fetch_session_epoch);
      session_id = req.session_id;
      st = &it->second;
      ++st->epoch;
    }
    auto name_of = [&](const std::string& topic, const protocol::Uuid& id) {
      return version >= 13 ? log_name_for_id(id) : topic;
    };
    // Forgotten partitions first: a broker keys its session by topic id and
    // partition, so a recreated topic's partition forgotten under the old id
    // and listed under the new one (same name here) ends up listed.
    for (auto& f : req.forgotten_topics_data)
      for (auto part : f.partitions) {
        auto key = std::make_pair(name_of(f.topic, f.topic_id), part);
        auto id = st->ids.find(key);
        if (version >= 13 && id != st->ids.end() && id->second != f.topic_id) continue;
        st->partitions.erase(key);
        st->ids.erase(key);
      }
    for (auto& t : req.topics)
      for (auto& p : t.partitions) {
        auto key = std::make_pair(name_of(t.topic, t.topic_id), p.partition);
        st->partitions[key] = {p.fetch_offset, p.partition_max_bytes};
        st->ids[key] = t.topic_id;
      }
    req.topics.clear();
    for (auto& [key, val] : st->partitions) {
      if (req.topics.empty() ||
          (version >= 13 ? req.topics.back().topic_id != st->ids[key] : req.topics.back().topic != key.first)) {
        FetchRequest::FetchTopic ft;
        ft.topic = key.first;
        ft.topic_id = st->ids[key];
        req.topics.push_back(std::move(ft));
      }
      FetchRequest::FetchPartition fp;
      fp.partition = key.second;
      fp.fetch_offset = val.first;
      fp.partition_max_bytes = val.second;
      req.topics.back().partitions.push_back(fp);
    }
    return 0;
  }

  Reply fetch(std::int32_t node, const Bytes& payload, std::int16_t version) {
    FetchRequest req;
    RequestHeader h;
    if (!decode_body(payload, req, version, h)) return Reply{std::nullopt, {}, false, true, {}, {}};
    std::int32_t session_id = 0;
    if (auto top = apply_session(node, req, version, session_id); top != 0) {
      record(ApiKey::fetch, version, node, h.correlation_id);
      FetchResponse resp;
      resp.error_code = top;
      return finish(response_frame(resp, version, h.correlation_id), Effects{});
    }
    auto& rec = record(ApiKey::fetch, version, node, h.correlation_id);
    rec.by_topic_id = version >= 13;
    for (auto& t : req.topics) {
      std::string name = version >= 13 ? log_name_for_id(t.topic_id) : t.topic;
      if (version >= 13) rec.topic_ids.push_back(t.topic_id);
      for (auto& p : t.partitions) {
        rec.partitions.push_back({name, p.partition, p.fetch_offset});
        rec.current_leader_epochs.push_back(version >= 9 ? p.current_leader_epoch : -1);
      }
    }
    auto e = take_faults(ApiKey::fetch, node, rec.partitions);
    bool has_data = false;
    auto frame = build_fetch(node, req, version, h.correlation_id, e, has_data, session_id);
    Reply r = finish(std::move(frame), e);
    if (!has_data && !e.any && req.max_wait_ms > 0) {
      r.wait = milliseconds(std::min(req.max_wait_ms, 2000));
      auto corr = h.correlation_id;
      r.rebuild = [this, node, req, version, corr, session_id]() {
        std::lock_guard relock(mu);
        bool data = false;
        auto f = build_fetch(node, req, version, corr, Effects{}, data, session_id);
        return std::make_pair(std::move(f), data);
      };
    }
    return r;
  }

  // Where each asked epoch ends in the leader's log: the largest epoch <= the
  // one asked for, and the base offset of the first batch of a later epoch
  // (the log end offset for the current epoch), as a broker answers.
  Reply offset_for_leader_epoch(std::int32_t node, const Bytes& payload, std::int16_t version) {
    OffsetForLeaderEpochRequest req;
    RequestHeader h;
    if (!decode_body(payload, req, version, h)) return Reply{std::nullopt, {}, false, true, {}, {}};
    auto& rec = record(ApiKey::offset_for_leader_epoch, version, node, h.correlation_id);
    for (auto& t : req.topics)
      for (auto& p : t.partitions) {
        rec.partitions.push_back({t.topic, p.partition, p.leader_epoch});
        rec.current_leader_epochs.push_back(p.current_leader_epoch);
      }
    auto e = take_faults(ApiKey::offset_for_leader_epoch, node, rec.partitions);
    OffsetForLeaderEpochResponse resp;
    resp.throttle_time_ms = e.throttle_ms;
    for (auto& t : req.topics) {
      OffsetForLeaderEpochResponse::OffsetForLeaderTopicResult rt;
      rt.topic = t.topic;
      for (auto& p : t.partitions) {
        OffsetForLeaderEpochResponse::EpochEndOffset r;
        r.partition = p.partition;
        r.error_code = e.error_for(t.topic, p.partition);
        auto* pl = find(t.topic, p.partition);
        if (!r.error_code && !pl) r.error_code = err(ErrorCode::unknown_topic_or_partition);
        if (!r.error_code && pl->leader != node) r.error_code = err(ErrorCode::not_leader_or_follower);
        if (!r.error_code && p.current_leader_epoch >= 0 && p.current_leader_epoch != pl->epoch)
          r.error_code = err(p.current_leader_epoch < pl->epoch ? ErrorCode::fenced_leader_epoch
                                                                : ErrorCode::unknown_leader_epoch);
        if (!r.error_code) {
          std::int32_t found = p.leader_epoch >= pl->epoch ? pl->epoch : -1;
          for (auto& b : pl->batches)
            if (b.epoch <= p.leader_epoch) found = std::max(found, b.epoch);
          r.leader_epoch = found;
          r.end_offset = -1;
          if (found >= 0) {
            r.end_offset = pl->hwm;
            for (auto& b : pl->batches)
              if (b.epoch > found) {
                r.end_offset = b.base;
                break;
              }
          }
        }
        rt.partitions.push_back(r);
      }
      resp.topics.push_back(std::move(rt));
    }
    return finish(response_frame(resp, version, h.correlation_id), e);
  }

  Reply produce(std::int32_t node, const Bytes& payload, std::int16_t version) {
    ProduceRequest req;
    RequestHeader h;
    if (!decode_body(payload, req, version, h)) return Reply{std::nullopt, {}, false, true, {}, {}};
    auto& rec = record(ApiKey::produce, version, node, h.correlation_id);
    rec.by_topic_id = version >= 13;
    std::vector<std::string> names;
    for (auto& t : req.topic_data) {
      std::string name = version >= 13 ? log_name_for_id(t.topic_id) : t.name;
      names.push_back(name);
      if (version >= 13) rec.topic_ids.push_back(t.topic_id);
      for (auto& p : t.partition_data) rec.partitions.push_back({name, p.index, -1});
    }
    auto e = take_faults(ApiKey::produce, node, rec.partitions);
    ProduceResponse resp;
    resp.throttle_time_ms = e.throttle_ms;
    for (std::size_t i = 0; i < req.topic_data.size(); ++i) {
      auto& t = req.topic_data[i];
      const auto& name = names[i];
      ProduceResponse::TopicProduceResponse rt;
      rt.name = t.name;
      rt.topic_id = t.topic_id;
      for (auto& p : t.partition_data) {
        ProduceResponse::PartitionProduceResponse rp;
        rp.index = p.index;
        rp.error_code = e.error_for(name, p.index);
        auto* pl = (version >= 13 && !name_for_id(t.topic_id)) ? nullptr : find(name, p.index);
        if (!rp.error_code && !pl)
          rp.error_code = err(version >= 13 ? ErrorCode::unknown_topic_id : ErrorCode::unknown_topic_or_partition);
        if (!rp.error_code && pl->leader != node) {
          rp.error_code = err(ErrorCode::not_leader_or_follower);
          rp.current_leader.leader_id = pl->leader;  // KIP-951 (v10+)
          rp.current_leader.leader_epoch = pl->epoch;
        }
        std::vector<Bytes> batches;
        const std::int16_t injected = rp.error_code;
        if (injected && e.append_anyway) rp.error_code = 0;
        if (!rp.error_code && (!p.records.data || !split_batches(*p.records.data, batches)))
          rp.error_code = err(ErrorCode::corrupt_message);
        if (!rp.error_code) {
          rp.base_offset = -1;
          for (auto& b : batches) {
            std::int64_t duplicate_of = -1;
            if (produce_check) {
              const std::int16_t code = produce_check(node, version, req.transactional_id, name, p.index, ByteSpan(b),
                                                      pl->hwm, &duplicate_of);
              if (code) {
                rp.error_code = code;
                break;
              }
            }
            auto base = duplicate_of >= 0 ? duplicate_of : append_batch(*pl, std::move(b));
            if (rp.base_offset < 0) rp.base_offset = base;
          }
          rp.log_start_offset = pl->log_start;
          if (rp.error_code) rp.base_offset = -1;
          if (injected) {
            rp.error_code = injected;
            rp.base_offset = -1;
          }
        } else {
          rp.base_offset = -1;
        }
        rt.partition_responses.push_back(std::move(rp));
      }
      resp.responses.push_back(std::move(rt));
    }
    if (version >= 10)
      for (auto& t : resp.responses)
        for (auto& p : t.partition_responses) {
          const std::int32_t id = p.current_leader.leader_id;
          if (id < 0 || std::any_of(resp.node_endpoints.begin(), resp.node_endpoints.end(),
                                    [&](auto& n) { return n.node_id == id; }))
            continue;
          for (auto& b : brokers)
            if (b.node == id) resp.node_endpoints.push_back({id, "127.0.0.1", b.port, std::nullopt, {}});
        }
    if (req.acks == 0) {
      Reply r;
      r.delay = e.delay;
      r.drop = e.drop;
      return r;
    }
    return finish(response_frame(resp, version, h.correlation_id), e);
  }

  Reply create_topics(std::int32_t node, const Bytes& payload, std::int16_t version) {
    CreateTopicsRequest req;
    RequestHeader h;
    if (!decode_body(payload, req, version, h)) return Reply{std::nullopt, {}, false, true, {}, {}};
    auto& rec = record(ApiKey::create_topics, version, node, h.correlation_id);
    std::vector<RequestedPartition> parts;
    for (auto& t : req.topics) {
      rec.topics.push_back(t.name);
      parts.push_back({t.name, -1, -1});
    }
    auto e = take_faults(ApiKey::create_topics, node, parts);
    CreateTopicsResponse resp;
    resp.throttle_time_ms = e.throttle_ms;
    for (auto& t : req.topics) {
      CreateTopicsResponse::CreatableTopicResult r;
      r.name = t.name;
      r.error_code = e.error_for(t.name, -1);
      if (!r.error_code && topics.count(t.name)) {
        r.error_code = err(ErrorCode::topic_already_exists);
        r.error_message = fmt::format("Topic '{}' already exists.", t.name);
      }
      std::int32_t n = t.num_partitions < 0 ? 1 : t.num_partitions;
      if (!r.error_code && n == 0) r.error_code = err(ErrorCode::invalid_partitions);
      if (!r.error_code) {
        r.num_partitions = n;
        r.replication_factor = 1;
        if (!req.validate_only) r.topic_id = create(t.name, n, {});
      }
      resp.topics.push_back(std::move(r));
    }
    return finish(response_frame(resp, version, h.correlation_id), e);
  }

  Reply delete_topics(std::int32_t node, const Bytes& payload, std::int16_t version) {
    DeleteTopicsRequest req;
    RequestHeader h;
    if (!decode_body(payload, req, version, h)) return Reply{std::nullopt, {}, false, true, {}, {}};
    auto& rec = record(ApiKey::delete_topics, version, node, h.correlation_id);
    struct Target {
      std::optional<std::string> name;
      Uuid id;
    };
    std::vector<Target> targets;
    if (version >= 6) {
      for (auto& t : req.topics) targets.push_back({t.name, t.topic_id});
    } else {
      for (auto& n : req.topic_names) targets.push_back({n, Uuid{}});
    }
    std::vector<RequestedPartition> parts;
    for (auto& t : targets) {
      std::string n = t.name ? *t.name : log_name_for_id(t.id);
      rec.topics.push_back(n);
      parts.push_back({n, -1, -1});
    }
    auto e = take_faults(ApiKey::delete_topics, node, parts);
    DeleteTopicsResponse resp;
    resp.throttle_time_ms = e.throttle_ms;
    for (auto& t : targets) {
      DeleteTopicsResponse::DeletableTopicResult r;
      std::string n = t.name ? *t.name : (name_for_id(t.id) ? *name_for_id(t.id) : std::string());
      r.name = t.name ? t.name : (n.empty() ? std::nullopt : std::optional<std::string>(n));
      r.error_code = e.error_for(n, -1);
      auto it = n.empty() ? topics.end() : topics.find(n);
      if (!r.error_code && it == topics.end())
        r.error_code = err(t.name ? ErrorCode::unknown_topic_or_partition : ErrorCode::unknown_topic_id);
      if (!r.error_code) {
        r.topic_id = it->second.id;
        remove(n);
      }
      resp.responses.push_back(std::move(r));
    }
    return finish(response_frame(resp, version, h.correlation_id), e);
  }

  // ---- networking ----

  bool is_down(std::int32_t node) {
    std::lock_guard lock(mu);
    return down.count(node) > 0;
  }

  asio::awaitable<void> serve(tcp::socket sock, std::int32_t node) {
    try {
      for (;;) {
        std::array<std::uint8_t, 4> size_buf{};
        co_await asio::async_read(sock, asio::buffer(size_buf), asio::use_awaitable);
        auto size = static_cast<std::int32_t>(load_be32(size_buf.data()));
        if (size < 8 || size > (64 << 20)) co_return;
        Bytes payload(static_cast<std::size_t>(size));
        co_await asio::async_read(sock, asio::buffer(payload), asio::use_awaitable);
        if (is_down(node)) co_return;  // closes the socket
        Reply reply = handle(node, payload);
        if (reply.close) co_return;
        if (reply.delay.count() > 0) {
          asio::steady_timer timer(io, reply.delay);
          co_await timer.async_wait(asio::use_awaitable);
        }
        if (reply.wait.count() > 0 && reply.rebuild) {
          auto until = MockClock::now() + reply.wait;
          for (;;) {
            asio::steady_timer timer(io, milliseconds(5));
            co_await timer.async_wait(asio::use_awaitable);
            auto [frame, data] = reply.rebuild();
            reply.frame = std::move(frame);
            if (data || MockClock::now() >= until) break;
          }
        }
        if (!reply.frame) continue;
        if (reply.drop) {
          std::size_t half = std::max<std::size_t>(reply.frame->size() / 2, 1);
          co_await asio::async_write(sock, asio::buffer(reply.frame->data(), half), asio::use_awaitable);
          boost::system::error_code ec;
          sock.shutdown(tcp::socket::shutdown_both, ec);
          sock.close(ec);
          co_return;
        }
        co_await asio::async_write(sock, asio::buffer(*reply.frame), asio::use_awaitable);
      }
    } catch (const std::exception&) {
      // connection closed by the peer (or by shutdown)
    }
  }

  asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, std::int32_t node) {
    try {
      for (;;) {
        tcp::socket sock = co_await acceptor.async_accept(asio::use_awaitable);
        {
          std::lock_guard lock(mu);
          ++accepted;
        }
        if (is_down(node)) continue;  // closes the socket
        boost::system::error_code ec;
        sock.set_option(tcp::no_delay(true), ec);
        asio::co_spawn(io, serve(std::move(sock), node), asio::detached);
      }
    } catch (const std::exception&) {
    }
  }
};

MockCluster::MockCluster(int brokers) : state_(std::make_unique<State>()) {
  if (brokers < 1) throw std::invalid_argument("mock: a cluster needs at least one broker");
  auto& st = *state_;
  // Versions the mock speaks: kwire's declared ranges, with the floors a
  // Kafka 4 broker has where kwire cannot use older formats anyway.
  auto add = [&](ApiKey k, std::int16_t lo, std::int16_t hi) { st.versions[static_cast<std::int16_t>(k)] = {lo, hi}; };
  add(ApiKey::produce, 3, ProduceRequest::max_version);
  add(ApiKey::fetch, 4, FetchRequest::max_version);
  add(ApiKey::list_offsets, 1, ListOffsetsRequest::max_version);
  add(ApiKey::metadata, 0, MetadataRequest::max_version);
  add(ApiKey::api_versions, 0, ApiVersionsRequest::max_version);
  add(ApiKey::create_topics, 2, CreateTopicsRequest::max_version);
  add(ApiKey::delete_topics, 1, DeleteTopicsRequest::max_version);
  add(ApiKey::offset_for_leader_epoch, 2, OffsetForLeaderEpochRequest::max_version);
  // An idempotent producer's id (MockTransactions adds transactional ids
  // and the brokers' sequence checks).
  auto next_producer_id = std::make_shared<std::int64_t>(1);
  st.versions[static_cast<std::int16_t>(ApiKey::init_producer_id)] = {0, InitProducerIdRequest::max_version};
  st.handlers[static_cast<std::int16_t>(ApiKey::init_producer_id)] =
      [next_producer_id](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes&) -> std::optional<Bytes> {
    InitProducerIdResponse r;
    r.producer_id = (*next_producer_id)++;
    r.producer_epoch = 0;
    return encode_response_frame(r, v, corr);
  };
  for (int i = 0; i < brokers; ++i) {
    State::BrokerSocket b;
    b.node = i + 1;
    b.acceptor = std::make_unique<tcp::acceptor>(st.io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    b.port = b.acceptor->local_endpoint().port();
    st.brokers.push_back(std::move(b));
  }
  for (auto& b : st.brokers) asio::co_spawn(st.io, st.accept_loop(*b.acceptor, b.node), asio::detached);
  st.work.emplace(st.io.get_executor());
  st.thread = std::thread([&st] { st.io.run(); });
}

MockCluster::~MockCluster() {
  auto& st = *state_;
  st.work.reset();
  st.io.stop();
  if (st.thread.joinable()) st.thread.join();
  for (auto& b : st.brokers) {
    boost::system::error_code ec;
    b.acceptor->close(ec);
  }
}

std::string MockCluster::bootstrap_servers() const {
  std::string out;
  for (auto& b : state_->brokers) {
    if (!out.empty()) out += ',';
    out += fmt::format("127.0.0.1:{}", b.port);
  }
  return out;
}

void MockCluster::set_cluster_id(const std::string& id) {
  std::lock_guard lock(state_->mu);
  state_->cluster_id = id;
}

std::vector<std::int32_t> MockCluster::node_ids() const { return state_->node_ids(); }

std::uint16_t MockCluster::port(std::int32_t node_id) const {
  for (auto& b : state_->brokers)
    if (b.node == node_id) return b.port;
  throw std::invalid_argument(fmt::format("mock: no broker {}", node_id));
}

std::string MockCluster::endpoint(std::int32_t node_id) const { return fmt::format("127.0.0.1:{}", port(node_id)); }

Uuid MockCluster::create_topic(const std::string& name, std::int32_t partitions, std::vector<std::int32_t> leaders) {
  std::lock_guard lock(state_->mu);
  return state_->create(name, partitions, leaders);
}

void MockCluster::delete_topic(const std::string& name) {
  std::lock_guard lock(state_->mu);
  state_->remove(name);
}

Uuid MockCluster::recreate_topic(const std::string& name, std::int32_t partitions) {
  std::lock_guard lock(state_->mu);
  std::vector<std::int32_t> leaders;
  if (auto it = state_->topics.find(name); it != state_->topics.end())
    for (auto& p : it->second.partitions) leaders.push_back(p.leader);
  state_->remove(name);
  return state_->create(name, partitions, leaders);
}

void MockCluster::add_partitions(const std::string& name, std::int32_t partitions) {
  std::lock_guard lock(state_->mu);
  auto it = state_->topics.find(name);
  if (it == state_->topics.end()) throw std::invalid_argument("mock: no topic " + name);
  auto ids = state_->node_ids();
  auto& parts = it->second.partitions;
  while (static_cast<std::int32_t>(parts.size()) < partitions) {
    PartitionLog pl;
    pl.leader = ids[parts.size() % ids.size()];
    parts.push_back(std::move(pl));
  }
}

std::optional<Uuid> MockCluster::topic_id(const std::string& name) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->topics.find(name);
  if (it == state_->topics.end()) return std::nullopt;
  return it->second.id;
}

bool MockCluster::has_topic(const std::string& name) const {
  std::lock_guard lock(state_->mu);
  return state_->topics.count(name) > 0;
}

std::int64_t MockCluster::append(const std::string& topic, std::int32_t partition,
                                 const std::vector<MockRecord>& records) {
  std::vector<ProducerRecord> prs;
  for (auto& r : records) {
    ProducerRecord pr;
    if (r.key) pr.key = Bytes(r.key->begin(), r.key->end());
    if (r.value) pr.value = Bytes(r.value->begin(), r.value->end());
    pr.timestamp = r.timestamp;
    prs.push_back(std::move(pr));
  }
  Bytes bytes;
  encode_record_batch(prs, BatchOptions{}, bytes);
  std::lock_guard lock(state_->mu);
  return append_batch(state_->get(topic, partition), std::move(bytes));
}

std::int64_t MockCluster::append_batch_bytes(const std::string& topic, std::int32_t partition, Bytes batch) {
  std::lock_guard lock(state_->mu);
  return append_batch(state_->get(topic, partition), std::move(batch));
}

void MockCluster::append_values(const std::string& topic, std::int32_t partition, int count, int per_batch,
                                const std::string& prefix) {
  per_batch = std::max(per_batch, 1);
  for (int done = 0; done < count;) {
    std::int64_t base = high_watermark(topic, partition);
    std::vector<MockRecord> batch;
    for (int i = 0; i < per_batch && done < count; ++i, ++done)
      batch.push_back({std::nullopt, prefix + std::to_string(base + i), -1});
    append(topic, partition, batch);
  }
}

std::int64_t MockCluster::log_start_offset(const std::string& topic, std::int32_t partition) const {
  std::lock_guard lock(state_->mu);
  return state_->get(topic, partition).log_start;
}

std::int64_t MockCluster::high_watermark(const std::string& topic, std::int32_t partition) const {
  std::lock_guard lock(state_->mu);
  return state_->get(topic, partition).hwm;
}

void MockCluster::set_log_start_offset(const std::string& topic, std::int32_t partition, std::int64_t offset) {
  std::lock_guard lock(state_->mu);
  auto& p = state_->get(topic, partition);
  p.log_start = std::clamp<std::int64_t>(offset, 0, p.hwm);
  std::erase_if(p.batches, [&](const StoredBatch& b) { return b.last < p.log_start; });
}

void MockCluster::move_leader(const std::string& topic, std::int32_t partition, std::int32_t node_id) {
  std::lock_guard lock(state_->mu);
  auto& p = state_->get(topic, partition);
  p.previous_leader = p.leader;
  p.previous_epoch = p.epoch;
  p.leader = node_id;
  ++p.epoch;
}

void MockCluster::bump_leader_epoch(const std::string& topic, std::int32_t partition) {
  std::lock_guard lock(state_->mu);
  auto& p = state_->get(topic, partition);
  p.previous_leader = p.leader;
  p.previous_epoch = p.epoch++;
}

std::int32_t MockCluster::leader_epoch(const std::string& topic, std::int32_t partition) const {
  std::lock_guard lock(state_->mu);
  return state_->get(topic, partition).epoch;
}

void MockCluster::truncate_log(const std::string& topic, std::int32_t partition, std::int64_t offset) {
  std::lock_guard lock(state_->mu);
  auto& p = state_->get(topic, partition);
  std::erase_if(p.batches, [&](const StoredBatch& b) { return b.base >= offset; });
  p.hwm = p.batches.empty() ? std::max(p.log_start, std::min(offset, p.hwm)) : p.batches.back().last + 1;
}

void MockCluster::set_broker_down(std::int32_t node_id, bool down) {
  std::lock_guard lock(state_->mu);
  if (down) state_->down.insert(node_id);
  else state_->down.erase(node_id);
}

std::int32_t MockCluster::leader(const std::string& topic, std::int32_t partition) const {
  std::lock_guard lock(state_->mu);
  return state_->get(topic, partition).leader;
}

void MockCluster::enable_fetch_sessions(bool on) {
  std::lock_guard lock(state_->mu);
  state_->sessions_enabled = on;
}

void MockCluster::set_strict_fetch_size(bool on) {
  std::lock_guard lock(state_->mu);
  state_->strict_fetch_size = on;
}

void MockCluster::evict_fetch_sessions(std::int32_t node_id) {
  std::lock_guard lock(state_->mu);
  state_->sessions.erase(node_id);
}

int MockCluster::fetch_sessions_opened(std::int32_t node_id) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->sessions_opened.find(node_id);
  return it == state_->sessions_opened.end() ? 0 : it->second;
}

void MockCluster::set_max_version(ApiKey api, std::int16_t max_version) {
  std::lock_guard lock(state_->mu);
  auto& r = state_->versions[static_cast<std::int16_t>(api)];
  r.second = max_version;
  r.first = std::min(r.first, max_version);
}

void MockCluster::set_handler(ApiKey api, std::int16_t min_version, std::int16_t max_version, Handler handler) {
  std::lock_guard lock(state_->mu);
  state_->versions[static_cast<std::int16_t>(api)] = {min_version, max_version};
  state_->handlers[static_cast<std::int16_t>(api)] = std::move(handler);
}

void MockCluster::set_produce_check(ProduceCheck check) {
  std::lock_guard lock(state_->mu);
  state_->produce_check = std::move(check);
}

void MockCluster::set_finalized_feature(const std::string& name, std::int16_t level) {
  std::lock_guard lock(state_->mu);
  state_->finalized_features[name] = level;
}

void MockCluster::remove_api(ApiKey api) {
  std::lock_guard lock(state_->mu);
  state_->versions.erase(static_cast<std::int16_t>(api));
}

void MockCluster::inject(Fault fault) {
  std::lock_guard lock(state_->mu);
  state_->faults.push_back(std::move(fault));
}

void MockCluster::fail_next(ApiKey api, const std::string& topic, std::int32_t partition, ErrorCode code, int times) {
  Fault f;
  f.api = api;
  f.topic = topic;
  f.partition = partition;
  f.error_code = static_cast<std::int16_t>(code);
  f.times = times;
  inject(std::move(f));
}

std::size_t MockCluster::pending_faults() const {
  std::lock_guard lock(state_->mu);
  return state_->faults.size();
}

void MockCluster::clear_faults() {
  std::lock_guard lock(state_->mu);
  state_->faults.clear();
}

std::vector<RequestRecord> MockCluster::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->log;
}

std::vector<RequestRecord> MockCluster::requests(ApiKey api) const {
  std::lock_guard lock(state_->mu);
  std::vector<RequestRecord> out;
  for (auto& r : state_->log)
    if (r.api_key == api) out.push_back(r);
  return out;
}

void MockCluster::clear_requests() {
  std::lock_guard lock(state_->mu);
  state_->log.clear();
}

int MockCluster::connections_accepted() const {
  std::lock_guard lock(state_->mu);
  return state_->accepted;
}

}  // namespace kwire::mock

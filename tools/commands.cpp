#include "commands.hpp"

#include <signal.h>

#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/json_writer.hpp"

namespace kwire::tools {

std::string json_str(const std::string& s) {
  std::string out;
  kwire::source::append_json_string(out, s);
  return out;
}

void write_stdout(const std::string& out) { std::fwrite(out.data(), 1, out.size(), stdout); }

using namespace kwire::client;
using kwire::protocol::Bytes;
using kwire::source::append_json_string;
using kwire::source::json_string;

namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int sig) { g_stop = sig; }

}  // namespace

std::int64_t parse_offset_number(const std::string& text, const std::string& option, const std::string& whole,
                                 const char* expected) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    throw std::invalid_argument(fmt::format("invalid {} '{}': {}", option, whole, expected));
  return v;
}

void print_config_warnings(const CommonOptions& common) {
  std::map<std::string, std::string> props;
  for (auto& kv : common.properties) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return;  // reported by the command itself
    props[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!common.brokers.empty()) props["bootstrap.servers"] = common.brokers;
  if (!props.count("bootstrap.servers") && !props.count("metadata.broker.list"))
    props["bootstrap.servers"] = "localhost";  // only to check the other keys
  try {
    for (auto& w : ClientConfig::from_properties(props).warnings)
      std::fprintf(stderr, "kwire: warning: %s\n", w.c_str());
  } catch (const std::exception&) {
    // A bad value: the command reports it when it builds its client.
  }
}

void check_timestamp(std::int64_t ts, const char* option) {
  if (ts < 0 && ts != kLatestTimestamp && ts != kEarliestTimestamp && ts != kMaxTimestamp)
    throw std::invalid_argument(
        fmt::format("invalid {} {}: a timestamp is milliseconds since the epoch (>= 0), or -1 (latest), "
                    "-2 (earliest) or -3 (max-timestamp)",
                    option, ts));
}

std::pair<std::string, std::string> split_key_value(const std::string& kv, const char* what) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(fmt::format("{} '{}' is not KEY=VALUE", what, kv));
  return {kv.substr(0, eq), kv.substr(eq + 1)};
}

std::map<std::string, std::string> CommonOptions::client_properties() const {
  std::map<std::string, std::string> props;
  for (auto& kv : properties) {
    auto [k, v] = split_key_value(kv, "-X property");
    props[k] = v;
  }
  if (!brokers.empty()) props["bootstrap.servers"] = brokers;
  if (!props.count("bootstrap.servers") && !props.count("metadata.broker.list"))
    throw std::invalid_argument("no broker given: use -b HOST:PORT or -X bootstrap.servers=HOST:PORT");
  return props;
}

int cmd_metadata(const CommonOptions& common, const MetadataArgs& args) {
  KafkaClient client(common.client_properties());
  std::optional<std::vector<std::string>> topics;
  if (!args.topics.empty()) topics = args.topics;
  auto md = client.metadata(topics);
  if (args.json) {
    std::string out = "{\"cluster_id\":";
    out += md.cluster_id ? json_string(*md.cluster_id) : "null";
    out += fmt::format(",\"controller_id\":{},\"brokers\":[", md.controller_id);
    for (std::size_t i = 0; i < md.brokers.size(); ++i) {
      auto& b = md.brokers[i];
      out += fmt::format("{}{{\"node_id\":{},\"host\":{},\"port\":{}}}", i ? "," : "", b.node_id, json_string(b.host),
                         b.port);
    }
    out += "],\"topics\":[";
    for (std::size_t i = 0; i < md.topics.size(); ++i) {
      auto& t = md.topics[i];
      out += fmt::format("{}{{\"name\":{},\"topic_id\":{},\"is_internal\":{},\"error\":{},\"partitions\":[",
                         i ? "," : "", json_string(t.name), json_string(t.topic_id.to_base64()), t.is_internal,
                         t.error_code ? json_string(protocol::error_name(t.error_code)) : "null");
      for (std::size_t j = 0; j < t.partitions.size(); ++j) {
        auto& p = t.partitions[j];
        out += fmt::format("{}{{\"partition\":{},\"leader\":{},\"leader_epoch\":{},\"replicas\":[{}],\"isr\":[{}]}}",
                           j ? "," : "", p.partition, p.leader_id, p.leader_epoch, fmt::join(p.replicas, ","),
                           fmt::join(p.isr, ","));
      }
      out += "]}";
    }
    out += "]}";
    fmt::print("{}\n", out);
    return 0;
  }
  fmt::print("Metadata for {} (cluster {}):\n", topics ? "selected topics" : "all topics", md.cluster_id.value_or("?"));
  fmt::print(" {} brokers:\n", md.brokers.size());
  for (auto& b : md.brokers)
    fmt::print("  broker {} at {}:{}{}\n", b.node_id, b.host, b.port,
               b.node_id == md.controller_id ? " (controller)" : "");
  fmt::print(" {} topics:\n", md.topics.size());
  int rc = 0;
  for (auto& t : md.topics) {
    if (t.error_code != 0) {
      fmt::print("  topic \"{}\" error: {}\n", t.name, protocol::error_name(t.error_code));
      rc = 1;
      continue;
    }
    fmt::print("  topic \"{}\" with {} partitions:\n", t.name, t.partitions.size());
    for (auto& p : t.partitions)
      fmt::print("    partition {}, leader {}, replicas: {}, isrs: {}\n", p.partition, p.leader_id,
                 fmt::join(p.replicas, ","), fmt::join(p.isr, ","));
  }
  return rc;
}

int cmd_offsets(const CommonOptions& common, const OffsetsArgs& args) {
  if (args.timestamp) check_timestamp(*args.timestamp, "--timestamp");
  KafkaClient client(common.client_properties());
  std::int32_t n = client.partition_count(args.topic);
  std::vector<TopicPartition> tps;
  for (std::int32_t p = 0; p < n; ++p)
    if (!args.partition || *args.partition == p) tps.push_back({args.topic, p});
  if (tps.empty())
    throw std::invalid_argument(fmt::format("partition {} does not exist in '{}'", *args.partition, args.topic));
  std::map<TopicPartition, std::int64_t> e, l, t;
  for (auto& tp : tps) {
    e[tp] = kEarliestTimestamp;
    l[tp] = kLatestTimestamp;
    if (args.timestamp) t[tp] = *args.timestamp;
  }
  auto earliest = client.list_offsets(e);
  auto latest = client.list_offsets(l);
  std::map<TopicPartition, ListedOffset> at;
  if (args.timestamp) at = client.list_offsets(t);
  if (args.json) {
    std::string out = "[";
    for (std::size_t i = 0; i < tps.size(); ++i) {
      auto& tp = tps[i];
      out += fmt::format("{}{{\"topic\":{},\"partition\":{},\"earliest\":{},\"latest\":{}", i ? "," : "",
                         json_string(tp.topic), tp.partition, earliest[tp].offset, latest[tp].offset);
      if (args.timestamp)
        out += at[tp].offset >= 0 ? fmt::format(",\"offset_for_timestamp\":{}", at[tp].offset)
                                  : std::string(",\"offset_for_timestamp\":null");
      out += "}";
    }
    out += "]";
    fmt::print("{}\n", out);
    return 0;
  }
  for (auto& tp : tps) {
    fmt::print("{} [{}] earliest {} latest {}", tp.topic, tp.partition, earliest[tp].offset, latest[tp].offset);
    if (args.timestamp) {
      if (at[tp].offset >= 0) fmt::print(" at-timestamp {}", at[tp].offset);
      else fmt::print(" at-timestamp none");
    }
    fmt::print("\n");
  }
  return 0;
}

int cmd_create_topic(const CommonOptions& common, const CreateTopicArgs& args) {
  KafkaClient client(common.client_properties());
  NewTopic t;
  t.name = args.topic;
  t.num_partitions = args.partitions;
  t.replication_factor = args.replication_factor;
  for (auto& kv : args.configs) {
    auto [k, v] = split_key_value(kv, "--config");
    t.configs[k] = v;
  }
  client.create_topics({t}, args.if_not_exists);
  fmt::print(stderr, "topic '{}' ready with {} partitions\n", args.topic, args.partitions);
  return 0;
}

int cmd_delete_topic(const CommonOptions& common, const DeleteTopicArgs& args) {
  KafkaClient client(common.client_properties());
  client.delete_topics(args.topics);
  return 0;
}

int cmd_delete_records(const CommonOptions& common, const DeleteRecordsArgs& args) {
  KafkaClient client(common.client_properties());
  std::vector<std::int32_t> parts = args.partitions;
  if (parts.empty()) {
    auto n = client.partition_count(args.topic);
    for (std::int32_t p = 0; p < n; ++p) parts.push_back(p);
  }
  std::map<TopicPartition, std::int64_t> req;
  for (auto p : parts) req[TopicPartition{args.topic, p}] = args.before;
  for (auto& [tp, low] : client.delete_records(req))
    fmt::print("{} [{}] low watermark {}\n", tp.topic, tp.partition, low);
  return 0;
}

int cmd_create_partitions(const CommonOptions& common, const CreatePartitionsArgs& args) {
  KafkaClient client(common.client_properties());
  client.create_partitions(args.topic, args.count);
  fmt::print(stderr, "topic '{}' now has {} partitions\n", args.topic, args.count);
  return 0;
}

void check_read_range(const CommonOptions& common, const ReadRangeArgs& args) {
  if (args.from < 0) throw std::invalid_argument(fmt::format("invalid --from {}: must be 0 or more", args.from));
  if (args.until < args.from)
    throw std::invalid_argument(fmt::format("--until {} is below --from {}", args.until, args.from));
  if (common.brokers.empty()) {
    bool any = false;
    for (auto& kv : common.properties)
      any = any || kv.rfind("bootstrap.servers=", 0) == 0 || kv.rfind("metadata.broker.list=", 0) == 0;
    if (!any) return;  // brokers come from -o kafka.bootstrap.servers: the reader checks the range
  }
  KafkaClient client(common.client_properties());
  TopicPartition tp{args.topic, args.partition};
  auto n = client.partition_count(args.topic);
  if (args.partition < 0 || args.partition >= n)
    throw std::invalid_argument(
        fmt::format("partition {} does not exist in '{}' ({} partitions)", args.partition, args.topic, n));
  auto earliest = client.list_offsets({{tp, kEarliestTimestamp}})[tp].offset;
  auto latest = client.list_offsets({{tp, kLatestTimestamp}})[tp].offset;
  // As Spark's batch read of a range that is not available: an error, at once.
  if (args.until > latest)
    throw std::invalid_argument(
        fmt::format("offset range [{}, {}) of {} is not available: --until {} is past the "
                    "latest offset {} (earliest {})",
                    args.from, args.until, to_string(tp), args.until, latest, earliest));
}

namespace {

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(res.ptr - buf));
}

}  // namespace

RecordFormat::RecordFormat(const std::string& fmtstr) {
  auto literal = [&]() -> std::string& {
    if (parts_.empty() || parts_.back().field != 0) parts_.push_back({});
    return parts_.back().literal;
  };
  for (std::size_t i = 0; i < fmtstr.size(); ++i) {
    char ch = fmtstr[i];
    if (ch == '\\' && i + 1 < fmtstr.size()) {
      char n = fmtstr[++i];
      literal() += n == 'n' ? '\n' : n == 't' ? '\t' : n;
      continue;
    }
    if (ch != '%' || i + 1 >= fmtstr.size()) {
      literal() += ch;
      continue;
    }
    const char f = fmtstr[++i];
    switch (f) {
      case 't':
      case 'p':
      case 'o':
      case 'T':
      case 'k':
      case 's':
      case 'S':
      case 'K':
      case 'h': parts_.push_back({f, {}}); break;
      case '%': literal() += '%'; break;
      default: literal() += '%'; literal() += f;
    }
  }
}

void RecordFormat::append(std::string& out, const ConsumerRecord& r) const {
  for (const Part& part : parts_) {
    switch (part.field) {
      case 0: out.append(part.literal); break;
      case 't': out += *r.topic; break;
      case 'p': append_int(out, r.partition); break;
      case 'o': append_int(out, r.offset); break;
      case 'T': append_int(out, r.timestamp); break;
      case 'k': out += r.key_view(); break;
      case 's': out += r.value_view(); break;
      case 'S': append_int(out, r.value ? static_cast<std::int64_t>(r.value->size()) : -1); break;
      case 'K': append_int(out, r.key ? static_cast<std::int64_t>(r.key->size()) : -1); break;
      case 'h':
        if (r.headers)
          for (std::size_t h = 0; h < r.headers->size(); ++h) {
            auto& hd = (*r.headers)[h];
            if (h) out += ',';
            out += hd.key;
            out += '=';
            if (hd.value) out.append(reinterpret_cast<const char*>(hd.value->data()), hd.value->size());
          }
        break;
    }
  }
}

std::string format_record(const std::string& fmtstr, const ConsumerRecord& r) {
  std::string out;
  RecordFormat(fmtstr).append(out, r);
  return out;
}

std::string record_json(const ConsumerRecord& r) {
  // The one record writer (Spark's columns and JSON rules), with the
  // defaults: key and value as text, timestamps in UTC, null fields left out.
  static const kwire::source::RecordJsonWriter writer;
  kwire::source::Row row;
  row.key = r.key;
  row.value = r.value;
  row.topic = *r.topic;
  row.partition = r.partition;
  row.offset = r.offset;
  row.timestamp = r.timestamp;
  row.timestamp_type = r.timestamp_type;
  row.headers = r.headers && !r.headers->empty() ? r.headers : nullptr;
  std::string out;
  writer.append(out, row);
  out += '\n';
  return out;
}

int cmd_consume(const CommonOptions& common, const ConsumeArgs& args) {
  if (args.count && *args.count < 0)
    throw std::invalid_argument(fmt::format("invalid --count {}: must be 0 or more", *args.count));
  auto props = common.client_properties();
  // An absolute -o N outside a partition's log starts that partition where
  // auto.offset.reset says (latest unless given with -X), as kcat and the
  // Java consumer do; the position is then set here, so the consumer itself
  // never resets silently.
  const auto reset =
      kwire::client::parse_offset_reset(props.count("auto.offset.reset") ? props["auto.offset.reset"] : "latest");
  props["auto.offset.reset"] = "none";
  Consumer consumer(props);
  std::int32_t n = consumer.client().partition_count(args.topic);
  std::vector<TopicPartition> tps;
  if (args.partitions.empty()) {
    for (std::int32_t p = 0; p < n; ++p) tps.push_back({args.topic, p});
  } else {
    for (auto p : args.partitions) {
      if (p < 0 || p >= n)
        throw std::invalid_argument(
            fmt::format("partition {} does not exist in '{}' ({} partitions)", p, args.topic, n));
      tps.push_back({args.topic, p});
    }
  }
  consumer.assign(tps);
  auto begin = consumer.beginning_offsets(tps);
  auto end = consumer.end_offsets(tps);
  const std::string& o = args.offset;
  // Parse before any seek so that a bad --offset fails alone.
  std::optional<std::int64_t> ts, v;
  if (o.rfind("s@", 0) == 0) {
    ts = parse_offset_number(o.substr(2), "offset", o, "expected a number (milliseconds since the epoch) after s@");
    if (*ts < 0)
      throw std::invalid_argument(fmt::format("invalid offset '{}': the timestamp after s@ must be 0 or more", o));
  } else if (o != "beginning" && o != "end") {
    v = parse_offset_number(o, "offset", o, "expected beginning, end, OFFSET, -N or s@TIMESTAMP_MS");
  }
  if (o == "beginning") {
    for (auto& tp : tps) consumer.seek(tp, begin[tp]);
  } else if (o == "end") {
    for (auto& tp : tps) consumer.seek(tp, end[tp]);
  } else if (ts) {
    std::map<TopicPartition, std::int64_t> req;
    for (auto& tp : tps) req[tp] = *ts;
    for (auto& [tp, lo] : consumer.offsets_for_times(req)) consumer.seek(tp, lo ? lo->offset : end[tp]);
  } else {
    for (auto& tp : tps) {
      // -N: N before the end, clamped to the beginning (no overflow for huge N).
      std::int64_t pos = *v >= 0 ? *v : (*v < begin[tp] - end[tp] ? begin[tp] : end[tp] + *v);
      if (*v >= 0 && (pos < begin[tp] || pos > end[tp])) {
        // A partition named with -p must hold the offset; across all
        // partitions a shorter (or truncated) one is reset.
        if (!args.partitions.empty() || reset == kwire::client::OffsetResetPolicy::none)
          throw std::invalid_argument(
              fmt::format("offset {} is outside [{}, {}] for {}", *v, begin[tp], end[tp], to_string(tp)));
        pos = reset == kwire::client::OffsetResetPolicy::earliest ? begin[tp] : end[tp];
        if (!args.quiet)
          fmt::print(stderr, "% Offset {} is outside [{}, {}] for {}: starting at {} (auto.offset.reset={})\n", *v,
                     begin[tp], end[tp], to_string(tp), pos,
                     reset == kwire::client::OffsetResetPolicy::earliest ? "earliest" : "latest");
      }
      consumer.seek(tp, pos);
    }
  }

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::set<TopicPartition> done;
  auto check_done = [&](const TopicPartition& tp) {
    if (!args.exit_at_end || done.count(tp)) return;
    if (consumer.position(tp) >= end[tp]) {
      done.insert(tp);
      consumer.pause({tp});
      if (!args.quiet)
        fmt::print(stderr, "% Reached end of topic {} [{}] at offset {}\n", tp.topic, tp.partition, end[tp]);
    }
  };
  for (auto& tp : tps) check_done(tp);

  // The end offset of each partition, by partition number (one topic).
  std::vector<std::int64_t> end_of(static_cast<std::size_t>(std::max(n, 0)), -1);
  for (auto& [tp, e] : end) end_of[static_cast<std::size_t>(tp.partition)] = e;
  const auto max_poll = static_cast<std::size_t>(consumer.client().config().max_poll_records);
  const std::optional<RecordFormat> format =
      args.format ? std::optional<RecordFormat>(RecordFormat(*args.format)) : std::nullopt;
  std::string out;
  out.reserve(1 << 20);
  std::int64_t printed = 0;
  std::uint64_t bytes = 0;
  auto t0 = std::chrono::steady_clock::now();
  while (!g_stop) {
    if (args.exit_at_end && done.size() == tps.size()) break;
    if (args.count && printed >= *args.count) break;
    ConsumerRecords recs;
    try {
      recs = consumer.poll(std::chrono::milliseconds(500));
    } catch (...) {
      // The records before the error are written first (as a write per poll did).
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
      throw;
    }
    for (auto& r : recs) {
      if (args.count && printed >= *args.count) break;
      if (args.exit_at_end && r.offset >= end_of[static_cast<std::size_t>(r.partition)]) continue;
      bytes += (r.value ? r.value->size() : 0) + (r.key ? r.key->size() : 0);
      if (args.json) out += record_json(r);
      else if (format) format->append(out, r);
      else {
        out.append(r.value_view());
        out.push_back('\n');
      }
      ++printed;
      if (out.size() > (1 << 20)) {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
    }
    // Written out once 64 KiB have gathered, or when the poll was not full
    // (the consumer has caught up, or is about to stop): a reader of the
    // output sees every record that arrived, without a write per poll.
    if (out.size() >= (64 << 10) || recs.size() < max_poll || g_stop || (args.count && printed >= *args.count)) {
      if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
      std::fflush(stdout);
    }
    for (auto& tp : tps) check_done(tp);
  }
  if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (args.stats) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "consumed {} records, {} bytes in {:.3f} s: {:.0f} records/s, {:.1f} MB/s\n", printed, bytes,
               secs, printed / std::max(secs, 1e-9), bytes / std::max(secs, 1e-9) / 1e6);
  }
  return 0;
}

}  // namespace kwire::tools

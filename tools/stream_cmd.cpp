#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/source/avro.hpp"
#include "kwire/source/batch.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/json_writer.hpp"
#include "kwire/source/kafka_sink.hpp"
#include "kwire/source/postgres_sink.hpp"
#include "kwire/source/protobuf.hpp"
#include "kwire/source/stream.hpp"
#include "kwire/source/value_format.hpp"

namespace kwire::tools {

using namespace kwire::source;

std::string read_schema_arg(const std::string& arg, const char* option) {
  if (arg.empty() || arg[0] != '@') return arg;
  std::ifstream in(arg.substr(1));
  if (!in) throw std::invalid_argument(fmt::format("{} {}: cannot read the file", option, arg));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::map<std::string, std::string> format_options(const std::vector<std::string>& options,
                                                  const std::optional<std::string>& registry, const char* option) {
  std::map<std::string, std::string> opts;
  for (auto& kv : options) {
    auto [k, v] = split_key_value(kv, option);
    opts[k] = v;
  }
  if (registry) opts["schema.registry.url"] = *registry;
  return opts;
}

namespace {
StreamingQuery* g_query = nullptr;
void on_stop(int) {
  if (g_query) g_query->stop();
}

std::map<std::string, std::string> source_options(const CommonOptions& common, const std::vector<std::string>& opts) {
  std::map<std::string, std::string> out;
  for (auto& kv : opts) {
    auto [k, v] = split_key_value(kv, "-o option");
    out[k] = v;
  }
  for (auto& kv : common.properties) {
    auto [k, v] = split_key_value(kv, "-X property");
    out["kafka." + k] = v;
  }
  if (!common.brokers.empty()) out["kafka.bootstrap.servers"] = common.brokers;
  return out;
}

// The rows' writer: the Kafka columns (all of them), or with --value-format
// json the decoded columns, then _corrupt_record (malformed records only),
// then the --kafka-columns; null columns are left out, as Spark's JSON
// writer does.
struct RecordOutput {
  RecordJsonWriter writer;
  JsonLinesSink::Formatter formatter;          // set with --value-format json|avro|protobuf
  JsonLinesSink::FormatterFactory formatters;  // --value-format json: a formatter per thread
  std::map<std::string, std::string> sink;     // --sink kafka|postgres: the sink's options
  PostgresColumns columns;                     // --sink postgres: what is written
};

// --value-format avro: each row's value decoded (AvroValueReader), written as
// the decoded columns then the --kafka-columns.
// Each row's value decoded by `reader` (Avro or Protobuf), written as the
// decoded columns then the --kafka-columns.
// With --sink postgres the same reader decodes the values into the table's
// columns (PostgresColumns::decoded); `types` are the columns' PostgreSQL
// types that their Arrow types do not tell (an Avro uuid).
template <class Reader>
RecordOutput decoded_output(const RecordOutputArgs& args, JsonWriterOptions options, std::shared_ptr<Reader> reader,
                            std::map<std::string, std::string> types = {}) {
  try {
    options.kafka_columns = parse_kafka_columns(args.kafka_columns);
  } catch (const JsonWriterError& e) {
    throw std::invalid_argument(fmt::format("--kafka-columns: {}", e.what()));
  }
  ArrowValueDecoder decoded = arrow_value_decoder(reader);
  decoded.types = std::move(types);
  PostgresColumns columns{std::nullopt, options.kafka_columns, std::move(decoded)};
  RecordJsonWriter writer(std::move(options));
  auto formatter = [reader, writer](std::string& out, const Row& row) {
    std::optional<std::span<const std::uint8_t>> value;
    if (row.value) value = std::span<const std::uint8_t>(row.value->data(), row.value->size());
    reader->append(value, row.topic, row.partition, row.offset);
    ArrowBatch batch = reader->finish();
    ArrowSchema schema{};
    reader->export_schema(&schema);
    std::string decoded;
    try {
      writer.append_arrow_lines(decoded, schema, batch.array());
    } catch (...) {
      schema.release(&schema);
      throw;
    }
    schema.release(&schema);
    std::string kafka;
    writer.append(kafka, row);
    // {decoded...} and {kafka...} as one object.
    decoded.resize(decoded.size() - 2);  // "}\n"
    if (decoded.size() > 1 && kafka.size() > 2) decoded += ',';
    out += decoded;
    out.append(kafka, 1);
    return true;
  };
  return {writer, formatter, {}, {}, std::move(columns)};
}

std::map<std::string, std::string> value_options(const RecordOutputArgs& args) {
  return format_options(args.value_options, args.schema_registry, "--value-option");
}

// --value-format avro: --schema is the writer's schema (plain Avro).
RecordOutput avro_output(const RecordOutputArgs& args, JsonWriterOptions options, const std::string& topic) {
  auto opts = value_options(args);
  if (args.schema) opts["jsonFormatSchema"] = read_schema_arg(*args.schema);
  if (auto it = opts.find("avroSchema"); it != opts.end()) it->second = read_schema_arg(it->second);
  auto reader = std::make_shared<AvroValueReader>(AvroFormatOptions::parse(opts), topic);
  std::map<std::string, std::string> types;
  for (const std::string& name : avro_uuid_columns(AvroSchema::parse(reader->reader_schema()))) types[name] = "uuid";
  return decoded_output(args, std::move(options), std::move(reader), std::move(types));
}

// --value-format protobuf: --value-option messageName=... and descFilePath=..., or -r.
RecordOutput protobuf_output(const RecordOutputArgs& args, JsonWriterOptions options, const std::string& topic) {
  if (args.schema)
    throw std::invalid_argument(
        "--value-format protobuf takes --value-option messageName=NAME and descFilePath=FILE (or -r), not --schema");
  auto reader = std::make_shared<ProtobufValueReader>(ProtobufFormatOptions::parse(value_options(args)), topic);
  return decoded_output(args, std::move(options), std::move(reader));
}

RecordOutput record_output(const RecordOutputArgs& args, const std::string& topic = "") {
  JsonWriterOptions options;
  options.binary = parse_binary_format(args.binary);
  options.time_zone = TimeZone::parse(args.time_zone);
  if (args.value_format != "avro" && args.value_format != "protobuf" &&
      (args.schema_registry || !args.value_options.empty()))
    throw std::invalid_argument("--schema-registry and --value-option need --value-format avro or protobuf");
  if (args.value_format == "raw") {
    if (args.schema) throw std::invalid_argument("--schema needs --value-format json or avro");
    return {RecordJsonWriter(std::move(options)), {}, {}, {}, {}};
  }
  if (args.value_format == "avro") return avro_output(args, std::move(options), topic);
  if (args.value_format == "protobuf") return protobuf_output(args, std::move(options), topic);
  if (!args.schema) throw std::invalid_argument("--value-format json needs --schema 'name TYPE, ...'");
  auto decoder = std::make_shared<JsonValueDecoder>(Schema::parse_ddl(*args.schema));
  try {
    options.kafka_columns = parse_kafka_columns(args.kafka_columns);
  } catch (const JsonWriterError& e) {
    throw std::invalid_argument(fmt::format("--kafka-columns: {}", e.what()));
  }
  for (KafkaColumn k : options.kafka_columns)
    for (auto& c : decoder->schema().columns)
      if (c.name == kafka_column_name(k))
        throw std::invalid_argument(
            fmt::format("--kafka-columns: '{}' is also a column of --schema; leave it out of one of them", c.name));
  PostgresColumns columns{decoder->schema(), options.kafka_columns};
  RecordJsonWriter writer(std::move(options));
  // One decoder per formatter: the JSON Lines sink formats on several
  // threads, each with its own.
  JsonLinesSink::FormatterFactory formatters = [schema = decoder->schema(), writer]() -> JsonLinesSink::Formatter {
    auto decoder = std::make_shared<JsonValueDecoder>(schema);
    return [decoder, writer](std::string& out, const Row& row) {
      writer.append(out, row, *decoder);
      return true;
    };
  };
  return {writer, formatters(), formatters, {}, std::move(columns)};
}

// The topic of `subscribe` when it names one (the registry subject's default).
std::string subscribed_topic(const std::map<std::string, std::string>& options) {
  auto it = options.find("subscribe");
  if (it == options.end() || it->second.find(',') != std::string::npos) return "";
  return it->second;
}

void check_sink_spec(const std::string& spec) {
  if (spec == "console" || spec == "kafka" || spec == "postgres" || (spec.rfind("jsonl:", 0) == 0 && spec.size() > 6))
    return;
  throw std::invalid_argument(fmt::format("invalid --sink '{}': expected jsonl:DIR, console, kafka or postgres", spec));
}

// The Kafka and PostgreSQL sinks' options: --sink-option KEY=VALUE; for
// Kafka, kafka.* from -b and -X where not given (a sink on the source's
// cluster needs no repetition).
RecordOutput with_sink_options(RecordOutput output, const std::string& spec, const CommonOptions& common,
                               const RecordOutputArgs& args) {
  if (spec == "postgres") {
    for (auto& kv : args.sink_options) {
      auto [k, v] = split_key_value(kv, "--sink-option");
      output.sink[k] = v;
    }
    PostgresSinkOptions::parse(output.sink);  // its checks, before anything runs
    std::set<std::string> names;
    for (const PostgresColumn& c : postgres_columns(output.columns))
      if (!names.insert(c.name).second)
        throw std::invalid_argument(fmt::format(
            "--sink postgres: '{}' is a decoded column of the values and a --kafka-columns one; leave it out of "
            "--kafka-columns",
            c.name));
    return output;
  }
  if (spec != "kafka") {
    if (!args.sink_options.empty())
      throw std::invalid_argument("--sink-option is only used with --sink kafka or --sink postgres");
    return output;
  }
  if (args.value_format != "raw")
    throw std::invalid_argument("--sink kafka writes the records as they are read: --value-format does not apply");
  for (auto& kv : args.sink_options) {
    auto [k, v] = split_key_value(kv, "--sink-option");
    output.sink[k] = v;
  }
  for (auto& kv : common.properties) {
    auto [k, v] = split_key_value(kv, "-X property");
    output.sink.emplace("kafka." + k, v);
  }
  if (!common.brokers.empty()) output.sink.emplace("kafka.bootstrap.servers", common.brokers);
  // Spark's checks, before anything runs.
  if (!KafkaSinkOptions::parse(output.sink).topic)
    throw std::invalid_argument(
        "--sink kafka needs -S topic=TOPIC: without it every record would be written back to the topic it was read "
        "from (the row's topic column, as Spark's Kafka sink does)");
  return output;
}

std::unique_ptr<Sink> make_sink(const std::string& spec, RecordOutput output) {
  check_sink_spec(spec);
  if (spec == "kafka") return std::make_unique<KafkaSink>(output.sink);
  if (spec == "postgres") return std::make_unique<PostgresSink>(output.sink, std::move(output.columns));
  if (spec == "console") {
    if (output.formatter) return std::make_unique<ConsoleSink>(std::move(output.formatter));
    return std::make_unique<ConsoleSink>(std::move(output.writer));
  }
  if (output.formatters)
    return std::make_unique<JsonLinesSink>(spec.substr(6), output.formatters, JsonLinesSink::default_format_threads());
  if (output.formatter) return std::make_unique<JsonLinesSink>(spec.substr(6), std::move(output.formatter));
  return std::make_unique<JsonLinesSink>(spec.substr(6), std::move(output.writer));
}

// --prometheus FILE is rewritten after each batch: its folder must be
// writable before the first batch commits anything.
void check_prometheus_path(const std::string& file) {
  if (file.empty()) throw std::invalid_argument("--prometheus needs a file name");
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw std::invalid_argument(fmt::format("--prometheus {}: folder {} does not exist", file, dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw std::invalid_argument(fmt::format("--prometheus {}: folder {} is not writable: {}", file, dir.string(),
                                            std::system_category().message(errno)));
  if (std::filesystem::is_directory(file, ec))
    throw std::invalid_argument(fmt::format("--prometheus {}: is a folder, expected a file name", file));
}

// --stats: one line on stderr when the run ends (also after an error).
class RunStats {
 public:
  void add(const BatchProgress& p) {
    durations_.push_back(p.duration_ms);
    rows_in_ += p.num_input_rows;
    rows_out_ += p.num_output_rows;
  }
  std::string line(const StreamingQuery& q) const {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    auto sorted = durations_;
    std::sort(sorted.begin(), sorted.end());
    std::string times = "-";
    if (!sorted.empty()) times = fmt::format("p50 {} ms, max {} ms", sorted[(sorted.size() - 1) / 2], sorted.back());
    const auto c = q.connection_stats();
    return fmt::format(
        "stream stats: {} batches in {:.3f} s, {} rows in, {} rows out; batch time {}; connections {} (admin {}, "
        "consumer {}), reauthentications {}, consumers {}",
        durations_.size(), secs, rows_in_, rows_out_, times, c.connects, c.admin_connects, c.consumer_connects,
        c.reauthentications, c.consumers_created);
  }

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<std::int64_t> durations_;
  std::int64_t rows_in_ = 0;
  std::int64_t rows_out_ = 0;
};
}  // namespace

int cmd_stream(const CommonOptions& common, const StreamArgs& args) {
  if (args.checkpoint.empty())
    throw std::invalid_argument("--checkpoint must name a folder (an empty path would write into the current folder)");
  if (args.max_batches && *args.max_batches <= 0)
    throw std::invalid_argument(fmt::format("--max-batches must be positive, got {}", *args.max_batches));
  if (args.prometheus) check_prometheus_path(*args.prometheus);
  auto options = source_options(common, args.options);
  auto output =
      with_sink_options(record_output(args.output, subscribed_topic(options)), args.sink, common, args.output);
  if (args.plan_only) {
    // A read-only view: the sink is checked but not opened (its folder is not
    // created) and the checkpoint is opened read-only (nothing is created in it).
    check_sink_spec(args.sink);
    NullSink none;
    StreamingQuery query(options, args.checkpoint, none, Trigger::parse(args.trigger), checkpoint::Access::read_only);
    auto plan = query.plan_next_batch();
    if (plan) fmt::print("{}\n", plan->plan_json());
    else
      fmt::print("{{\"batchId\":{},\"replay\":false,\"ranges\":[],\"note\":\"no new data\"}}\n", query.next_batch_id());
    return 0;
  }
  auto sink = make_sink(args.sink, std::move(output));
  StreamingQuery query(options, args.checkpoint, *sink, Trigger::parse(args.trigger));
  g_query = &query;
  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
  auto description = query.description();
  RunStats stats;
  auto print_stats = [&] {
    if (args.stats) std::fprintf(stderr, "%s\n", stats.line(query).c_str());
  };
  try {
    query.run(
        [&](const BatchProgress& p) {
          stats.add(p);
          // std::fprintf does not throw: a progress line that cannot be written
          // (stderr on a full disk) does not stop a committed query.
          const auto line = args.json_progress ? p.to_json(description) : p.to_line();
          std::fprintf(stderr, "%s\n", line.c_str());
          if (args.prometheus) checkpoint::atomic_write_file(*args.prometheus, p.to_prometheus());
        },
        args.max_batches);
  } catch (...) {
    g_query = nullptr;
    print_stats();
    throw;
  }
  g_query = nullptr;
  print_stats();
  return 0;
}

int cmd_read_range(const CommonOptions& common, const ReadRangeArgs& args) {
  auto options = source_options(common, args.options);
  if (args.until < args.from)
    throw std::invalid_argument(fmt::format("--until {} is below --from {}", args.until, args.from));
  auto sink =
      make_sink(args.sink, with_sink_options(record_output(args.output, args.topic), args.sink, common, args.output));
  OffsetRange range{TopicPartition{args.topic, args.partition}, args.from, args.until, std::nullopt};
  auto progress = read_offset_range(options, range, *sink);
  fmt::print(stderr, "{}\n", progress.to_line());
  return 0;
}

int cmd_read(const CommonOptions& common, const ReadArgs& args) {
  auto options = source_options(common, args.options);
  auto output =
      with_sink_options(record_output(args.output, subscribed_topic(options)), args.sink, common, args.output);
  check_sink_spec(args.sink);
  BatchQuery query(options);
  auto plan = query.plan();
  if (args.plan_only) {
    fmt::print("{}\n", plan.to_json());
    return 0;
  }
  auto sink = make_sink(args.sink, std::move(output));
  auto result = query.read(plan, *sink);
  std::fprintf(stderr, "%s\n",
               fmt::format("read {} rows from {} ranges in {} ms (dataLoss {}, offsetOutOfRange {})", result.rows,
                           plan.ranges.size(), result.duration_ms, result.data_loss, result.offset_out_of_range)
                   .c_str());
  return 0;
}

int cmd_lag(const CommonOptions& common, const LagArgs& args) {
  auto options = source_options(common, args.options);
  std::map<std::string, std::string> props;
  for (auto& [k, v] : options)
    if (k.rfind("kafka.", 0) == 0) props[k.substr(6)] = v;
  if (!props.count("bootstrap.servers"))
    throw std::invalid_argument("no broker given: use -b HOST:PORT or -o kafka.bootstrap.servers=HOST:PORT");
  if (args.checkpoint.empty()) throw std::invalid_argument("--checkpoint must name a folder");
  // Read-only: lag works on the checkpoint of a running query.
  auto cp = checkpoint::Checkpoint::open_read_only(args.checkpoint);
  auto last = cp.latest_commit_batch();
  if (!last) throw std::invalid_argument(fmt::format("checkpoint '{}' has no committed batch", args.checkpoint));
  auto consumed = cp.read_offsets(*last);
  client::KafkaClient client(props);
  std::map<client::TopicPartition, std::int64_t> req;
  for (auto& [t, parts] : consumed)
    for (auto& [p, _] : parts) req[client::TopicPartition{t, p}] = client::kLatestTimestamp;
  PartitionOffsets latest;
  for (auto& [tp, lo] : client.list_offsets(req)) latest[tp.topic][tp.partition] = lo.offset;
  auto lag = offsets_behind_latest(latest, consumed);
  if (args.json) {
    if (lag)
      fmt::print(
          "{{\"batchId\":{},\"minOffsetsBehindLatest\":{},\"maxOffsetsBehindLatest\":{},"
          "\"avgOffsetsBehindLatest\":{:.1f},\"endOffset\":{},\"latestOffset\":{}}}\n",
          *last, lag->min_offsets_behind_latest, lag->max_offsets_behind_latest, lag->avg_offsets_behind_latest,
          checkpoint::offsets_to_json(consumed), checkpoint::offsets_to_json(latest));
    else fmt::print("{{\"batchId\":{}}}\n", *last);
    return 0;
  }
  for (auto& [t, parts] : latest)
    for (auto& [p, off] : parts) {
      auto c = consumed.at(t).at(p);
      fmt::print("{} [{}] consumed {} latest {} behind {}\n", t, p, c, off, off - c);
    }
  if (lag)
    fmt::print("offsets behind latest: min {} max {} avg {:.1f}\n", lag->min_offsets_behind_latest,
               lag->max_offsets_behind_latest, lag->avg_offsets_behind_latest);
  return 0;
}

}  // namespace kwire::tools

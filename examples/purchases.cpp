// The C++ twin of a PySpark job that reads JSON events from Kafka and writes
// the purchases to JSON files:
//
//   events = (spark.readStream.format("kafka")
//             .option("kafka.bootstrap.servers", bootstrap)
//             .option("subscribe", "user-events")
//             .option("startingOffsets", "earliest")
//             .option("maxOffsetsPerTrigger", 20000)
//             .load()
//             .select(from_json(col("value").cast("string"), schema).alias("e"))
//             .select("e.*"))
//   (events.where("action = 'purchase' AND amount > 0")
//          .writeStream.format("json").option("path", out)
//          .option("checkpointLocation", checkpoint)
//          .trigger(availableNow=True).start().awaitTermination())
//
// Usage: purchases --bootstrap HOST:PORT --checkpoint DIR
//                  (--output DIR | --output-topic TOPIC | --output-postgres URL --table T)
//                  [--topic user-events] [--max-offsets-per-trigger 20000|none]
//                  [--trigger available-now|once|processing-time=5s]
//                  [-X KEY=VALUE]...
//
// -X passes a client property by its Java name, as the kwire CLI's -X and
// Spark's kafka.KEY options do (repeatable), e.g. for a SASL_SSL broker:
//   -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512
//   -X sasl.username=alice -X sasl.password=... -X ssl.ca.location=ca.pem
// --max-offsets-per-trigger none reads each trigger's whole backlog (no
// maxOffsetsPerTrigger option).
//
// --output-topic writes the purchases to a Kafka topic instead, exactly once
// (KafkaSink with exactlyOnce=true: one transaction per batch): the same JSON
// as the value, the event's key as the key, and a header "source" holding
// "<partition>:<offset>" of the event it came from. --exactly-once false
// writes them at least once (Spark's Kafka sink).
//
// --output-postgres writes them into PostgreSQL table --table (created when
// missing) with the event's columns, partition and offset, exactly once
// (PostgresSink: one database transaction per batch with the query's
// progress). The password comes from PGPASSWORD or ~/.pgpass.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "kwire/client/producer.hpp"
#include "kwire/source/json_writer.hpp"
#include "kwire/source/kafka_sink.hpp"
#include "kwire/source/postgres_sink.hpp"
#include "kwire/source/stream.hpp"

namespace {

struct Args {
  std::string bootstrap = "127.0.0.1:19092";
  std::string topic = "user-events";
  std::string checkpoint;
  std::string output;
  std::string output_topic;
  std::string output_postgres;
  std::string table;
  std::string exactly_once = "true";
  std::string max_offsets = "20000";
  std::string trigger = "available-now";
  std::map<std::string, std::string> properties;  // -X KEY=VALUE
};

[[noreturn]] void usage(const char* why) {
  fmt::print(
      stderr,
      "purchases: {}\nusage: purchases --bootstrap HOST:PORT --checkpoint DIR (--output DIR | --output-topic T | "
      "--output-postgres URL --table T) [--topic T] [--max-offsets-per-trigger N|none] [--trigger T] "
      "[-X KEY=VALUE]...\n",
      why);
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + k).c_str());
    std::string v = argv[++i];
    if (k == "--bootstrap") a.bootstrap = v;
    else if (k == "--topic") a.topic = v;
    else if (k == "--checkpoint") a.checkpoint = v;
    else if (k == "--output") a.output = v;
    else if (k == "--output-topic") a.output_topic = v;
    else if (k == "--output-postgres") a.output_postgres = v;
    else if (k == "--table") a.table = v;
    else if (k == "--exactly-once") a.exactly_once = v;
    else if (k == "--max-offsets-per-trigger") a.max_offsets = v;
    else if (k == "--trigger") a.trigger = v;
    else if (k == "-X") {
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) usage(("-X expects KEY=VALUE, got '" + v + "'").c_str());
      a.properties[v.substr(0, eq)] = v.substr(eq + 1);
    } else usage(("unknown argument " + k).c_str());
  }
  if (a.checkpoint.empty()) usage("--checkpoint is required");
  if (!a.output.empty() + !a.output_topic.empty() + !a.output_postgres.empty() != 1)
    usage("one of --output DIR, --output-topic TOPIC and --output-postgres URL is required");
  if (a.output_postgres.empty() != a.table.empty()) usage("--output-postgres and --table go together");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);
  std::map<std::string, std::string> options{
      {"kafka.bootstrap.servers", args.bootstrap},
      {"subscribe", args.topic},
      {"startingOffsets", "earliest"},
  };
  if (args.max_offsets != "none") options["maxOffsetsPerTrigger"] = args.max_offsets;
  for (auto& [k, v] : args.properties) options["kafka." + k] = v;

  // from_json + where: decode the value with simdjson; rows whose value is not
  // an event object are dropped, as from_json's nulls would be by the filter.
  // The purchases are written by kwire's record writer, as Spark's JSON
  // writer writes the selected columns (here with partition and offset).
  using kwire::source::Cell;
  using kwire::source::ColumnType;
  const kwire::source::Schema schema{{{"user_id", ColumnType::int64},
                                      {"action", ColumnType::string},
                                      {"amount", ColumnType::float64},
                                      {"event_ts", ColumnType::int64}}};
  kwire::source::JsonWriterOptions writer_options;
  writer_options.kafka_columns = {kwire::source::KafkaColumn::partition, kwire::source::KafkaColumn::offset};
  const kwire::source::RecordJsonWriter writer(writer_options);
  // One filter per formatting thread (the JSON Lines sink formats on
  // several), each with its own parser and reused row.
  auto make_purchases_only = [&schema, &writer]() -> kwire::source::JsonLinesSink::Formatter {
    struct State {
      kwire::source::DecodedValue event;  // reused: its cells keep their memory
      simdjson::ondemand::parser parser;
      std::string buffer;  // the value, with simdjson's padding
    };
    auto st = std::make_shared<State>();
    st->event.cells = {Cell{std::int64_t{0}}, Cell{std::string("purchase")}, Cell{0.0}, Cell{std::int64_t{0}}};
    return [st, &schema, &writer](std::string& out, const kwire::source::Row& row) {
      if (!row.value) return false;
      const std::string_view text = row.value_string();
      st->buffer.assign(text);
      st->buffer.resize(text.size() + simdjson::SIMDJSON_PADDING);
      simdjson::ondemand::document doc;
      if (st->parser.iterate(st->buffer.data(), text.size(), st->buffer.size()).get(doc)) return false;
      std::string_view action;
      double amount = 0;
      int64_t user_id = 0;
      int64_t event_ts = 0;
      if (doc["user_id"].get_int64().get(user_id)) return false;
      if (doc["action"].get_string().get(action)) return false;
      if (action != "purchase") return false;
      if (doc["amount"].get_double().get(amount) || !(amount > 0)) return false;
      if (doc["event_ts"].get_int64().get(event_ts)) return false;
      st->event.cells[0] = user_id;
      st->event.cells[2] = amount;
      st->event.cells[3] = event_ts;
      writer.append(out, row, schema, st->event);
      return true;
    };
  };
  const kwire::source::JsonLinesSink::Formatter purchases_only = make_purchases_only();

  // --output-topic: the line becomes the record's value.
  std::string value;
  std::vector<kwire::protocol::RecordHeader> headers(1);
  headers[0].key = "source";
  auto purchase_record = [&](const kwire::source::Row& row, kwire::client::ProducerRecordView& record) {
    value.clear();
    if (!purchases_only(value, row)) return false;
    const std::string source = fmt::format("{}:{}", row.partition, row.offset);
    headers[0].value = kwire::protocol::Bytes(source.begin(), source.end());
    record.value = kwire::protocol::ByteSpan(reinterpret_cast<const std::uint8_t*>(value.data()), value.size());
    record.headers = headers;
    record.partition = std::nullopt;  // the producer's partitioner, by key
    return true;
  };

  try {
    std::unique_ptr<kwire::source::Sink> sink;
    if (!args.output_postgres.empty()) {
      // The sink decodes the value with the schema (from_json, PERMISSIVE);
      // the where clause keeps the purchases.
      auto is_purchase = [](const kwire::source::Row&, const kwire::source::DecodedValue& e) {
        const auto* action = std::get_if<std::string>(&e.cells[1]);
        const auto* amount = std::get_if<double>(&e.cells[2]);
        return action && *action == "purchase" && amount && *amount > 0;
      };
      sink = std::make_unique<kwire::source::PostgresSink>(
          std::map<std::string, std::string>{{"url", args.output_postgres}, {"dbtable", args.table}},
          kwire::source::PostgresColumns{schema, writer_options.kafka_columns}, is_purchase);
    } else if (args.output_topic.empty()) {
      sink = std::make_unique<kwire::source::JsonLinesSink>(args.output, make_purchases_only,
                                                            kwire::source::JsonLinesSink::default_format_threads());
    } else {
      std::map<std::string, std::string> sink_options{
          {"kafka.bootstrap.servers", args.bootstrap}, {"topic", args.output_topic}, {"exactlyOnce", "true"}};
      for (auto& [k, v] : args.properties) sink_options["kafka." + k] = v;
      sink = std::make_unique<kwire::source::KafkaSink>(sink_options, purchase_record);
    }
    kwire::source::StreamingQuery query(options, args.checkpoint, *sink, kwire::source::Trigger::parse(args.trigger));
    std::int64_t total_in = 0, total_out = 0, batches = 0;
    query.run([&](const kwire::source::BatchProgress& p) {
      total_in += p.num_input_rows;
      total_out += p.num_output_rows;
      ++batches;
      fmt::print("{}\n", p.to_line());
      std::fflush(stdout);
    });
    fmt::print("done: {} batches, {} rows read, {} purchases written to {}\n", batches, total_in, total_out,
               !args.output_postgres.empty() ? "table " + args.table
               : args.output_topic.empty()   ? args.output
                                             : "topic " + args.output_topic);
  } catch (const std::exception& e) {
    fmt::print(stderr, "purchases: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

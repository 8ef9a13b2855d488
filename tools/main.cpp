// kwire: a kcat-like command line for Kafka, on kwire's own protocol code.
#include <charconv>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "acl_cmd.hpp"
#include "admin_cmd.hpp"
#include "commands.hpp"
#include "conformance.hpp"
#include "dump_log.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/protocol/message.hpp"
#include "kwire/version.hpp"

using namespace kwire::tools;

namespace {
// An integer option's lower bound, with a short message (CLI::PositiveNumber
// and CLI::NonNegativeNumber print a double's 300-digit maximum).
CLI::Validator at_least(long long lo) {
  return CLI::Validator(
      [lo](std::string& in) -> std::string {
        long long v = 0;
        auto [ptr, ec] = std::from_chars(in.data(), in.data() + in.size(), v);
        if (ec != std::errc() || ptr != in.data() + in.size()) return {};  // the type conversion reports it
        if (v < lo) return fmt::format("{} is not allowed: must be {} or more", in, lo);
        return {};
      },
      fmt::format("INT>={}", lo));
}

// How stream, read and read-range write rows.
void add_record_output(CLI::App* sub, RecordOutputArgs& out) {
  sub->add_option("--value-format", out.value_format,
                  "raw (Spark's kafka columns) | json (decode values, see --schema) | avro (Avro values: --schema, "
                  "or Confluent's wire format with -r) | protobuf (--value-option messageName=M and descFilePath=F, "
                  "or -r)")
      ->check(CLI::IsMember({"raw", "json", "avro", "protobuf"}));
  sub->add_option("--schema", out.schema,
                  "json: Spark DDL of the values, e.g. 'user_id STRING, amount DOUBLE'; avro: the writer's Avro schema "
                  "(JSON text, or @FILE)");
  sub->add_option("-r,--schema-registry", out.schema_registry,
                  "With --value-format avro or protobuf: the Schema Registry's URL (schema.registry.url); the values "
                  "are in Confluent's wire format");
  sub->add_option("--value-option", out.value_options,
                  "With --value-format avro or protobuf: a from_avro / from_protobuf option KEY=VALUE (mode, "
                  "avroSchema, messageName, descFilePath, subject, basic.auth.user.info, ...; repeatable)");
  sub->add_option(
      "--kafka-columns", out.kafka_columns,
      "With --value-format json or avro: kafka columns kept next to the decoded ones (comma list of key, value, "
      "topic, partition, offset, timestamp, timestampType, headers; or none)");
  sub->add_option("--binary", out.binary,
                  "key, value and header values as text (as CAST(... AS STRING)) or base64 (as Spark's JSON writer "
                  "writes binary columns)")
      ->check(CLI::IsMember({"text", "base64"}))
      ->default_val("text");
  sub->add_option("--time-zone", out.time_zone,
                  "Time zone of the timestamps written (Spark's session time zone): UTC, +HH:MM or a region ID")
      ->default_val("UTC");
  sub->add_option("-S,--sink-option", out.sink_options,
                  "With --sink kafka: a Kafka sink option KEY=VALUE, Spark's names (topic, kafka.*; exactlyOnce=true "
                  "for one transaction per batch); kafka.* default to -b and -X. With --sink postgres: url, dbtable, "
                  "user, password, upsertKey, progressTable (repeatable)");
}
}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"kwire - Kafka wire-protocol client and streaming source"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kwire ") + KWIRE_VERSION_STRING);

  CommonOptions common;
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("-b,--brokers", common.brokers, "Bootstrap servers HOST:PORT[,...] (bootstrap.servers)");
    // One KEY=VALUE per -X, as in kcat: a word after it is not another property.
    sub->add_option("-X", common.properties, "Client property KEY=VALUE by Java/librdkafka name (repeatable)")
        ->allow_extra_args(false);
  };

  // metadata
  MetadataArgs md;
  auto* m = app.add_subcommand("metadata", "List brokers, topics and partitions");
  add_common(m);
  m->add_option("-t,--topic", md.topics, "Only these topics (repeatable)");
  m->add_flag("--json", md.json, "Print JSON");

  // offsets
  OffsetsArgs off;
  auto* o = app.add_subcommand("offsets", "Earliest and latest offset of each partition");
  add_common(o);
  o->add_option("-t,--topic", off.topic, "Topic")->required();
  o->add_option("-p,--partition", off.partition, "Only this partition")->check(at_least(0));
  o->add_option("--timestamp", off.timestamp,
                "Also look up the first offset at or after this timestamp (ms since the epoch; -1 latest, -2 "
                "earliest, -3 max-timestamp)");
  o->add_flag("--json", off.json, "Print JSON");

  // create-topic
  CreateTopicArgs ct;
  auto* c = app.add_subcommand("create-topic", "Create a topic");
  add_common(c);
  c->add_option("-t,--topic", ct.topic, "Topic")->required();
  c->add_option("--partitions", ct.partitions, "Partition count")->default_val(1);
  c->add_option("--replication-factor", ct.replication_factor, "Replication factor")->default_val(1);
  c->add_option("--config", ct.configs, "Topic config KEY=VALUE (repeatable)");
  c->add_flag("--if-not-exists", ct.if_not_exists, "Succeed when the topic already exists");

  // delete-topic
  DeleteTopicArgs dt;
  auto* d = app.add_subcommand("delete-topic", "Delete topics");
  add_common(d);
  d->add_option("-t,--topic", dt.topics, "Topic (repeatable)")->required();

  // delete-records
  DeleteRecordsArgs dr;
  auto* dre = app.add_subcommand("delete-records", "Delete the records of partitions below an offset");
  add_common(dre);
  dre->add_option("-t,--topic", dr.topic, "Topic")->required();
  dre->add_option("-p,--partition", dr.partitions, "Partition (repeatable; default: every partition)")
      ->check(at_least(0));
  dre->add_option("--before", dr.before, "New log start offset; -1 for the high watermark")->required();

  // create-partitions
  CreatePartitionsArgs cp;
  auto* cpa = app.add_subcommand("create-partitions", "Raise a topic's partition count");
  add_common(cpa);
  cpa->add_option("-t,--topic", cp.topic, "Topic")->required();
  cpa->add_option("--count", cp.count, "New total partition count")->required()->check(at_least(1));

  // produce
  ProduceArgs pr;
  auto* p = app.add_subcommand("produce", "Produce one record per line of standard input");
  add_common(p);
  p->add_option("-t,--topic", pr.topic, "Topic")->required();
  p->add_option("-p,--partition", pr.partition, "Partition (default: by key hash, else sticky)");
  p->add_option("-K,--key-delimiter", pr.key_delimiter, "Split each line into key and value at this delimiter");
  p->add_option("-z,--compression", pr.compression, "none|gzip|snappy|lz4|zstd")
      ->check(CLI::IsMember({"none", "gzip", "snappy", "lz4", "zstd"}));
  p->add_option("-H,--header", pr.headers, "Header KEY=VALUE added to every record (repeatable)");
  p->add_option("--acks", pr.acks, "acks: all, 1 or 0");
  p->add_option("--transactional-id", pr.transactional_id,
                "Write in transactions of this transactional.id (read_committed readers see a "
                "transaction's records once it commits; fences older producers of the id; one transaction "
                "must end within transaction.timeout.ms, 60 s by default)");
  p->add_option("--records-per-transaction", pr.records_per_transaction,
                "With --transactional-id: commit after this many records (default: one transaction for all "
                "of standard input)")
      ->check(at_least(1));
  p->add_option("--value-format", pr.value_format,
                "raw (each line's bytes as they are) | avro | protobuf: each line (after -K, its value) is a JSON "
                "object of the schema's fields (kwire stream --value-format's JSON: base64 bytes, ISO-8601 "
                "timestamps), encoded; Confluent's wire format with -r (subject TOPIC-value). A line that does not "
                "fit the schema stops the input with an error naming the line and the field")
      ->check(CLI::IsMember({"raw", "avro", "protobuf"}))
      ->default_val("raw");
  p->add_option("--schema", pr.schema,
                "With --value-format avro: the writer's Avro schema (JSON text, or @FILE); with -r it is registered "
                "under the subject (auto.register.schemas, default true) or looked up (false)");
  p->add_option("-r,--schema-registry", pr.schema_registry,
                "The Schema Registry's URL (schema.registry.url): values (and keys) in Confluent's wire format");
  p->add_option("--value-option", pr.value_options,
                "With --value-format avro or protobuf: a to_avro / to_protobuf option KEY=VALUE (messageName, "
                "descFilePath, subject, auto.register.schemas, use.latest.version, basic.auth.user.info, ...; "
                "repeatable)");
  p->add_option("--key-format", pr.key_format,
                "raw | avro | protobuf: the key before the -K delimiter, as --value-format (subject TOPIC-key)")
      ->check(CLI::IsMember({"raw", "avro", "protobuf"}))
      ->default_val("raw");
  p->add_option("--key-schema", pr.key_schema,
                "With --key-format avro: the key's Avro schema (JSON text, or @FILE); a key of a non-record schema "
                "is its JSON value, e.g. \"user-1\" (quoted) for \"string\"");
  p->add_option("--key-option", pr.key_options,
                "With --key-format avro or protobuf: an option KEY=VALUE for the key, as --value-option (repeatable)");

  // consume
  ConsumeArgs co;
  auto* k = app.add_subcommand("consume", "Print records of a topic, or of a group's share of topics (-G)");
  add_common(k);
  auto* topic_opt = k->add_option("-t,--topic", co.topic, "Topic");
  auto* group_opt = k->add_option("-G,--group", co.group,
                                  "Balanced consumer: join group.id GROUP and consume its share of TOPIC... "
                                  "(committing offsets; -o beginning|end sets auto.offset.reset)");
  k->add_option("topics", co.topics, "With -G or --share: the topics to subscribe to");
  topic_opt->excludes(group_opt);
  ShareConsumeArgs sca;
  auto* share_opt = k->add_option("--share", sca.group,
                                  "Share group member (KIP-932): join share group GROUP, read TOPIC... with the "
                                  "others, acknowledge each record once written (-e: exit when a poll is empty)");
  share_opt->excludes(topic_opt)->excludes(group_opt);
  k->add_option("--ack", sca.ack, "With --share: accept (default), release or reject each record written");
  k->add_flag("--reject-on-error", sca.reject_on_error,
              "With --share: reject a record that could not be written (default: release it)");
  k->add_option("-p,--partition", co.partitions, "Only these partitions (repeatable)")->check(at_least(0));
  k->add_option("-o,--offset", co.offset,
                "beginning | end | OFFSET | -N (N before end) | s@TIMESTAMP_MS; without -p, a partition not "
                "holding OFFSET starts where auto.offset.reset says (latest unless set with -X)")
      ->default_val("beginning");
  k->add_flag("-e,--exit", co.exit_at_end, "Exit once the end of every partition (as of start) is reached");
  k->add_option("-c,--count", co.count, "Exit after this many records")->check(at_least(0));
  k->add_flag("-J,--json", co.json, "One JSON object per record (kcat's -J; the fields are Spark's columns)");
  k->add_option("-f,--format", co.format,
                "Output format: %t topic, %p partition, %o offset, %T timestamp, %k key, %s value, %S value "
                "length, %h headers, \\n \\t");
  k->add_flag("-q,--quiet", co.quiet, "No end-of-partition notes on stderr");
  k->add_flag("--stats", co.stats, "Print records/s and MB/s to stderr at the end");

  // groups
  GroupsArgs ga;
  auto* groups = app.add_subcommand("groups", "Consumer groups: list, describe, reset offsets, delete");
  groups->require_subcommand(1);
  auto* gl = groups->add_subcommand("list", "List the groups of every broker");
  add_common(gl);
  gl->add_flag("--json", ga.json, "Print JSON");
  auto* gd = groups->add_subcommand("describe",
                                    "Members, assignments, committed offset, log end offset and lag of each partition");
  add_common(gd);
  gd->add_option("group", ga.group, "Group id")->required();
  gd->add_flag("--json", ga.json, "Print JSON");
  auto* gr =
      groups->add_subcommand("reset-offsets", "Set a group's committed offsets (the group must have no members)");
  add_common(gr);
  gr->add_option("group", ga.group, "Group id")->required();
  gr->add_option("--topic", ga.topics, "TOPIC or TOPIC:P[,P...] (repeatable)");
  gr->add_flag("--all-topics", ga.all_topics, "Every topic the group has committed offsets for");
  gr->add_flag("--to-earliest", ga.to_earliest, "To each partition's earliest offset");
  gr->add_flag("--to-latest", ga.to_latest, "To each partition's latest offset");
  gr->add_option("--to-offset", ga.to_offset, "To this offset (clamped to [earliest, latest])");
  gr->add_option("--to-datetime,--by-time", ga.to_timestamp,
                 "To the first offset whose timestamp is at or after this time (ms since the epoch)")
      ->check(at_least(0));
  gr->add_flag("--dry-run", ga.dry_run, "Print the new offsets without committing them");
  gr->add_flag("--json", ga.json, "Print JSON");

  auto* gdo = groups->add_subcommand(
      "delete-offsets", "Delete a group's committed offsets of topics no member subscribes to (OffsetDelete)");
  add_common(gdo);
  gdo->add_option("group", ga.group, "Group id")->required();
  gdo->add_option("--topic", ga.topics, "TOPIC or TOPIC:P[,P...] (repeatable)")->required();
  gdo->add_flag("--json", ga.json, "Print JSON");

  DeleteGroupsArgs dg;
  auto* gdel = groups->add_subcommand("delete", "Delete groups (each must have no members)");
  add_common(gdel);
  gdel->add_option("group", dg.groups, "Group ids")->required();
  gdel->add_flag("--json", dg.json, "Print JSON");

  // share-groups
  ShareGroupsArgs sga;
  auto* sg = app.add_subcommand("share-groups", "Share groups (KIP-932): list, describe, reset offsets");
  sg->require_subcommand(1);
  auto* sgl = sg->add_subcommand("list", "List the share groups");
  add_common(sgl);
  sgl->add_flag("--json", sga.json, "Print JSON");
  auto* sgd = sg->add_subcommand("describe", "Members, assignments, start offset and lag of each partition");
  add_common(sgd);
  sgd->add_option("group", sga.group, "Group id")->required();
  sgd->add_flag("--json", sga.json, "Print JSON");
  auto* sgr = sg->add_subcommand("reset-offsets", "Set a share group's start offsets (the group must have no members)");
  add_common(sgr);
  sgr->add_option("group", sga.group, "Group id")->required();
  sgr->add_option("--topic", sga.topics, "Topic (every partition; repeatable)");
  sgr->add_flag("--to-earliest", sga.to_earliest, "To each partition's earliest offset");
  sgr->add_flag("--to-latest", sga.to_latest, "To each partition's latest offset");
  sgr->add_option("--to-offset", sga.to_offset, "To this offset (clamped to [earliest, latest])");
  sgr->add_flag("--dry-run", sga.dry_run, "Print the new offsets without setting them");
  sgr->add_flag("--json", sga.json, "Print JSON");

  // transactions
  TransactionsArgs txa;
  auto* tx =
      app.add_subcommand("transactions", "Transactions: list, describe, describe-producers (kafka-transactions)");
  tx->require_subcommand(1);
  auto* txl = tx->add_subcommand("list", "List the transactional ids every broker coordinates");
  add_common(txl);
  txl->add_option("--state", txa.states, "Only transactions in this state, e.g. Ongoing (repeatable)");
  txl->add_option("--producer-id", txa.producer_ids, "Only this producer id (repeatable)");
  txl->add_option("--duration-ms", txa.duration_ms, "Only transactions open at least this long (Kafka 3.8+)")
      ->check(at_least(0));
  txl->add_option("--transactional-id-pattern", txa.pattern,
                  "Only ids matching this (Java) regular expression (Kafka 4.1+)");
  txl->add_flag("--json", txa.json, "Print JSON");
  auto* txd = tx->add_subcommand("describe", "State, producer, open partitions and age of one transactional id");
  add_common(txd);
  txd->add_option("--transactional-id", txa.transactional_id, "Transactional id")->required();
  txd->add_flag("--json", txa.json, "Print JSON");
  auto* txp = tx->add_subcommand("describe-producers", "The producers with state on one partition (its leader's view)");
  add_common(txp);
  txp->add_option("-t,--topic", txa.topic, "Topic")->required();
  txp->add_option("-p,--partition", txa.partition, "Partition")->required()->check(at_least(0));
  txp->add_flag("--json", txa.json, "Print JSON");

  // cluster, configs
  ClusterArgs ca;
  auto* cl = app.add_subcommand("cluster", "Cluster id, controller and brokers (DescribeCluster)");
  add_common(cl);
  cl->add_flag("--include-fenced", ca.include_fenced, "Also fenced brokers (Kafka 4.0+)");
  cl->add_flag("--json", ca.json, "Print JSON");
  ConfigsArgs cfg;
  auto* cf = app.add_subcommand("configs", "Describe, alter or list configurations, as kafka-configs");
  add_common(cf);
  cf->add_flag("--describe", cfg.describe, "Print the configs of the entities");
  cf->add_flag("--alter", cfg.alter, "Change them (IncrementalAlterConfigs)");
  cf->add_flag("--list", cfg.list, "List the resources that have configs (ListConfigResources)");
  cf->add_option("--entity-type", cfg.entity_type, "topics, brokers, broker-loggers, client-metrics, groups");
  cf->add_option("--entity-name", cfg.entity_names, "Topic or group name, broker id (repeatable)");
  cf->add_flag("--entity-default", cfg.entity_default, "The cluster-wide broker default");
  cf->add_option("--key", cfg.keys, "--describe: only this key (repeatable)");
  cf->add_option("--add-config", cfg.add_config, "KEY=VALUE[,KEY=[V1,V2]...] to set");
  cf->add_option("--delete-config", cfg.delete_config, "KEY[,KEY...] to return to their defaults");
  cf->add_flag("--validate-only", cfg.validate_only, "--alter: check the change, do not apply it");
  cf->add_flag("--all", cfg.all, "--describe: also the keys at their defaults");
  cf->add_flag("--json", cfg.json, "Print JSON");

  // acls, leader-election, log-dirs
  AclCommands acl_commands;
  acl_commands.add_to(app, add_common);

  // stream
  StreamArgs st;
  auto* s = app.add_subcommand("stream", "Run the streaming source (Spark's kafka source options) into a sink");
  add_common(s);
  s->add_option("-o,--option", st.options, "Source option KEY=VALUE, Spark's names (repeatable)");
  s->add_option("--checkpoint", st.checkpoint, "Checkpoint folder")->required();
  s->add_option("--sink", st.sink, "jsonl:DIR | console | kafka | postgres (see --sink-option)")
      ->default_val("console");
  s->add_option("--trigger", st.trigger, "available-now | once | processing-time=DURATION")
      ->default_val("available-now");
  s->add_option("--max-batches", st.max_batches, "Stop after this many batches (processing-time)")->check(at_least(1));
  s->add_flag("--json-progress", st.json_progress,
              "Print each batch's progress JSON (also appended to CHECKPOINT/progress.jsonl) on stderr");
  s->add_option("--prometheus", st.prometheus,
                "Rewrite FILE atomically after each batch with the latest metrics (Prometheus text format)");
  add_record_output(s, st.output);
  s->add_flag("--plan-only", st.plan_only,
              "Print the next batch's plan as JSON; read nothing, create or change no file or folder");
  s->add_flag("--stats", st.stats,
              "Print a summary on stderr at the end: batches, rows, batch time (p50, max), connections made");

  // read (batch query)
  ReadArgs rd;
  auto* rq = app.add_subcommand(
      "read", "Run a batch query (Spark's spark.read.format(\"kafka\") options) from starting to ending offsets");
  add_common(rq);
  rq->add_option("-o,--option", rd.options,
                 "Source option KEY=VALUE, Spark's names (startingOffsets, endingOffsets, ...; repeatable)");
  rq->add_option("--sink", rd.sink, "jsonl:DIR | console | kafka | postgres (see --sink-option)")
      ->default_val("console");
  add_record_output(rq, rd.output);
  rq->add_flag("--plan-only", rd.plan_only, "Print the planned offsets and ranges as JSON; read nothing");

  // read-range
  ReadRangeArgs rr;
  auto* r =
      app.add_subcommand("read-range", "Read one offset range [from, until) of one partition with the stream reader");
  add_common(r);
  r->add_option("-t,--topic", rr.topic, "Topic")->required();
  r->add_option("-p,--partition", rr.partition, "Partition")->required()->check(at_least(0));
  r->add_option("--from", rr.from, "First offset (inclusive)")->required()->check(at_least(0));
  r->add_option("--until", rr.until, "End offset (exclusive; at most the partition's latest offset)")
      ->required()
      ->check(at_least(0));
  r->add_option("--sink", rr.sink, "jsonl:DIR | console | kafka | postgres (see --sink-option)")
      ->default_val("console");
  r->add_option("-o,--option", rr.options, "Source option KEY=VALUE (failOnDataLoss, kafka.*, ...)");
  add_record_output(r, rr.output);

  // lag
  LagArgs lg;
  auto* l = app.add_subcommand("lag", "Offsets behind latest for a checkpoint, now");
  add_common(l);
  l->add_option("--checkpoint", lg.checkpoint, "Checkpoint folder")->required();
  l->add_option("-o,--option", lg.options, "Source option KEY=VALUE (for kafka.* client settings)");
  l->add_flag("--json", lg.json, "Print JSON");

  // conformance
  bool conf_json = false;
  auto* conf = app.add_subcommand("conformance", "Exercise every API version kwire and the broker both speak");
  add_common(conf);
  conf->add_flag("--json", conf_json, "Print JSON");

  // dump-log
  DumpLogArgs dl;
  auto* dump = app.add_subcommand("dump-log", "Print the batches and records in log segment files or raw records");
  dump->add_option("files", dl.files, "Files holding record batches / message sets back to back")->required();
  dump->add_flag("--json", dl.json, "Print JSON");
  dump->add_option("--fetch-response", dl.fetch_response_version,
                   "The files are Fetch response bodies of this version (no size or header)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (!*dump) print_config_warnings(common);
    if (*dump) return cmd_dump_log(dl);
    if (*conf) return cmd_conformance(common.client_properties(), conf_json);
    if (*m) return cmd_metadata(common, md);
    if (*o) return cmd_offsets(common, off);
    if (*c) return cmd_create_topic(common, ct);
    if (*d) return cmd_delete_topic(common, dt);
    if (*dre) return cmd_delete_records(common, dr);
    if (*cpa) return cmd_create_partitions(common, cp);
    if (*p) return cmd_produce(common, pr);
    if (*k) {
      if (sca.group) return cmd_consume_share(common, co, sca);
      if (co.group) return cmd_consume_group(common, co);
      if (co.topic.empty()) throw std::invalid_argument("consume needs -t TOPIC, or -G GROUP TOPIC...");
      if (!co.topics.empty()) throw std::invalid_argument("topics after the options need -G GROUP");
      return cmd_consume(common, co);
    }
    if (*gl) return cmd_groups_list(common, ga);
    if (*gd) return cmd_groups_describe(common, ga);
    if (*gr) return cmd_groups_reset_offsets(common, ga);
    if (*gdel) return cmd_groups_delete(common, dg);
    if (*gdo) return cmd_groups_delete_offsets(common, ga);
    if (*cl) return cmd_cluster(common, ca);
    if (*txl) return cmd_transactions_list(common, txa);
    if (*txd) return cmd_transactions_describe(common, txa);
    if (*txp) return cmd_transactions_describe_producers(common, txa);
    if (*sgl) return cmd_share_groups_list(common, sga);
    if (*sgd) return cmd_share_groups_describe(common, sga);
    if (*sgr) return cmd_share_groups_reset_offsets(common, sga);
    if (*cf) return cmd_configs(common, cfg);
    if (auto rc = acl_commands.run(common)) return *rc;
    if (*s) return cmd_stream(common, st);
    if (*l) return cmd_lag(common, lg);
    if (*rq) return cmd_read(common, rd);
    if (*r) {
      check_read_range(common, rr);
      return cmd_read_range(common, rr);
    }
  } catch (const std::exception& e) {
    // std::fprintf, not fmt::print: reporting must not throw when stderr
    // itself cannot be written (a full disk under a redirected log).
    std::fprintf(stderr, "kwire: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kwire::client {
struct ConsumerRecord;
}

namespace kwire::tools {

struct CommonOptions {
  std::string brokers;
  std::vector<std::string> properties;  // KEY=VALUE
  /// Client properties: -X values, with -b as bootstrap.servers. Throws on a bad KEY=VALUE.
  std::map<std::string, std::string> client_properties() const;
};

struct MetadataArgs {
  std::vector<std::string> topics;
  bool json = false;
};
struct OffsetsArgs {
  std::string topic;
  std::optional<std::int32_t> partition;
  std::optional<std::int64_t> timestamp;
  bool json = false;
};
struct CreateTopicArgs {
  std::string topic;
  std::int32_t partitions = 1;
  std::int16_t replication_factor = 1;
  std::vector<std::string> configs;
  bool if_not_exists = false;
};
struct DeleteTopicArgs {
  std::vector<std::string> topics;
};
struct DeleteRecordsArgs {
  std::string topic;
  std::vector<std::int32_t> partitions;  // empty: every partition
  std::int64_t before = 0;               // -1: up to the high watermark
};
struct CreatePartitionsArgs {
  std::string topic;
  std::int32_t count = 0;  // new total
};
struct ProduceArgs {
  std::string topic;
  std::optional<std::int32_t> partition;
  std::optional<std::string> key_delimiter;
  std::optional<std::string> compression;
  std::vector<std::string> headers;
  std::optional<std::string> acks;
  std::optional<std::string> transactional_id;
  std::optional<std::int64_t> records_per_transaction;
  /// How each line's value (and, with -K, key) is written: raw (the bytes as
  /// they are), avro or protobuf (the text is JSON, encoded; line_encoder.hpp).
  std::string value_format = "raw";
  std::optional<std::string> schema;           // avro: the writer's schema (JSON text or @FILE)
  std::optional<std::string> schema_registry;  // Confluent's wire format: the registry's URL
  std::vector<std::string> value_options;      // to_avro / to_protobuf options KEY=VALUE
  std::string key_format = "raw";
  std::optional<std::string> key_schema;
  std::vector<std::string> key_options;
};
struct ConsumeArgs {
  std::string topic;
  std::optional<std::string> group;  // -G: balanced consumer of group.id GROUP
  std::vector<std::string> topics;   // with -G: the topics (positional)
  std::vector<std::int32_t> partitions;
  std::string offset = "beginning";
  bool exit_at_end = false;
  std::optional<std::int64_t> count;
  bool json = false;
  std::optional<std::string> format;
  bool quiet = false;
  bool stats = false;
};
/// How `stream`, `read` and `read-range` write rows (RecordJsonWriter).
struct RecordOutputArgs {
  std::string value_format = "raw";                                // raw | json | avro
  std::optional<std::string> schema;                               // Spark DDL (json) or Avro JSON (avro)
  std::optional<std::string> schema_registry;                      // --value-format avro: the registry's URL
  std::vector<std::string> value_options;                          // --value-format avro: from_avro options KEY=VALUE
  std::string kafka_columns = "topic,partition,offset,timestamp";  // with --value-format json
  std::string binary = "text";                                     // text | base64: key, value and header values
  std::string time_zone = "UTC";                                   // timestamps' zone (Spark's session time zone)
  std::vector<std::string> sink_options;                           // --sink kafka: Spark's Kafka sink options KEY=VALUE
};
struct StreamArgs {
  std::vector<std::string> options;
  std::string checkpoint;
  std::string sink = "console";
  std::string trigger = "available-now";
  std::optional<std::int64_t> max_batches;
  bool json_progress = false;
  std::optional<std::string> prometheus;  // FILE rewritten atomically after each batch
  RecordOutputArgs output;
  bool plan_only = false;
  bool stats = false;  // a summary line on stderr at the end (batches, batch time, connections)
};
/// `kwire read`: a batch query (Spark's spark.read.format("kafka")).
struct ReadArgs {
  std::vector<std::string> options;
  std::string sink = "console";
  RecordOutputArgs output;
  bool plan_only = false;  // print the planned ranges as JSON, read nothing
};
struct ReadRangeArgs {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t from = 0;
  std::int64_t until = 0;
  std::string sink = "console";
  std::vector<std::string> options;
  RecordOutputArgs output;
};
struct LagArgs {
  std::string checkpoint;
  std::vector<std::string> options;
  bool json = false;
};

/// `s` as a JSON string literal (quoted and escaped).
std::string json_str(const std::string& s);
/// Write `out` to standard output as it is.
void write_stdout(const std::string& out);

/// Split "KEY=VALUE"; throws std::invalid_argument naming `what` when there is no '='.
std::pair<std::string, std::string> split_key_value(const std::string& kv, const char* what);

/// A schema option's text: ARG as it is, or the content of FILE for "@FILE".
/// Throws std::invalid_argument naming `option` when the file cannot be read.
std::string read_schema_arg(const std::string& arg, const char* option = "--schema");
/// from_avro / from_protobuf style options: each KEY=VALUE of `options`
/// (given with `option`, named in the error for one without '='), and
/// schema.registry.url = `registry` when given.
std::map<std::string, std::string> format_options(const std::vector<std::string>& options,
                                                  const std::optional<std::string>& registry, const char* option);

/// Parse a whole string as a decimal int64 (std::from_chars); throws
/// std::invalid_argument "invalid OPTION 'WHOLE': EXPECTED" otherwise.
std::int64_t parse_offset_number(const std::string& text, const std::string& option, const std::string& whole,
                                 const char* expected);
/// Print ClientConfig's warnings for the -X settings (unknown keys, SASL
/// settings without a SASL protocol) on stderr. Never throws for bad values.
void print_config_warnings(const CommonOptions& common);
/// Throws std::invalid_argument for a timestamp below 0 other than -1
/// (latest), -2 (earliest) and -3 (max-timestamp), ListOffsets' special values.
void check_timestamp(std::int64_t ts, const char* option);
/// read-range's checks before reading: from >= 0, until >= from, the partition
/// exists and until is at most its latest offset. Throws std::invalid_argument.
void check_read_range(const CommonOptions& common, const ReadRangeArgs& args);

int cmd_metadata(const CommonOptions&, const MetadataArgs&);
int cmd_offsets(const CommonOptions&, const OffsetsArgs&);
int cmd_create_topic(const CommonOptions&, const CreateTopicArgs&);
int cmd_delete_topic(const CommonOptions&, const DeleteTopicArgs&);
int cmd_delete_records(const CommonOptions&, const DeleteRecordsArgs&);
int cmd_create_partitions(const CommonOptions&, const CreatePartitionsArgs&);
int cmd_produce(const CommonOptions&, const ProduceArgs&);
int cmd_consume(const CommonOptions&, const ConsumeArgs&);
int cmd_stream(const CommonOptions&, const StreamArgs&);
int cmd_lag(const CommonOptions&, const LagArgs&);
int cmd_read_range(const CommonOptions&, const ReadRangeArgs&);
int cmd_read(const CommonOptions&, const ReadArgs&);

/// A record as --format prints it, and as --json prints it (one line each).
std::string format_record(const std::string& fmtstr, const client::ConsumerRecord& r);
/// A --format string parsed once: append() adds what format_record() returns.
class RecordFormat {
 public:
  explicit RecordFormat(const std::string& fmtstr);
  void append(std::string& out, const client::ConsumerRecord& r) const;

 private:
  struct Part {
    char field = 0;       // the letter after '%'; 0 for literal text
    std::string literal;  // field 0: the text, escapes resolved
  };
  std::vector<Part> parts_;
};
std::string record_json(const client::ConsumerRecord& r);

/// kwire consume -G GROUP TOPIC...: the balanced consumer (groups_cmd.cpp).
int cmd_consume_group(const CommonOptions& common, const ConsumeArgs& args);

struct GroupsArgs {
  std::string group;  // describe / reset-offsets
  bool json = false;
  std::vector<std::string> topics;  // reset-offsets: TOPIC or TOPIC:P[,P...] (repeatable)
  bool all_topics = false;          // reset-offsets: every topic the group committed
  bool to_earliest = false, to_latest = false;
  std::optional<std::int64_t> to_offset;
  std::optional<std::int64_t> to_timestamp;  // ms since the epoch
  bool dry_run = false;
};
int cmd_groups_list(const CommonOptions& common, const GroupsArgs& args);
int cmd_groups_describe(const CommonOptions& common, const GroupsArgs& args);
int cmd_groups_reset_offsets(const CommonOptions& common, const GroupsArgs& args);
/// groups delete-offsets GROUP --topic TOPIC[:P,...]: OffsetDelete.
int cmd_groups_delete_offsets(const CommonOptions& common, const GroupsArgs& args);

}  // namespace kwire::tools

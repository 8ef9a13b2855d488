#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kwire/source/kafka_sink.hpp"
#include "kwire/source/options.hpp"

using namespace kwire::source;
using Opts = std::map<std::string, std::string>;

namespace {

Opts base(Opts extra = {}) {
  Opts o{{"kafka.bootstrap.servers", "localhost:9092"}, {"subscribe", "t"}};
  for (auto& [k, v] : extra) o[k] = v;
  return o;
}

std::string error_of(const Opts& o, QueryMode mode = QueryMode::streaming) {
  try {
    parse_source_options(o, mode);
  } catch (const SourceOptionError& e) {
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_ERROR(opts, mode, substring)                                    \
  do {                                                                         \
    const std::string msg_ = error_of(opts, mode);                             \
    EXPECT_NE(msg_.find(substring), std::string::npos) << "message: " << msg_; \
  } while (0)

bool has_warning(const SourceOptions& s, const std::string& sub) {
  for (const auto& w : s.warnings) {
    if (w.find(sub) != std::string::npos) return true;
  }
  return false;
}

constexpr auto S = QueryMode::streaming;
constexpr auto B = QueryMode::batch;

}  // namespace

// ---- Strategy ----

TEST(SourceOptions, StrategyMissingOrDuplicated) {
  EXPECT_ERROR((Opts{{"kafka.bootstrap.servers", "x"}}), S,
               "One of the following options must be specified for Kafka source: subscribe, "
               "subscribepattern, assign. See the docs for more details.");
  EXPECT_ERROR(base({{"subscribePattern", "t.*"}}), S,
               "Only one of the following options can be specified for Kafka source: subscribe, "
               "subscribepattern, assign. See the docs for more details.");
  EXPECT_ERROR(base({{"assign", R"({"t":[0]})"}}), B, "Only one of the following options");
}

TEST(SourceOptions, Subscribe) {
  auto s = parse_source_options(base({{"subscribe", " a, ,b ,, c"}}), S);
  ASSERT_TRUE(std::holds_alternative<Subscribe>(s.strategy));
  EXPECT_EQ(std::get<Subscribe>(s.strategy).topics, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(s.description(), "KafkaV2[Subscribe[a, b, c]]");
  EXPECT_ERROR(base({{"subscribe", " , ,"}}), S,
               "No topics to subscribe to as specified value for option 'subscribe' is ' , ,'");
}

TEST(SourceOptions, SubscribePattern) {
  auto s = parse_source_options(Opts{{"kafka.bootstrap.servers", "x"}, {"SubscribePattern", "  topic-.*  "}}, S);
  ASSERT_TRUE(std::holds_alternative<SubscribePattern>(s.strategy));
  EXPECT_EQ(std::get<SubscribePattern>(s.strategy).pattern, "topic-.*");
  EXPECT_EQ(s.description(), "KafkaV2[SubscribePattern[topic-.*]]");
  EXPECT_ERROR((Opts{{"kafka.bootstrap.servers", "x"}, {"subscribePattern", "  "}}), S,
               "Pattern to subscribe is empty as specified value for option 'subscribePattern' is "
               "'  '");
}

TEST(SourceOptions, Assign) {
  auto s = parse_source_options(Opts{{"kafka.bootstrap.servers", "x"}, {"ASSIGN", R"({"b":[1,0],"a":[2]})"}}, S);
  ASSERT_TRUE(std::holds_alternative<Assign>(s.strategy));
  const auto& a = std::get<Assign>(s.strategy);
  EXPECT_EQ(a.partitions.at("b"), (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(s.description(), "KafkaV2[Assign[a-2, b-1, b-0]]");
  EXPECT_ERROR((Opts{{"kafka.bootstrap.servers", "x"}, {"assign", "t:0"}}), S,
               "No topicpartitions to assign as specified value for option 'assign' is 't:0'");
  EXPECT_ERROR((Opts{{"kafka.bootstrap.servers", "x"}, {"assign", R"({"t":{"0":1}})"}}), S,
               R"(Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {"t":{"0":1}})");
  EXPECT_ERROR((Opts{{"kafka.bootstrap.servers", "x"}, {"assign", R"({"t":["0"]})"}}), S,
               R"(Expected e.g. {"topicA":[0,1],"topicB":[0,1]})");
}

// ---- Required / forbidden Kafka options ----

TEST(SourceOptions, BootstrapServersRequired) {
  EXPECT_ERROR((Opts{{"subscribe", "t"}}), S,
               "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer");
  EXPECT_ERROR((Opts{{"subscribe", "t"}}), B, "Option 'kafka.bootstrap.servers' must be specified");
  // Case-insensitive key.
  EXPECT_NO_THROW(parse_source_options(Opts{{"subscribe", "t"}, {"KAFKA.Bootstrap.Servers", "h:1"}}, S));
}

TEST(SourceOptions, ForbiddenKafkaOptionsInSparkOrder) {
  EXPECT_ERROR(base({{"kafka.auto.offset.reset", "earliest"}}), S,
               "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
               "'startingoffsets' to 'earliest' or 'latest'");
  EXPECT_ERROR(base({{"kafka.key.deserializer", "x"}}), S,
               "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
               "arrays with ByteArrayDeserializer");
  EXPECT_ERROR(base({{"kafka.value.deserializer", "x"}}), S,
               "Kafka option 'value.deserializer' is not supported as values are deserialized as "
               "byte arrays with ByteArrayDeserializer");
  EXPECT_ERROR(base({{"kafka.enable.auto.commit", "true"}}), S, "Kafka option 'enable.auto.commit' is not supported");
  EXPECT_ERROR(base({{"kafka.interceptor.classes", "x"}}), S, "Kafka option 'interceptor.classes' is not supported");
  // Order: auto.offset.reset before the deserializers before the others.
  Opts all = base({{"kafka.interceptor.classes", "x"},
                   {"kafka.enable.auto.commit", "x"},
                   {"kafka.value.deserializer", "x"},
                   {"kafka.key.deserializer", "x"},
                   {"kafka.auto.offset.reset", "x"}});
  EXPECT_ERROR(all, S, "'auto.offset.reset'");
  all.erase("kafka.auto.offset.reset");
  EXPECT_ERROR(all, S, "'key.deserializer'");
  all.erase("kafka.key.deserializer");
  EXPECT_ERROR(all, S, "'value.deserializer'");
  all.erase("kafka.value.deserializer");
  EXPECT_ERROR(all, S, "'enable.auto.commit'");
  all.erase("kafka.enable.auto.commit");
  EXPECT_ERROR(all, S, "'interceptor.classes'");
  // Checked after the strategy and before bootstrap servers.
  EXPECT_ERROR((Opts{{"kafka.auto.offset.reset", "x"}}), S, "One of the following options");
  EXPECT_ERROR((Opts{{"subscribe", "t"}, {"kafka.auto.offset.reset", "x"}}), S, "'auto.offset.reset' is not supported");
  // Checked after minPartitions.
  EXPECT_ERROR(base({{"kafka.auto.offset.reset", "x"}, {"minPartitions", "0"}}), S, "minPartitions must be positive");
}

TEST(SourceOptions, UnprefixedKafkaClientOptionRejectedWithHint) {
  EXPECT_ERROR(base({{"security.protocol", "SSL"}}), S,
               "Option 'security.protocol' is a Kafka client option; pass it as "
               "'kafka.security.protocol'");
  for (const char* name : {"bootstrap.servers", "sasl.mechanism", "sasl.jaas.config", "isolation.level", "group.id",
                           "client.id", "ssl.truststore.location", "fetch.max.bytes", "max.partition.fetch.bytes",
                           "session.timeout.ms", "ssl.endpoint.identification.algorithm"}) {
    EXPECT_ERROR(base({{name, "v"}}), S,
                 std::string("Option '") + name + "' is a Kafka client option; pass it as 'kafka." + name + "'");
  }
  // Original case kept in the hint.
  EXPECT_ERROR(base({{"Isolation.Level", "read_committed"}}), B,
               "Option 'Isolation.Level' is a Kafka client option; pass it as 'kafka.Isolation.Level'");
  // The user forgot the prefix on bootstrap.servers: the hint beats "must be specified".
  EXPECT_ERROR((Opts{{"subscribe", "t"}, {"bootstrap.servers", "h:1"}}), S, "pass it as 'kafka.bootstrap.servers'");
  // Options Spark refuses anyway get Spark's refusal.
  EXPECT_ERROR(base({{"auto.offset.reset", "earliest"}}), S, "Kafka option 'auto.offset.reset' is not supported");
  // Unknown non-Kafka options are ignored, as Spark does.
  EXPECT_NO_THROW(parse_source_options(base({{"someRandomOption", "1"}, {"topic", "x"}}), S));
  EXPECT_TRUE(is_kafka_client_option("SASL.MECHANISM"));
  EXPECT_FALSE(is_kafka_client_option("fetchOffset.numRetries"));
  EXPECT_FALSE(is_kafka_client_option("kafkaConsumer.pollTimeoutMs"));
}

TEST(SourceOptions, KafkaParamsKeepOriginalCaseOfName) {
  auto s = parse_source_options(base({{"kafka.Security.Protocol", "SASL_SSL"},
                                      {"KAFKA.sasl.mechanism", "PLAIN"},
                                      {"kafka.isolation.level", "read_committed"}}),
                                S);
  EXPECT_EQ(s.kafka_params.at("bootstrap.servers"), "localhost:9092");
  EXPECT_EQ(s.kafka_params.at("Security.Protocol"), "SASL_SSL");
  EXPECT_EQ(s.kafka_params.at("sasl.mechanism"), "PLAIN");
  EXPECT_EQ(s.kafka_params.at("isolation.level"), "read_committed");
  EXPECT_EQ(s.kafka_params.size(), 4u);
}

TEST(SourceOptions, GroupIdWarnings) {
  auto s = parse_source_options(base({{"kafka.group.id", "g"}, {"groupIdPrefix", "p"}}), S);
  EXPECT_TRUE(s.group_id_set());
  EXPECT_TRUE(has_warning(s,
                          "Kafka option 'kafka.group.id' has been set on this query, it is not "
                          "recommended to set this option."));
  EXPECT_TRUE(has_warning(s,
                          "Option groupIdPrefix will be ignored as option kafka.group.id has "
                          "been set."));
  auto plain = parse_source_options(base(), S);
  EXPECT_FALSE(plain.group_id_set());
  EXPECT_TRUE(plain.warnings.empty());
  EXPECT_EQ(plain.group_id_prefix, "spark-kafka-source");
  EXPECT_EQ(parse_source_options(base(), B).group_id_prefix, "spark-kafka-relation");
  EXPECT_EQ(parse_source_options(base({{"groupidprefix", "mine"}}), S).group_id_prefix, "mine");
}

TEST(SourceOptions, CommitOffsetsToGroupNeedsAGroupId) {
  EXPECT_FALSE(parse_source_options(base(), S).commit_offsets_to_group);
  auto on = parse_source_options(base({{"kafka.group.id", "lag-watch"}, {"commitOffsetsToGroup", "true"}}), S);
  EXPECT_TRUE(on.commit_offsets_to_group);
  EXPECT_THROW(parse_source_options(base({{"commitOffsetsToGroup", "true"}}), S), SourceOptionError);
  EXPECT_THROW(parse_source_options(base({{"kafka.group.id", "g"}, {"commitOffsetsToGroup", "yes"}}), S),
               SourceOptionError);
  EXPECT_FALSE(parse_source_options(base({{"commitOffsetsToGroup", "false"}}), S).commit_offsets_to_group);
}

TEST(SourceOptions, CaseInsensitiveDuplicateKeys) {
  EXPECT_NO_THROW(parse_source_options(base({{"SUBSCRIBE", "t"}}), S));
  EXPECT_ERROR(base({{"SUBSCRIBE", "u"}}), S, "more than once");
}

// ---- Partition options ----

TEST(SourceOptions, MinPartitionsAndMaxRecordsPerPartition) {
  EXPECT_ERROR(base({{"minPartitions", "0"}}), S, "minPartitions must be positive");
  EXPECT_ERROR(base({{"minPartitions", "-3"}}), B, "minPartitions must be positive");
  EXPECT_ERROR(base({{"minPartitions", "abc"}}), S, "minPartitions");
  EXPECT_ERROR(base({{"minPartitions", "3000000000"}}), S, "minPartitions");
  EXPECT_ERROR(base({{"maxRecordsPerPartition", "0"}}), S, "maxRecordsPerPartition must be positive");
  EXPECT_ERROR(base({{"maxrecordsperpartition", "-1"}}), B, "maxRecordsPerPartition must be positive");
  auto s = parse_source_options(base({{"minpartitions", "8"}, {"maxRecordsPerPartition", "5000000000"}}), S);
  EXPECT_EQ(s.min_partitions, 8);
  EXPECT_EQ(s.max_records_per_partition, 5000000000LL);
}

// ---- Rate options ----

TEST(SourceOptions, RateOptionsStreaming) {
  auto s = parse_source_options(
      base({{"maxOffsetsPerTrigger", "100"}, {"minOffsetsPerTrigger", "10"}, {"maxTriggerDelay", "30s"}}), S);
  EXPECT_EQ(s.max_offsets_per_trigger, 100);
  EXPECT_EQ(s.min_offsets_per_trigger, 10);
  EXPECT_EQ(s.max_trigger_delay_ms, 30000);
  auto d = parse_source_options(base(), S);
  EXPECT_FALSE(d.max_offsets_per_trigger);
  EXPECT_FALSE(d.min_offsets_per_trigger);
  EXPECT_EQ(d.max_trigger_delay_ms, 15 * 60 * 1000);
  EXPECT_ERROR(base({{"maxOffsetsPerTrigger", "10"}, {"minOffsetsPerTrigger", "11"}}), S,
               "The value of minOffsetPerTrigger(11) is higher than the maxOffsetsPerTrigger(10).");
  EXPECT_ERROR(base({{"maxOffsetsPerTrigger", "10"}, {"minOffsetsPerTrigger", "11"}}), B,
               "The value of minOffsetPerTrigger(11) is higher than the maxOffsetsPerTrigger(10).");
  EXPECT_NO_THROW(parse_source_options(base({{"maxOffsetsPerTrigger", "10"}, {"minOffsetsPerTrigger", "10"}}), S));
  EXPECT_ERROR(base({{"maxOffsetsPerTrigger", "ten"}}), S, "maxOffsetsPerTrigger");
  EXPECT_ERROR(base({{"maxTriggerDelay", "soon"}}), S, "Invalid duration 'soon'");
}

TEST(SourceOptions, RateOptionsIgnoredWithWarningInBatch) {
  auto s = parse_source_options(
      base({{"maxOffsetsPerTrigger", "100"}, {"minOffsetsPerTrigger", "10"}, {"maxTriggerDelay", "5m"}}), B);
  EXPECT_TRUE(has_warning(s, "maxOffsetsPerTrigger option ignored in batch queries"));
  EXPECT_TRUE(has_warning(s, "minOffsetsPerTrigger option ignored in batch queries"));
  EXPECT_TRUE(has_warning(s, "maxTriggerDelay option ignored in batch queries"));
  EXPECT_FALSE(s.max_offsets_per_trigger);
  EXPECT_FALSE(s.min_offsets_per_trigger);
}

// ---- Starting / ending offsets ----

TEST(SourceOptions, StartingDefaultsAndPrecedence) {
  EXPECT_TRUE(std::holds_alternative<LatestOffsets>(parse_source_options(base(), S).starting));
  EXPECT_TRUE(std::holds_alternative<EarliestOffsets>(parse_source_options(base(), B).starting));
  EXPECT_TRUE(std::holds_alternative<LatestOffsets>(parse_source_options(base(), B).ending));
  EXPECT_TRUE(std::holds_alternative<EarliestOffsets>(
      parse_source_options(base({{"startingOffsets", " EARLIEST "}}), S).starting));

  auto so = parse_source_options(base({{"startingOffsets", R"({"t":{"0":23,"1":-1,"2":-2}})"}}), S);
  ASSERT_TRUE(std::holds_alternative<SpecificOffsets>(so.starting));
  EXPECT_EQ(std::get<SpecificOffsets>(so.starting).offsets.at("t").at(1), kLatestOffset);

  Opts all = base({{"startingOffsets", "earliest"},
                   {"startingOffsetsByTimestamp", R"({"t":{"0":1000}})"},
                   {"startingTimestamp", " 5000 "}});
  auto g = parse_source_options(all, S);
  ASSERT_TRUE(std::holds_alternative<GlobalTimestamp>(g.starting));
  EXPECT_EQ(std::get<GlobalTimestamp>(g.starting).timestamp_ms, 5000);
  all.erase("startingTimestamp");
  auto t = parse_source_options(all, S);
  ASSERT_TRUE(std::holds_alternative<SpecificTimestamps>(t.starting));
  EXPECT_EQ(std::get<SpecificTimestamps>(t.starting).timestamps.at("t").at(0), 1000);
}

TEST(SourceOptions, StartingParseErrors) {
  EXPECT_ERROR(base({{"startingTimestamp", " 12x "}}), S, "Expected a single long value, got 12x");
  EXPECT_ERROR(base({{"startingOffsets", "{bad"}}), S,
               R"(Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {bad)");
  EXPECT_ERROR(base({{"startingOffsets", "newest"}}), S, "Expected e.g.");
  EXPECT_ERROR(base({{"startingOffsetsByTimestamp", "[1]"}}), S,
               "Expected e.g. {\"topicA\": {\"0\": 123456789, \"1\": 123456789},\n\"topicB\": "
               "{\"0\": 123456789, \"1\": 123456789}}, got [1]");
}

TEST(SourceOptions, TimestampStrategy) {
  EXPECT_EQ(parse_source_options(base(), S).timestamp_strategy, TimestampStrategy::error);
  EXPECT_EQ(parse_source_options(base({{"startingOffsetsByTimestampStrategy", "LATEST"}}), S).timestamp_strategy,
            TimestampStrategy::latest);
  EXPECT_EQ(parse_source_options(base({{"startingOffsetsByTimestampStrategy", "Error"}}), B).timestamp_strategy,
            TimestampStrategy::error);
  EXPECT_ERROR(base({{"startingOffsetsByTimestampStrategy", "earliest"}}), S,
               "'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', got 'earliest'");
}

TEST(SourceOptions, EndingOptionsRejectedInStreaming) {
  EXPECT_ERROR(base({{"endingOffsets", "latest"}}), S, "ending offset not valid in streaming queries");
  EXPECT_ERROR(base({{"endingOffsetsByTimestamp", R"({"t":{"0":1}})"}}), S,
               "ending timestamp not valid in streaming queries");
  // Checked before anything else.
  EXPECT_ERROR((Opts{{"endingOffsets", "latest"}}), S, "ending offset not valid in streaming queries");
  auto s = parse_source_options(base({{"endingTimestamp", "5"}}), S);
  EXPECT_TRUE(has_warning(s, "endingTimestamp option ignored in streaming queries"));
}

TEST(SourceOptions, BatchRejectsLatestStartAndEarliestEnd) {
  EXPECT_ERROR(base({{"startingOffsets", "latest"}}), B, "starting offset can't be latest for batch queries on Kafka");
  EXPECT_ERROR(base({{"startingOffsets", R"({"t":{"0":5,"1":-1}})"}}), B,
               "startingOffsets for t-1 can't be latest for batch queries on Kafka");
  EXPECT_ERROR(base({{"endingOffsets", "earliest"}}), B, "ending offset can't be earliest for batch queries on Kafka");
  EXPECT_ERROR(base({{"endingOffsets", R"({"t":{"0":-2,"1":-1}})"}}), B,
               "ending offset for t-0 can't be earliest for batch queries on Kafka");
  // Batch offset checks run before the general ones (Spark's order).
  EXPECT_ERROR((Opts{{"startingOffsets", "latest"}}), B, "starting offset can't be latest");
  // Allowed: -2 start, -1 end, timestamps.
  auto ok =
      parse_source_options(base({{"startingOffsets", R"({"t":{"0":-2}})"}, {"endingOffsets", R"({"t":{"0":-1}})"}}), B);
  EXPECT_TRUE(std::holds_alternative<SpecificOffsets>(ok.ending));
  EXPECT_NO_THROW(parse_source_options(base({{"startingTimestamp", "1"}, {"endingTimestamp", "2"}}), B));
}

TEST(SourceOptions, BatchEndingPrecedence) {
  auto s = parse_source_options(
      base({{"endingOffsets", "latest"}, {"endingOffsetsByTimestamp", R"({"t":{"0":7}})"}, {"endingTimestamp", "9"}}),
      B);
  ASSERT_TRUE(std::holds_alternative<GlobalTimestamp>(s.ending));
  EXPECT_EQ(std::get<GlobalTimestamp>(s.ending).timestamp_ms, 9);
  EXPECT_ERROR(base({{"endingTimestamp", "x"}}), B, "Expected a single long value, got x");
}

TEST(SourceOptions, BatchStartEndConsistency) {
  EXPECT_ERROR(base({{"startingOffsets", R"({"t":{"0":1}})"}, {"endingOffsets", R"({"t":{"1":5}})"}}), B,
               "[MISMATCHED_TOPIC_PARTITIONS_BETWEEN_START_OFFSET_AND_END_OFFSET] The specified "
               "start offset and end offset should have the same topic-partitions. Topic-partitions "
               "for start offset: Set(t-0), topic-partitions for end offset: Set(t-1).");
  EXPECT_ERROR(base({{"startingOffsets", R"({"t":{"0":9}})"}, {"endingOffsets", R"({"t":{"0":5}})"}}), B,
               "[UNRESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The specified start offset 9 is "
               "greater than the end offset 5 for topic t partition 0.");
  EXPECT_NO_THROW(parse_source_options(
      base({{"startingOffsets", R"({"t":{"0":-2}})"}, {"endingOffsets", R"({"t":{"0":-1}})"}}), B));
}

// ---- Other options ----

TEST(SourceOptions, DefaultsAndScalars) {
  auto d = parse_source_options(base(), S);
  EXPECT_TRUE(d.fail_on_data_loss);
  EXPECT_EQ(d.fetch_offset_num_retries, 3);
  EXPECT_EQ(d.fetch_offset_retry_interval_ms, 1000);
  EXPECT_EQ(d.poll_timeout_ms, 120000);
  EXPECT_FALSE(d.include_headers);
  EXPECT_FALSE(d.min_partitions);
  EXPECT_FALSE(d.max_records_per_partition);

  auto s = parse_source_options(base({{"failOnDataLoss", "FALSE"},
                                      {"includeHeaders", "True"},
                                      {"fetchOffset.numRetries", "5"},
                                      {"fetchOffset.retryIntervalMs", "20"},
                                      {"kafkaConsumer.pollTimeoutMs", "512"}}),
                                S);
  EXPECT_FALSE(s.fail_on_data_loss);
  EXPECT_TRUE(s.include_headers);
  EXPECT_EQ(s.fetch_offset_num_retries, 5);
  EXPECT_EQ(s.fetch_offset_retry_interval_ms, 20);
  EXPECT_EQ(s.poll_timeout_ms, 512);
  EXPECT_ERROR(base({{"failOnDataLoss", "yes"}}), S, "'failOnDataLoss' must be 'true' or 'false'");
  EXPECT_ERROR(base({{"includeHeaders", "1"}}), S, "'includeHeaders' must be 'true' or 'false'");
}

TEST(ParseDuration, SparkStyleStrings) {
  EXPECT_EQ(parse_duration_ms("15m"), 900000);
  EXPECT_EQ(parse_duration_ms("10 seconds"), 10000);
  EXPECT_EQ(parse_duration_ms("500ms"), 500);
  EXPECT_EQ(parse_duration_ms("1h"), 3600000);
  EXPECT_EQ(parse_duration_ms("2d"), 172800000);
  EXPECT_EQ(parse_duration_ms("250"), 250);
  EXPECT_EQ(parse_duration_ms(" 30S "), 30000);
  EXPECT_EQ(parse_duration_ms("3 min"), 180000);
  EXPECT_EQ(parse_duration_ms("1 minute"), 60000);
  EXPECT_EQ(parse_duration_ms("2 hours"), 7200000);
  EXPECT_EQ(parse_duration_ms("1 day"), 86400000);
  EXPECT_EQ(parse_duration_ms("2500us"), 2);
  EXPECT_EQ(parse_duration_ms("0"), 0);
  for (const char* bad :
       {"", "m", "-5s", "1.5s", "10 parsecs", "5 s s", "99999999999999999999", "9223372036854775807d"}) {
    EXPECT_THROW(parse_duration_ms(bad), SourceOptionError) << bad;
  }
}

TEST(SourceOptions, BytesEstimateWindowLength) {
  std::map<std::string, std::string> o = {{"kafka.bootstrap.servers", "h:1"}, {"subscribe", "t"}};
  EXPECT_EQ(parse_source_options(o, QueryMode::streaming).bytes_estimate_window_ms, 300000);
  o["bytesEstimateWindowLength"] = "10s";
  EXPECT_EQ(parse_source_options(o, QueryMode::streaming).bytes_estimate_window_ms, 10000);
  o["bytesEstimateWindowLength"] = "0";
  EXPECT_THROW(parse_source_options(o, QueryMode::streaming), SourceOptionError);
}

// ---- Values Spark has no meaning for ----

TEST(SourceOptions, SpecificOffsetsOnlyAllowSparksNegativeMarkers) {
  EXPECT_ERROR(base({{"startingOffsets", R"({"t":{"0":-1,"1":-3}})"}}), S,
               "startingOffsets for t-1 has invalid offset -3: an offset must be >= 0, -2 (earliest) or -1 (latest)");
  EXPECT_ERROR(base({{"startingOffsets", R"({"t":{"0":-4}})"}}), B, "startingOffsets for t-0 has invalid offset -4");
  EXPECT_ERROR(base({{"endingOffsets", R"({"t":{"0":-5}})"}, {"startingOffsets", R"({"t":{"0":0}})"}}), B,
               "endingOffsets for t-0 has invalid offset -5: an offset must be >= 0, or -1 (latest)");
  // -2 stays Spark's message for endingOffsets.
  EXPECT_ERROR(base({{"endingOffsets", R"({"t":{"0":-2}})"}, {"startingOffsets", R"({"t":{"0":0}})"}}), B,
               "ending offset for t-0 can't be earliest for batch queries on Kafka");
  auto s = parse_source_options(base({{"startingOffsets", R"({"t":{"0":-1,"1":-2,"2":7}})"}}), S);
  EXPECT_EQ(std::get<SpecificOffsets>(s.starting).offsets,
            (PartitionOffsets{{"t", {{0, kLatestOffset}, {1, kEarliestOffset}, {2, 7}}}}));
  auto b =
      parse_source_options(base({{"startingOffsets", R"({"t":{"0":-2}})"}, {"endingOffsets", R"({"t":{"0":-1}})"}}), B);
  EXPECT_EQ(std::get<SpecificOffsets>(b.ending).offsets, (PartitionOffsets{{"t", {{0, kLatestOffset}}}}));
}

TEST(SourceOptions, AssignRejectsNegativePartitions) {
  Opts o{{"kafka.bootstrap.servers", "x"}, {"assign", R"({"t":[0,-1]})"}};
  EXPECT_ERROR(o, S, "Option 'assign' has a negative partition -1 for topic 't'");
  EXPECT_ERROR(o, B, "Option 'assign' has a negative partition -1 for topic 't'");
}

TEST(SourceOptions, RateLimitsRetriesAndTimeoutsMustBeInRange) {
  EXPECT_ERROR(base({{"maxOffsetsPerTrigger", "0"}}), S, "maxOffsetsPerTrigger must be positive");
  EXPECT_ERROR(base({{"maxOffsetsPerTrigger", "-5"}}), S, "maxOffsetsPerTrigger must be positive");
  EXPECT_ERROR(base({{"minOffsetsPerTrigger", "0"}}), S, "minOffsetsPerTrigger must be positive");
  EXPECT_ERROR(base({{"minOffsetsPerTrigger", "-1"}}), S, "minOffsetsPerTrigger must be positive");
  EXPECT_ERROR(base({{"fetchOffset.numRetries", "-1"}}), S, "fetchOffset.numRetries must be non-negative");
  EXPECT_ERROR(base({{"fetchOffset.retryIntervalMs", "-1"}}), S, "fetchOffset.retryIntervalMs must be non-negative");
  EXPECT_ERROR(base({{"kafkaConsumer.pollTimeoutMs", "-1"}}), S, "kafkaConsumer.pollTimeoutMs must be non-negative");
  EXPECT_ERROR(base({{"kafkaConsumer.pollTimeoutMs", "-1"}}), B, "kafkaConsumer.pollTimeoutMs must be non-negative");
  auto s = parse_source_options(base({{"maxOffsetsPerTrigger", "1"},
                                      {"minOffsetsPerTrigger", "1"},
                                      {"fetchOffset.numRetries", "0"},
                                      {"kafkaConsumer.pollTimeoutMs", "0"}}),
                                S);
  EXPECT_EQ(s.max_offsets_per_trigger, std::optional<std::int64_t>(1));
  EXPECT_EQ(s.min_offsets_per_trigger, std::optional<std::int64_t>(1));
  EXPECT_EQ(s.fetch_offset_num_retries, 0);
  EXPECT_EQ(s.poll_timeout_ms, 0);
}

// ---- the Kafka sink's options (KafkaSourceProvider's sink checks, Spark's texts)

namespace {
std::string sink_error(const Opts& o) {
  try {
    KafkaSinkOptions::parse(o);
  } catch (const SinkOptionError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(KafkaSinkOptions, SparksChecksAndTexts) {
  EXPECT_EQ(sink_error({{"topic", "t"}}),
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer");
  EXPECT_EQ(sink_error({{"kafka.bootstrap.servers", "b:9092"}, {"kafka.key.serializer", "x"}}),
            "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer.");
  EXPECT_EQ(sink_error({{"kafka.bootstrap.servers", "b:9092"}, {"kafka.value.serializer", "x"}}),
            "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer.");
  EXPECT_EQ(sink_error({{"kafka.bootstrap.servers", "b:9092"}, {"exactlyOnce", "yes"}}),
            "Option 'exactlyOnce' must be true or false, not 'yes'");
  EXPECT_NE(
      sink_error({{"kafka.bootstrap.servers", "b:9092"}, {"kafka.transactional.id", "x"}}).find("exactlyOnce=true"),
      std::string::npos);
}

TEST(KafkaSinkOptions, ProducerPropertiesTopicAndModeAreParsedCaseInsensitively) {
  auto o = KafkaSinkOptions::parse({{"KAFKA.bootstrap.servers", "b:9092"},
                                    {"kafka.linger.ms", "5"},
                                    {"Topic", "out"},
                                    {"EXACTLYONCE", "TRUE"},
                                    {"kafka.transactional.id", "mine"},
                                    {"checkpointLocation", "/x"}});
  EXPECT_EQ(o.producer_properties,
            (Opts{{"bootstrap.servers", "b:9092"}, {"linger.ms", "5"}, {"transactional.id", "mine"}}));
  EXPECT_EQ(o.topic, std::optional<std::string>("out"));
  EXPECT_TRUE(o.exactly_once);
  EXPECT_FALSE(KafkaSinkOptions::parse({{"kafka.bootstrap.servers", "b"}}).exactly_once);
  EXPECT_FALSE(KafkaSinkOptions::parse({{"kafka.bootstrap.servers", "b"}}).topic.has_value());
}

TEST(KafkaSinkOptions, ExactlyOnceRefusesABatchWriteBeforeConnecting) {
  KafkaSink sink(Opts{{"kafka.bootstrap.servers", "127.0.0.1:1"}, {"topic", "t"}, {"exactlyOnce", "true"}});
  try {
    sink.begin_batch(0);
    FAIL() << "begin_batch without a streaming query";
  } catch (const SinkOptionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "exactlyOnce=true needs a streaming query with a checkpoint: a batch write cannot be exactly once");
  }
  EXPECT_EQ(sink.description(), "KafkaSink[topic=t, exactlyOnce]");
}

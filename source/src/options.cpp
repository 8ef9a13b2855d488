#include "kwire/source/options.hpp"

#include "kwire/client/config.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <simdjson.h>

namespace kwire::source {
namespace {

// Lower-case option keys (Spark's KafkaSourceProvider constants).
constexpr std::string_view kAssign = "assign";
constexpr std::string_view kSubscribe = "subscribe";
constexpr std::string_view kSubscribePattern = "subscribepattern";
constexpr std::string_view kStartingOffsets = "startingoffsets";
constexpr std::string_view kEndingOffsets = "endingoffsets";
constexpr std::string_view kStartingOffsetsByTimestamp = "startingoffsetsbytimestamp";
constexpr std::string_view kEndingOffsetsByTimestamp = "endingoffsetsbytimestamp";
constexpr std::string_view kStartingTimestamp = "startingtimestamp";
constexpr std::string_view kEndingTimestamp = "endingtimestamp";
constexpr std::string_view kTimestampStrategy = "startingoffsetsbytimestampstrategy";
constexpr std::string_view kFailOnDataLoss = "failondataloss";
constexpr std::string_view kMinPartitions = "minpartitions";
constexpr std::string_view kMaxRecordsPerPartition = "maxrecordsperpartition";
constexpr std::string_view kMaxOffsetsPerTrigger = "maxoffsetspertrigger";
constexpr std::string_view kMinOffsetsPerTrigger = "minoffsetspertrigger";
constexpr std::string_view kMaxTriggerDelay = "maxtriggerdelay";
constexpr std::string_view kBytesEstimateWindowLength = "bytesestimatewindowlength";
constexpr std::string_view kFetchOffsetNumRetries = "fetchoffset.numretries";
constexpr std::string_view kFetchOffsetRetryIntervalMs = "fetchoffset.retryintervalms";
constexpr std::string_view kPollTimeoutMs = "kafkaconsumer.polltimeoutms";
constexpr std::string_view kGroupIdPrefix = "groupidprefix";
constexpr std::string_view kIncludeHeaders = "includeheaders";
constexpr std::string_view kKafkaPrefix = "kafka.";

constexpr std::string_view kCustomGroupIdWarning =
    "Kafka option 'kafka.group.id' has been set on this query, it is not recommended to set this "
    "option. This option is unsafe to use since multiple concurrent queries or sources using the "
    "same group id will interfere with each other as they are part of the same consumer group. "
    "Restarted queries may also suffer interference from the previous run having the same group "
    "id. The user should have only one query per group id, and/or set the option "
    "'kafka.session.timeout.ms' to be very small so that the Kafka consumers from the previous "
    "query are marked dead by the Kafka group coordinator before the restarted query starts "
    "running.";

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Java's String.trim: strips every char <= ' ' at both ends.
std::string_view java_trim(std::string_view s) {
  while (!s.empty() && static_cast<unsigned char>(s.front()) <= ' ') s.remove_prefix(1);
  while (!s.empty() && static_cast<unsigned char>(s.back()) <= ' ') s.remove_suffix(1);
  return s;
}

// Java's Long.parseLong / Integer.parseInt: optional sign, then decimal digits.
template <typename Int>
std::optional<Int> parse_java_integer(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  // Parse with the sign attached so the minimum value is accepted.
  std::string text = negative ? "-" : "";
  text.append(s);
  Int value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string tp_name(const std::string& topic, std::int32_t partition) { return fmt::format("{}-{}", topic, partition); }

std::string set_of(const std::map<std::string, std::map<std::int32_t, std::int64_t>>& m) {
  std::vector<std::string> names;
  for (const auto& [topic, parts] : m) {
    for (const auto& [p, v] : parts) {
      (void)v;
      names.push_back(tp_name(topic, p));
    }
  }
  return fmt::format("Set({})", fmt::join(names, ", "));
}

// Case-insensitive view of the user's options.
class Params {
 public:
  explicit Params(const std::map<std::string, std::string>& options) {
    for (const auto& [key, value] : options) {
      std::string lower = to_lower(key);
      auto [it, inserted] = entries_.try_emplace(lower, Entry{key, value});
      if (!inserted && it->second.value != value) {
        throw SourceOptionError(
            fmt::format("Option '{}' is given more than once with different values ('{}' as '{}' and '{}' as "
                        "'{}'); option names are case-insensitive",
                        key, it->second.value, it->second.original_key, value, key));
      }
    }
  }

  bool contains(std::string_view lower_key) const { return entries_.find(std::string(lower_key)) != entries_.end(); }
  std::optional<std::string> get(std::string_view lower_key) const {
    auto it = entries_.find(std::string(lower_key));
    if (it == entries_.end()) return std::nullopt;
    return it->second.value;
  }

  struct Entry {
    std::string original_key;
    std::string value;
  };
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  std::map<std::string, Entry> entries_;
};

template <typename Int>
Int parse_integer_option(std::string_view name, const std::string& value) {
  auto v = parse_java_integer<Int>(value);
  if (!v) {
    throw SourceOptionError(
        fmt::format("Option '{}' must be {}, got '{}'", name, sizeof(Int) == 4 ? "an int" : "a long", value));
  }
  return *v;
}

bool parse_bool_option(std::string_view name, const std::string& value) {
  const std::string lower = to_lower(value);
  if (lower == "true") return true;
  if (lower == "false") return false;
  throw SourceOptionError(fmt::format("Option '{}' must be 'true' or 'false', got '{}'", name, value));
}

// ---- JSON helpers ----

std::map<std::string, std::vector<std::int32_t>> parse_assign_json(const std::string& value) {
  auto fail = [&]() -> SourceOptionError {
    return SourceOptionError(fmt::format(R"(Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {})", value));
  };
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object obj;
  if (parser.parse(value.data(), value.size()).get(doc) || doc.get_object().get(obj)) throw fail();
  std::map<std::string, std::vector<std::int32_t>> out;
  for (auto field : obj) {
    simdjson::dom::array arr;
    if (field.value.get_array().get(arr)) throw fail();
    std::vector<std::int32_t> parts;
    for (auto el : arr) {
      std::int64_t p = 0;
      if (el.type() != simdjson::dom::element_type::INT64 || el.get_int64().get(p) || p < INT32_MIN || p > INT32_MAX) {
        throw fail();
      }
      if (p < 0) {
        throw SourceOptionError(
            fmt::format("Option 'assign' has a negative partition {} for topic '{}'", p, std::string(field.key)));
      }
      parts.push_back(static_cast<std::int32_t>(p));
    }
    out[std::string(field.key)] = std::move(parts);
  }
  return out;
}

PartitionOffsets parse_offsets_option(const std::string& json) {
  try {
    return checkpoint::offsets_from_json(json);
  } catch (const checkpoint::CheckpointError& e) {
    throw SourceOptionError(e.what());
  }
}

std::map<std::string, std::map<std::int32_t, std::int64_t>> parse_timestamps_option(const std::string& json) {
  try {
    return checkpoint::offsets_from_json(json);
  } catch (const checkpoint::CheckpointError&) {
    throw SourceOptionError(
        fmt::format("Expected e.g. {{\"topicA\": {{\"0\": 123456789, \"1\": 123456789}},\n"
                    "\"topicB\": {{\"0\": 123456789, \"1\": 123456789}}}}, got {}",
                    json));
  }
}

TimestampStrategy parse_timestamp_strategy(const Params& params) {
  auto v = params.get(kTimestampStrategy);
  if (!v) return TimestampStrategy::error;
  const std::string lower = to_lower(*v);
  if (lower == "error") return TimestampStrategy::error;
  if (lower == "latest") return TimestampStrategy::latest;
  throw SourceOptionError(
      fmt::format("Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', got '{}'", *v));
}

// Spark's getKafkaOffsetRangeLimit: global timestamp > per-partition timestamps > offsets.
OffsetSpec offset_range_limit(const Params& params, std::string_view global_ts_key, std::string_view by_ts_key,
                              std::string_view offsets_key, OffsetSpec default_spec) {
  parse_timestamp_strategy(params);  // validated whenever a limit is computed
  if (auto v = params.get(global_ts_key)) {
    const std::string ts(java_trim(*v));
    auto parsed = parse_java_integer<std::int64_t>(ts);
    if (!parsed) throw SourceOptionError(fmt::format("Expected a single long value, got {}", ts));
    return GlobalTimestamp{*parsed};
  }
  if (auto v = params.get(by_ts_key)) {
    return SpecificTimestamps{parse_timestamps_option(std::string(java_trim(*v)))};
  }
  if (auto v = params.get(offsets_key)) {
    const std::string trimmed(java_trim(*v));
    const std::string lower = to_lower(trimmed);
    if (lower == "latest") return LatestOffsets{};
    if (lower == "earliest") return EarliestOffsets{};
    return SpecificOffsets{parse_offsets_option(trimmed)};
  }
  return default_spec;
}

// Specific offsets may only be real offsets (>= 0) or the markers Spark
// knows: -2 (earliest, starting offsets only) and -1 (latest).
void check_specific_offsets(const OffsetSpec& spec, std::string_view option, bool allow_earliest) {
  const auto* s = std::get_if<SpecificOffsets>(&spec);
  if (!s) return;
  for (const auto& [topic, parts] : s->offsets) {
    for (const auto& [p, off] : parts) {
      if (off >= 0 || off == kLatestOffset || (allow_earliest && off == kEarliestOffset)) continue;
      throw SourceOptionError(fmt::format("{} for {} has invalid offset {}: an offset must be >= 0, {}", option,
                                          tp_name(topic, p), off,
                                          allow_earliest ? "-2 (earliest) or -1 (latest)" : "or -1 (latest)"));
    }
  }
}

// ---- Known Kafka client options (for the missing "kafka." prefix rule) ----

constexpr std::array<std::string_view, 5> kForbiddenKafkaOptions = {
    "auto.offset.reset", "key.deserializer", "value.deserializer", "enable.auto.commit", "interceptor.classes"};

std::string forbidden_message(std::string_view name) {
  if (name == "auto.offset.reset") {
    return "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
           "'startingoffsets' to 'earliest' or 'latest' to specify where to start. Structured "
           "Streaming manages which offsets are consumed internally, rather than relying on the "
           "kafkaConsumer to do it. This will ensure that no data is missed when new "
           "topics/partitions are dynamically subscribed. Note that 'startingoffsets' only "
           "applies when a new Streaming query is started, and that resuming will always pick up "
           "from where the query left off. See the docs for more details.";
  }
  if (name == "key.deserializer") {
    return "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
           "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
           "the keys.";
  }
  if (name == "value.deserializer") {
    return "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
           "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
           "the values.";
  }
  return fmt::format("Kafka option '{}' is not supported", name);
}

// ---- Validation (Spark's KafkaSourceProvider order) ----

void validate_general(const Params& params, SourceOptions& out) {
  constexpr std::array<std::string_view, 3> kStrategyKeys = {kSubscribe, kSubscribePattern, kAssign};
  int strategies = 0;
  for (auto k : kStrategyKeys) strategies += params.contains(k) ? 1 : 0;
  if (strategies == 0) {
    throw SourceOptionError(
        "One of the following options must be specified for Kafka source: subscribe, "
        "subscribepattern, assign. See the docs for more details.");
  }
  if (strategies > 1) {
    throw SourceOptionError(
        "Only one of the following options can be specified for Kafka source: subscribe, "
        "subscribepattern, assign. See the docs for more details.");
  }

  if (auto v = params.get(kAssign)) {
    if (java_trim(*v).empty() || java_trim(*v).front() != '{') {
      throw SourceOptionError(
          fmt::format("No topicpartitions to assign as specified value for option 'assign' is '{}'", *v));
    }
  } else if (auto v = params.get(kSubscribe)) {
    bool any = false;
    std::string_view rest = *v;
    for (;;) {
      const auto comma = rest.find(',');
      if (!java_trim(rest.substr(0, comma)).empty()) any = true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (!any) {
      throw SourceOptionError(
          fmt::format("No topics to subscribe to as specified value for option 'subscribe' is '{}'", *v));
    }
  } else if (auto v = params.get(kSubscribePattern)) {
    if (java_trim(*v).empty()) {
      throw SourceOptionError(
          fmt::format("Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{}'", *v));
    }
  }

  if (auto v = params.get(kMinPartitions)) {
    const auto p = parse_integer_option<std::int32_t>("minPartitions", *v);
    if (p <= 0) throw SourceOptionError("minPartitions must be positive");
    out.min_partitions = p;
  }
  if (auto v = params.get(kMaxRecordsPerPartition)) {
    const auto p = parse_integer_option<std::int64_t>("maxRecordsPerPartition", *v);
    if (p <= 0) throw SourceOptionError("maxRecordsPerPartition must be positive");
    out.max_records_per_partition = p;
  }

  if (params.contains("kafka.group.id")) {
    out.warnings.emplace_back(kCustomGroupIdWarning);
    if (params.contains(kGroupIdPrefix)) {
      out.warnings.emplace_back("Option groupIdPrefix will be ignored as option kafka.group.id has been set.");
    }
  }

  for (auto name : kForbiddenKafkaOptions) {
    if (params.contains(std::string(kKafkaPrefix) + std::string(name))) {
      throw SourceOptionError(forbidden_message(name));
    }
  }

  // kwire rule: a Kafka client option without its "kafka." prefix is a mistake.
  for (const auto& [lower, entry] : params.entries()) {
    if (!is_kafka_client_option(lower)) continue;
    for (auto name : kForbiddenKafkaOptions) {
      if (lower == name) throw SourceOptionError(forbidden_message(name));
    }
    throw SourceOptionError(fmt::format("Option '{}' is a Kafka client option; pass it as 'kafka.{}'",
                                        entry.original_key, entry.original_key));
  }

  if (!params.contains("kafka.bootstrap.servers")) {
    throw SourceOptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer");
  }

  const auto min = params.get(kMinOffsetsPerTrigger);
  const auto max = params.get(kMaxOffsetsPerTrigger);
  if (min && max) {
    const auto min_v = parse_integer_option<std::int64_t>("minOffsetsPerTrigger", *min);
    const auto max_v = parse_integer_option<std::int64_t>("maxOffsetsPerTrigger", *max);
    if (min_v > max_v) {
      throw SourceOptionError(fmt::format(
          "The value of minOffsetPerTrigger({}) is higher than the maxOffsetsPerTrigger({}).", min_v, max_v));
    }
  }
}

void check_batch_offsets(const Params& params, SourceOptions& out) {
  out.starting =
      offset_range_limit(params, kStartingTimestamp, kStartingOffsetsByTimestamp, kStartingOffsets, EarliestOffsets{});
  if (std::holds_alternative<LatestOffsets>(out.starting)) {
    throw SourceOptionError("starting offset can't be latest for batch queries on Kafka");
  }
  if (auto* s = std::get_if<SpecificOffsets>(&out.starting)) {
    for (const auto& [topic, parts] : s->offsets) {
      for (const auto& [p, off] : parts) {
        if (off == kLatestOffset) {
          throw SourceOptionError(
              fmt::format("startingOffsets for {} can't be latest for batch queries on Kafka", tp_name(topic, p)));
        }
      }
    }
  }
  check_specific_offsets(out.starting, "startingOffsets", true);
  out.ending = offset_range_limit(params, kEndingTimestamp, kEndingOffsetsByTimestamp, kEndingOffsets, LatestOffsets{});
  if (std::holds_alternative<EarliestOffsets>(out.ending)) {
    throw SourceOptionError("ending offset can't be earliest for batch queries on Kafka");
  }
  if (auto* e = std::get_if<SpecificOffsets>(&out.ending)) {
    for (const auto& [topic, parts] : e->offsets) {
      for (const auto& [p, off] : parts) {
        if (off == kEarliestOffset) {
          throw SourceOptionError(
              fmt::format("ending offset for {} can't be earliest for batch queries on Kafka", tp_name(topic, p)));
        }
      }
    }
  }
  check_specific_offsets(out.ending, "endingOffsets", false);
}

template <typename Map>
bool same_partitions(const Map& a, const Map& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [topic, parts] : a) {
    auto it = b.find(topic);
    if (it == b.end() || it->second.size() != parts.size()) return false;
    for (const auto& [p, v] : parts) {
      (void)v;
      if (!it->second.count(p)) return false;
    }
  }
  return true;
}

// Spark's checkOffsetLimitValidity (batch).
void check_offset_limit_validity(const SourceOptions& out) {
  const auto mismatch = [](const auto& start, const auto& end) {
    return SourceOptionError(
        fmt::format("[MISMATCHED_TOPIC_PARTITIONS_BETWEEN_START_OFFSET_AND_END_OFFSET] The specified start "
                    "offset and end offset should have the same topic-partitions. Topic-partitions for start "
                    "offset: {}, topic-partitions for end offset: {}.",
                    set_of(start), set_of(end)));
  };
  const auto* s = std::get_if<SpecificOffsets>(&out.starting);
  const auto* e = std::get_if<SpecificOffsets>(&out.ending);
  if (s && e) {
    if (!same_partitions(s->offsets, e->offsets)) throw mismatch(s->offsets, e->offsets);
    for (const auto& [topic, parts] : s->offsets) {
      for (const auto& [p, start] : parts) {
        const std::int64_t end = e->offsets.at(topic).at(p);
        if (start > end && start >= 0 && end >= 0) {
          throw SourceOptionError(
              fmt::format("[UNRESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The specified start offset {} is "
                          "greater than the end offset {} for topic {} partition {}.",
                          start, end, topic, p));
        }
      }
    }
  }
  const auto* st = std::get_if<SpecificTimestamps>(&out.starting);
  const auto* et = std::get_if<SpecificTimestamps>(&out.ending);
  if (st && et && !same_partitions(st->timestamps, et->timestamps)) {
    throw mismatch(st->timestamps, et->timestamps);
  }
}

}  // namespace

bool is_kafka_client_option(std::string_view name) {
  const std::string lower = to_lower(name);
  const std::string_view v = lower;
  if (v.starts_with("ssl.") || v.starts_with("sasl.") || v.starts_with("security.")) return true;
  return client::is_java_consumer_property(v);
}

bool SourceOptions::group_id_set() const {
  for (const auto& [key, value] : kafka_params) {
    (void)value;
    if (to_lower(key) == "group.id") return true;
  }
  return false;
}

std::string SourceOptions::description() const {
  std::string inner;
  if (const auto* a = std::get_if<Assign>(&strategy)) {
    std::vector<std::string> tps;
    for (const auto& [topic, parts] : a->partitions) {
      for (auto p : parts) tps.push_back(tp_name(topic, p));
    }
    inner = fmt::format("Assign[{}]", fmt::join(tps, ", "));
  } else if (const auto* s = std::get_if<Subscribe>(&strategy)) {
    inner = fmt::format("Subscribe[{}]", fmt::join(s->topics, ", "));
  } else if (const auto* p = std::get_if<SubscribePattern>(&strategy)) {
    inner = fmt::format("SubscribePattern[{}]", p->pattern);
  }
  return fmt::format("KafkaV2[{}]", inner);
}

std::int64_t parse_duration_ms(std::string_view text) {
  const std::string lower = to_lower(java_trim(text));
  auto fail = [&]() -> SourceOptionError {
    return SourceOptionError(
        fmt::format("Invalid duration '{}': expected a non-negative whole number with an optional unit "
                    "(us, ms, s, m or min, h, d; or words like '10 seconds'); a plain number is milliseconds",
                    text));
  };
  std::size_t i = 0;
  while (i < lower.size() && lower[i] >= '0' && lower[i] <= '9') ++i;
  if (i == 0) throw fail();
  std::int64_t amount = 0;
  auto [ptr, ec] = std::from_chars(lower.data(), lower.data() + i, amount);
  if (ec != std::errc() || ptr != lower.data() + i) throw fail();
  std::string_view unit = java_trim(std::string_view(lower).substr(i));

  struct Unit {
    std::string_view name;
    std::int64_t mult;  // milliseconds per unit; 0 = microseconds
  };
  static constexpr std::array<Unit, 29> kUnits = {{
      {"", 1},
      {"ms", 1},
      {"msec", 1},
      {"msecs", 1},
      {"millisecond", 1},
      {"milliseconds", 1},
      {"us", 0},
      {"usec", 0},
      {"usecs", 0},
      {"microsecond", 0},
      {"microseconds", 0},
      {"s", 1000},
      {"sec", 1000},
      {"secs", 1000},
      {"second", 1000},
      {"seconds", 1000},
      {"m", 60000},
      {"min", 60000},
      {"mins", 60000},
      {"minute", 60000},
      {"minutes", 60000},
      {"h", 3600000},
      {"hr", 3600000},
      {"hrs", 3600000},
      {"hour", 3600000},
      {"hours", 3600000},
      {"d", 86400000},
      {"day", 86400000},
      {"days", 86400000},
  }};
  std::optional<std::int64_t> mult;
  for (const auto& u : kUnits) {
    if (u.name == unit) mult = u.mult;
  }
  if (!mult) throw fail();
  if (*mult == 0) return amount / 1000;
  std::int64_t ms = 0;
  if (__builtin_mul_overflow(amount, *mult, &ms)) throw fail();
  return ms;
}

SourceOptions parse_source_options(const std::map<std::string, std::string>& options, QueryMode mode) {
  const Params params(options);
  SourceOptions out;
  out.mode = mode;

  if (mode == QueryMode::streaming) {
    if (params.contains(kEndingOffsets)) {
      throw SourceOptionError("ending offset not valid in streaming queries");
    }
    if (params.contains(kEndingOffsetsByTimestamp)) {
      throw SourceOptionError("ending timestamp not valid in streaming queries");
    }
    validate_general(params, out);
    if (params.contains(kEndingTimestamp)) {
      out.warnings.emplace_back("endingTimestamp option ignored in streaming queries");
    }
    out.starting =
        offset_range_limit(params, kStartingTimestamp, kStartingOffsetsByTimestamp, kStartingOffsets, LatestOffsets{});
    check_specific_offsets(out.starting, "startingOffsets", true);
    out.ending = LatestOffsets{};
    // Rate options only matter to streaming queries (batch mode warns and ignores them).
    if (auto v = params.get(kMaxOffsetsPerTrigger)) {
      out.max_offsets_per_trigger = parse_integer_option<std::int64_t>("maxOffsetsPerTrigger", *v);
      if (*out.max_offsets_per_trigger <= 0) throw SourceOptionError("maxOffsetsPerTrigger must be positive");
    }
    if (auto v = params.get(kMinOffsetsPerTrigger)) {
      out.min_offsets_per_trigger = parse_integer_option<std::int64_t>("minOffsetsPerTrigger", *v);
      if (*out.min_offsets_per_trigger <= 0) throw SourceOptionError("minOffsetsPerTrigger must be positive");
    }
    if (auto v = params.get(kMaxTriggerDelay)) out.max_trigger_delay_ms = parse_duration_ms(*v);
    if (auto v = params.get(kBytesEstimateWindowLength)) {
      out.bytes_estimate_window_ms = parse_duration_ms(*v);
      if (out.bytes_estimate_window_ms <= 0) throw SourceOptionError("bytesEstimateWindowLength must be positive");
    }
    out.group_id_prefix = params.get(kGroupIdPrefix).value_or("spark-kafka-source");
  } else {
    check_batch_offsets(params, out);
    validate_general(params, out);
    if (params.contains(kMaxOffsetsPerTrigger)) {
      out.warnings.emplace_back("maxOffsetsPerTrigger option ignored in batch queries");
    }
    if (params.contains(kMinOffsetsPerTrigger)) {
      out.warnings.emplace_back("minOffsetsPerTrigger option ignored in batch queries");
    }
    if (params.contains(kMaxTriggerDelay)) {
      out.warnings.emplace_back("maxTriggerDelay option ignored in batch queries");
    }
    check_offset_limit_validity(out);
    out.group_id_prefix = params.get(kGroupIdPrefix).value_or("spark-kafka-relation");
  }
  out.timestamp_strategy = parse_timestamp_strategy(params);

  // Strategy.
  if (auto v = params.get(kAssign)) {
    out.strategy = Assign{parse_assign_json(*v)};
  } else if (auto v = params.get(kSubscribe)) {
    Subscribe s;
    std::string_view rest = *v;
    for (;;) {
      const auto comma = rest.find(',');
      const auto topic = java_trim(rest.substr(0, comma));
      if (!topic.empty()) s.topics.emplace_back(topic);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    out.strategy = std::move(s);
  } else if (auto v = params.get(kSubscribePattern)) {
    out.strategy = SubscribePattern{std::string(java_trim(*v))};
  }

  // Remaining typed options.
  if (auto v = params.get(kFailOnDataLoss)) out.fail_on_data_loss = parse_bool_option("failOnDataLoss", *v);
  if (auto v = params.get(kIncludeHeaders)) out.include_headers = parse_bool_option("includeHeaders", *v);
  if (auto v = params.get("commitoffsetstogroup")) {
    out.commit_offsets_to_group = parse_bool_option("commitOffsetsToGroup", *v);
    if (out.commit_offsets_to_group && !params.contains("kafka.group.id"))
      throw SourceOptionError("Option 'commitOffsetsToGroup' needs 'kafka.group.id': the group to commit to");
  }
  if (auto v = params.get(kFetchOffsetNumRetries)) {
    out.fetch_offset_num_retries = parse_integer_option<std::int32_t>("fetchOffset.numRetries", *v);
    if (out.fetch_offset_num_retries < 0) throw SourceOptionError("fetchOffset.numRetries must be non-negative");
  }
  if (auto v = params.get(kFetchOffsetRetryIntervalMs)) {
    out.fetch_offset_retry_interval_ms = parse_integer_option<std::int64_t>("fetchOffset.retryIntervalMs", *v);
    if (out.fetch_offset_retry_interval_ms < 0) {
      throw SourceOptionError("fetchOffset.retryIntervalMs must be non-negative");
    }
  }
  if (auto v = params.get(kPollTimeoutMs)) {
    out.poll_timeout_ms = parse_integer_option<std::int64_t>("kafkaConsumer.pollTimeoutMs", *v);
    if (out.poll_timeout_ms < 0) throw SourceOptionError("kafkaConsumer.pollTimeoutMs must be non-negative");
  }

  // Kafka client parameters: "kafka.X" -> X, X in its original case.
  for (const auto& [lower, entry] : params.entries()) {
    if (!lower.starts_with(kKafkaPrefix)) continue;
    std::string name = entry.original_key.substr(kKafkaPrefix.size());
    if (name.empty()) {
      out.warnings.emplace_back("Option 'kafka.' has no Kafka option name and is ignored");
      continue;
    }
    out.kafka_params[std::move(name)] = entry.value;
  }
  return out;
}

}  // namespace kwire::source

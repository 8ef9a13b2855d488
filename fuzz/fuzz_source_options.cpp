// parse_source_options() in streaming and batch mode with an option map built
// from the input: names from a list of the ones the parser knows (in random
// case, with or without the kafka. prefix) or raw text, values raw text or
// drawn from typical ones. Only SourceOptionError may escape.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "fuzz_common.hpp"
#include "kwire/source/options.hpp"

namespace {

const char* const kNames[] = {"subscribe",
                              "subscribePattern",
                              "assign",
                              "startingOffsets",
                              "endingOffsets",
                              "startingOffsetsByTimestamp",
                              "endingOffsetsByTimestamp",
                              "startingTimestamp",
                              "endingTimestamp",
                              "startingOffsetsByTimestampStrategy",
                              "maxOffsetsPerTrigger",
                              "minOffsetsPerTrigger",
                              "maxTriggerDelay",
                              "bytesEstimateWindowLength",
                              "minPartitions",
                              "maxRecordsPerPartition",
                              "failOnDataLoss",
                              "fetchOffset.numRetries",
                              "fetchOffset.retryIntervalMs",
                              "kafkaConsumer.pollTimeoutMs",
                              "includeHeaders",
                              "groupIdPrefix",
                              "kafka.bootstrap.servers",
                              "kafka.group.id",
                              "kafka.auto.offset.reset",
                              "kafka.enable.auto.commit",
                              "kafka.key.deserializer",
                              "kafka.value.deserializer",
                              "kafka.isolation.level",
                              "bootstrap.servers",
                              "group.id",
                              "security.protocol",
                              "sasl.mechanism",
                              "ssl.truststore.location",
                              "kafka.interceptor.classes",
                              "kafka.",
                              "kafka.X"};

const char* const kValues[] = {"t",
                               "a,b, c",
                               ",,",
                               "earliest",
                               "latest",
                               "{\"t\":[0,1]}",
                               "{\"t\":{\"0\":-2,\"1\":-1}}",
                               "{\"t\":{\"0\":1700000000000}}",
                               "{\"t\":{\"0\":5}}",
                               "{}",
                               "[]",
                               "{\"t\":[]}",
                               "1700000000000",
                               "-1",
                               "0",
                               "1",
                               "9223372036854775807",
                               "9223372036854775808",
                               "-9223372036854775808",
                               "2147483648",
                               "true",
                               "false",
                               "15m",
                               "10 seconds",
                               "500ms",
                               "1h",
                               "2d",
                               "250us",
                               " 3 min ",
                               "1.5s",
                               "error",
                               "latest",
                               "t.*",
                               "(",
                               "[a-",
                               "PLAINTEXT",
                               "read_committed",
                               ""};

std::string random_case(std::string s, std::uint8_t bits) {
  for (std::size_t i = 0; i < s.size() && bits; ++i, bits >>= 1)
    if (bits & 1) s[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[i])));
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kwire::source;
  kwire::fuzz::Input in(data, size);
  std::map<std::string, std::string> options;
  const int count = in.u8() % 8;
  for (int i = 0; i < count && !in.empty(); ++i) {
    const std::uint8_t how = in.u8();
    std::string name = (how & 0x01) ? in.short_string(40) : random_case(kNames[in.u8() % std::size(kNames)], in.u8());
    std::string value = (how & 0x02) ? in.short_string(80) : std::string(kValues[in.u8() % std::size(kValues)]);
    options[std::move(name)] = std::move(value);
  }
  for (QueryMode mode : {QueryMode::streaming, QueryMode::batch}) {
    try {
      const SourceOptions parsed = parse_source_options(options, mode);
      (void)parsed.description();
      (void)parsed.group_id_set();
    } catch (const SourceOptionError&) {
    }
  }
  const std::string text = in.short_string(40);
  try {
    const std::int64_t ms = parse_duration_ms(text);
    KWIRE_FUZZ_CHECK(ms >= 0);
  } catch (const SourceOptionError&) {
  }
  (void)is_kafka_client_option(text);
  return 0;
}

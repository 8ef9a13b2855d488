// ClientConfig::from_properties: which keys are used, which are known Java /
// librdkafka keys kwire accepts without using, which are unknown (reported in
// warnings by name, never by value), and settings that have no effect.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kwire/client/config.hpp"
#include "kwire/client/errors.hpp"

using namespace kwire::client;

namespace {

ClientConfig parse(std::map<std::string, std::string> props) {
  props.emplace("bootstrap.servers", "broker.example:9092");
  return ClientConfig::from_properties(props);
}

}  // namespace

TEST(ClientConfigTest, UnknownKeyIsReportedByNameWithoutItsValue) {
  auto c = parse({{"foo.bar", "s3cret-value"}, {"request.timeout.ms", "1000"}});
  EXPECT_EQ(c.unknown_keys, std::vector<std::string>{"foo.bar"});
  EXPECT_EQ(c.ignored_keys, std::vector<std::string>{"foo.bar"});
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0], "The configuration 'foo.bar' was supplied but isn't a known config");
  EXPECT_EQ(c.warnings[0].find("s3cret"), std::string::npos);
}

TEST(ClientConfigTest, MisspelledKnownKeyIsUnknown) {
  auto c = parse({{"request.timout.ms", "1000"}, {"ssl.ca.locaton", "/x.pem"}});
  EXPECT_EQ(c.unknown_keys, (std::vector<std::string>{"request.timout.ms", "ssl.ca.locaton"}));
  EXPECT_EQ(c.warnings.size(), 2u);
}

TEST(ClientConfigTest, KnownButUnusedKeysAreIgnoredWithoutWarning) {
  auto c = parse({{"group.id", "g"},
                  {"client.id", "me"},
                  {"debug", "all"},
                  {"enable.auto.commit", "false"},
                  {"auto.offset.reset", "earliest"},
                  {"key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer"},
                  {"session.timeout.ms", "45000"},
                  {"partitioner.ignore.keys", "false"},
                  {"metrics.num.samples", "2"}});
  EXPECT_TRUE(c.unknown_keys.empty());
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.group_id, "g");
  EXPECT_EQ(c.client_id, "me");
  EXPECT_EQ(c.ignored_keys.size(), 7u);  // group.id and client.id are kept
  EXPECT_TRUE(is_known_client_config("enable.auto.commit"));
  EXPECT_FALSE(is_known_client_config("foo.bar"));
}

TEST(ClientConfigTest, SaslSettingsWithoutSaslProtocolWarn) {
  auto c = parse({{"sasl.mechanism", "PLAIN"}, {"sasl.username", "alice"}, {"sasl.password", "pw-secret"}});
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0],
            "SASL settings (sasl.mechanism, sasl.password, sasl.username) are ignored: security.protocol is "
            "PLAINTEXT; set it to SASL_PLAINTEXT or SASL_SSL to authenticate");
  EXPECT_EQ(c.warnings[0].find("pw-secret"), std::string::npos);

  auto ssl = parse({{"security.protocol", "SSL"}, {"sasl.mechanism", "PLAIN"}});
  ASSERT_EQ(ssl.warnings.size(), 1u);
  EXPECT_NE(ssl.warnings[0].find("security.protocol is SSL"), std::string::npos);

  auto sasl = parse({{"security.protocol", "SASL_SSL"}, {"sasl.mechanism", "PLAIN"}, {"sasl.username", "a"}});
  EXPECT_TRUE(sasl.warnings.empty());
}

TEST(ClientConfigTest, MetadataRecoveryDefaultsAreJavasSinceKafka4) {
  auto c = parse({});
  EXPECT_EQ(c.metadata_recovery_strategy, MetadataRecoveryStrategy::rebootstrap);
  EXPECT_EQ(c.metadata_recovery_rebootstrap_trigger_ms, 300000);
}

// Both socket buffers are left to the kernel unless set (librdkafka's and
// franz-go's defaults, not Java's 65536 and 131072); -1 asks for that
// explicitly, and a size is taken under either spelling.
TEST(ClientConfigTest, SocketBuffersDefaultToTheKernelsOwnSizing) {
  const auto d = parse({});
  EXPECT_EQ(d.receive_buffer_bytes, -1);
  EXPECT_EQ(d.send_buffer_bytes, -1);
  const auto java = parse({{"send.buffer.bytes", "131072"}, {"receive.buffer.bytes", "65536"}});
  EXPECT_EQ(java.send_buffer_bytes, 131072);
  EXPECT_EQ(java.receive_buffer_bytes, 65536);
  const auto rdk = parse({{"socket.send.buffer.bytes", "1048576"}});
  EXPECT_EQ(rdk.send_buffer_bytes, 1048576);
  EXPECT_TRUE(rdk.warnings.empty());
  EXPECT_THROW(parse({{"send.buffer.bytes", "-2"}}), ConfigError);
}

TEST(ClientConfigTest, MetadataRecoveryStrategyIsCaseInsensitive) {
  EXPECT_EQ(parse({{"metadata.recovery.strategy", "NONE"}}).metadata_recovery_strategy, MetadataRecoveryStrategy::none);
  EXPECT_EQ(parse({{"metadata.recovery.strategy", "ReBootstrap"}}).metadata_recovery_strategy,
            MetadataRecoveryStrategy::rebootstrap);
  auto c = parse({{"metadata.recovery.strategy", "none"}, {"metadata.recovery.rebootstrap.trigger.ms", "0"}});
  EXPECT_EQ(c.metadata_recovery_rebootstrap_trigger_ms, 0);
  EXPECT_TRUE(c.ignored_keys.empty());
  EXPECT_EQ(
      parse({{"metadata.recovery.rebootstrap.trigger.ms", "9000000000"}}).metadata_recovery_rebootstrap_trigger_ms,
      9000000000);
}

TEST(ClientConfigTest, BadMetadataRecoveryValuesNameTheKeyAndWhatIsAllowed) {
  try {
    parse({{"metadata.recovery.strategy", "sometimes"}});
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("metadata.recovery.strategy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("none or rebootstrap"), std::string::npos) << e.what();
  }
  for (const char* bad : {"-1", "soon", ""}) {
    try {
      parse({{"metadata.recovery.rebootstrap.trigger.ms", bad}});
      FAIL() << "accepted " << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("metadata.recovery.rebootstrap.trigger.ms"), std::string::npos) << e.what();
    }
  }
}

// metadata.recovery.strategy against the real broker: once the broker's
// metadata has arrived the client asks the brokers it names, not
// bootstrap.servers. The client is bootstrapped through a forwarder that then
// goes away; with either strategy the next Metadata, Produce and Fetch go to
// the broker's own address, with no rebootstrap and no warning. (A change of
// cluster behind bootstrap.servers needs a second broker:
// scripts/rebootstrap-check runs that.)
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../tcp_forwarder.hpp"
#include "common.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"

using kwire::client::KafkaClient;
using kwire::client::NewTopic;
using kwire::client::Producer;
using kwire::client::ProducerMessage;
using kwire::client::TopicPartition;
using kwire_test::bootstrap;
using kwire_test::split_host_port;
using kwire_test::TcpForwarder;
using kwire_test::unique_topic;

TEST(Rebootstrap, KnownBrokersAreAskedAfterTheBootstrapAddressIsGone) {
  const auto [host, port] = split_host_port(bootstrap());
  ASSERT_EQ(host, "127.0.0.1") << "the forwarder listens on 127.0.0.1 only";
  const auto topic = unique_topic("rebootstrap");
  {
    KafkaClient admin({{"bootstrap.servers", bootstrap()}});
    admin.create_topics({NewTopic{topic, 1, 1, {}}});
  }
  for (const std::string strategy : {"rebootstrap", "none"}) {
    SCOPED_TRACE(strategy);
    auto forwarder = std::make_unique<TcpForwarder>(static_cast<std::uint16_t>(port));
    const std::map<std::string, std::string> props{{"bootstrap.servers", forwarder->address()},
                                                   {"metadata.recovery.strategy", strategy},
                                                   {"enable.idempotence", "false"},
                                                   {"linger.ms", "0"}};
    KafkaClient client(props);
    Producer producer(props);
    const auto first = client.metadata(std::vector<std::string>{topic});
    ASSERT_TRUE(first.cluster_id.has_value());
    ProducerMessage m;
    m.topic = topic;
    m.partition = 0;
    m.value = kwire::protocol::Bytes{'a'};
    producer.send(m);
    producer.flush();
    const int through_forwarder = forwarder->accepted();
    EXPECT_GE(through_forwarder, 2);  // one bootstrap connection per client

    forwarder.reset();  // the bootstrap address refuses connections from now on
    testing::internal::CaptureStderr();
    client.metadata(std::vector<std::string>{topic});  // the open connection (or a known broker)
    producer.send(m);
    producer.flush();
    const TopicPartition tp{topic, 0};
    const auto offsets = client.list_offsets({{tp, -1}});  // latest
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(offsets.at(tp).offset, strategy == "rebootstrap" ? 2 : 4);
    EXPECT_EQ(client.cached_metadata().cluster_id, first.cluster_id);
    EXPECT_EQ(client.connection_stats().rebootstraps, 0u);
    EXPECT_EQ(err.find("WARN"), std::string::npos) << err;
  }
}

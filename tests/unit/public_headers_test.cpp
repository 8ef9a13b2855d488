// The embedder's headers (consumer, producer, Fetcher, the streaming and batch queries)
// must not pull in Boost.Asio: only connection.hpp, the low-level one, does.
#include <gtest/gtest.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/fetcher.hpp"
#include "kwire/client/group.hpp"
#include "kwire/client/group_admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/arrow.hpp"
#include "kwire/source/batch.hpp"
#include "kwire/source/range_reader.hpp"
#include "kwire/source/stream.hpp"

// Every Boost.Asio header includes boost/asio/detail/config.hpp.
#ifdef BOOST_ASIO_DETAIL_CONFIG_HPP
constexpr bool kAsioIncluded = true;
#else
constexpr bool kAsioIncluded = false;
#endif

TEST(PublicHeaders, ConsumerProducerAndStreamHeadersDoNotIncludeAsio) { EXPECT_FALSE(kAsioIncluded); }

// The client's one back-off rule (KIP-580): exponential, jittered, capped.
#include <gtest/gtest.h>

#include "../../client/src/backoff.hpp"
#include "kwire/client/config.hpp"

using kwire::client::retry_backoff;
using std::chrono::milliseconds;

TEST(RetryBackoff, DoublesFromTheFirstRetryWithoutJitterAtTheMiddleDraw) {
  // random01 = 0.5 gives the factor 1.0.
  EXPECT_EQ(retry_backoff(100, 1000, 0, 0.5), milliseconds(100));
  EXPECT_EQ(retry_backoff(100, 1000, 1, 0.5), milliseconds(200));
  EXPECT_EQ(retry_backoff(100, 1000, 2, 0.5), milliseconds(400));
  EXPECT_EQ(retry_backoff(100, 1000, 3, 0.5), milliseconds(800));
  EXPECT_EQ(retry_backoff(100, 1000, 4, 0.5), milliseconds(1000));  // capped
  EXPECT_EQ(retry_backoff(100, 1000, 1000, 0.5), milliseconds(1000));
}

TEST(RetryBackoff, JitterIsTwentyPercentEitherWay) {
  EXPECT_EQ(retry_backoff(100, 1000, 0, 0.0), milliseconds(80));
  EXPECT_EQ(retry_backoff(100, 1000, 0, 0.999999), milliseconds(119));
  EXPECT_EQ(retry_backoff(100, 1000, 3, 0.999999), milliseconds(959));
  // Out-of-range draws are clamped, not trusted.
  EXPECT_EQ(retry_backoff(100, 1000, 0, -5.0), milliseconds(80));
}

TEST(RetryBackoff, MaxBelowInitialIsAConstantWait) {
  EXPECT_EQ(retry_backoff(500, 200, 0, 0.0), milliseconds(200));
  EXPECT_EQ(retry_backoff(500, 200, 7, 0.5), milliseconds(200));
  EXPECT_EQ(retry_backoff(0, 1000, 5, 0.5), milliseconds(0));
}

TEST(RetryBackoff, ConfigDrawStaysInsideTheBand) {
  kwire::client::ClientConfig c;
  c.retry_backoff_ms = 100;
  c.retry_backoff_max_ms = 1000;
  for (int retry = 0; retry < 8; ++retry) {
    const double middle = std::min(100.0 * (1 << retry), 1000.0);
    for (int i = 0; i < 50; ++i) {
      const auto ms = retry_backoff(c, retry).count();
      EXPECT_GE(ms, static_cast<long>(std::min(middle * 0.8, 1000.0)) - 1) << retry;
      EXPECT_LE(ms, 1000) << retry;
      EXPECT_LE(ms, static_cast<long>(middle * 1.2)) << retry;
    }
  }
}

TEST(RetryBackoff, MaxIsReadFromTheJavaName) {
  auto c = kwire::client::ClientConfig::from_properties(
      {{"bootstrap.servers", "127.0.0.1:1"}, {"retry.backoff.ms", "50"}, {"retry.backoff.max.ms", "400"}});
  EXPECT_EQ(c.retry_backoff_ms, 50);
  EXPECT_EQ(c.retry_backoff_max_ms, 400);
  EXPECT_EQ(kwire::client::ClientConfig{}.retry_backoff_max_ms, 1000);
}

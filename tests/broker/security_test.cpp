// TLS and SASL against the broker's --secure listeners (scripts/kafka start
// --secure writes their ports and CA to secure.env; KWIRE_SECURE_ENV names it).
// Skipped when KWIRE_SECURE_ENV is not set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/sasl.hpp"

namespace kwire_test {
namespace {

using kwire::client::AuthenticationError;
using kwire::client::KafkaClient;
using kwire::client::TlsError;

class SecurityTest : public SecureBrokerTest {
 protected:
  std::map<std::string, std::string> props(const std::string& protocol, const std::string& mechanism,
                                           const std::string& password = "") const {
    std::map<std::string, std::string> p{{"security.protocol", protocol},
                                         {"ssl.ca.location", env_.at("KWIRE_SECURE_CA")},
                                         {"request.timeout.ms", "10000"},
                                         {"default.api.timeout.ms", "10000"},
                                         {"retries", "0"}};
    if (!mechanism.empty()) {
      p["sasl.mechanism"] = mechanism;
      p["sasl.username"] = env_.at("KWIRE_SECURE_USER");
      p["sasl.password"] = password.empty() ? env_.at("KWIRE_SECURE_PASSWORD") : password;
    }
    return p;
  }
  // Produce two lines and read them back with the CLI over one listener.
  void cli_round_trip(const std::string& bootstrap_addr, const std::map<std::string, std::string>& p) {
    auto topic = unique_topic("sec");
    create_topic(topic, 1);
    std::vector<std::string> prod = {"produce", "-b", bootstrap_addr, "-t", topic};
    auto x = as_args(p);
    prod.insert(prod.end(), x.begin(), x.end());
    auto r = run_kwire(prod, "first\nsecond\n", 60);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    std::vector<std::string> cons = {"consume", "-b", bootstrap_addr, "-t", topic, "-e", "-q", "--json"};
    cons.insert(cons.end(), x.begin(), x.end());
    auto c = run_kwire(cons, {}, 60);
    ASSERT_EQ(c.exit_code, 0) << c.describe();
    auto recs = parse_json_records(c.out);
    ASSERT_EQ(recs.size(), 2u) << c.out;
  }
};

TEST_F(SecurityTest, SslRoundTrip) {
  auto p = props("SSL", "");
  cli_round_trip(addr("KWIRE_SECURE_SSL_PORT"), p);
  p["bootstrap.servers"] = addr("KWIRE_SECURE_SSL_PORT");
  KafkaClient client(p);
  EXPECT_FALSE(client.metadata().brokers.empty());
}

TEST_F(SecurityTest, SaslSslEachMechanismRoundTrip) {
  for (std::string mech : {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}) {
    SCOPED_TRACE(mech);
    auto p = props("SASL_SSL", mech);
    cli_round_trip(addr("KWIRE_SECURE_SASL_SSL_PORT"), p);
    p["bootstrap.servers"] = addr("KWIRE_SECURE_SASL_SSL_PORT");
    KafkaClient client(p);
    EXPECT_FALSE(client.metadata().brokers.empty());
  }
}

TEST_F(SecurityTest, SaslPlaintextScram) {
  auto p = props("SASL_PLAINTEXT", "SCRAM-SHA-256");
  p["bootstrap.servers"] = addr("KWIRE_SECURE_SASL_PLAINTEXT_PORT");
  KafkaClient client(p);
  EXPECT_FALSE(client.metadata().brokers.empty());
}

TEST_F(SecurityTest, WrongPasswordIsAuthenticationError) {
  const std::string bad = "not-the-Secret-42";
  for (std::string mech : {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}) {
    SCOPED_TRACE(mech);
    auto p = props("SASL_SSL", mech, bad);
    p["bootstrap.servers"] = addr("KWIRE_SECURE_SASL_SSL_PORT");
    KafkaClient client(p);
    try {
      client.metadata();
      ADD_FAILURE() << "authentication with a wrong password succeeded";
    } catch (const AuthenticationError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.mechanism(), mech);
      EXPECT_NE(what.find(mech), std::string::npos) << what;
      EXPECT_EQ(what.find(bad), std::string::npos) << what;
    }
    auto r = run_kwire(
        [&] {
          std::vector<std::string> a = {"consume", "-b", addr("KWIRE_SECURE_SASL_SSL_PORT"), "-t", "none", "-e", "-q"};
          auto x = as_args(p);
          a.insert(a.end(), x.begin(), x.end());
          return a;
        }(),
        {}, 60);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(mech), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(bad), std::string::npos) << r.err;
  }
}

TEST_F(SecurityTest, UnknownCaIsTlsErrorNamingHost) {
  auto p = props("SSL", "");
  p.erase("ssl.ca.location");  // system trust store: does not know the test CA
  p["bootstrap.servers"] = addr("KWIRE_SECURE_SSL_PORT");
  KafkaClient client(p);
  try {
    client.metadata();
    ADD_FAILURE() << "TLS with an unknown CA succeeded";
  } catch (const TlsError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(env_.at("KWIRE_SECURE_HOST")), std::string::npos) << what;
    EXPECT_NE(what.find("unknown CA"), std::string::npos) << what;
  }
}

TEST_F(SecurityTest, HostNameVerification) {
  {
    auto p = props("SSL", "");
    p["bootstrap.servers"] = addr("KWIRE_SECURE_SSL_PORT", "localhost");
    KafkaClient client(p);
    EXPECT_FALSE(client.metadata().brokers.empty());
  }
  // "vm" resolves to 127.0.0.1 in this environment's hosts file but is not in the certificate.
  {
    auto p = props("SSL", "");
    p["bootstrap.servers"] = addr("KWIRE_SECURE_SSL_PORT", "vm");
    KafkaClient client(p);
    try {
      client.metadata();
      ADD_FAILURE() << "a host name outside the certificate was accepted";
    } catch (const TlsError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("'vm'"), std::string::npos) << what;
    }
  }
  {
    auto p = props("SSL", "");
    p["bootstrap.servers"] = addr("KWIRE_SECURE_SSL_PORT", "vm");
    p["ssl.endpoint.identification.algorithm"] = "";
    KafkaClient client(p);
    EXPECT_FALSE(client.metadata().brokers.empty());
  }
}

}  // namespace
}  // namespace kwire_test

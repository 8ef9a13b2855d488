// The broker's further --secure listeners (scripts/kafka start --secure):
// OAUTHBEARER on SASL_SSL / SASL_PLAINTEXT (Kafka's unsecured JWS validator),
// MTLS (TLS with a required client certificate), REAUTH (SASL sessions of
// 2 s, KIP-368 re-authentication), a wrong CA through the CLI, and secrets
// that must never reach any output. Skipped when KWIRE_SECURE_ENV is not set.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "kwire/client/connection.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/client/sasl.hpp"

namespace kwire_test {
namespace {

using kwire::client::AuthenticationError;
using kwire::client::ClientConfig;
using kwire::client::ClientError;
using kwire::client::Consumer;
using kwire::client::KafkaClient;
using kwire::client::Producer;
using kwire::client::ProducerMessage;
using kwire::client::TlsError;
using kwire::client::TopicPartition;
using Props = std::map<std::string, std::string>;

std::string base64url(const std::string& raw) {
  std::string b = kwire::client::base64_encode(raw);
  while (!b.empty() && b.back() == '=') b.pop_back();
  for (char& c : b) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return b;
}

// An unsecured JWS (RFC 7515 with alg "none", empty signature) with the
// claims Kafka's default OAUTHBEARER validator reads: sub, iat, exp (seconds).
std::string unsecured_jwt(const std::string& sub, std::int64_t iat, std::int64_t exp) {
  std::string header = R"({"alg":"none"})";
  std::string claims =
      "{\"sub\":\"" + sub + "\",\"iat\":" + std::to_string(iat) + ",\"exp\":" + std::to_string(exp) + "}";
  return base64url(header) + "." + base64url(claims) + ".";
}

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

class SecureListenersTest : public SecureBrokerTest {
 protected:
  void SetUp() override {
    SecureBrokerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!env_.count("KWIRE_SECURE_MTLS_PORT"))
      GTEST_SKIP() << "the broker was started without the MTLS/REAUTH listeners (older scripts/kafka)";
  }
  Props base(const std::string& protocol) const {
    return {{"security.protocol", protocol},
            {"ssl.ca.location", env_.at("KWIRE_SECURE_CA")},
            {"request.timeout.ms", "10000"},
            {"default.api.timeout.ms", "10000"},
            {"retries", "0"}};
  }
  Props sasl(const std::string& protocol, const std::string& mechanism, const std::string& secret = "") const {
    auto p = base(protocol);
    p["sasl.mechanism"] = mechanism;
    if (mechanism == "OAUTHBEARER") {
      p["sasl.oauthbearer.token"] = secret.empty() ? unsecured_jwt("alice", now_s(), now_s() + 3600) : secret;
    } else {
      p["sasl.username"] = env_.at("KWIRE_SECURE_USER");
      p["sasl.password"] = secret.empty() ? env_.at("KWIRE_SECURE_PASSWORD") : secret;
    }
    return p;
  }
  Props mtls() const {
    auto p = base("SSL");
    p["ssl.keystore.type"] = "PEM";
    p["ssl.keystore.location"] = env_.at("KWIRE_SECURE_CLIENT_KEYSTORE");
    return p;
  }
  CommandResult kwire_with(std::vector<std::string> args, const Props& p, std::string_view input = {}) {
    auto x = as_args(p);
    args.insert(args.end(), x.begin(), x.end());
    return run_kwire(args, input, 60);
  }
  // Produce two lines and read them back with the CLI over one listener.
  void cli_round_trip(const std::string& bootstrap_addr, const Props& p) {
    auto topic = unique_topic("seclst");
    create_topic(topic, 1);
    auto r = kwire_with({"produce", "-b", bootstrap_addr, "-t", topic}, p, "first\nsecond\n");
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    auto c = kwire_with({"consume", "-b", bootstrap_addr, "-t", topic, "-e", "-q", "--json"}, p);
    ASSERT_EQ(c.exit_code, 0) << c.describe();
    auto recs = parse_json_records(c.out);
    ASSERT_EQ(recs.size(), 2u) << c.out;
    EXPECT_EQ(recs[0].value, "first");
    EXPECT_EQ(recs[1].value, "second");
  }
  // Library round trip: three records through Producer and back through Consumer.
  void library_round_trip(Props p, const std::string& bootstrap_addr) {
    auto topic = unique_topic("seclib");
    create_topic(topic, 1);
    p["bootstrap.servers"] = bootstrap_addr;
    {
      Producer producer(p);
      for (int i = 0; i < 3; ++i) {
        ProducerMessage m;
        m.topic = topic;
        m.partition = 0;
        std::string v = "v" + std::to_string(i);
        m.value = kwire::protocol::Bytes(v.begin(), v.end());
        producer.send(std::move(m));
      }
      producer.flush();
    }
    Consumer consumer(p);
    TopicPartition tp{topic, 0};
    consumer.assign({tp});
    consumer.seek_to_beginning({tp});
    std::vector<std::string> got;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (got.size() < 3 && std::chrono::steady_clock::now() < until)
      for (auto& r : consumer.poll(std::chrono::milliseconds(500))) got.emplace_back(r.value_view());
    EXPECT_EQ(got, (std::vector<std::string>{"v0", "v1", "v2"}));
  }
};

// ---------------------------------------------------------------- OAUTHBEARER

TEST_F(SecureListenersTest, OAuthBearerUnsecuredJwtRoundTrip) {
  for (auto [protocol, port] : {std::pair{"SASL_SSL", "KWIRE_SECURE_SASL_SSL_PORT"},
                                std::pair{"SASL_PLAINTEXT", "KWIRE_SECURE_SASL_PLAINTEXT_PORT"}}) {
    SCOPED_TRACE(protocol);
    auto p = sasl(protocol, "OAUTHBEARER");
    cli_round_trip(addr(port), p);
    library_round_trip(p, addr(port));
  }
}

TEST_F(SecureListenersTest, OAuthBearerTokenCallbackIsCalledPerAuthentication) {
  auto p = base("SASL_SSL");
  p["sasl.mechanism"] = "OAUTHBEARER";
  p["bootstrap.servers"] = addr("KWIRE_SECURE_SASL_SSL_PORT");
  auto config = ClientConfig::from_properties(p);
  int calls = 0;
  config.sasl_oauthbearer_token_callback = [&] {
    ++calls;
    return unsecured_jwt("carol", now_s(), now_s() + 600);
  };
  KafkaClient client(config);
  auto md = client.metadata();
  ASSERT_FALSE(md.brokers.empty());
  EXPECT_EQ(calls, 1);  // the bootstrap connection
  client.broker(md.brokers.front().node_id);
  EXPECT_EQ(calls, 2);  // a second connection authenticates again, with a fresh token
}

TEST_F(SecureListenersTest, OAuthBearerExpiredTokenIsAuthenticationError) {
  const auto expired = unsecured_jwt("alice", now_s() - 7200, now_s() - 3600);
  for (auto [protocol, port] : {std::pair{"SASL_SSL", "KWIRE_SECURE_SASL_SSL_PORT"},
                                std::pair{"SASL_PLAINTEXT", "KWIRE_SECURE_SASL_PLAINTEXT_PORT"}}) {
    SCOPED_TRACE(protocol);
    auto p = sasl(protocol, "OAUTHBEARER", expired);
    p["bootstrap.servers"] = addr(port);
    KafkaClient client(p);
    try {
      client.metadata();
      ADD_FAILURE() << "an expired token was accepted";
    } catch (const AuthenticationError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.mechanism(), "OAUTHBEARER");
      EXPECT_NE(what.find("OAUTHBEARER"), std::string::npos) << what;
      // The broker's RFC 7628 error JSON is reported.
      EXPECT_NE(what.find("invalid_token"), std::string::npos) << what;
      EXPECT_EQ(what.find(expired), std::string::npos) << what;
    }
  }
}

TEST_F(SecureListenersTest, OAuthBearerTokenWithoutSubjectIsRefused) {
  // A token without "sub" is refused by the validator with the same JSON error path.
  const auto no_sub =
      base64url(R"({"alg":"none"})") + "." +
      base64url("{\"iat\":" + std::to_string(now_s()) + ",\"exp\":" + std::to_string(now_s() + 600) + "}") + ".";
  auto p = sasl("SASL_SSL", "OAUTHBEARER", no_sub);
  p["bootstrap.servers"] = addr("KWIRE_SECURE_SASL_SSL_PORT");
  KafkaClient client(p);
  EXPECT_THROW(client.metadata(), AuthenticationError);
}

// Every mechanism on every SASL listener, through Producer and Consumer.
TEST_F(SecureListenersTest, EveryMechanismOnEverySaslListener) {
  for (auto [protocol, port] : {std::pair{"SASL_SSL", "KWIRE_SECURE_SASL_SSL_PORT"},
                                std::pair{"SASL_PLAINTEXT", "KWIRE_SECURE_SASL_PLAINTEXT_PORT"},
                                std::pair{"SASL_SSL", "KWIRE_SECURE_REAUTH_PORT"}}) {
    for (std::string mech : {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}) {
      SCOPED_TRACE(std::string(port) + " " + mech);
      library_round_trip(sasl(protocol, mech), addr(port));
    }
  }
}

// ------------------------------------------------------------------------ mTLS

TEST_F(SecureListenersTest, MtlsWithClientCertificateRoundTrip) {
  cli_round_trip(addr("KWIRE_SECURE_MTLS_PORT"), mtls());
  library_round_trip(mtls(), addr("KWIRE_SECURE_MTLS_PORT"));
}

TEST_F(SecureListenersTest, MtlsConfigNames) {
  // librdkafka's names: certificate and key in separate files.
  auto p = base("SSL");
  p["ssl.certificate.location"] = env_.at("KWIRE_SECURE_CLIENT_CERT");
  p["ssl.key.location"] = env_.at("KWIRE_SECURE_CLIENT_KEY");
  p["bootstrap.servers"] = addr("KWIRE_SECURE_MTLS_PORT");
  {
    KafkaClient client(p);
    EXPECT_FALSE(client.metadata().brokers.empty());
  }
  // Java's PEM keystore given inline, and the CA inline too.
  auto q = base("SSL");
  q.erase("ssl.ca.location");
  q["ssl.truststore.type"] = "PEM";
  q["ssl.truststore.certificates"] = read_file(env_.at("KWIRE_SECURE_CA"));
  q["ssl.keystore.type"] = "PEM";
  q["ssl.keystore.certificate.chain"] = read_file(env_.at("KWIRE_SECURE_CLIENT_CERT"));
  q["ssl.keystore.key"] = read_file(env_.at("KWIRE_SECURE_CLIENT_KEY"));
  q["bootstrap.servers"] = addr("KWIRE_SECURE_MTLS_PORT");
  KafkaClient client(q);
  EXPECT_FALSE(client.metadata().brokers.empty());
}

TEST_F(SecureListenersTest, MtlsWithoutClientCertificateIsTlsErrorNamingHost) {
  auto p = base("SSL");
  p["bootstrap.servers"] = addr("KWIRE_SECURE_MTLS_PORT");
  KafkaClient client(p);
  try {
    client.metadata();
    ADD_FAILURE() << "the MTLS listener accepted a client without a certificate";
  } catch (const TlsError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(env_.at("KWIRE_SECURE_HOST")), std::string::npos) << what;
    EXPECT_NE(what.find("requires a client certificate"), std::string::npos) << what;
  }
  auto r = kwire_with({"metadata", "-b", addr("KWIRE_SECURE_MTLS_PORT")}, base("SSL"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("requires a client certificate"), std::string::npos) << r.err;
}

TEST_F(SecureListenersTest, MtlsEncryptedKeyNeedsTheRightPassword) {
  const std::string right = env_.at("KWIRE_SECURE_CLIENT_KEY_PASSWORD");
  auto p = base("SSL");
  p["ssl.certificate.location"] = env_.at("KWIRE_SECURE_CLIENT_CERT");
  p["ssl.key.location"] = env_.at("KWIRE_SECURE_CLIENT_KEY_ENCRYPTED");
  p["bootstrap.servers"] = addr("KWIRE_SECURE_MTLS_PORT");
  {
    auto q = p;
    q["ssl.key.password"] = right;
    KafkaClient client(q);
    EXPECT_FALSE(client.metadata().brokers.empty());
  }
  const std::string wrong = "Wrong-Key-Pass-917";
  for (std::string pw : {wrong, std::string()}) {
    SCOPED_TRACE(pw.empty() ? "no password" : "wrong password");
    auto q = p;
    if (!pw.empty()) q["ssl.key.password"] = pw;
    KafkaClient client(q);
    try {
      client.metadata();
      ADD_FAILURE() << "an encrypted key was used without its password";
    } catch (const TlsError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("ssl.key.password"), std::string::npos) << what;
      EXPECT_NE(what.find(env_.at("KWIRE_SECURE_CLIENT_KEY_ENCRYPTED")), std::string::npos) << what;
      EXPECT_EQ(what.find(wrong), std::string::npos) << what;
      EXPECT_EQ(what.find(right), std::string::npos) << what;
    }
  }
}

// ------------------------------------------------------------ wrong CA, CLI

TEST_F(SecureListenersTest, CliWithWrongCaExitsWithClearMessage) {
  TempDir dir;
  auto ca = (dir / "other-ca.pem").string();
  auto key = (dir / "other-ca.key").string();
  auto made = run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=not-the-kwire-ca -keyout " +
                  shell_quote(key) + " -out " + shell_quote(ca));
  ASSERT_EQ(made.exit_code, 0) << made.describe();
  auto p = base("SSL");
  p["ssl.ca.location"] = ca;
  auto r = kwire_with({"metadata", "-b", addr("KWIRE_SECURE_SSL_PORT")}, p);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("unknown CA"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(env_.at("KWIRE_SECURE_HOST")), std::string::npos) << r.err;
  // A CA file that does not exist is named.
  p["ssl.ca.location"] = (dir / "missing.pem").string();
  r = kwire_with({"metadata", "-b", addr("KWIRE_SECURE_SSL_PORT")}, p);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("missing.pem"), std::string::npos) << r.err;
}

// ------------------------------------------------------------- KIP-368

// A consumer polling for ~7 s on the REAUTH listener (sessions of 2 s) while a
// producer on the same listener writes a record every 150 ms: every record
// arrives, both re-authenticate in place at least twice, and neither makes a
// new connection. fetch.max.wait.ms is kept short: the broker reads the
// re-authentication request only after the Fetch before it is answered, and
// a session as short as 2 s leaves 100 to 300 ms for that.
TEST_F(SecureListenersTest, ReauthenticationKeepsTheConnection) {
  for (std::string mech : {"SCRAM-SHA-512", "PLAIN"}) {
    SCOPED_TRACE(mech);
    auto topic = unique_topic("reauth");
    create_topic(topic, 1);
    auto p = sasl("SASL_SSL", mech);
    p["bootstrap.servers"] = addr("KWIRE_SECURE_REAUTH_PORT");
    p["fetch.max.wait.ms"] = "50";
    p["linger.ms"] = "0";
    Producer producer(p);
    Consumer consumer(p);
    TopicPartition tp{topic, 0};
    consumer.assign({tp});
    consumer.seek_to_beginning({tp});
    consumer.poll(std::chrono::milliseconds(100));
    const auto consumer_connects = consumer.client().connection_stats().connects;

    std::vector<std::string> sent, got;
    auto start = std::chrono::steady_clock::now();
    auto next_send = start;
    std::uint64_t producer_connects = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(7)) {
      if (std::chrono::steady_clock::now() >= next_send) {
        ProducerMessage m;
        m.topic = topic;
        m.partition = 0;
        std::string v = "r" + std::to_string(sent.size());
        m.value = kwire::protocol::Bytes(v.begin(), v.end());
        producer.send(std::move(m));
        producer.flush();
        if (sent.empty()) producer_connects = producer.connection_stats().connects;
        sent.push_back(v);
        next_send += std::chrono::milliseconds(150);
      }
      for (auto& r : consumer.poll(std::chrono::milliseconds(50))) got.emplace_back(r.value_view());
    }
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (got.size() < sent.size() && std::chrono::steady_clock::now() < until)
      for (auto& r : consumer.poll(std::chrono::milliseconds(100))) got.emplace_back(r.value_view());

    EXPECT_GE(sent.size(), 40u);
    EXPECT_EQ(got, sent);
    const auto& cs = consumer.client().connection_stats();
    const auto& ps = producer.connection_stats();
    EXPECT_GE(cs.reauthentications, 2u);
    EXPECT_GE(ps.reauthentications, 2u);
    EXPECT_EQ(cs.connects, consumer_connects) << "the consumer reconnected";
    EXPECT_EQ(ps.connects, producer_connects) << "the producer reconnected";
    std::cout << "[ reauth  ] " << mech << ": " << sent.size() << " records; consumer " << cs.reauthentications
              << " re-authentications, " << cs.connects << " connects; producer " << ps.reauthentications
              << " re-authentications, " << ps.connects << " connects\n";
  }
}

// A connection left idle past its session cannot be renewed in place (the
// broker closes it at the next request): the client reconnects instead.
TEST_F(SecureListenersTest, ReauthenticationAfterExpiryReconnects) {
  auto p = sasl("SASL_PLAINTEXT", "SCRAM-SHA-256");
  p["bootstrap.servers"] = addr("KWIRE_SECURE_REAUTH_PORT");
  p["security.protocol"] = "SASL_SSL";
  KafkaClient client(p);
  ASSERT_FALSE(client.metadata().brokers.empty());
  EXPECT_EQ(client.connection_stats().connects, 1u);
  auto& conn = client.any_connection();
  ASSERT_NE(conn.session_expires_at(), kwire::client::Clock::time_point::max());
  auto lifetime = conn.session_expires_at() - std::chrono::steady_clock::now();
  EXPECT_LE(lifetime, std::chrono::milliseconds(std::stoi(env_.at("KWIRE_SECURE_REAUTH_MS"))));
  std::this_thread::sleep_until(conn.session_expires_at() + std::chrono::milliseconds(300));
  ASSERT_FALSE(client.metadata().brokers.empty());
  EXPECT_EQ(client.connection_stats().connects, 2u);
  EXPECT_EQ(client.connection_stats().reauthentications, 0u);
}

// ------------------------------------------------------------------ secrets

// Wrong and right secrets for each mechanism through the CLI (JSON output,
// librdkafka's debug property) and the library: the secret never appears in
// standard output, standard error or an exception's text.
TEST_F(SecureListenersTest, SecretsNeverAppearInOutputOrErrors) {
  struct Case {
    std::string mechanism, right, wrong;
  };
  std::vector<Case> cases = {
      {"PLAIN", env_.at("KWIRE_SECURE_PASSWORD"), "Wrong-Plain-Secret-5521"},
      {"SCRAM-SHA-256", env_.at("KWIRE_SECURE_PASSWORD"), "Wrong-Scram256-Secret-7713"},
      {"SCRAM-SHA-512", env_.at("KWIRE_SECURE_PASSWORD"), "Wrong-Scram512-Secret-8824"},
      {"OAUTHBEARER", unsecured_jwt("alice", now_s(), now_s() + 3600),
       unsecured_jwt("alice", now_s() - 7200, now_s() - 3600)},
      {"OAUTHBEARER", unsecured_jwt("bob", now_s(), now_s() + 3600), "not.a-valid-token-Secret-9931"},
  };
  auto leaks = [](const std::string& text, const std::string& secret) {
    if (text.find(secret) != std::string::npos) return true;
    // Also the signature-less payload of a JWT (its claims part).
    auto dot = secret.find('.');
    if (dot != std::string::npos) {
      auto payload = secret.substr(dot + 1, secret.find('.', dot + 1) - dot - 1);
      if (payload.size() > 8 && text.find(payload) != std::string::npos) return true;
    }
    return false;
  };
  for (auto& c : cases) {
    for (bool right : {false, true}) {
      const std::string& secret = right ? c.right : c.wrong;
      SCOPED_TRACE(c.mechanism + (right ? " right secret" : " wrong secret"));
      for (auto [protocol, port] : {std::pair{"SASL_SSL", "KWIRE_SECURE_SASL_SSL_PORT"},
                                    std::pair{"SASL_PLAINTEXT", "KWIRE_SECURE_SASL_PLAINTEXT_PORT"}}) {
        SCOPED_TRACE(protocol);
        auto p = sasl(protocol, c.mechanism, secret);
        p["debug"] = "all";  // librdkafka's debug contexts; kwire ignores it but must not echo configs
        for (auto args : {std::vector<std::string>{"metadata", "-b", addr(port), "--json"},
                          std::vector<std::string>{"offsets", "-b", addr(port), "-t", "__no_such_topic", "--json"}}) {
          auto r = kwire_with(args, p);
          if (!right || args[0] == "metadata") {
            EXPECT_EQ(r.exit_code == 0, right) << r.describe();
          }
          if (!right) {
            EXPECT_NE(r.err.find(c.mechanism), std::string::npos) << r.err;
          }
          EXPECT_FALSE(leaks(r.out, secret)) << r.out;
          EXPECT_FALSE(leaks(r.err, secret)) << r.err;
        }
        p.erase("debug");
        p["bootstrap.servers"] = addr(port);
        try {
          KafkaClient client(p);
          client.metadata();
          EXPECT_TRUE(right) << "a wrong secret was accepted";
        } catch (const ClientError& e) {
          EXPECT_FALSE(right) << e.what();
          EXPECT_NE(dynamic_cast<const AuthenticationError*>(&e), nullptr) << e.what();
          EXPECT_FALSE(leaks(e.what(), secret)) << e.what();
        }
      }
    }
  }
}

}  // namespace
}  // namespace kwire_test

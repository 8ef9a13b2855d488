// SASL GSSAPI (Kerberos) against the broker's GSSAPI_SSL listener and the MIT
// KDC that scripts/kdc runs: scripts/test starts the KDC and passes its env to
// `scripts/kafka start --secure --kerberos`, which adds the listener's port,
// the client principal, its keytabs and krb5.conf to secure.env.
// Skipped when the broker was started without a KDC (no
// KWIRE_SECURE_GSSAPI_PORT).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
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
using kwire::client::TopicPartition;

class KerberosTest : public SecureBrokerTest {
 protected:
  void SetUp() override {
    SecureBrokerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!env_.count("KWIRE_SECURE_GSSAPI_PORT"))
      GTEST_SKIP() << "no KDC: the broker was started without --kerberos "
                      "(scripts/kdc start, then scripts/kafka "
                      "start --secure --kerberos DIR/kdc.env)";
    // MIT Kerberos (in this process and in the kwire children) reads the
    // test realm's krb5.conf from here.
    ::setenv("KRB5_CONFIG", env_.at("KWIRE_SECURE_KRB5_CONFIG").c_str(), 1);
  }

  std::string gssapi_addr() const { return addr("KWIRE_SECURE_GSSAPI_PORT"); }

  std::map<std::string, std::string> props(const std::string& keytab, const std::string& principal) const {
    return {{"bootstrap.servers", gssapi_addr()},
            {"security.protocol", "SASL_SSL"},
            {"ssl.ca.location", env_.at("KWIRE_SECURE_CA")},
            {"sasl.mechanism", "GSSAPI"},
            {"sasl.kerberos.service.name", env_.at("KWIRE_SECURE_KERBEROS_SERVICE_NAME")},
            {"sasl.kerberos.keytab", keytab},
            {"sasl.kerberos.principal", principal},
            {"request.timeout.ms", "10000"},
            {"default.api.timeout.ms", "10000"},
            {"retries", "0"}};
  }

  static std::vector<std::string> with_props(std::vector<std::string> args,
                                             const std::map<std::string, std::string>& p) {
    auto x = as_args(p);
    args.insert(args.end(), x.begin(), x.end());
    return args;
  }

  // A topic holding two records, written over PLAINTEXT.
  std::string topic_with_two_records() {
    auto topic = unique_topic("krb");
    create_topic(topic, 1);
    auto r = run_kwire({"produce", "-b", bootstrap(), "-t", topic}, "one\ntwo\n", 60);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return topic;
  }

  // Authentication with these credentials fails with an AuthenticationError
  // naming GSSAPI and containing `expected`, in the library and in the CLI,
  // and nothing is read.
  void expect_refused(const std::map<std::string, std::string>& p, const std::string& expected) {
    auto topic = topic_with_two_records();
    KafkaClient client(p);
    try {
      client.list_offsets({{TopicPartition{topic, 0}, -1}});
      ADD_FAILURE() << "GSSAPI authentication succeeded";
    } catch (const AuthenticationError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.mechanism(), "GSSAPI");
      EXPECT_NE(what.find("GSSAPI authentication failed"), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
    auto r = run_kwire(with_props({"consume", "-b", gssapi_addr(), "-t", topic, "-e", "-q", "--json"}, p), {}, 60);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("GSSAPI"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  }
};

TEST_F(KerberosTest, GssapiProduceConsumeRoundTrip) {
  auto topic = unique_topic("krb");
  create_topic(topic, 1);
  auto p = props(env_.at("KWIRE_SECURE_KERBEROS_KEYTAB"), env_.at("KWIRE_SECURE_KERBEROS_PRINCIPAL"));
  auto prod = run_kwire(with_props({"produce", "-b", gssapi_addr(), "-t", topic}, p), "first\nsecond\n", 60);
  ASSERT_EQ(prod.exit_code, 0) << prod.describe();
  auto cons = run_kwire(with_props({"consume", "-b", gssapi_addr(), "-t", topic, "-e", "-q", "--json"}, p), {}, 60);
  ASSERT_EQ(cons.exit_code, 0) << cons.describe();
  auto recs = parse_json_records(cons.out);
  ASSERT_EQ(recs.size(), 2u) << cons.out;
  EXPECT_EQ(recs[0].value, "first");
  EXPECT_EQ(recs[1].value, "second");
  EXPECT_EQ(recs[1].offset, 1);

  // The library, with Java's JAAS line instead of the librdkafka keys.
  auto jaas = p;
  jaas.erase("sasl.kerberos.keytab");
  jaas.erase("sasl.kerberos.principal");
  jaas["sasl.jaas.config"] =
      "com.sun.security.auth.module.Krb5LoginModule "
      "required useKeyTab=true storeKey=true "
      "keyTab=\"" +
      env_.at("KWIRE_SECURE_KERBEROS_KEYTAB") + "\" principal=\"" + env_.at("KWIRE_SECURE_KERBEROS_PRINCIPAL") + "\";";
  KafkaClient client(jaas);
  auto latest = client.list_offsets({{TopicPartition{topic, 0}, -1}});
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest.begin()->second.offset, 2);
}

TEST_F(KerberosTest, PrincipalUnknownToKdcIsAuthenticationError) {
  expect_refused(
      props(env_.at("KWIRE_SECURE_KERBEROS_UNKNOWN_KEYTAB"), env_.at("KWIRE_SECURE_KERBEROS_UNKNOWN_PRINCIPAL")),
      "the KDC does not know the client principal");
}

TEST_F(KerberosTest, OutdatedKeytabIsAuthenticationError) {
  expect_refused(props(env_.at("KWIRE_SECURE_KERBEROS_STALE_KEYTAB"), env_.at("KWIRE_SECURE_KERBEROS_PRINCIPAL")),
                 "the keytab's key does not match the KDC's");
}

TEST_F(KerberosTest, WrongServiceNameIsAuthenticationError) {
  auto p = props(env_.at("KWIRE_SECURE_KERBEROS_KEYTAB"), env_.at("KWIRE_SECURE_KERBEROS_PRINCIPAL"));
  p["sasl.kerberos.service.name"] = "not-kafka";
  expect_refused(p, "does not know the broker's service principal not-kafka/" + env_.at("KWIRE_SECURE_HOST"));
}

TEST_F(KerberosTest, NoTicketIsAuthenticationError) {
  // No keytab configured and an empty ticket cache: nothing to authenticate
  // with.
  TempDir dir;
  ::setenv("KRB5CCNAME", ("FILE:" + (dir / "no-ticket-cache").string()).c_str(), 1);
  auto p = props("", "");
  p.erase("sasl.kerberos.keytab");
  p.erase("sasl.kerberos.principal");
  expect_refused(p, "no Kerberos ticket");
  ::unsetenv("KRB5CCNAME");
}

// Cyrus SASL reads its plugin directory once per process, so the check runs
// in a fresh copy of this test binary (gtest's "threadsafe" death-test style
// re-executes it) with SASL_PATH naming an empty directory.
TEST_F(KerberosTest, MissingCyrusPluginIsClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto empty = std::filesystem::temp_directory_path() / "kwire-test-no-sasl-plugins";
  std::filesystem::create_directories(empty);
  ASSERT_TRUE(std::filesystem::is_empty(empty)) << empty;
  ::setenv("SASL_PATH", empty.c_str(), 1);
  auto p = props(env_.at("KWIRE_SECURE_KERBEROS_KEYTAB"), env_.at("KWIRE_SECURE_KERBEROS_PRINCIPAL"));
  EXPECT_EXIT(
      {
        try {
          KafkaClient client(p);
          client.metadata();
          std::fprintf(stderr, "authentication succeeded without the GSSAPI plugin\n");
        } catch (const AuthenticationError& e) {
          std::fprintf(stderr, "AuthenticationError(%s): %s\n", e.mechanism().c_str(), e.what());
          std::fflush(stderr);
          std::_Exit(e.mechanism() == "GSSAPI" ? 3 : 4);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "other error: %s\n", e.what());
        }
        std::fflush(stderr);
        std::_Exit(5);
      },
      ::testing::ExitedWithCode(3),
      "AuthenticationError\\(GSSAPI\\): GSSAPI authentication failed: Cyrus "
      "SASL has no GSSAPI plugin "
      "\\(\"no worthy mechs\"\\): install the Debian package "
      "libsasl2-modules-gssapi-mit");
  ::unsetenv("SASL_PATH");
  // The CLI says the same.
  auto r = run("SASL_PATH=" + shell_quote(empty.string()) + " " + shell_quote(kwire_bin()) + " " +
                   join_quoted(with_props({"metadata", "-b", gssapi_addr()}, p)),
               {}, 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("libsasl2-modules-gssapi-mit"), std::string::npos) << r.err;
  std::error_code ec;
  std::filesystem::remove(empty, ec);
}

}  // namespace
}  // namespace kwire_test

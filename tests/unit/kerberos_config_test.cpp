// GSSAPI configuration: the librdkafka keys (sasl.kerberos.*), Java's
// Krb5LoginModule JAAS line, their precedence, and the errors the mechanism
// raises before it talks to any KDC or broker.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kwire/client/config.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/sasl.hpp"

using namespace kwire::client;

namespace {

ClientConfig parse(std::map<std::string, std::string> props) {
  props.emplace("bootstrap.servers", "broker.example:9093");
  return ClientConfig::from_properties(props);
}

std::string config_error(std::map<std::string, std::string> props) {
  try {
    parse(std::move(props));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string initial_error(const SaslCredentials& creds) {
  auto mech = make_sasl_mechanism(creds);
  EXPECT_EQ(mech->name(), "GSSAPI");
  try {
    mech->initial();
  } catch (const AuthenticationError& e) {
    EXPECT_EQ(e.mechanism(), "GSSAPI");
    return e.what();
  }
  return "";
}

const std::string kJaas =
    "com.sun.security.auth.module.Krb5LoginModule "
    "required useKeyTab=true storeKey=true "
    "keyTab=\"/etc/security/keytabs/app.keytab\" "
    "principal=\"app/host.example@EXAMPLE.COM\";";

}  // namespace

TEST(KerberosConfig, DefaultsAndLibrdkafkaKeys) {
  auto plain = parse({});
  EXPECT_EQ(plain.sasl_kerberos_service_name, "kafka");
  EXPECT_EQ(plain.sasl_kerberos_keytab, "");
  EXPECT_EQ(plain.sasl_kerberos_principal, "");

  auto c = parse({{"security.protocol", "sasl_ssl"},
                  {"sasl.mechanism", "gssapi"},
                  {"sasl.kerberos.service.name", "kafka-prod"},
                  {"sasl.kerberos.keytab", "/k/client.keytab"},
                  {"sasl.kerberos.principal", "client@EXAMPLE.COM"}});
  EXPECT_EQ(c.security_protocol, "SASL_SSL");
  EXPECT_EQ(c.sasl_mechanism, "GSSAPI");
  EXPECT_EQ(c.sasl_kerberos_service_name, "kafka-prod");
  EXPECT_EQ(c.sasl_kerberos_keytab, "/k/client.keytab");
  EXPECT_EQ(c.sasl_kerberos_principal, "client@EXAMPLE.COM");
  EXPECT_TRUE(c.ignored_keys.empty());
}

TEST(KerberosConfig, JavaJaasLine) {
  auto c = parse({{"security.protocol", "SASL_PLAINTEXT"}, {"sasl.mechanism", "GSSAPI"}, {"sasl.jaas.config", kJaas}});
  EXPECT_EQ(c.sasl_kerberos_keytab, "/etc/security/keytabs/app.keytab");
  EXPECT_EQ(c.sasl_kerberos_principal, "app/host.example@EXAMPLE.COM");
  // Not a username/password line: those stay empty.
  EXPECT_EQ(c.sasl_username, "");
  EXPECT_EQ(c.sasl_password, "");
}

TEST(KerberosConfig, ExplicitKeysWinOverJaas) {
  auto c = parse({{"sasl.mechanism", "GSSAPI"},
                  {"sasl.jaas.config", kJaas},
                  {"sasl.kerberos.keytab", "/other.keytab"},
                  {"sasl.kerberos.principal", "other@EXAMPLE.COM"}});
  EXPECT_EQ(c.sasl_kerberos_keytab, "/other.keytab");
  EXPECT_EQ(c.sasl_kerberos_principal, "other@EXAMPLE.COM");
}

TEST(KerberosConfig, JaasTicketCacheLineTakesNoKeytab) {
  // useKeyTab absent (or false): the ticket cache is used, a keyTab option is
  // not.
  auto c = parse({{"sasl.jaas.config",
                   "com.sun.security.auth.module.Krb5LoginModule "
                   "required useTicketCache=true keyTab=\"/x.keytab\" "
                   "principal=\"user@EXAMPLE.COM\";"}});
  EXPECT_EQ(c.sasl_kerberos_keytab, "");
  EXPECT_EQ(c.sasl_kerberos_principal, "user@EXAMPLE.COM");
}

TEST(KerberosConfig, BadValuesAreConfigErrors) {
  auto e = config_error({{"sasl.jaas.config",
                          "com.sun.security.auth.module.Krb5LoginModule "
                          "required useKeyTab=true principal=\"a@B\";"}});
  EXPECT_NE(e.find("useKeyTab=true but no keyTab"), std::string::npos) << e;
  e = config_error({{"sasl.kerberos.service.name", "kafka/host"}});
  EXPECT_NE(e.find("sasl.kerberos.service.name"), std::string::npos) << e;
  e = config_error({{"sasl.kerberos.service.name", ""}});
  EXPECT_NE(e.find("sasl.kerberos.service.name"), std::string::npos) << e;
  e = config_error({{"security.protocol", "SASL_SSL"}});
  EXPECT_NE(e.find("GSSAPI"), std::string::npos) << e;
  e = config_error({{"sasl.mechanism", "KERBEROS"}});
  EXPECT_NE(e.find("GSSAPI"), std::string::npos) << e;
}

TEST(KerberosConfig, ParseKerberosJaas) {
  std::string keytab = "unchanged", principal = "unchanged";
  parse_kerberos_jaas_config(
      "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
      "keyTab=/plain/path.keytab;",
      keytab, principal);
  EXPECT_EQ(keytab, "/plain/path.keytab");
  EXPECT_EQ(principal, "unchanged");
  EXPECT_THROW(parse_kerberos_jaas_config("org.apache.kafka.common.security.plain.PlainLoginModule required "
                                          "username=\"u\" password=\"p\";",
                                          keytab, principal),
               ConfigError);
  EXPECT_EQ(jaas_option(kJaas, "useKeyTab"), "true");
  EXPECT_EQ(jaas_option(kJaas, "keyTab"), "/etc/security/keytabs/app.keytab");
  EXPECT_EQ(jaas_option(kJaas, "debug"), std::nullopt);
}

TEST(KerberosMechanism, UnreadableKeytabIsAuthenticationError) {
  SaslCredentials c;
  c.mechanism = "GSSAPI";
  c.broker_host = "broker.example";
  c.kerberos_keytab = "/nonexistent/dir/client.keytab";
  auto e = initial_error(c);
  // Either the keytab check or, on a host without the Cyrus GSSAPI plugin, the
  // plugin check speaks first; both name what to fix.
  bool keytab = e.find(
                    "cannot read the keytab '/nonexistent/dir/client.keytab' "
                    "(sasl.kerberos.keytab)") != std::string::npos;
  bool plugin = e.find("libsasl2-modules-gssapi-mit") != std::string::npos;
  EXPECT_TRUE(keytab || plugin) << e;
  EXPECT_EQ(e.rfind("GSSAPI authentication failed: ", 0), 0u) << e;
}

TEST(KerberosMechanism, NoBrokerHostIsAuthenticationError) {
  SaslCredentials c;
  c.mechanism = "GSSAPI";
  auto e = initial_error(c);
  EXPECT_TRUE(e.find("no broker host name") != std::string::npos ||
              e.find("libsasl2-modules-gssapi-mit") != std::string::npos)
      << e;
}

// SASL token builders: RFC 7677's SCRAM-SHA-256 example, a SCRAM-SHA-512
// exchange over the same inputs (expected values computed independently with
// Python's hashlib/hmac), the safety checks, PLAIN, OAUTHBEARER and JAAS parsing.
#include <gtest/gtest.h>

#include <string>

#include "kwire/client/sasl.hpp"

using namespace kwire::client;

namespace {

const std::string kNonce = "rOprNGfwEbeRWgbNEkqO";
const std::string kServerFirst =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

std::string error_of(SaslMechanism& m, const std::string& token) {
  try {
    m.step(token);
  } catch (const AuthenticationError& e) {
    EXPECT_EQ(e.mechanism(), m.name());
    return e.what();
  }
  return "";
}

}  // namespace

TEST(SaslMechanisms, ScramSha256Rfc7677) {
  auto m = make_scram("SCRAM-SHA-256", "user", "pencil", kNonce);
  EXPECT_EQ(m->initial(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  auto final_msg = m->step(kServerFirst);
  ASSERT_TRUE(final_msg);
  EXPECT_EQ(*final_msg,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  EXPECT_FALSE(m->step("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
}

// The key derivation hook gets the password, the decoded salt and the
// iteration count; given RFC 7677's SaltedPassword (PBKDF2 computed with
// Python's hashlib) it yields the RFC's proof, and a wrong-sized key fails.
TEST(SaslMechanisms, ScramKeyDerivationHook) {
  const std::string salted_hex = "c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d";
  std::string salted;
  for (std::size_t i = 0; i < salted_hex.size(); i += 2)
    salted.push_back(static_cast<char>(std::stoi(salted_hex.substr(i, 2), nullptr, 16)));
  std::string seen_password, seen_salt;
  int seen_iterations = 0;
  std::size_t seen_length = 0;
  auto m = make_scram("SCRAM-SHA-256", "user", "pencil", kNonce,
                      [&](const std::string& password, const std::string& salt, int iterations, std::size_t length) {
                        seen_password = password;
                        seen_salt = salt;
                        seen_iterations = iterations;
                        seen_length = length;
                        return salted;
                      });
  m->initial();
  auto final_msg = m->step(kServerFirst);
  ASSERT_TRUE(final_msg);
  EXPECT_EQ(*final_msg,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  EXPECT_EQ(seen_password, "pencil");
  EXPECT_EQ(base64_encode(seen_salt), "W22ZaJ0SNY7soEsUEjb6gQ==");
  EXPECT_EQ(seen_iterations, 4096);
  EXPECT_EQ(seen_length, 32u);

  auto short_key = make_scram("SCRAM-SHA-256", "user", "pencil", kNonce,
                              [](const std::string&, const std::string&, int, std::size_t) { return std::string(); });
  short_key->initial();
  EXPECT_NE(error_of(*short_key, kServerFirst).find("key derivation failed"), std::string::npos);
}

TEST(SaslMechanisms, ScramSha512SameInputs) {
  auto m = make_scram("SCRAM-SHA-512", "user", "pencil", kNonce);
  m->initial();
  auto final_msg = m->step(kServerFirst);
  ASSERT_TRUE(final_msg);
  EXPECT_EQ(*final_msg,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            "p=gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==");
  EXPECT_FALSE(m->step("v=ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw=="));
}

TEST(SaslMechanisms, ScramRejectsWrongServerSignature) {
  auto m = make_scram("SCRAM-SHA-256", "user", "pencil", kNonce);
  m->initial();
  m->step(kServerFirst);
  auto err = error_of(*m, "v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  EXPECT_NE(err.find("SCRAM-SHA-256"), std::string::npos) << err;
  EXPECT_NE(err.find("signature"), std::string::npos) << err;
  EXPECT_EQ(err.find("pencil"), std::string::npos) << err;
}

TEST(SaslMechanisms, ScramAbortsOnForeignNonceOrFewIterations) {
  auto a = make_scram("SCRAM-SHA-256", "user", "pencil", kNonce);
  a->initial();
  auto err = error_of(*a, "r=someoneelse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
  EXPECT_NE(err.find("nonce"), std::string::npos) << err;

  auto b = make_scram("SCRAM-SHA-512", "user", "pencil", kNonce);
  b->initial();
  err = error_of(*b, "r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1024");
  EXPECT_NE(err.find("1024"), std::string::npos) << err;
  EXPECT_EQ(err.find("pencil"), std::string::npos) << err;

  auto c = make_scram("SCRAM-SHA-256", "user", "pencil", kNonce);
  c->initial();
  err = error_of(*c, "e=invalid-proof");
  EXPECT_NE(err.find("invalid-proof"), std::string::npos) << err;
}

TEST(SaslMechanisms, ScramEscapesUsername) {
  auto m = make_scram("SCRAM-SHA-256", "a=b,c", "x", "N");
  EXPECT_EQ(m->initial(), "n,,n=a=3Db=2Cc,r=N");
}

TEST(SaslMechanisms, PlainAndOAuthBearerTokens) {
  SaslCredentials plain;
  plain.mechanism = "PLAIN";
  plain.username = "alice";
  plain.password = "secret";
  auto p = make_sasl_mechanism(plain);
  EXPECT_EQ(p->initial(), std::string("\0alice\0secret", 13));
  EXPECT_FALSE(p->step(""));
  SaslCredentials oauth;
  oauth.mechanism = "OAUTHBEARER";
  oauth.oauth_token = "tok.en";
  auto o = make_sasl_mechanism(oauth);
  EXPECT_EQ(o->initial(),
            "n,,\x01"
            "auth=Bearer tok.en\x01\x01");
  EXPECT_FALSE(o->step(""));
  SaslCredentials unknown;
  unknown.mechanism = "DIGEST-MD5";
  EXPECT_THROW(make_sasl_mechanism(unknown), ConfigError);
}

TEST(SaslMechanisms, JaasConfig) {
  std::string u, pw;
  parse_jaas_config(
      "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"s3 cr;et\";", u,
      pw);
  EXPECT_EQ(u, "alice");
  EXPECT_EQ(pw, "s3 cr;et");
  parse_jaas_config("org.apache.kafka.common.security.scram.ScramLoginModule required username=bob password=pw;", u,
                    pw);
  EXPECT_EQ(u, "bob");
  EXPECT_EQ(pw, "pw");
  try {
    parse_jaas_config("PlainLoginModule required username=\"alice\" passwd=\"hunter2\";", u, pw);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos);
  }
}

TEST(SaslMechanisms, Base64) {
  EXPECT_EQ(base64_encode("ab"), "YWI=");
  EXPECT_EQ(base64_decode("YWI="), "ab");
  EXPECT_EQ(base64_decode("YQ=="), "a");
  EXPECT_EQ(base64_decode(base64_encode("abc")), "abc");
}

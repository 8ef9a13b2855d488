// SASL client exchanges fed with arbitrary broker messages: SCRAM-SHA-256/512
// server-first and server-final messages, OAUTHBEARER and PLAIN replies, and
// base64 decoding. Only AuthenticationError (or another ClientError) may
// escape; anything else, a crash or a hang is a finding.
//
// SCRAM's PBKDF2 (4096 to 16384 iterations) is replaced by a cheap key
// derivation of the right length: the broker's messages are what is fuzzed,
// and the derivation's cost would otherwise be nearly all of each run. The
// HMACs and hashes around it stay real.
//
// Input: one byte choosing the mechanism, one byte giving the length of the
// first server message, that message, then the second server message.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "kwire/client/sasl.hpp"

namespace {

std::string cheap_derivation(const std::string &password, const std::string &salt, int iterations, std::size_t length) {
  std::string key(length, '\0');
  for (std::size_t i = 0; i < length; ++i) {
    const char s = salt.empty() ? '\0' : salt[i % salt.size()];
    const char p = password.empty() ? '\0' : password[i % password.size()];
    key[i] = static_cast<char>(s ^ p ^ static_cast<char>(iterations + static_cast<int>(i)));
  }
  return key;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace kwire::client;
  kwire::fuzz::Input in(data, size);
  const std::uint8_t choice = in.u8();
  const std::string first = in.short_string(255);
  const auto rest = in.rest();
  const std::string second(reinterpret_cast<const char *>(rest.data()), rest.size());

  try {
    (void)base64_decode(first);
  } catch (const ClientError &) {
  }

  std::unique_ptr<SaslMechanism> mech;
  switch (choice % 4) {
    case 0: mech = make_scram("SCRAM-SHA-256", "user", "secret", "fuzznonce", cheap_derivation); break;
    case 1: mech = make_scram("SCRAM-SHA-512", "us=er,", "secret", "fuzznonce", cheap_derivation); break;
    case 2: {
      SaslCredentials creds;
      creds.mechanism = "OAUTHBEARER";
      creds.oauth_token = "header.payload.";
      mech = make_sasl_mechanism(creds);
      break;
    }
    default: {
      SaslCredentials creds;
      creds.mechanism = "PLAIN";
      creds.username = "user";
      creds.password = "secret";
      mech = make_sasl_mechanism(creds);
      break;
    }
  }
  try {
    const std::string initial = mech->initial();
    KWIRE_FUZZ_CHECK(!initial.empty());
    auto next = mech->step(first);
    if (next) {
      // A client token never carries the password in clear (unless the
      // broker put it into its nonce, which the client echoes).
      KWIRE_FUZZ_CHECK(first.find("secret") != std::string::npos || next->find("secret") == std::string::npos);
      (void)mech->step(second);
    }
  } catch (const AuthenticationError &e) {
    // Error texts may quote the broker's words, never the password.
    const bool broker_said_it = (first + second).find("secret") != std::string::npos;
    KWIRE_FUZZ_CHECK(broker_said_it || std::string(e.what()).find("secret") == std::string::npos);
  } catch (const ClientError &) {
  }
  return 0;
}

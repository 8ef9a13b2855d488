// SASL client exchanges fed with arbitrary broker messages: SCRAM-SHA-256/512
// server-first and server-final messages, OAUTHBEARER and PLAIN replies, and
// base64 decoding. Only AuthenticationError (or another ClientError) may
// escape; anything else, a crash or a hang is a finding.
//
// Input: one byte choosing the mechanism, one byte giving the length of the
// first server message, that message, then the second server message.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "kwire/client/sasl.hpp"

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
    case 0: mech = make_scram("SCRAM-SHA-256", "user", "secret", "fuzznonce"); break;
    case 1: mech = make_scram("SCRAM-SHA-512", "us=er,", "secret", "fuzznonce"); break;
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

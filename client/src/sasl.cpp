#include "kwire/client/sasl.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fmt/format.h>

namespace kwire::client {

std::string base64_encode(const std::string& raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string base64_decode(const std::string& text) {
  if (text.size() % 4 != 0) throw AuthenticationError("base64", "invalid base64 length in SASL message");
  std::string out(text.size() / 4 * 3 + 1, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) throw AuthenticationError("base64", "invalid base64 in SASL message");
  std::size_t len = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts padding as zero bytes; drop them.
  if (!text.empty() && text.back() == '=') --len;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

namespace {

class Plain final : public SaslMechanism {
 public:
  Plain(std::string user, std::string pass) : user_(std::move(user)), pass_(std::move(pass)) {}
  const std::string& name() const override { return name_; }
  std::string initial() override { return std::string(1, '\0') + user_ + std::string(1, '\0') + pass_; }
  std::optional<std::string> step(const std::string&) override { return std::nullopt; }

 private:
  std::string name_ = "PLAIN", user_, pass_;
};

class OAuthBearer final : public SaslMechanism {
 public:
  explicit OAuthBearer(std::string token) : token_(std::move(token)) {}
  const std::string& name() const override { return name_; }
  // RFC 7628 3.1: GS2 header without authzid ("n,,"), then kvpairs separated
  // by 0x01 and ended by two 0x01; Kafka reads the same layout.
  std::string initial() override {
    return "n,,\x01"
           "auth=Bearer " +
           token_ + "\x01\x01";
  }
  std::optional<std::string> step(const std::string& server) override {
    // A non-empty answer is the broker's JSON error (RFC 7628 3.2.2); the
    // client replies with a single 0x01 and the broker then fails the
    // exchange with SASL_AUTHENTICATION_FAILED.
    if (!server.empty()) {
      if (failed_) throw AuthenticationError(name_, "OAUTHBEARER: the broker sent a second error message");
      failed_ = true;
      error_.clear();
      for (char c : server.substr(0, 300))
        if (c >= 0x20 && c < 0x7f) error_ += c;
      return std::string("\x01");
    }
    return std::nullopt;
  }
  std::string server_error() const override { return error_; }

 private:
  std::string name_ = "OAUTHBEARER", token_, error_;
  bool failed_ = false;
};

class Scram final : public SaslMechanism {
 public:
  Scram(std::string mech, std::string user, std::string pass, std::string nonce, ScramKeyDerivation derive)
      : name_(std::move(mech)),
        user_(std::move(user)),
        pass_(std::move(pass)),
        nonce_(std::move(nonce)),
        derive_(std::move(derive)) {
    md_ = name_ == "SCRAM-SHA-512" ? EVP_sha512() : EVP_sha256();
  }
  const std::string& name() const override { return name_; }

  std::string initial() override {
    client_first_bare_ = "n=" + escape(user_) + ",r=" + nonce_;
    return "n,," + client_first_bare_;
  }

  std::optional<std::string> step(const std::string& server) override {
    if (state_ == 0) {
      state_ = 1;
      return client_final(server);
    }
    if (state_ == 1) {
      state_ = 2;
      check_server_final(server);
      return std::nullopt;
    }
    throw AuthenticationError(name_, fmt::format("{}: unexpected message after the exchange ended", name_));
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw AuthenticationError(name_, fmt::format("{} authentication failed: {}", name_, why));
  }

  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '=') out += "=3D";
      else if (c == ',') out += "=2C";
      else out += c;
    }
    return out;
  }

  static std::string attribute(const std::string& msg, char key) {
    std::size_t pos = 0;
    while (pos < msg.size()) {
      auto end = msg.find(',', pos);
      if (end == std::string::npos) end = msg.size();
      if (end - pos >= 2 && msg[pos] == key && msg[pos + 1] == '=') return msg.substr(pos + 2, end - pos - 2);
      pos = end + 1;
    }
    return {};
  }

  std::string hmac(const std::string& key, const std::string& data) const {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(md_, key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
         data.size(), out, &len);
    return std::string(reinterpret_cast<char*>(out), len);
  }
  std::string hash(const std::string& data) const {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), out, &len, md_, nullptr);
    return std::string(reinterpret_cast<char*>(out), len);
  }

  std::string client_final(const std::string& server_first) {
    if (auto e = attribute(server_first, 'e'); !e.empty()) fail("broker says " + e);
    std::string nonce = attribute(server_first, 'r');
    std::string salt_b64 = attribute(server_first, 's');
    std::string iter_text = attribute(server_first, 'i');
    if (nonce.size() <= nonce_.size() || nonce.compare(0, nonce_.size(), nonce_) != 0)
      fail("the broker's nonce does not extend the client nonce");
    if (salt_b64.empty() || iter_text.empty()) fail("the broker's first message lacks a salt or iteration count");
    long iterations = 0;
    try {
      iterations = std::stol(iter_text);
    } catch (...) {
      fail("invalid iteration count");
    }
    if (iterations < 4096) fail(fmt::format("iteration count {} is below the minimum of 4096", iterations));
    // Kafka brokers store SCRAM credentials with at most 16384 iterations; a
    // larger count would only make the client spin in PBKDF2.
    if (iterations > 16384) fail(fmt::format("iteration count {} is above Kafka's maximum of 16384", iterations));
    std::string salt = base64_decode(salt_b64);

    const auto length = static_cast<std::size_t>(EVP_MD_size(md_));
    std::string salted;
    if (derive_) {
      salted = derive_(pass_, salt, static_cast<int>(iterations), length);
      if (salted.size() != length) fail("key derivation failed");
    } else {
      salted.assign(length, '\0');
      if (PKCS5_PBKDF2_HMAC(pass_.data(), static_cast<int>(pass_.size()),
                            reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                            static_cast<int>(iterations), md_, static_cast<int>(salted.size()),
                            reinterpret_cast<unsigned char*>(salted.data())) != 1)
        fail("key derivation failed");
    }
    std::string client_key = hmac(salted, "Client Key");
    std::string stored_key = hash(client_key);
    std::string without_proof = "c=biws,r=" + nonce;
    std::string auth_message = client_first_bare_ + "," + server_first + "," + without_proof;
    std::string signature = hmac(stored_key, auth_message);
    std::string proof = client_key;
    for (std::size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<char>(proof[i] ^ signature[i]);
    expected_server_signature_ = hmac(hmac(salted, "Server Key"), auth_message);
    return without_proof + ",p=" + base64_encode(proof);
  }

  void check_server_final(const std::string& server_final) {
    if (auto e = attribute(server_final, 'e'); !e.empty()) fail("broker says " + e);
    std::string v = attribute(server_final, 'v');
    if (v.empty() || base64_decode(v) != expected_server_signature_)
      fail("the broker's signature does not match (the broker may not know the password)");
  }

  std::string name_, user_, pass_, nonce_;
  ScramKeyDerivation derive_;
  const EVP_MD* md_ = nullptr;
  std::string client_first_bare_, expected_server_signature_;
  int state_ = 0;
};

std::string random_nonce() {
  unsigned char raw[24];
  if (RAND_bytes(raw, sizeof raw) != 1) throw ClientError("cannot draw a random SCRAM nonce");
  std::string b64 = base64_encode(std::string(reinterpret_cast<char*>(raw), sizeof raw));
  // Printable and free of ',' by construction (base64 alphabet).
  return b64;
}

}  // namespace

std::unique_ptr<SaslMechanism> make_scram(const std::string& mechanism, const std::string& username,
                                          const std::string& password, const std::string& client_nonce,
                                          ScramKeyDerivation derive) {
  return std::make_unique<Scram>(mechanism, username, password, client_nonce, std::move(derive));
}

std::unique_ptr<SaslMechanism> make_sasl_mechanism(const SaslCredentials& c) {
  if (c.mechanism == "PLAIN") return std::make_unique<Plain>(c.username, c.password);
  if (c.mechanism == "SCRAM-SHA-256" || c.mechanism == "SCRAM-SHA-512")
    return make_scram(c.mechanism, c.username, c.password, random_nonce());
  if (c.mechanism == "OAUTHBEARER") return std::make_unique<OAuthBearer>(c.oauth_token);
  if (c.mechanism == "GSSAPI") return make_gssapi(c);
  throw ConfigError(
      fmt::format("sasl.mechanism '{}' is not supported: expected PLAIN, SCRAM-SHA-256, "
                  "SCRAM-SHA-512, OAUTHBEARER or GSSAPI",
                  c.mechanism));
}

}  // namespace kwire::client

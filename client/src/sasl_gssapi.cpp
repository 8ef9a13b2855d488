// SASL GSSAPI (RFC 4752) through Cyrus SASL: libsasl2 drives the exchange with
// its GSSAPI plugin (MIT Kerberos underneath); this file only feeds it the
// broker's tokens and turns its failures into AuthenticationError texts that
// say what to fix.
#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <sasl/sasl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <mutex>

#include <fmt/format.h>

#include "kwire/client/sasl.hpp"

namespace kwire::client {

namespace {

const std::string kMechanism = "GSSAPI";

// Cyrus SASL keeps global state (its plugin list) and its default mutex hooks
// do nothing, so every call into it is serialised. Authentication is rare.
std::mutex& cyrus_mutex() {
  static std::mutex m;
  return m;
}

// sasl_client_init once per process; it reads SASL_PATH (or the default
// plugin directory) at that moment.
int cyrus_init() {
  static const int rc = sasl_client_init(nullptr);
  return rc;
}

// An empty authorization id: act as the authenticated principal itself.
int empty_authzid(void*, int id, const char** result, unsigned* len) {
  if (id != SASL_CB_USER || !result) return SASL_BADPARAM;
  *result = "";
  if (len) *len = 0;
  return SASL_OK;
}

// sasl_callback_t::proc is declared int (*)(void); casting through
// void (*)(void) is the form compilers accept without a warning.
using SaslProc = int (*)(void);
const sasl_callback_t kCallbacks[] = {
    {SASL_CB_USER, reinterpret_cast<SaslProc>(reinterpret_cast<void (*)(void)>(&empty_authzid)), nullptr},
    {SASL_CB_LIST_END, nullptr, nullptr},
};

std::string gss_message(OM_uint32 code, int type) {
  std::string out;
  OM_uint32 more = 0, minor = 0;
  do {
    gss_buffer_desc buf = GSS_C_EMPTY_BUFFER;
    if (GSS_ERROR(gss_display_status(&minor, code, type, GSS_C_NO_OID, &more, &buf))) break;
    if (!out.empty()) out += "; ";
    out.append(static_cast<const char*>(buf.value), buf.length);
    gss_release_buffer(&minor, &buf);
  } while (more != 0);
  return out;
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

class Gssapi final : public SaslMechanism {
 public:
  explicit Gssapi(const SaslCredentials& c)
      : service_(c.kerberos_service_name.empty() ? "kafka" : c.kerberos_service_name),
        host_(c.broker_host),
        keytab_(c.kerberos_keytab),
        principal_(c.kerberos_principal) {}

  ~Gssapi() override {
    std::lock_guard lock(cyrus_mutex());
    if (conn_) sasl_dispose(&conn_);
    OM_uint32 minor = 0;
    if (cred_ != GSS_C_NO_CREDENTIAL) gss_release_cred(&minor, &cred_);
  }
  Gssapi(const Gssapi&) = delete;
  Gssapi& operator=(const Gssapi&) = delete;

  const std::string& name() const override { return kMechanism; }

  std::string initial() override {
    std::lock_guard lock(cyrus_mutex());
    int rc = cyrus_init();
    if (rc == SASL_NOMECH) plugin_missing();
    if (rc != SASL_OK) fail(fmt::format("Cyrus SASL did not initialise: {}", sasl_errstring(rc, nullptr, nullptr)));
    if (host_.empty()) fail("no broker host name for the service principal");
    if (!keytab_.empty()) acquire_from_keytab();

    rc = sasl_client_new(service_.c_str(), host_.c_str(), nullptr, nullptr, kCallbacks, 0, &conn_);
    if (rc != SASL_OK) fail(fmt::format("Cyrus SASL refused a new exchange: {}", sasl_errstring(rc, nullptr, nullptr)));
    // Authentication only: Kafka's brokers offer no GSSAPI security layer
    // (javax.security.sasl.qop "auth"); TLS, when used, protects the stream.
    sasl_security_properties_t props{};
    props.min_ssf = 0;
    props.max_ssf = 0;
    props.maxbufsize = 0;
    props.security_flags = SASL_SEC_NOANONYMOUS | SASL_SEC_NOPLAINTEXT;
    if (sasl_setprop(conn_, SASL_SEC_PROPS, &props) != SASL_OK) fail("Cyrus SASL rejected the security properties");
    if (cred_ != GSS_C_NO_CREDENTIAL && sasl_setprop(conn_, SASL_GSS_CREDS, cred_) != SASL_OK)
      fail("Cyrus SASL rejected the Kerberos credentials (SASL_GSS_CREDS)");

    sasl_interact_t* prompts = nullptr;
    const char* out = nullptr;
    unsigned out_len = 0;
    const char* chosen = nullptr;
    rc = sasl_client_start(conn_, kMechanism.c_str(), &prompts, &out, &out_len, &chosen);
    return handle(rc, out, out_len).value_or(std::string());
  }

  std::optional<std::string> step(const std::string& server) override {
    std::lock_guard lock(cyrus_mutex());
    if (!conn_) fail("the exchange was not started");
    if (done_) return std::nullopt;  // the broker's (empty) answer to the last token
    sasl_interact_t* prompts = nullptr;
    const char* out = nullptr;
    unsigned out_len = 0;
    int rc = sasl_client_step(conn_, server.data(), static_cast<unsigned>(server.size()), &prompts, &out, &out_len);
    return handle(rc, out, out_len);
  }

 private:
  // SASL_CONTINUE: the token to send (may be empty: GSSAPI sends an empty
  // token after the context is set up, to get the broker's layer offer).
  // SASL_OK: the last token, after which only the broker's answer is left.
  std::optional<std::string> handle(int rc, const char* out, unsigned out_len) {
    if (rc == SASL_CONTINUE || rc == SASL_OK) {
      if (rc == SASL_OK) done_ = true;
      std::string token = out && out_len ? std::string(out, out_len) : std::string();
      if (rc == SASL_OK && token.empty()) return std::nullopt;
      return token;
    }
    std::string detail = conn_ ? sasl_errdetail(conn_) : sasl_errstring(rc, nullptr, nullptr);
    if (rc == SASL_NOMECH || contains(detail, "No worthy mechs")) plugin_missing();
    if (rc == SASL_INTERACT) fail("Cyrus SASL asked for interactive input, which kwire cannot give");
    fail(fmt::format("{} ({})", hint(detail), detail));
  }

  // What a Kerberos failure most likely means (MIT's texts, as Cyrus relays
  // them).
  std::string hint(const std::string& d) const {
    if (contains(d, "Client '") && contains(d, "not found in Kerberos database"))
      return "the KDC does not know the client principal (check "
             "sasl.kerberos.principal and the keytab)";
    if (contains(d, "Server ") && contains(d, "not found in Kerberos database"))
      return fmt::format(
          "the KDC does not know the broker's service principal {}/{} (check "
          "sasl.kerberos.service.name and that the broker is addressed by the "
          "host name in its "
          "principal)",
          service_, host_);
    if (contains(d, "Password incorrect") || contains(d, "Preauthentication failed") ||
        contains(d, "Decrypt integrity check failed") || contains(d, "Key version") || contains(d, "key version"))
      return "the keytab's key does not match the KDC's (wrong or outdated "
             "keytab for the principal)";
    if (contains(d, "No Kerberos credentials available") || contains(d, "No credentials cache found") ||
        contains(d, "No credentials were supplied") || contains(d, "Credentials cache file") ||
        contains(d, "No credentials found"))
      return "no Kerberos ticket: run kinit, or set sasl.kerberos.keytab (and "
             "sasl.kerberos.principal)";
    if (contains(d, "No key table entry found") || contains(d, "Key table entry not found"))
      return "the keytab holds no key for the principal (check "
             "sasl.kerberos.principal)";
    if (contains(d, "Cannot contact any KDC") || contains(d, "Cannot find KDC"))
      return "no KDC of the realm answered (check krb5.conf, which KRB5_CONFIG "
             "may name)";
    if (contains(d, "Clock skew")) return "the clocks of this host and the KDC or broker differ too much";
    if (contains(d, "expired"))
      return "the Kerberos ticket has expired (renew it with kinit or use a "
             "keytab)";
    return "Kerberos could not authenticate";
  }

  [[noreturn]] void plugin_missing() const {
    fail(
        "Cyrus SASL has no GSSAPI plugin (\"no worthy mechs\"): install the "
        "Debian package "
        "libsasl2-modules-gssapi-mit (or point SASL_PATH at the directory "
        "holding libgssapiv2.so)");
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw AuthenticationError(kMechanism, fmt::format("GSSAPI authentication failed: {}", why));
  }

  // A client credential from the keytab, with its tickets in a MEMORY cache
  // private to this process. One cache per keytab and principal, so
  // connections share the ticket-granting ticket; MIT renews it from the
  // keytab when it nears its end.
  void acquire_from_keytab() {
    if (::access(keytab_.c_str(), R_OK) != 0)
      fail(fmt::format("cannot read the keytab '{}' (sasl.kerberos.keytab): {}", keytab_, std::strerror(errno)));
    std::string ccache = fmt::format("MEMORY:kwire-{:x}", std::hash<std::string>{}(keytab_ + '\n' + principal_));
    gss_key_value_element_desc elements[] = {{"client_keytab", keytab_.c_str()}, {"ccache", ccache.c_str()}};
    gss_key_value_set_desc store{2, elements};
    OM_uint32 minor = 0;
    gss_name_t name = GSS_C_NO_NAME;
    if (!principal_.empty()) {
      gss_buffer_desc buf{principal_.size(), const_cast<char*>(principal_.data())};
      OM_uint32 major = gss_import_name(&minor, &buf, GSS_KRB5_NT_PRINCIPAL_NAME, &name);
      if (GSS_ERROR(major))
        fail(fmt::format("invalid principal '{}' (sasl.kerberos.principal): {}", principal_,
                         gss_message(major, GSS_C_GSS_CODE)));
    }
    gss_OID_set_desc mechs{1, const_cast<gss_OID>(gss_mech_krb5)};
    OM_uint32 major =
        gss_acquire_cred_from(&minor, name, GSS_C_INDEFINITE, &mechs, GSS_C_INITIATE, &store, &cred_, nullptr, nullptr);
    OM_uint32 ignored = 0;
    if (name != GSS_C_NO_NAME) gss_release_name(&ignored, &name);
    if (GSS_ERROR(major)) {
      std::string detail = gss_message(major, GSS_C_GSS_CODE) + " (" + gss_message(minor, GSS_C_MECH_CODE) + ")";
      fail(fmt::format("no credentials from the keytab '{}'{}: {} ({})", keytab_,
                       principal_.empty() ? "" : " for " + principal_, hint(detail), detail));
    }
  }

  std::string service_, host_, keytab_, principal_;
  sasl_conn_t* conn_ = nullptr;
  gss_cred_id_t cred_ = GSS_C_NO_CREDENTIAL;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<SaslMechanism> make_gssapi(const SaslCredentials& creds) { return std::make_unique<Gssapi>(creds); }

}  // namespace kwire::client

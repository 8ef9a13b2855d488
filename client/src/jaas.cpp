// sasl.jaas.config, the Java client's JAAS line: its options, the
// username/password of the PLAIN and SCRAM login modules, and the keytab and
// principal of Krb5LoginModule. The one place JAAS text is parsed.
#include <fmt/format.h>

#include "kwire/client/errors.hpp"
#include "kwire/client/sasl.hpp"

namespace kwire::client {

std::optional<std::string> jaas_option(const std::string& jaas, const std::string& key) {
  std::size_t pos = 0;
  while ((pos = jaas.find(key, pos)) != std::string::npos) {
    bool starts = pos == 0 || jaas[pos - 1] == ' ' || jaas[pos - 1] == '\t' || jaas[pos - 1] == ';';
    std::size_t p = pos + key.size();
    while (p < jaas.size() && (jaas[p] == ' ' || jaas[p] == '\t')) ++p;
    if (starts && p < jaas.size() && jaas[p] == '=') {
      ++p;
      while (p < jaas.size() && (jaas[p] == ' ' || jaas[p] == '\t')) ++p;
      if (p < jaas.size() && jaas[p] == '"') {
        std::string v;
        for (++p; p < jaas.size() && jaas[p] != '"'; ++p) {
          if (jaas[p] == '\\' && p + 1 < jaas.size()) ++p;
          v += jaas[p];
        }
        return v;
      }
      auto end = jaas.find_first_of(" \t;", p);
      return jaas.substr(p, end == std::string::npos ? std::string::npos : end - p);
    }
    pos += key.size();
  }
  return std::nullopt;
}

void parse_jaas_config(const std::string& jaas, std::string& username, std::string& password) {
  auto value_of = [&](const std::string& key) { return jaas_option(jaas, key); };
  auto u = value_of("username");
  auto p = value_of("password");
  if (!u || !p) throw ConfigError("sasl.jaas.config must set username=\"...\" and password=\"...\"");
  username = *u;
  password = *p;
}

void parse_kerberos_jaas_config(const std::string& jaas, std::string& keytab, std::string& principal) {
  if (jaas.find("Krb5LoginModule") == std::string::npos)
    throw ConfigError(
        "sasl.jaas.config for GSSAPI must name "
        "com.sun.security.auth.module.Krb5LoginModule");
  auto use_keytab = jaas_option(jaas, "useKeyTab");
  auto kt = jaas_option(jaas, "keyTab");
  auto p = jaas_option(jaas, "principal");
  bool keytab_on = use_keytab && (*use_keytab == "true" || *use_keytab == "TRUE" || *use_keytab == "True");
  if (keytab_on && (!kt || kt->empty()))
    throw ConfigError("sasl.jaas.config sets useKeyTab=true but no keyTab=\"...\"");
  if (keytab_on) keytab = *kt;
  if (p) principal = *p;
}

}  // namespace kwire::client

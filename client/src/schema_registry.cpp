// The Schema Registry client (schema_registry.hpp): HTTP/1.1 over Boost.Beast,
// one connection per request, responses parsed with simdjson.
#include "kwire/client/schema_registry.hpp"

#include <charconv>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include "kwire/client/sasl.hpp"

namespace kwire::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

struct Endpoint {
  bool tls = false;
  std::string host;
  std::string port;
  std::string base_path;
  std::optional<std::string> url_user_info;
};

Endpoint parse_url(std::string_view url) {
  Endpoint e;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    e.tls = true;
    rest = url.substr(8);
  } else {
    throw ConfigError(fmt::format("schema.registry.url: \"{}\" is not an http:// or https:// URL", url));
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) e.base_path = std::string(rest.substr(slash));
  while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    e.url_user_info = std::string(authority.substr(0, at));
    authority = authority.substr(at + 1);
  }
  std::string_view host = authority;
  std::string_view port = e.tls ? "443" : "80";
  if (authority.starts_with("[")) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw ConfigError(fmt::format("schema.registry.url: bad host in \"{}\"", url));
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty() || port.empty()) throw ConfigError(fmt::format("schema.registry.url: bad host in \"{}\"", url));
  e.host = std::string(host);
  e.port = std::string(port);
  return e;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Subjects go into the path: everything but unreserved characters is escaped.
std::string path_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '_' || c == '.' || c == '~';
    out += keep ? std::string(1, c) : fmt::format("%{:02X}", static_cast<unsigned char>(c));
  }
  return out;
}

class HttpRegistry final : public SchemaRegistry {
 public:
  explicit HttpRegistry(SchemaRegistryConfig config) : config_(std::move(config)) {
    std::string_view urls = config_.url;
    while (!urls.empty()) {
      const auto comma = urls.find(',');
      std::string_view one = urls.substr(0, comma);
      while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
      while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
      if (!one.empty()) endpoints_.push_back(parse_url(one));
      urls = comma == std::string_view::npos ? std::string_view() : urls.substr(comma + 1);
    }
    if (endpoints_.empty()) throw ConfigError("schema.registry.url is empty");
  }

  RegisteredSchema schema_by_id(std::int32_t id) override {
    std::lock_guard lock(mutex_);
    if (auto it = by_id_.find(id); it != by_id_.end()) return it->second;
    RegisteredSchema s = parse_schema(request(http::verb::get, fmt::format("/schemas/ids/{}", id), {}));
    s.id = id;
    by_id_.emplace(id, s);
    return s;
  }

  RegisteredSchema latest(const std::string& subject) override {
    std::lock_guard lock(mutex_);
    RegisteredSchema s =
        parse_schema(request(http::verb::get, fmt::format("/subjects/{}/versions/latest", path_escape(subject)), {}));
    by_id_.emplace(s.id, s);
    return s;
  }

  RegisteredSchema schema_version(const std::string& subject, std::int32_t version) override {
    std::lock_guard lock(mutex_);
    RegisteredSchema s = parse_schema(
        request(http::verb::get, fmt::format("/subjects/{}/versions/{}", path_escape(subject), version), {}));
    by_id_.emplace(s.id, s);
    return s;
  }

  std::int32_t register_schema(const std::string& subject, const std::string& schema, const std::string& schema_type,
                               const std::vector<SchemaReference>& references) override {
    return post_schema(fmt::format("/subjects/{}/versions", path_escape(subject)), schema, schema_type, references);
  }

  std::int32_t lookup_schema(const std::string& subject, const std::string& schema, const std::string& schema_type,
                             const std::vector<SchemaReference>& references) override {
    return post_schema(fmt::format("/subjects/{}", path_escape(subject)), schema, schema_type, references);
  }

 private:
  std::int32_t post_schema(const std::string& path, const std::string& schema, const std::string& schema_type,
                           const std::vector<SchemaReference>& references) {
    std::lock_guard lock(mutex_);
    std::string body = "{\"schema\":" + json_string(schema);
    if (schema_type != "AVRO") body += ",\"schemaType\":" + json_string(schema_type);
    if (!references.empty()) {
      body += ",\"references\":[";
      for (std::size_t i = 0; i < references.size(); ++i) {
        const SchemaReference& r = references[i];
        body += fmt::format("{}{{\"name\":{},\"subject\":{},\"version\":{}}}", i ? "," : "", json_string(r.name),
                            json_string(r.subject), r.version);
      }
      body += "]";
    }
    body += "}";
    const std::string text = request(http::verb::post, path, body);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::int64_t id = 0;
    if (parser.parse(text).get(doc) || doc["id"].get_int64().get(id))
      throw SchemaRegistryError(fmt::format("schema registry: unexpected answer to a registration: {}", text), 200, 0);
    return static_cast<std::int32_t>(id);
  }

  RegisteredSchema parse_schema(const std::string& text) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    RegisteredSchema s;
    std::string_view schema;
    if (parser.parse(text).get(doc) || doc["schema"].get_string().get(schema))
      throw SchemaRegistryError(fmt::format("schema registry: unexpected answer (no \"schema\"): {}", text), 200, 0);
    s.schema = std::string(schema);
    std::string_view v;
    if (!doc["schemaType"].get_string().get(v)) s.schema_type = std::string(v);
    if (!doc["subject"].get_string().get(v)) s.subject = std::string(v);
    std::int64_t n = 0;
    if (!doc["id"].get_int64().get(n)) s.id = static_cast<std::int32_t>(n);
    if (!doc["version"].get_int64().get(n)) s.version = static_cast<std::int32_t>(n);
    simdjson::dom::array refs;
    if (!doc["references"].get_array().get(refs)) {
      for (simdjson::dom::element r : refs) {
        SchemaReference ref;
        std::string_view t;
        if (!r["name"].get_string().get(t)) ref.name = std::string(t);
        if (!r["subject"].get_string().get(t)) ref.subject = std::string(t);
        if (!r["version"].get_int64().get(n)) ref.version = static_cast<std::int32_t>(n);
        s.references.push_back(std::move(ref));
      }
    }
    return s;
  }

  // One request to the first endpoint that can be reached.
  std::string request(http::verb verb, const std::string& path, const std::string& body) {
    std::string last_error;
    for (const Endpoint& e : endpoints_) {
      int status = 0;
      std::string text;
      try {
        text = exchange(e, verb, e.base_path + path, body, &status);
      } catch (const beast::system_error& err) {
        last_error = fmt::format("{}://{}:{}: {}", e.tls ? "https" : "http", e.host, e.port, err.code().message());
        continue;
      }
      if (status >= 200 && status < 300) return text;
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      std::int64_t code = 0;
      std::string_view message = text;
      if (!parser.parse(text).get(doc)) {
        if (doc["error_code"].get_int64().get(code)) code = 0;
        if (doc["message"].get_string().get(message)) message = text;
      }
      throw SchemaRegistryError(fmt::format("schema registry: {} {} answered HTTP {} (error {}): {}",
                                            std::string(http::to_string(verb)), path, status, code, message),
                                status, static_cast<int>(code));
    }
    throw SchemaRegistryError(fmt::format("schema registry unreachable: {}", last_error), 0, 0);
  }

  template <class Stream>
  std::string send(Stream& stream, beast::tcp_stream& tcp, const Endpoint& e, http::verb verb,
                   const std::string& target, const std::string& body, int* status, asio::io_context& io) {
    http::request<http::string_body> req{verb, target, 11};
    // RFC 9110's Host: the port unless it is the scheme's, IPv6 in brackets.
    std::string host = e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host;
    if (e.port != (e.tls ? "443" : "80")) host += ":" + e.port;
    req.set(http::field::host, host);
    req.set(http::field::user_agent, "kwire");
    req.set(http::field::accept, "application/vnd.schemaregistry.v1+json, application/json");
    const std::optional<std::string>& user = config_.user_info ? config_.user_info : e.url_user_info;
    if (user) req.set(http::field::authorization, "Basic " + base64_encode(*user));
    if (!body.empty()) {
      req.set(http::field::content_type, "application/vnd.schemaregistry.v1+json");
      req.body() = body;
      req.prepare_payload();
    }
    beast::error_code ec;
    tcp.expires_after(std::chrono::milliseconds(config_.request_timeout_ms));
    http::async_write(stream, req, [&](beast::error_code c, std::size_t) { ec = c; });
    io.run();
    io.restart();
    if (ec) throw beast::system_error(ec);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::async_read(stream, buffer, res, [&](beast::error_code c, std::size_t) { ec = c; });
    io.run();
    io.restart();
    if (ec) throw beast::system_error(ec);
    *status = static_cast<int>(res.result_int());
    return std::move(res.body());
  }

  std::string exchange(const Endpoint& e, http::verb verb, const std::string& target, const std::string& body,
                       int* status) {
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    beast::error_code ec;
    const auto results = resolver.resolve(e.host, e.port, ec);
    if (ec) throw beast::system_error(ec);
    beast::tcp_stream tcp(io);
    tcp.expires_after(std::chrono::milliseconds(config_.request_timeout_ms));
    tcp.async_connect(results, [&](beast::error_code c, const auto&) { ec = c; });
    io.run();
    io.restart();
    if (ec) throw beast::system_error(ec);
    if (!e.tls) {
      std::string out = send(tcp, tcp, e, verb, target, body, status, io);
      tcp.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
      return out;
    }
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    if (config_.ca_location) {
      ctx.load_verify_file(*config_.ca_location, ec);
      if (ec)
        throw ConfigError(
            fmt::format("schema.registry.ssl.ca.location: cannot read {}: {}", *config_.ca_location, ec.message()));
    } else {
      ctx.set_default_verify_paths();
    }
    ctx.set_verify_mode(asio::ssl::verify_peer);
    if (config_.verify_host) ctx.set_verify_callback(asio::ssl::host_name_verification(e.host));
    beast::ssl_stream<beast::tcp_stream&> tls(tcp, ctx);
    SSL_set_tlsext_host_name(tls.native_handle(), e.host.c_str());
    tls.async_handshake(asio::ssl::stream_base::client, [&](beast::error_code c) { ec = c; });
    io.run();
    io.restart();
    if (ec) throw beast::system_error(ec);
    return send(tls, tcp, e, verb, target, body, status, io);
  }

  SchemaRegistryConfig config_;
  std::vector<Endpoint> endpoints_;
  std::mutex mutex_;
  std::unordered_map<std::int32_t, RegisteredSchema> by_id_;
};

}  // namespace

SchemaRegistryConfig SchemaRegistryConfig::from_properties(const std::map<std::string, std::string>& props) {
  SchemaRegistryConfig c;
  auto get = [&](const char* key) -> std::optional<std::string> {
    auto it = props.find(key);
    if (it == props.end()) return std::nullopt;
    return it->second;
  };
  auto url = get("schema.registry.url");
  if (!url || url->empty()) throw ConfigError("schema.registry.url is required");
  c.url = *url;
  const std::string source = get("basic.auth.credentials.source").value_or("USER_INFO");
  if (source == "USER_INFO") {
    c.user_info = get("basic.auth.user.info");
    if (c.user_info && c.user_info->empty()) c.user_info.reset();
  } else if (source != "URL") {
    throw ConfigError(fmt::format("basic.auth.credentials.source: \"{}\" is not USER_INFO or URL", source));
  }
  c.ca_location = get("schema.registry.ssl.ca.location");
  if (auto alg = get("schema.registry.ssl.endpoint.identification.algorithm")) {
    if (*alg == "https") {
      c.verify_host = true;
    } else if (alg->empty()) {
      c.verify_host = false;
    } else {
      throw ConfigError(
          fmt::format("schema.registry.ssl.endpoint.identification.algorithm: \"{}\" is not https or empty", *alg));
    }
  }
  if (auto t = get("schema.registry.request.timeout.ms")) {
    std::int32_t v = 0;
    const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
    if (ec != std::errc() || end != t->data() + t->size() || t->empty())
      throw ConfigError(fmt::format("schema.registry.request.timeout.ms: \"{}\" is not a number", *t));
    c.request_timeout_ms = v;
    if (c.request_timeout_ms <= 0) throw ConfigError("schema.registry.request.timeout.ms must be positive");
  }
  return c;
}

RegisteredSchema SchemaRegistry::schema_version(const std::string& subject, std::int32_t version) {
  throw SchemaRegistryError(
      fmt::format("schema registry: reading version {} of \"{}\" is not supported", version, subject), 0, 0);
}

std::int32_t SchemaRegistry::lookup_schema(const std::string& subject, const std::string&, const std::string&,
                                           const std::vector<SchemaReference>&) {
  throw SchemaRegistryError(fmt::format("schema registry: looking schemas up in \"{}\" is not supported", subject), 0,
                            0);
}

std::shared_ptr<SchemaRegistry> make_schema_registry(const SchemaRegistryConfig& config) {
  return std::make_shared<HttpRegistry>(config);
}

std::optional<std::int32_t> confluent_schema_id(std::span<const std::uint8_t> value) {
  if (value.size() < 5 || value[0] != 0) return std::nullopt;
  return static_cast<std::int32_t>((std::uint32_t{value[1]} << 24) | (std::uint32_t{value[2]} << 16) |
                                   (std::uint32_t{value[3]} << 8) | std::uint32_t{value[4]});
}

std::string confluent_header(std::int32_t id) {
  const auto u = static_cast<std::uint32_t>(id);
  return {'\0', static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
          static_cast<char>(u)};
}

}  // namespace kwire::client

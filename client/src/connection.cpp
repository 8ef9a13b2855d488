#include "kwire/client/connection.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "kwire/protocol/messages/api_versions.hpp"
#include "kwire/protocol/messages/sasl_authenticate.hpp"
#include "kwire/protocol/messages/sasl_handshake.hpp"
#include "kwire/version.hpp"

#include "connection_tls.hpp"
#include "frame_pool.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace kwire::client {

namespace {
// The most one write call is given (the socket takes what its buffer has room for).
constexpr std::size_t kMaxWriteCall = std::size_t{64} << 20;

// Run `f` with the stream requests travel on: the TLS stream when there is one,
// else the plain socket.
template <class F>
void on_stream(detail::TlsStream* tls, tcp::socket& socket, F&& f) {
  if (tls) f(tls->stream);
  else f(socket);
}

}  // namespace

using namespace kwire::protocol;

Connection::Connection(asio::io_context& io, std::string host, std::uint16_t port, ConnectionOptions opts)
    : io_(io), host_(std::move(host)), port_(port), opts_(std::move(opts)), alive_(std::make_shared<bool>(true)) {}

Connection::~Connection() {
  *alive_ = false;
  close();
  // Drain handlers that still reference this object (they check alive_).
  drain();
}

void Connection::drain() noexcept {
  try {
    if (io_.stopped()) io_.restart();
    io_.poll();
    if (io_.stopped()) io_.restart();
  } catch (...) {
    // The handlers here only record outcomes; none throws.
  }
}

std::string Connection::endpoint() const { return fmt::format("{}:{}", host_, port_); }

bool Connection::is_open() const noexcept {
  return socket_ && socket_->is_open() && !error_ && setup_ == Setup::done && !abandoned_expired();
}

bool Connection::abandoned_expired() const noexcept {
  const auto now = Clock::now();
  for (auto& [corr, p] : pending_)
    if (p.abandoned && now >= p.expires_at) return true;
  return false;
}

void Connection::close() noexcept {
  if (throttle_timer_) throttle_timer_->cancel();
  if (socket_) {
    boost::system::error_code ec;
    socket_->shutdown(tcp::socket::shutdown_both, ec);
    socket_->close(ec);
  }
}

void Connection::run_until(const std::function<bool()>& done, Deadline deadline, const char* what) {
  while (!done()) {
    if (!error_ && abandoned_expired()) fail("a request went unanswered for request.timeout.ms");
    if (opts_.interrupted && opts_.interrupted->load())
      throw ConnectionError(
          fmt::format("waiting for {} from {} was interrupted: the client is closing", what, endpoint()));
    if (error_) {
      auto msg = fmt::format("connection to {} failed: {}", endpoint(), *error_);
      // Closed during the ApiVersions exchange or right after it (before any
      // other answer): the usual cause is a listener of another protocol.
      if (!tls_failure_ && responses_ <= handshake_responses_)
        msg += " (is security.protocol right? the broker may expect SSL or SASL on this port)";
      if (tls_failure_) throw TlsError(msg);
      throw ConnectionError(msg);
    }
    auto now = Clock::now();
    if (now >= deadline) {
      // Whatever is ready is taken before giving up, so that a caller with
      // no time left (a poll(0)) still moves things on.
      if (io_.stopped()) io_.restart();
      io_.poll();
      if (done()) return;
      throw TimeoutError(fmt::format("timed out waiting for {} from {}", what, endpoint()));
    }
    if (io_.stopped()) io_.restart();
    io_.run_one_for(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                    std::chrono::milliseconds(1));
  }
}

void Connection::begin_setup(Deadline deadline) {
  if (socket_) {
    // Reconnecting: close the old socket and let its cancelled reads and
    // writes finish now, while the stream they use still exists, so they
    // cannot mark the new connection failed later.
    close();
    drain();
  }
  setup_ = Setup::none;
  error_.reset();
  pending_.clear();
  write_queue_.clear();
  writing_ = false;
  if (throttle_timer_) throttle_timer_->cancel();
  throttle_timer_.reset();
  tls_.reset();
  tls_failure_.reset();
  reauthenticate_at_ = Clock::time_point::max();
  session_expires_at_ = Clock::time_point::max();
  socket_ = std::make_unique<tcp::socket>(io_);

  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto endpoints = resolver.resolve(host_, std::to_string(port_), ec);
  if (ec) throw ConnectionError(fmt::format("cannot resolve broker host '{}': {}", host_, ec.message()));

  setup_deadline_ = deadline;
  tcp_deadline_ = std::min(deadline, Clock::now() + opts_.connect_timeout);
  // The outcome outlives this call: a connect cut short is waited for again.
  auto outcome = std::make_shared<std::pair<bool, boost::system::error_code>>(false, boost::system::error_code{});
  tcp_outcome_ = outcome;
  asio::async_connect(*socket_, endpoints, [outcome](const boost::system::error_code& e, const tcp::endpoint&) {
    outcome->second = e;
    outcome->first = true;
  });
  setup_ = Setup::tcp;
}

void Connection::connect(Deadline deadline, Deadline cut) {
  if (setup_ == Setup::none || setup_ == Setup::done) begin_setup(deadline);
  bool cut_short = false;  // by `cut`: the setup stays as it is for the next call
  try {
    if (setup_ == Setup::tcp) {
      const auto outcome = tcp_outcome_;
      try {
        run_until([&] { return outcome->first; }, std::min(tcp_deadline_, cut), "TCP connect");
      } catch (const TimeoutError&) {
        if (Clock::now() < tcp_deadline_) {
          cut_short = true;
          throw;
        }
        throw TimeoutError(fmt::format("timed out connecting to broker {}", endpoint()));
      }
      // A failed connect leaves the socket opened but unconnected: it is
      // closed below, so is_open() is false and the next use reconnects.
      if (outcome->second)
        throw ConnectionError(fmt::format("cannot connect to broker {}: {}", endpoint(), outcome->second.message()));
      boost::system::error_code ec;
      socket_->set_option(tcp::no_delay(true), ec);
      if (opts_.socket_receive_buffer_bytes > 0)
        socket_->set_option(asio::socket_base::receive_buffer_size(opts_.socket_receive_buffer_bytes), ec);
      if (opts_.socket_send_buffer_bytes > 0)
        socket_->set_option(asio::socket_base::send_buffer_size(opts_.socket_send_buffer_bytes), ec);
      if (opts_.tls.enabled) start_tls(setup_deadline_);
      start_read();
      responses_ = 0;
      handshake_responses_ = std::numeric_limits<std::uint64_t>::max();
      ApiVersionsRequest req;
      req.client_software_name = "kwire";
      req.client_software_version = KWIRE_VERSION_STRING;
      versions_version_ = 3;
      versions_corr_ = send(req, versions_version_);
      setup_ = Setup::versions;
    }
    negotiate(cut, cut_short);
    if (opts_.sasl.enabled) authenticate(setup_deadline_);
    handshake_responses_ = responses_;
  } catch (...) {
    // Never leave a connection that looks open without negotiated versions
    // (or authentication): the next use must connect again.
    if (!cut_short) {
      setup_ = Setup::none;
      close();
      drain();
    }
    throw;
  }
  setup_ = Setup::done;
  ++connects_;
}

Clock::time_point Connection::reauthentication_time(Clock::time_point start, std::chrono::milliseconds lifetime,
                                                    double fraction) noexcept {
  fraction = std::clamp(fraction, 0.0, 1.0);
  return start + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double, std::milli>(static_cast<double>(lifetime.count()) * fraction));
}

Connection::SessionRenewal Connection::renewal_action(Clock::time_point now, Clock::time_point reauthenticate_at,
                                                      Clock::time_point expires_at, std::size_t in_flight) noexcept {
  if (now < reauthenticate_at) return SessionRenewal::none;
  if (now < expires_at) return SessionRenewal::reauthenticated;
  return in_flight == 0 ? SessionRenewal::reconnected : SessionRenewal::none;
}

Connection::SessionRenewal Connection::renew_session_if_due(Deadline deadline) {
  if (!opts_.sasl.enabled || !is_open()) return SessionRenewal::none;
  switch (renewal_action(Clock::now(), reauthenticate_at_, session_expires_at_, in_flight())) {
    case SessionRenewal::none: return SessionRenewal::none;
    case SessionRenewal::reauthenticated:
      // SaslHandshake + SaslAuthenticate queue behind the requests in flight;
      // their answers are kept by correlation id as usual.
      authenticate(deadline);
      ++reauthentications_;
      return SessionRenewal::reauthenticated;
    case SessionRenewal::reconnected: connect(deadline); return SessionRenewal::reconnected;
  }
  return SessionRenewal::none;
}

void Connection::authenticate(Deadline deadline) {
  SaslCredentials creds = opts_.sasl.credentials;
  if (creds.mechanism == "OAUTHBEARER" && opts_.sasl.token_callback) creds.oauth_token = opts_.sasl.token_callback();
  creds.broker_host = host_;  // GSSAPI: the broker's principal is SERVICE/HOST
  auto mech = make_sasl_mechanism(creds);
  const std::string& name = mech->name();
  auto refuse = [&](const std::string& why) {
    fail("SASL authentication failed");
    // The broker's message is echoed: make sure it cannot carry a secret back.
    std::string text = why;
    for (const std::string* secret : {&creds.password, &creds.oauth_token}) {
      if (secret->size() < 4) continue;
      for (auto pos = text.find(*secret); pos != std::string::npos; pos = text.find(*secret, pos))
        text.replace(pos, secret->size(), "[redacted]");
    }
    throw AuthenticationError(name, text);
  };
  if (pick_version(static_cast<std::int16_t>(ApiKey::sasl_handshake), 1, 1) != 1)
    refuse(fmt::format("{}: broker {} does not support SaslHandshake v1", name, endpoint()));
  SaslHandshakeRequest hello;
  hello.mechanism = name;
  auto hs = request<SaslHandshakeResponse>(hello, deadline);
  if (hs.body.error_code != 0) {
    std::string offered;
    for (auto& m : hs.body.mechanisms) offered += (offered.empty() ? "" : ", ") + m;
    refuse(fmt::format("SASL mechanism {} is not enabled on broker {} (it offers: {}; error code {})", name, endpoint(),
                       offered.empty() ? "none" : offered, hs.body.error_code));
  }
  std::string token;
  try {
    token = mech->initial();
  } catch (const AuthenticationError& e) {
    refuse(fmt::format("{} (broker {})", e.what(), endpoint()));
  }
  const auto started = Clock::now();
  for (;;) {
    SaslAuthenticateRequest step;
    step.auth_bytes.assign(token.begin(), token.end());
    auto resp = request<SaslAuthenticateResponse>(step, deadline);
    if (resp.body.error_code != 0) {
      auto detail = mech->server_error();
      if (resp.body.error_message && resp.body.error_message->find(detail) != std::string::npos) detail.clear();
      refuse(fmt::format("{} authentication to broker {} failed: {} (error code {}{})", name, endpoint(),
                         resp.body.error_message.value_or("no message"), resp.body.error_code,
                         detail.empty() ? "" : "; broker says " + detail));
    }
    if (resp.body.session_lifetime_ms > 0) {
      // KIP-368: renew at 85% to 95% of the lifetime (measured from when the
      // exchange started), jittered so connections do not renew together.
      static thread_local std::mt19937 rng{std::random_device{}()};
      const std::chrono::milliseconds lifetime{resp.body.session_lifetime_ms};
      session_expires_at_ = started + lifetime;
      reauthenticate_at_ =
          reauthentication_time(started, lifetime, std::uniform_real_distribution<double>(0.85, 0.95)(rng));
    } else {
      session_expires_at_ = reauthenticate_at_ = Clock::time_point::max();
    }
    std::optional<std::string> next;
    try {
      next = mech->step(std::string(resp.body.auth_bytes.begin(), resp.body.auth_bytes.end()));
    } catch (const AuthenticationError& e) {
      refuse(fmt::format("{} (broker {})", e.what(), endpoint()));
    }
    if (!next) break;
    token = std::move(*next);
  }
}

void Connection::negotiate(Deadline cut, bool& cut_short) {
  auto frame = wait_frame(versions_corr_, setup_deadline_, cut, &cut_short);
  // A broker that does not speak v3 answers UNSUPPORTED_VERSION in the v0
  // layout, which does not decode as v3. The error code is the body's first
  // field in every version (after the 4-byte correlation id), so look at it
  // before decoding, then ask again with v0.
  constexpr std::int16_t kUnsupportedVersion = 35;
  if (versions_version_ == 3 && frame->size() >= 6 &&
      static_cast<std::int16_t>(load_be16(frame->data() + 4)) == kUnsupportedVersion) {
    versions_version_ = 0;
    versions_corr_ = send(ApiVersionsRequest{}, versions_version_);
    frame = wait_frame(versions_corr_, setup_deadline_, cut, &cut_short);
  }
  auto resp = decode_frame<ApiVersionsResponse>(std::move(frame), versions_version_);
  if (resp.body.error_code != 0)
    throw KafkaError(resp.body.error_code,
                     fmt::format("ApiVersions to {} failed with error code {}", endpoint(), resp.body.error_code));
  versions_.clear();
  for (auto& k : resp.body.api_keys) versions_[k.api_key] = VersionRange{k.min_version, k.max_version};
  finalized_features_.clear();
  for (auto& f : resp.body.finalized_features) finalized_features_[f.name] = f.max_version_level;
}

std::int16_t Connection::pick_version(std::int16_t api_key, std::int16_t ours_min, std::int16_t ours_max) const {
  auto it = versions_.find(api_key);
  if (it == versions_.end())
    throw UnsupportedVersionError(
        fmt::format("broker {} does not support {} (API key {})", endpoint(), api_name(api_key), api_key));
  std::int16_t hi = std::min(ours_max, it->second.max);
  std::int16_t lo = std::max(ours_min, it->second.min);
  if (hi < lo)
    throw UnsupportedVersionError(fmt::format("no common version of {}: broker {} speaks {}-{}, kwire speaks {}-{}",
                                              api_name(api_key), endpoint(), it->second.min, it->second.max, ours_min,
                                              ours_max));
  return hi;
}

std::shared_ptr<Bytes> Connection::request_buffer(std::size_t size) { return detail::make_empty_frame(size); }

void Connection::enqueue(std::int32_t corr, std::int16_t api_key, std::int16_t version, OutFrame frame,
                         bool expect_response) {
  if (!error_ && abandoned_expired()) fail("a request went unanswered for request.timeout.ms");
  if (!socket_ || error_)
    throw ConnectionError(fmt::format("connection to {} is not open{}", endpoint(), error_ ? ": " + *error_ : ""));
  if (expect_response) pending_[corr] = Pending{api_key, version, nullptr, Clock::now() + opts_.request_timeout};
  write_queue_.push_back(std::move(frame));
  start_write();
}

void Connection::note_throttle(std::int32_t throttle_ms) {
  if (throttle_ms <= 0) return;
  throttled_until_ = std::max(throttled_until_, Clock::now() + std::chrono::milliseconds(throttle_ms));
}

void Connection::start_write() {
  if (writing_ || write_queue_.empty() || error_) return;
  if (Clock::now() < throttled_until_) {
    // The broker is throttling us: hold the queue until the throttle ends.
    if (!throttle_timer_) throttle_timer_ = std::make_unique<asio::steady_timer>(io_);
    writing_ = true;
    throttle_timer_->expires_at(throttled_until_);
    auto alive = alive_;
    throttle_timer_->async_wait([this, alive](const boost::system::error_code& ec) {
      if (!*alive || ec) return;  // cancelled by close() or a reconnect, which reset the queue
      writing_ = false;
      start_write();
    });
    return;
  }
  writing_ = true;
  const OutFrame& out = write_queue_.front();
  auto alive = alive_;
  // The handler owns the frame and what the gaps point into (a copy of the
  // entry's references) until the write has ended, even when the connection
  // is closed or gone by then.
  auto done = [this, alive, frame = out.frame, keep = out.keep](const boost::system::error_code& ec, std::size_t) {
    if (!*alive) return;
    writing_ = false;
    if (ec) {
      fail_io("write failed", ec);
      return;
    }
    write_queue_.pop_front();
    start_write();
  };
  // Each write call takes as much as the socket accepts (asio's default
  // stops every call at 64 KiB: a syscall and a wake-up per 64 KiB of a
  // Produce request of megabytes).
  auto as_much_as_accepted = [](const boost::system::error_code& ec, std::size_t) -> std::size_t {
    return ec ? 0 : kMaxWriteCall;
  };
  if (out.gaps.empty()) {
    on_stream(tls_.get(), *socket_, [&](auto& stream) {
      asio::async_write(stream, asio::buffer(*out.frame), as_much_as_accepted, std::move(done));
    });
    return;
  }
  // A gather write: the frame's pieces between the gaps, and the gaps'
  // bytes from where they are.
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(2 * out.gaps.size() + 1);
  const Bytes& f = *out.frame;
  std::size_t at = 0;
  for (const auto& g : out.gaps) {
    if (g.at > at) buffers.emplace_back(f.data() + at, g.at - at);
    buffers.emplace_back(g.bytes.data(), g.bytes.size());
    at = g.at;
  }
  if (f.size() > at) buffers.emplace_back(f.data() + at, f.size() - at);
  on_stream(tls_.get(), *socket_,
            [&](auto& stream) { asio::async_write(stream, std::move(buffers), as_much_as_accepted, std::move(done)); });
}

void Connection::start_read() {
  auto alive = alive_;
  on_stream(tls_.get(), *socket_, [&](auto& stream) {
    asio::async_read(stream, asio::buffer(size_buf_, 4),
                     [this, alive](const boost::system::error_code& ec, std::size_t) {
                       if (!*alive) return;
                       if (ec) {
                         if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated)
                           fail("broker closed the connection");
                         else fail_io("read failed", ec);
                         return;
                       }
                       auto size = static_cast<std::int32_t>(load_be32(size_buf_));
                       if (size < 4 || static_cast<std::size_t>(size) > opts_.max_response_bytes) {
                         fail(fmt::format("invalid response frame size {}", size));
                         return;
                       }
                       read_buf_ = detail::make_frame(static_cast<std::size_t>(size));
                       read_body();
                     });
  });
}

void Connection::read_body() {
  auto alive = alive_;
  on_stream(tls_.get(), *socket_, [&](auto& stream) {
    asio::async_read(stream, asio::buffer(*read_buf_), [this, alive](const boost::system::error_code& ec, std::size_t) {
      if (!*alive) return;
      if (ec) {
        fail_io("read failed", ec);
        return;
      }
      auto corr = static_cast<std::int32_t>(load_be32(read_buf_->data()));
      auto it = pending_.find(corr);
      if (it == pending_.end() || it->second.response) {
        fail(fmt::format("response with unexpected correlation id {}", corr));
        return;
      }
      if (it->second.abandoned) pending_.erase(it);  // nobody waits for it any more
      else it->second.response = std::move(read_buf_);
      ++responses_;
      start_read();
    });
  });
}

void Connection::fail_io(const std::string& what, const boost::system::error_code& ec) {
  if (!error_ && ec.category() == asio::error::get_ssl_category()) {
    // An alert from the broker after the handshake: with TLS 1.3 a refused
    // client certificate is only reported on the first read.
    const auto& t = opts_.tls;
    tls_failure_ = ec.message();
    fail(fmt::format("{}: TLS error with host '{}': {}{}", what, host_, ec.message(),
                     detail::tls_alert_hint(ec, !t.certificate_pem.empty() || !t.certificate_location.empty())));
    return;
  }
  fail(what + ": " + ec.message());
}

void Connection::fail(const std::string& why) {
  if (!error_) error_ = why;
  close();
}

std::shared_ptr<const Bytes> Connection::wait_frame(std::int32_t corr, Deadline deadline, Deadline cut,
                                                    bool* cut_short) {
  auto it = pending_.find(corr);
  if (it == pending_.end()) throw ClientError(fmt::format("no request with correlation id {} is pending", corr));
  auto key = it->second.api_key;
  std::string what = std::string(api_name(key)) + " response";
  try {
    run_until([&] { return it->second.response != nullptr; }, std::min(deadline, cut), what.c_str());
  } catch (const TimeoutError&) {
    const auto now = Clock::now();
    if (cut_short && now < deadline) {
      *cut_short = true;  // cut short by the caller: the request stays pending for the next wait
      throw;
    }
    // A wait that ends well before the request's own expiry (a caller's
    // shorter deadline) gives the request up but keeps the connection: the
    // answer is matched by correlation id and dropped when it comes. A
    // request unanswered for request.timeout.ms fails the connection.
    constexpr auto kSlack = std::chrono::milliseconds(100);
    if (!error_ && now + kSlack < it->second.expires_at) {
      it->second.abandoned = true;
      throw;
    }
    pending_.erase(it);
    fail("request timed out");
    throw;
  } catch (...) {
    pending_.erase(it);
    throw;
  }
  auto frame = std::move(it->second.response);
  pending_.erase(it);
  return frame;
}

void Connection::malformed(ApiKey key, std::int16_t version, const Reader& r) {
  std::string why = fmt::format("malformed {} v{} response from {}: {} at byte {}", api_name(key), version, endpoint(),
                                r.error() ? r.error() : "?", r.error_offset());
  fail(why);
  throw MalformedResponseError(why);
}

}  // namespace kwire::client

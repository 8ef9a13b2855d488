// One TCP connection to one Kafka broker, on Boost.Asio.
//
// Requests are pipelined: send() writes a frame and returns its correlation id
// at once; receive() waits (with a deadline) for the response carrying that id.
// Several connections share one io_context, so waiting on one connection keeps
// the others' reads and writes moving: a caller can send fetches to every
// leader and then collect the answers as they arrive.
//
// On connect the broker's API versions are read with ApiVersions (v3, falling
// back to v0 when the broker answers UNSUPPORTED_VERSION), and each request
// uses the highest version both sides speak.
//
// Security: with TLS on, the TCP stream is wrapped in an OpenSSL stream after
// connecting (SNI carries the host name unless it is an IP literal; the
// certificate is checked against the host name or IP address unless hostname
// verification is off). With SASL on, SaslHandshake v1 and SaslAuthenticate
// follow ApiVersions. When the broker gives the session a lifetime (KIP-368,
// connections.max.reauth.ms or a token's expiry), renew_session_if_due()
// re-authenticates on the same connection (SaslHandshake + SaslAuthenticate
// again) between 85% and 95% of it, as Kafka's Java client does; the broker
// closes a connection whose session ran out.
//
// Quotas (KIP-219): a response carrying throttle_time_ms > 0 holds back every
// later request on this connection until the throttle time has passed; the
// requests are queued and written when it ends.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "kwire/client/errors.hpp"
#include "kwire/client/sasl.hpp"
#include "kwire/client/types.hpp"
#include "kwire/protocol/header.hpp"

namespace kwire::client {

struct VersionRange {
  std::int16_t min = 0;
  std::int16_t max = -1;
};

struct TlsOptions {
  bool enabled = false;
  std::string ca_location;           // PEM file or directory of hashed certs; empty = system trust store
  std::string ca_pem;                // CA certificates as PEM text (added to ca_location / the system store)
  std::string certificate_location;  // client certificate chain (PEM), for mutual TLS
  std::string certificate_pem;       // client certificate chain as PEM text (instead of certificate_location)
  std::string key_location;          // client private key (PEM, clear or encrypted)
  std::string key_pem;               // client private key as PEM text (instead of key_location)
  std::string key_password;          // for an encrypted private key
  bool verify_hostname = true;       // ssl.endpoint.identification.algorithm=https
};

struct SaslOptions {
  bool enabled = false;
  SaslCredentials credentials;
  /// OAUTHBEARER: called at each authentication when set (else credentials.oauth_token).
  std::function<std::string()> token_callback;
};

namespace detail {
struct TlsStream;
}

struct ConnectionOptions {
  std::string client_id = "kwire";
  std::chrono::milliseconds connect_timeout{10000};
  /// How long a request may go unanswered (request.timeout.ms). A wait that
  /// ends sooner (a caller's own deadline, e.g. a poll's) leaves the
  /// connection open and the request in flight, its late answer dropped; a
  /// request unanswered this long fails the connection, as in Java's
  /// NetworkClient.
  std::chrono::milliseconds request_timeout{30000};
  /// Largest response frame accepted (bytes); larger sizes are treated as corrupt.
  std::size_t max_response_bytes = std::size_t{1} << 30;
  int socket_receive_buffer_bytes = 0;  // 0 = OS default
  int socket_send_buffer_bytes = 0;
  TlsOptions tls;
  SaslOptions sasl;
  /// Set (from any thread) to end every wait of the connection at once with
  /// ConnectionError; the waiting thread is woken by stopping its io_context
  /// (KafkaClient::interrupt does both).
  std::shared_ptr<const std::atomic<bool>> interrupted;
};

class Connection {
 public:
  Connection(boost::asio::io_context& io, std::string host, std::uint16_t port, ConnectionOptions opts = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Connect and negotiate API versions (TLS and SASL when configured) by
  /// `deadline`. Throws ConnectionError / TimeoutError.
  ///
  /// `cut` (a caller's own deadline, earlier than `deadline`) may end the
  /// call sooner, with TimeoutError: then the TCP connect or the ApiVersions
  /// exchange in progress is kept, connecting() is true, and the next
  /// connect() goes on from there (its `deadline` is the first call's), so a
  /// caller with short deadlines still gets connected. A TLS or SASL
  /// handshake is not cut (it cannot be taken up again): it ends by `deadline`.
  void connect(Deadline deadline, Deadline cut = Deadline::max());
  /// A setup cut short by connect()'s `cut` waits to be taken up again.
  bool connecting() const noexcept { return setup_ == Setup::tcp || setup_ == Setup::versions; }
  bool is_open() const noexcept;
  void close() noexcept;

  const std::string& host() const noexcept { return host_; }
  std::uint16_t port() const noexcept { return port_; }
  std::string endpoint() const;

  /// Versions the broker advertised for each API key.
  const std::map<std::int16_t, VersionRange>& broker_versions() const noexcept { return versions_; }
  /// The cluster's finalized feature levels the broker reported in ApiVersions
  /// (v3+, KIP-584): name -> max version level, e.g. "transaction.version" -> 2
  /// when transactions v2 (KIP-890) are on. Empty for older brokers.
  const std::map<std::string, std::int16_t>& finalized_features() const noexcept { return finalized_features_; }
  /// Highest version of M both sides speak; throws UnsupportedVersionError.
  /// A message whose newest versions need fields a caller must fill in (topic
  /// ids in OffsetCommit/OffsetFetch v10) declares `default_max_version`, and
  /// this stops there; ask pick_version for more.
  template <protocol::Message M>
  std::int16_t version_for() const {
    if constexpr (requires { M::default_max_version; })
      return pick_version(static_cast<std::int16_t>(M::api_key), M::min_version, M::default_max_version);
    else return pick_version(static_cast<std::int16_t>(M::api_key), M::min_version, M::max_version);
  }
  std::int16_t pick_version(std::int16_t api_key, std::int16_t ours_min, std::int16_t ours_max) const;

  /// Queue a request; returns its correlation id. `expect_response` false is for
  /// Produce with acks=0, which the broker never answers.
  template <protocol::Message M>
  std::int32_t send(const M& request, std::int16_t version, bool expect_response = true) {
    std::int32_t corr = next_correlation_id_++;
    auto frame = request_buffer(protocol::request_frame_size(request, version, corr, opts_.client_id));
    protocol::encode_request_frame(*frame, request, version, corr, opts_.client_id);
    enqueue(corr, static_cast<std::int16_t>(M::api_key), version, OutFrame{std::move(frame), {}, nullptr},
            expect_response);
    return corr;
  }

  /// send() without copying the request's RECORDS (a Produce request's
  /// record batches) into the frame: the frame holds the rest, and one
  /// gather write sends it with the batches from where they are. `keep` owns
  /// the batches' memory; it is held until the write has ended (or the
  /// connection is gone), and the bytes must not change before then.
  template <protocol::Message M>
  std::int32_t send_gather(const M& request, std::int16_t version, bool expect_response,
                           std::shared_ptr<const void> keep) {
    std::int32_t corr = next_correlation_id_++;
    OutFrame f{std::make_shared<protocol::Bytes>(), {}, std::move(keep)};
    f.frame->reserve(256);
    protocol::encode_request_frame_gather(*f.frame, f.gaps, request, version, corr, opts_.client_id);
    enqueue(corr, static_cast<std::int16_t>(M::api_key), version, std::move(f), expect_response);
    return corr;
  }

  /// Wait for the response with correlation id `corr` and decode it as M.
  template <protocol::Message M>
  Response<M> receive(std::int32_t corr, std::int16_t version, Deadline deadline) {
    return decode_frame<M>(wait_frame(corr, deadline), version);
  }

  /// send + receive.
  template <protocol::Message Resp, protocol::Message Req>
  Response<Resp> request(const Req& req, Deadline deadline) {
    std::int16_t v = version_for<Req>();
    auto corr = send(req, v);
    return receive<Resp>(corr, v, deadline);
  }

  /// Number of requests sent and not yet answered.
  std::size_t in_flight() const noexcept { return pending_.size(); }

  /// True when receive(corr) would not wait: the response has arrived, the
  /// connection failed, or no such request is pending.
  bool ready(std::int32_t corr) const noexcept {
    auto it = pending_.find(corr);
    return it == pending_.end() || it->second.response != nullptr || error_.has_value();
  }

  /// When the SASL session should be renewed (85% to 95% of the broker's
  /// session lifetime, drawn at each authentication); time_point::max() when
  /// the broker set no limit.
  Clock::time_point reauthenticate_at() const noexcept { return reauthenticate_at_; }
  /// When the broker ends the SASL session (time_point::max() when never).
  Clock::time_point session_expires_at() const noexcept { return session_expires_at_; }

  /// What renew_session_if_due() did.
  enum class SessionRenewal { none, reauthenticated, reconnected };
  /// KIP-368: once reauthenticate_at() has passed, re-authenticate on this
  /// connection (requests already in flight are answered first: the broker
  /// takes requests in order). A session that already ended cannot be renewed
  /// in place (the broker closes the connection at its next request), so an
  /// idle connection is then reconnected; with requests in flight nothing is
  /// done. Throws AuthenticationError (and closes the connection) when the
  /// broker refuses, ConnectionError / TimeoutError as connect() does.
  SessionRenewal renew_session_if_due(Deadline deadline);
  /// The rule renew_session_if_due() follows at `now`: none before
  /// `reauthenticate_at`; then reauthenticated while the session lasts
  /// (before `expires_at`); after that reconnected when `in_flight` is 0,
  /// else none.
  static SessionRenewal renewal_action(Clock::time_point now, Clock::time_point reauthenticate_at,
                                       Clock::time_point expires_at, std::size_t in_flight) noexcept;
  /// When to renew a session of `lifetime` that started at `start`: at
  /// `fraction` (Kafka's Java client draws it from [0.85, 0.95]) of it.
  static Clock::time_point reauthentication_time(Clock::time_point start, std::chrono::milliseconds lifetime,
                                                 double fraction) noexcept;

  /// Successful connect() calls and in-band re-authentications on this object.
  std::uint64_t connect_count() const noexcept { return connects_; }
  std::uint64_t reauthentication_count() const noexcept { return reauthentications_; }

  /// Until when the broker asked (throttle_time_ms) not to be sent requests.
  Clock::time_point throttled_until() const noexcept { return throttled_until_; }

 private:
  struct Pending {
    std::int16_t api_key;
    std::int16_t version;
    std::shared_ptr<protocol::Bytes> response;  // set when it arrives
    Clock::time_point expires_at;               // sent + request_timeout
    bool abandoned = false;                     // its waiter gave up first: the answer is dropped
  };
  /// True when a request whose waiter gave up is still unanswered at its expiry.
  bool abandoned_expired() const noexcept;
  // Runs the handlers that are ready, cancelled ones included, even when the
  // io_context was stopped (interrupt()): a cancelled operation must finish
  // while the socket it names still exists.
  void drain() noexcept;
  template <protocol::Message M>
  Response<M> decode_frame(std::shared_ptr<const protocol::Bytes> frame, std::int16_t version) {
    Response<M> out;
    out.frame = std::move(frame);
    out.version = version;
    protocol::Reader r(*out.frame);
    protocol::ResponseHeader h;
    if (!protocol::decode_response(r, out.body, version, &h)) malformed(M::api_key, version, r);
    if constexpr (requires { out.body.throttle_time_ms; }) note_throttle(out.body.throttle_time_ms);
    return out;
  }
  void note_throttle(std::int32_t throttle_ms);
  // An empty buffer with room for `size` bytes, from the frame pool: a
  // request of megabytes is not page-faulted in afresh each time.
  static std::shared_ptr<protocol::Bytes> request_buffer(std::size_t size);
  /// A request frame waiting to be written: `frame`, with the bytes of each
  /// gap (owned by `keep`) written at its offset.
  struct OutFrame {
    std::shared_ptr<protocol::Bytes> frame;
    std::vector<protocol::Writer::Gap> gaps;
    std::shared_ptr<const void> keep;
  };
  void enqueue(std::int32_t corr, std::int16_t api_key, std::int16_t version, OutFrame frame, bool expect_response);
  /// The answer to `corr` by `deadline`. With `cut_short`, `cut` may end the
  /// wait sooner: then *cut_short is set and the request stays pending.
  std::shared_ptr<const protocol::Bytes> wait_frame(std::int32_t corr, Deadline deadline,
                                                    Deadline cut = Deadline::max(), bool* cut_short = nullptr);
  [[noreturn]] void malformed(protocol::ApiKey key, std::int16_t version, const protocol::Reader& r);
  void start_write();
  void start_read();
  void read_body();
  void fail(const std::string& why);
  void fail_io(const std::string& what, const boost::system::error_code& ec);
  void begin_setup(Deadline deadline);
  void negotiate(Deadline cut, bool& cut_short);
  void start_tls(Deadline deadline);
  void authenticate(Deadline deadline);
  void run_until(const std::function<bool()>& done, Deadline deadline, const char* what);

  boost::asio::io_context& io_;
  std::string host_;
  std::uint16_t port_;
  ConnectionOptions opts_;
  std::unique_ptr<boost::asio::ip::tcp::socket> socket_;
  std::unique_ptr<detail::TlsStream> tls_;  // set when TLS wraps socket_
  Clock::time_point reauthenticate_at_ = Clock::time_point::max();
  Clock::time_point session_expires_at_ = Clock::time_point::max();
  std::uint64_t connects_ = 0;
  std::uint64_t responses_ = 0;            // answers read on this connection
  std::uint64_t handshake_responses_ = 0;  // answers of ApiVersions (and SASL) at connect
  std::uint64_t reauthentications_ = 0;
  std::optional<std::string> tls_failure_;  // set when error_ comes from the TLS layer
  std::int32_t next_correlation_id_ = 1;
  std::map<std::int32_t, Pending> pending_;
  std::deque<OutFrame> write_queue_;
  bool writing_ = false;
  std::uint8_t size_buf_[4] = {};
  std::shared_ptr<protocol::Bytes> read_buf_;
  std::optional<std::string> error_;
  std::map<std::int16_t, VersionRange> versions_;
  std::map<std::string, std::int16_t> finalized_features_;
  std::shared_ptr<bool> alive_;
  Clock::time_point throttled_until_{};
  std::unique_ptr<boost::asio::steady_timer> throttle_timer_;
  // Connection setup, which connect() may leave in progress (see there).
  enum class Setup : std::uint8_t { none, tcp, versions, done };
  Setup setup_ = Setup::none;
  Deadline setup_deadline_{};  // the setup's own deadline
  Deadline tcp_deadline_{};    // ... and the TCP connect's (socket.connection.setup.timeout.ms)
  std::shared_ptr<std::pair<bool, boost::system::error_code>> tcp_outcome_;  // set by the connect handler
  std::int32_t versions_corr_ = -1;
  std::int16_t versions_version_ = 3;
};

}  // namespace kwire::client

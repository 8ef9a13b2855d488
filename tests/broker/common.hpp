// Helpers shared by the real-broker tests: where the broker is, unique topic
// names, running the kwire binary and Kafka's own Java tools as child
// processes, and parsing the JSON lines that `kwire consume --json` prints.
//
// The broker address comes from KWIRE_BOOTSTRAP (scripts/test sets it), else
// 127.0.0.1:19092. Tests derived from BrokerTest fail (not skip) when nothing
// answers there: scripts/test always starts a broker first.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "../temp_dir.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/value_format.hpp"

#ifndef KWIRE_BIN
#error "KWIRE_BIN must name the kwire binary"
#endif
#ifndef KWIRE_SOURCE_DIR
#error "KWIRE_SOURCE_DIR must name the source tree"
#endif

namespace kwire_test {

/// host:port of the broker under test.
inline std::string bootstrap() {
  const char* env = std::getenv("KWIRE_BOOTSTRAP");
  return env && *env ? std::string(env) : std::string("127.0.0.1:19092");
}

inline std::string kwire_bin() { return KWIRE_BIN; }
inline std::string source_dir() { return KWIRE_SOURCE_DIR; }

/// A topic name no other test (in this process, another process or an earlier
/// run against the same broker) uses: prefix-pid-counter-random.
inline std::string unique_topic(std::string_view prefix) {
  static std::atomic<unsigned> counter{0};
  static const unsigned salt = std::random_device{}() % 1000000u;
  return std::string(prefix) + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(salt);
}

/// Quote one argument for /bin/sh.
inline std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += "'";
  return out;
}

inline std::string join_quoted(const std::vector<std::string>& args) {
  std::string out;
  for (auto& a : args) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

/// Split `kafka:port` style "host:port" (last colon).
inline std::pair<std::string, int> split_host_port(const std::string& hp) {
  auto colon = hp.rfind(':');
  if (colon == std::string::npos) return {hp, 9092};
  return {hp.substr(0, colon), std::atoi(hp.c_str() + colon + 1)};
}

/// True if a TCP connection to host:port succeeds within `timeout`.
inline bool tcp_reachable(const std::string& host_port, std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
  auto [host, port] = split_host_port(host_port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return false;
  bool ok = false;
  for (addrinfo* ai = res; ai && !ok; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ok = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return ok;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::filesystem::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

struct CommandResult {
  int exit_code = -1;   // the command's exit status; 124 when it timed out, 128+N when killed by signal N
  std::string out;      // standard output
  std::string err;      // standard error
  double seconds = 0;   // wall time
  std::string command;  // what was run, for failure messages

  /// For assertion messages: the command, its status and its standard error.
  std::string describe() const {
    return "command: " + command + "\nexit code: " + std::to_string(exit_code) + "\nstderr:\n" + err;
  }
};

/// Run a /bin/sh command line with `input` on its standard input, capturing
/// stdout and stderr separately. The command is killed after `timeout_s`
/// seconds (exit code 124, as coreutils' timeout reports it).
inline CommandResult run(const std::string& command, std::string_view input = {}, int timeout_s = 120) {
  TempDir dir;
  auto in = dir / "stdin";
  auto out = dir / "stdout";
  auto err = dir / "stderr";
  write_file(in, input);
  std::string line = "timeout -k 5 " + std::to_string(timeout_s) + " /bin/sh -c " + shell_quote(command) + " <" +
                     shell_quote(in.string()) + " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
  CommandResult r;
  r.command = command;
  auto t0 = std::chrono::steady_clock::now();
  int status = std::system(line.c_str());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (status == -1) r.exit_code = -1;
  else if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

/// Run the kwire binary with `args`.
inline CommandResult run_kwire(const std::vector<std::string>& args, std::string_view input = {}, int timeout_s = 120) {
  return run(shell_quote(kwire_bin()) + " " + join_quoted(args), input, timeout_s);
}

/// Run one of Kafka's Java tools: `scripts/kafka tool CLASS|ALIAS ARGS...`.
inline CommandResult run_kafka_tool(const std::vector<std::string>& args, std::string_view input = {},
                                    int timeout_s = 180) {
  return run(shell_quote(source_dir() + "/scripts/kafka") + " tool " + join_quoted(args), input, timeout_s);
}

/// Split text into lines (without the '\n'); a missing final newline still
/// ends a line, an empty text has no lines.
inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

/// One record as printed by `kwire consume --json` (timestamp in ms).
struct JsonRecord {
  std::string topic;
  std::int32_t partition = -1;
  std::int64_t offset = -1;
  std::int64_t timestamp = -1;
  std::int64_t timestamp_type = -2;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

/// Parse the JSON lines of `kwire consume --json` or a JSON Lines sink (whose
/// lines leave null fields out). Throws on malformed input.
inline std::vector<JsonRecord> parse_json_records(const std::string& text) {
  std::vector<JsonRecord> out;
  simdjson::dom::parser parser;
  auto nullable = [](simdjson::simdjson_result<simdjson::dom::element> field) -> std::optional<std::string> {
    simdjson::dom::element e;
    if (field.get(e) || e.is_null()) return std::nullopt;  // absent or null
    return std::string(std::string_view(e.get_string()));
  };
  for (auto& line : split_lines(text)) {
    if (line.empty()) continue;
    simdjson::dom::element doc = parser.parse(line);
    JsonRecord r;
    r.topic = std::string(std::string_view(doc["topic"].get_string()));
    r.partition = static_cast<std::int32_t>(std::int64_t(doc["partition"].get_int64()));
    r.offset = doc["offset"].get_int64();
    // Written as Spark writes a timestamp: "2026-12-01T10:00:00.315Z".
    r.timestamp = kwire::source::parse_timestamp_ms(std::string_view(doc["timestamp"].get_string())).value_or(-2);
    r.timestamp_type = doc["timestampType"].get_int64();
    r.key = nullable(doc["key"]);
    r.value = nullable(doc["value"]);
    simdjson::dom::element headers;
    if (!doc["headers"].get(headers) && !headers.is_null()) {
      for (simdjson::dom::element h : headers.get_array())
        r.headers.emplace_back(std::string(std::string_view(h["key"].get_string())), nullable(h["value"]));
    }
    out.push_back(std::move(r));
  }
  return out;
}

/// Deletes `topic` and waits (10 s at most) until the broker no longer lists
/// it; false when it is still listed.
inline bool delete_topic_and_wait(const std::string& topic) {
  kwire::client::KafkaClient admin({{"bootstrap.servers", bootstrap()}});
  admin.delete_topics({topic});
  for (int i = 0; i < 200; ++i) {
    auto md = admin.metadata(std::vector<std::string>{topic});
    auto* t = md.topic(topic);
    if (!t || t->error_code != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

/// Base fixture: fails the test when no broker answers at bootstrap().
class BrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static const bool reachable = tcp_reachable(bootstrap());
    ASSERT_TRUE(reachable) << "no Kafka broker answers at " << bootstrap()
                           << " (set KWIRE_BOOTSTRAP, or run scripts/test, which starts one)";
  }

  /// `kwire create-topic` with `partitions` partitions; asserts success.
  void create_topic(const std::string& topic, int partitions) {
    auto r = run_kwire({"create-topic", "-b", bootstrap(), "-t", topic, "--partitions", std::to_string(partitions)});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }

  /// `kwire consume -e -q --json` of the whole topic.
  std::vector<JsonRecord> consume_all(const std::string& topic, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"consume", "-b", bootstrap(), "-t", topic, "-e", "-q", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_kwire(args);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return parse_json_records(r.out);
  }
};

/// Produces values "<prefix><i>" for i in [from, to) with kwire's producer,
/// keyed by i so that they spread over the partitions; `props` adds client
/// properties (compression.type, acks, ...). Returns after the last is acked.
inline void produce_numbered(const std::string& servers, const std::string& topic, int from, int to,
                             const std::string& prefix = "v-", std::map<std::string, std::string> props = {}) {
  props["bootstrap.servers"] = servers;
  kwire::client::Producer p(props);
  for (int i = from; i < to; ++i) {
    std::string k = std::to_string(i), v = prefix + k;
    kwire::client::ProducerMessage m;
    m.topic = topic;
    m.key = kwire::protocol::Bytes(k.begin(), k.end());
    m.value = kwire::protocol::Bytes(v.begin(), v.end());
    p.send(std::move(m));
  }
  p.flush();
}

/// Reads the KEY=VALUE lines of a file written by one of the scripts
/// (secure.env, postgres.env) into `env`; false when it cannot be read.
inline bool read_env_file(const std::string& path, std::map<std::string, std::string>& env) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line))
    if (auto eq = line.find('='); eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  return true;
}

/// A BrokerTest that also uses the broker's secured listeners, which
/// `scripts/kafka start --secure` describes in the KEY=VALUE file named by
/// KWIRE_SECURE_ENV (ports, CA, users, client certificates, Kerberos).
/// Skips when KWIRE_SECURE_ENV is not set.
class SecureBrokerTest : public BrokerTest {
 protected:
  void SetUp() override {
    const char* path = std::getenv("KWIRE_SECURE_ENV");
    if (!path || !*path) GTEST_SKIP() << "KWIRE_SECURE_ENV not set (start the broker with scripts/kafka --secure)";
    ASSERT_TRUE(read_env_file(path, env_)) << "cannot read " << path;
    BrokerTest::SetUp();
  }

  /// host:port of the listener whose port is under `port_key` in the env file.
  std::string addr(const std::string& port_key, const std::string& host = "") const {
    return (host.empty() ? env_.at("KWIRE_SECURE_HOST") : host) + ":" + env_.at(port_key);
  }

  /// Client properties as `-X key=value` arguments for the CLI (bootstrap.servers left out).
  static std::vector<std::string> as_args(const std::map<std::string, std::string>& p) {
    std::vector<std::string> a;
    for (auto& [k, v] : p) {
      if (k == "bootstrap.servers") continue;
      a.push_back("-X");
      a.push_back(k + "=" + v);
    }
    return a;
  }

  std::map<std::string, std::string> env_;
};

// kwire with `args`, its standard input a pipe the test writes to, its
// output in files of `dir`.
class PipedKwire {
 public:
  PipedKwire(const std::vector<std::string>& args, const std::filesystem::path& dir) {
    std::vector<std::string> argv{kwire_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    int fds[2];
    if (::pipe(fds) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    posix_spawn_file_actions_addopen(&fa, 1, (dir / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (dir / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, argv[0].c_str(), &fa, nullptr, cargv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[0]);
    in_ = fds[1];
    ::signal(SIGPIPE, SIG_IGN);  // a write after the process died fails with EPIPE instead
  }
  ~PipedKwire() {
    kill(SIGKILL);
    if (in_ >= 0) ::close(in_);
  }
  bool write_line(const std::string& line) {
    const std::string l = line + "\n";
    return ::write(in_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
  }
  void kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0; }
  /// Closes standard input (the end of the input) and waits for the exit;
  /// the exit code (128+N when killed by signal N).
  int finish() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
    if (pid_ <= 0) return -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  /// True (and reaped) when the process ended by itself.
  bool exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    return true;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
};

}  // namespace kwire_test

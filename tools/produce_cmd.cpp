// kwire produce: one record per line of standard input, the value (and with
// -K the key) as it is or encoded as Avro / Protobuf (line_encoder.hpp).
#include <signal.h>

#include <cctype>
#include <csignal>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "commands.hpp"
#include "kwire/client/producer.hpp"
#include "line_encoder.hpp"

namespace kwire::tools {

using namespace kwire::client;
using kwire::protocol::Bytes;

namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int sig) { g_stop = sig; }

// kcat's delimiter escapes: \t, \n, \r, \\ and \xNN; other text as it is.
std::string unescape_delimiter(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    if (c == 't') out += '\t';
    else if (c == 'n') out += '\n';
    else if (c == 'r') out += '\r';
    else if (c == '\\') out += '\\';
    else if (c == 'x' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
             std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace

int cmd_produce(const CommonOptions& common, const ProduceArgs& args) {
  auto props = common.client_properties();
  if (args.compression) props["compression.type"] = *args.compression;
  if (args.acks) props["acks"] = *args.acks;
  if (!props.count("linger.ms")) props["linger.ms"] = "5";
  if (!props.count("batch.size")) props["batch.size"] = "262144";
  if (args.transactional_id) props["transactional.id"] = *args.transactional_id;
  const auto tid = props.count("transactional.id") && !props["transactional.id"].empty()
                       ? std::optional<std::string>(props["transactional.id"])
                       : std::nullopt;
  if (args.records_per_transaction && !tid)
    throw std::invalid_argument("--records-per-transaction needs --transactional-id (or -X transactional.id)");
  // SIGINT / SIGTERM end the input (not restarted, so a read waiting on
  // standard input returns): what was read is flushed, or the open
  // transaction aborted, before exiting with 130 / 143.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // The encoders first: a bad schema or option fails before any record.
  if (args.value_format == "raw" && (args.schema || args.schema_registry || !args.value_options.empty()))
    throw std::invalid_argument("--schema, --schema-registry and --value-option need --value-format avro or protobuf");
  if (args.key_format == "raw" && (args.key_schema || !args.key_options.empty()))
    throw std::invalid_argument("--key-schema and --key-option need --key-format avro or protobuf");
  if (args.key_format != "raw" && !args.key_delimiter)
    throw std::invalid_argument("--key-format needs -K DELIMITER (the key is the text before it)");
  std::unique_ptr<LineEncoder> value_encoder, key_encoder;
  if (args.value_format != "raw")
    value_encoder =
        std::make_unique<LineEncoder>(LineFormatArgs{args.value_format, "value", args.schema, args.value_options,
                                                     args.schema_registry, "--value-option", "--schema"},
                                      args.topic);
  if (args.key_format != "raw")
    key_encoder =
        std::make_unique<LineEncoder>(LineFormatArgs{args.key_format, "key", args.key_schema, args.key_options,
                                                     args.schema_registry, "--key-option", "--key-schema"},
                                      args.topic);
  Producer producer(props);
  // With a transactional id: one transaction per --records-per-transaction
  // records (all of standard input when not given). A transaction that cannot
  // commit is aborted and the command fails: none of its records is visible
  // to read_committed readers. A process killed mid-transaction leaves it to
  // the coordinator (aborted after transaction.timeout.ms, or at once by the
  // next producer of the id).
  const bool txn = tid.has_value();
  std::uint64_t in_txn = 0, committed = 0;
  auto commit = [&] {
    try {
      producer.commit_transaction();
    } catch (const TransactionAbortableError&) {
      producer.abort_transaction();
      throw;
    }
    ++committed;
    in_txn = 0;
  };
  if (txn) {
    producer.init_transactions();
    producer.begin_transaction();
  }
  std::vector<protocol::RecordHeader> headers;
  for (auto& h : args.headers) {
    auto [k, v] = split_key_value(h, "header");
    headers.push_back({k, Bytes(v.begin(), v.end())});
  }
  // -p -1, as kcat's: the partitioner chooses (by key hash, else sticky).
  if (args.partition && *args.partition < -1)
    throw std::invalid_argument(
        fmt::format("invalid partition {}: 0 or more, or -1 for the partitioner", *args.partition));
  const std::optional<std::int32_t> partition = args.partition && *args.partition >= 0 ? args.partition : std::nullopt;
  const std::string delimiter = args.key_delimiter ? unescape_delimiter(*args.key_delimiter) : std::string();
  std::string line;
  std::uint64_t n = 0, line_no = 0, refused = 0;
  while (!g_stop && std::getline(std::cin, line)) {
    ++line_no;
    ProducerMessage msg;
    msg.topic = args.topic;
    msg.partition = partition;
    msg.headers = headers;
    std::string_view value_text = line;
    std::optional<std::string_view> key_text;
    if (!delimiter.empty()) {
      if (auto pos = line.find(delimiter); pos != std::string::npos) {
        key_text = value_text.substr(0, pos);
        value_text.remove_prefix(pos + delimiter.size());
      }
    }
    try {
      if (key_text)
        msg.key = key_encoder ? key_encoder->encode(*key_text, line_no) : Bytes(key_text->begin(), key_text->end());
      msg.value =
          value_encoder ? value_encoder->encode(value_text, line_no) : Bytes(value_text.begin(), value_text.end());
    } catch (...) {
      // A line that does not fit the schema ends the input: the records
      // before it are produced (or, in a transaction, aborted with it).
      if (txn) {
        producer.abort_transaction();
        fmt::print(stderr, "the open transaction ({} record{}) was aborted\n", in_txn, in_txn == 1 ? "" : "s");
      } else {
        producer.flush();
        fmt::print(stderr, "produced {} record{} to '{}' before line {}\n", n, n == 1 ? "" : "s", args.topic, line_no);
      }
      throw;
    }
    if (txn) {
      producer.send(std::move(msg));  // a refused record makes the transaction abortable: it fails at commit
    } else {
      // A line that cannot be a record (larger than max.request.size): said,
      // and the rest of the input still goes; the exit status is 1.
      try {
        producer.send(std::move(msg));
      } catch (const RecordTooLargeError& e) {
        fmt::print(stderr, "line {} not produced: {}\n", line_no, e.what());
        ++refused;
        continue;
      }
    }
    ++n;
    if (txn && ++in_txn == static_cast<std::uint64_t>(args.records_per_transaction.value_or(0))) {
      commit();
      producer.begin_transaction();
    }
  }
  const auto records = [](std::uint64_t k) { return fmt::format("{} record{}", k, k == 1 ? "" : "s"); };
  if (g_stop) {
    const int code = g_stop == SIGTERM ? 143 : 130;
    if (txn) {
      producer.abort_transaction();
      fmt::print(stderr, "interrupted: the open transaction ({}) was aborted; {} committed in {} transaction{}\n",
                 records(in_txn), records(n - in_txn), committed, committed == 1 ? "" : "s");
    } else {
      producer.flush();
      fmt::print(stderr, "interrupted: produced {} to '{}'\n", records(n), args.topic);
    }
    return code;
  }
  if (txn) {
    if (in_txn > 0) commit();
    else producer.abort_transaction();  // nothing in it: nothing to commit
    fmt::print(stderr, "produced {} to '{}' in {} transaction{} of '{}'\n", records(n), args.topic, committed,
               committed == 1 ? "" : "s", *tid);
    return 0;
  }
  producer.flush();
  fmt::print(stderr, "produced {} to '{}'\n", records(n), args.topic);
  if (refused) {
    fmt::print(stderr, "{} line{} not produced (see above)\n", refused, refused == 1 ? " was" : "s were");
    return 1;
  }
  return 0;
}

}  // namespace kwire::tools

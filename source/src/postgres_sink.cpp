// PostgresSink: rows into a PostgreSQL table with COPY, a streaming query's
// batches exactly once (postgres_sink.hpp gives the protocol).
#include "kwire/source/postgres_sink.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/warnings.hpp"

namespace kwire::source {

namespace {

constexpr std::size_t kCopyChunk = std::size_t{1} << 20;  // bytes handed to libpq at once
constexpr std::string_view kCorrupt = JsonValueDecoder::kCorruptRecordColumn;

// "name" quoted as a PostgreSQL identifier.
std::string quote_ident(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

void append_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "Infinity" : "-Infinity";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, end);
  }
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// Owns a PGresult.
struct Result {
  PGresult* res = nullptr;
  explicit Result(PGresult* r) : res(r) {}
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  ~Result() { PQclear(res); }
};

}  // namespace

// --------------------------------------------------------------- connection

struct PostgresSink::Connection {
  PGconn* pg = nullptr;
  ~Connection() {
    if (pg) PQfinish(pg);
  }
  std::string error() const {
    std::string e = pg ? PQerrorMessage(pg) : "no connection";
    while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
    return e;
  }
  // Runs a command (parameters as text); returns its result or throws.
  std::unique_ptr<Result> exec(const std::string& sql, std::initializer_list<std::string> params = {},
                               ExecStatusType expect = PGRES_COMMAND_OK) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    auto r = std::make_unique<Result>(
        PQexecParams(pg, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0));
    if (PQresultStatus(r->res) != expect && !(expect == PGRES_COMMAND_OK && PQresultStatus(r->res) == PGRES_TUPLES_OK))
      throw PostgresSinkError(error());
    return r;
  }
};

PostgresSink::PostgresSink(const std::map<std::string, std::string>& options, PostgresColumns columns, Filter filter)
    : PostgresSink(PostgresSinkOptions::parse(options), std::move(columns), std::move(filter)) {}

PostgresSink::PostgresSink(PostgresSinkOptions options, PostgresColumns columns, Filter filter)
    : options_(std::move(options)),
      columns_(std::move(columns)),
      sink_columns_(postgres_columns(columns_)),
      filter_(std::move(filter)),
      headers_writer_([] {
        JsonWriterOptions o;
        o.kafka_columns = {KafkaColumn::headers};
        return o;
      }()) {
  if (columns_.schema && columns_.decoded)
    throw SinkOptionError("PostgreSQL sink: a value schema (JSON) and decoded Avro or Protobuf values, not both");
  if (columns_.schema) decoder_ = std::make_unique<JsonValueDecoder>(*columns_.schema);
  decoded_columns_ = sink_columns_.size() - columns_.kafka_columns.size();
  for (const auto& key : options_.upsert_key)
    if (std::none_of(sink_columns_.begin(), sink_columns_.end(), [&](const auto& c) { return c.name == key; }))
      throw SinkOptionError(fmt::format("Option 'upsertKey': '{}' is not a column the sink writes", key));
}

PostgresSink::~PostgresSink() { close(); }

std::string PostgresSink::description() const {
  return fmt::format("PostgresSink[{} table={}]", options_.describe(), options_.dbtable);
}

void PostgresSink::close() noexcept {
  if (conn_ && in_txn_) PQexec(conn_->pg, "ROLLBACK");
  conn_.reset();
  in_txn_ = false;
  copying_ = false;
}

void PostgresSink::prepare_batch(const BatchContext& context) { context_ = context; }

void PostgresSink::connect() {
  std::vector<const char*> keys{"dbname", "application_name", "connect_timeout"};
  std::vector<const char*> values{options_.url.c_str(), "kwire", "10"};
  if (options_.user) {
    keys.push_back("user");
    values.push_back(options_.user->c_str());
  }
  if (options_.password) {
    keys.push_back("password");
    values.push_back(options_.password->c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  auto conn = std::make_unique<Connection>();
  conn->pg = PQconnectdbParams(keys.data(), values.data(), 1);
  if (!conn->pg || PQstatus(conn->pg) != CONNECTION_OK)
    throw PostgresSinkError(
        fmt::format("PostgreSQL sink: cannot connect to {}: {}", options_.describe(), conn->error()));
  // Notices ("relation ... already exists, skipping") are not for the user.
  PQsetNoticeProcessor(
      conn->pg, [](void*, const char*) {}, nullptr);
  conn_ = std::move(conn);
  try {
    prepare_tables();
  } catch (...) {
    conn_.reset();
    throw;
  }
}

// Creates the table (and the progress table) when missing, checks an existing
// table's columns, and makes the upsert staging table.
void PostgresSink::prepare_tables() {
  auto& c = *conn_;
  auto exists = c.exec("SELECT to_regclass($1) IS NOT NULL", {options_.dbtable}, PGRES_TUPLES_OK);
  if (std::string_view(PQgetvalue(exists->res, 0, 0)) != "t") {
    std::string ddl = "CREATE TABLE IF NOT EXISTS " + options_.dbtable + " (";
    bool first = true;
    auto add = [&](std::string_view name, std::string_view type) {
      if (!first) ddl += ", ";
      first = false;
      ddl += quote_ident(name);
      ddl += ' ';
      ddl += type;
    };
    for (const auto& col : sink_columns_) add(col.name, col.type);
    if (columns_.schema) add(kCorrupt, "text");
    if (!options_.upsert_key.empty()) {
      ddl += ", PRIMARY KEY (";
      for (std::size_t i = 0; i < options_.upsert_key.size(); ++i)
        ddl += (i ? ", " : "") + quote_ident(options_.upsert_key[i]);
      ddl += ')';
    }
    ddl += ')';
    try {
      c.exec(ddl);
    } catch (const PostgresSinkError& e) {
      throw PostgresSinkError(fmt::format("PostgreSQL sink: cannot create table {}: {}", options_.dbtable, e.what()));
    }
  }
  auto cols = c.exec(
      "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
      "WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
      {options_.dbtable}, PGRES_TUPLES_OK);
  std::map<std::string, std::string, std::less<>> table;
  for (int i = 0; i < PQntuples(cols->res); ++i) table[PQgetvalue(cols->res, i, 0)] = PQgetvalue(cols->res, i, 1);
  for (const auto& col : sink_columns_) {
    auto it = table.find(col.name);
    if (it == table.end()) {
      std::string have;
      for (const auto& [name, type] : table) have += (have.empty() ? "" : ", ") + name + " " + type;
      throw SinkOptionError(
          fmt::format("PostgreSQL sink: table {} has no column \"{}\" ({}), which the sink writes; "
                      "its columns: {}",
                      options_.dbtable, col.name, col.type, have));
    }
    if (!postgres_type_accepts(it->second, col.type))
      throw SinkOptionError(
          fmt::format("PostgreSQL sink: column \"{}\" of table {} is {}, which does not take the sink's {} values",
                      col.name, options_.dbtable, it->second, col.type));
  }
  corrupt_column_ = columns_.schema && table.contains(kCorrupt);
  if (!options_.upsert_key.empty()) {
    std::string ddl = "CREATE TEMPORARY TABLE IF NOT EXISTS kwire_upsert_stage (";
    for (const auto& col : sink_columns_) ddl += quote_ident(col.name) + " " + col.type + ", ";
    if (corrupt_column_) ddl += quote_ident(kCorrupt) + " text, ";
    ddl += "kwire_row bigserial) ON COMMIT DELETE ROWS";
    c.exec(ddl);
  }
  if (context_)
    c.exec("CREATE TABLE IF NOT EXISTS " + options_.progress_table +
           " (query_id text PRIMARY KEY, batch_id bigint NOT NULL, end_offsets text NOT NULL, "
           "sink_table text NOT NULL, committed_at timestamptz NOT NULL DEFAULT now())");
}

// The column list of the COPY and of the merge, in the order write() puts
// the values: the decoded columns, _corrupt_record (when the table has it),
// the Kafka columns.
std::string PostgresSink::column_list() const {
  std::string out;
  const std::size_t decoded = decoded_columns_;
  for (std::size_t i = 0; i <= sink_columns_.size(); ++i) {
    if (i == decoded && corrupt_column_) out += (out.empty() ? "" : ", ") + quote_ident(kCorrupt);
    if (i < sink_columns_.size()) out += (out.empty() ? "" : ", ") + quote_ident(sink_columns_[i].name);
  }
  return out;
}

void PostgresSink::fail_batch(std::exception_ptr error) {
  // A failed transaction is rolled back by closing the connection; the next
  // batch connects again (the server may be what failed).
  close();
  std::rethrow_exception(error);
}

void PostgresSink::begin_batch(std::int64_t batch_id) {
  if (context_ && context_->batch_id != batch_id)
    throw std::logic_error(
        fmt::format("PostgresSink: batch {} begun after batch {} was prepared", batch_id, context_->batch_id));
  if (in_txn_) close();  // the previous batch failed before its commit
  batch_id_ = batch_id;
  rows_ = 0;
  skip_ = false;
  buffer_.clear();
  try {
    if (!conn_) connect();
    auto& c = *conn_;
    c.exec("BEGIN");
    in_txn_ = true;
    if (context_) {
      // Two copies of one query wait for each other here.
      c.exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {"kwire-query:" + context_->query_id},
             PGRES_TUPLES_OK);
      auto row = c.exec("SELECT batch_id, end_offsets FROM " + options_.progress_table + " WHERE query_id = $1",
                        {context_->query_id}, PGRES_TUPLES_OK);
      if (PQntuples(row->res) == 1) {
        last_committed_ = std::stoll(PQgetvalue(row->res, 0, 0));
        last_committed_end_ = PQgetvalue(row->res, 0, 1);
      }
      if (batch_id <= last_committed_) {
        const std::string end = checkpoint::offsets_to_json(context_->end);
        if (!context_->replay || batch_id != last_committed_ || end != last_committed_end_)
          throw PostgresSinkError(fmt::format(
              "PostgreSQL sink: the checkpoint's batch {} ({}) is not the last batch this query committed to "
              "table {} (batch {} in {}): the checkpoint is behind its output, e.g. an older copy of it; refusing "
              "to write rows twice",
              batch_id, context_->replay ? "a replay" : "a new batch", options_.dbtable, last_committed_,
              options_.progress_table));
        skip_ = true;
        ++batches_skipped_;
        c.exec("ROLLBACK");
        in_txn_ = false;
        log_warning(fmt::format(
            "PostgreSQL sink: batch {} was committed to table {} before the query stopped; its rows are not "
            "written again",
            batch_id, options_.dbtable));
        return;
      }
    }
    start_copy();
  } catch (...) {
    fail_batch(std::current_exception());
  }
}

void PostgresSink::start_copy() {
  const std::string target = options_.upsert_key.empty() ? options_.dbtable : "kwire_upsert_stage";
  const std::string sql = "COPY " + target + " (" + column_list() + ") FROM STDIN";
  Result r(PQexec(conn_->pg, sql.c_str()));
  if (PQresultStatus(r.res) != PGRES_COPY_IN) throw PostgresSinkError(conn_->error());
  copying_ = true;
}

void PostgresSink::flush_copy(bool final) {
  if (!buffer_.empty()) {
    if (PQputCopyData(conn_->pg, buffer_.data(), static_cast<int>(buffer_.size())) != 1)
      throw PostgresSinkError(fmt::format("PostgreSQL sink: COPY into {}: {}", options_.dbtable, conn_->error()));
    buffer_.clear();
  }
  if (!final) return;
  copying_ = false;
  if (PQputCopyEnd(conn_->pg, nullptr) != 1)
    throw PostgresSinkError(fmt::format("PostgreSQL sink: COPY into {}: {}", options_.dbtable, conn_->error()));
  std::string error;
  while (PGresult* res = PQgetResult(conn_->pg)) {
    if (PQresultStatus(res) != PGRES_COMMAND_OK && error.empty()) error = conn_->error();
    PQclear(res);
  }
  if (!error.empty())
    throw PostgresSinkError(fmt::format("PostgreSQL sink: COPY into {}: {}", options_.dbtable, error));
}

void PostgresSink::write(std::span<const Row> rows) {
  if (skip_) {
    rows_ += static_cast<std::int64_t>(rows.size());
    return;
  }
  if (!copying_) throw std::logic_error("PostgresSink: write without begin_batch");
  try {
    if (columns_.decoded) return write_decoded(rows);
    for (const Row& row : rows) {
      bool first = true;
      auto sep = [&] {
        if (!first) buffer_ += '\t';
        first = false;
      };
      if (decoder_) {
        std::optional<std::string_view> text;
        if (row.value) text = row.value_string();
        decoder_->decode(text, decoded_);
      }
      if (filter_ && !filter_(row, decoded_)) continue;
      if (decoder_) {
        if (decoded_.corrupt_record && !corrupt_column_)
          throw PostgresSinkError(
              fmt::format("PostgreSQL sink: the value at {}-{} offset {} does not match the schema and table {} has no "
                          "{} text column to keep it: add one, or fix the record",
                          row.topic, row.partition, row.offset, options_.dbtable, kCorrupt));
        for (std::size_t i = 0; i < decoded_.cells.size(); ++i) {
          sep();
          const Cell& cell = decoded_.cells[i];
          const ColumnType type = columns_.schema->columns[i].type;
          if (std::holds_alternative<std::monostate>(cell)) {
            buffer_ += "\\N";
          } else if (auto* s = std::get_if<std::string>(&cell)) {
            append_copy_text(buffer_, *s);
          } else if (auto* n = std::get_if<std::int64_t>(&cell)) {
            if (type == ColumnType::timestamp) buffer_ += format_timestamp_ms(*n);
            else append_int(buffer_, *n);
          } else if (auto* d = std::get_if<double>(&cell)) {
            append_double(buffer_, *d);
          } else if (auto* b = std::get_if<bool>(&cell)) {
            buffer_ += *b ? 't' : 'f';
          }
        }
        if (corrupt_column_) {
          sep();
          if (decoded_.corrupt_record) append_copy_text(buffer_, *decoded_.corrupt_record);
          else buffer_ += "\\N";
        }
      }
      append_kafka_columns(row, first);
      buffer_ += '\n';
      ++rows_;
      if (buffer_.size() >= kCopyChunk) flush_copy(false);
    }
  } catch (...) {
    fail_batch(std::current_exception());
  }
}

void PostgresSink::append_kafka_columns(const Row& row, bool first) {
  auto sep = [&] {
    if (!first) buffer_ += '\t';
    first = false;
  };
  for (KafkaColumn k : columns_.kafka_columns) {
    sep();
    switch (k) {
      case KafkaColumn::key:
        if (row.key) append_copy_bytea(buffer_, *row.key);
        else buffer_ += "\\N";
        break;
      case KafkaColumn::value:
        if (row.value) append_copy_bytea(buffer_, *row.value);
        else buffer_ += "\\N";
        break;
      case KafkaColumn::topic: append_copy_text(buffer_, row.topic); break;
      case KafkaColumn::partition: append_int(buffer_, row.partition); break;
      case KafkaColumn::offset: append_int(buffer_, row.offset); break;
      case KafkaColumn::timestamp: buffer_ += format_timestamp_ms(row.timestamp); break;
      case KafkaColumn::timestamp_type: append_int(buffer_, row.timestamp_type); break;
      case KafkaColumn::headers:
        if (!row.headers) {
          buffer_ += "\\N";
        } else {
          headers_json_.clear();
          headers_writer_.append(headers_json_, row);  // {"headers":[...]}
          append_copy_text(buffer_, std::string_view(headers_json_).substr(11, headers_json_.size() - 12));
        }
        break;
    }
  }
}

std::int64_t PostgresSink::commit_batch(std::int64_t batch_id) {
  if (batch_id != batch_id_) throw std::logic_error("PostgresSink: commit of a batch that was not begun");
  if (skip_) {
    context_.reset();
    return rows_;
  }
  std::string end_json;  // streaming: the batch's end offsets as stored
  try {
    flush_copy(true);
    auto& c = *conn_;
    if (!options_.upsert_key.empty()) {
      const std::string cols = column_list();
      std::string key;
      for (const auto& k : options_.upsert_key) key += (key.empty() ? "" : ", ") + quote_ident(k);
      std::string set;
      for (const auto& col : sink_columns_)
        if (std::find(options_.upsert_key.begin(), options_.upsert_key.end(), col.name) == options_.upsert_key.end())
          set += (set.empty() ? "" : ", ") + quote_ident(col.name) + " = EXCLUDED." + quote_ident(col.name);
      if (corrupt_column_)
        set += (set.empty() ? "" : ", ") + quote_ident(kCorrupt) + " = EXCLUDED." + quote_ident(kCorrupt);
      // Of a batch's rows with one key, the last read wins.
      c.exec("INSERT INTO " + options_.dbtable + " (" + cols + ") SELECT DISTINCT ON (" + key + ") " + cols +
             " FROM kwire_upsert_stage ORDER BY " + key + ", kwire_row DESC ON CONFLICT (" + key + ") DO " +
             (set.empty() ? "NOTHING" : "UPDATE SET " + set));
    }
    if (context_) {
      end_json = checkpoint::offsets_to_json(context_->end);
      c.exec("INSERT INTO " + options_.progress_table +
                 " (query_id, batch_id, end_offsets, sink_table) VALUES ($1, $2, $3, $4) ON CONFLICT (query_id) DO "
                 "UPDATE SET batch_id = EXCLUDED.batch_id, end_offsets = EXCLUDED.end_offsets, sink_table = "
                 "EXCLUDED.sink_table, committed_at = now()",
             {context_->query_id, std::to_string(batch_id), end_json, options_.dbtable});
    }
    c.exec("COMMIT");
    in_txn_ = false;
  } catch (...) {
    fail_batch(std::current_exception());
  }
  if (context_) {
    last_committed_ = batch_id;
    last_committed_end_ = std::move(end_json);
    context_.reset();
  }
  return rows_;
}

}  // namespace kwire::source

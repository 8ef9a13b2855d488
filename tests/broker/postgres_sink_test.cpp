// The PostgreSQL sink on a real broker and a real PostgreSQL server
// (scripts/postgres, described by the file KWIRE_POSTGRES_ENV names; the
// tests skip without it): rows with Spark's Kafka columns or decoded ones,
// upserts, a batch committed before a crash not written again, a checkpoint
// behind the table refused, TLS, a wrong password, a column of the wrong
// type, a read-only database and a dropped table, and SIGKILL at random
// points of `kwire stream --sink postgres` leaving every row exactly once.
#include <libpq-fe.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../temp_dir.hpp"
#include "common.hpp"
#include "kill_sweep.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/source/avro.hpp"
#include "kwire/source/json_rows.hpp"
#include "kwire/source/kafka_sink.hpp"
#include "kwire/source/postgres_sink.hpp"
#include "kwire/source/stream.hpp"
#include "sink_support.hpp"

namespace fs = std::filesystem;
using namespace kwire;
using namespace kwire_test;

namespace {

using Rows = std::vector<std::vector<std::string>>;  // NULL as "<null>"

// The test's own connection, for setting up and reading back.
class Pg {
 public:
  Pg(const std::string& url, const std::string& password) {
    const char* keys[] = {"dbname", "password", nullptr};
    const char* values[] = {url.c_str(), password.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (PQstatus(conn_) != CONNECTION_OK) ADD_FAILURE() << "cannot connect to " << url << ": " << PQerrorMessage(conn_);
  }
  ~Pg() { PQfinish(conn_); }
  Pg(const Pg&) = delete;
  Pg& operator=(const Pg&) = delete;

  Rows query(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    Rows out;
    const auto status = PQresultStatus(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      ADD_FAILURE() << sql << ": " << PQerrorMessage(conn_);
    } else {
      for (int i = 0; i < PQntuples(r); ++i) {
        std::vector<std::string> row;
        for (int j = 0; j < PQnfields(r); ++j)
          row.push_back(PQgetisnull(r, i, j) ? "<null>" : std::string(PQgetvalue(r, i, j)));
        out.push_back(std::move(row));
      }
    }
    PQclear(r);
    return out;
  }
  std::string value(const std::string& sql) {
    auto rows = query(sql);
    return rows.empty() || rows[0].empty() ? "<none>" : rows[0][0];
  }

 private:
  PGconn* conn_ = nullptr;
};

// JSON values, one per (key, value) pair, keyed by id.
void produce_json(const std::string& topic, const std::vector<std::pair<std::string, std::string>>& values) {
  client::Producer p({{"bootstrap.servers", bootstrap()}});
  for (auto& [k, v] : values) {
    client::ProducerMessage m;
    m.topic = topic;
    m.key = protocol::Bytes(k.begin(), k.end());
    m.value = protocol::Bytes(v.begin(), v.end());
    p.send(m);
  }
  p.flush();
}

std::map<std::string, std::string> source_opts(const std::string& topic,
                                               std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> o = {{"kafka.bootstrap.servers", bootstrap()},
                                          {"subscribe", topic},
                                          {"startingOffsets", "earliest"},
                                          {"includeHeaders", "true"}};
  for (auto& [k, v] : extra) o[k] = v;
  return o;
}

class PostgresSinkTest : public BrokerTest {
 protected:
  void SetUp() override {
    const char* path = std::getenv("KWIRE_POSTGRES_ENV");
    if (!path || !*path) GTEST_SKIP() << "KWIRE_POSTGRES_ENV not set (scripts/postgres start writes postgres.env)";
    ASSERT_TRUE(read_env_file(path, env_)) << "cannot read " << path;
    BrokerTest::SetUp();
    pg_ = std::make_unique<Pg>(url(), password());
    table_ = "t_" + unique_topic("pg").substr(0, 40);
    for (char& c : table_)
      if (c == '-' || c == '.') c = '_';
  }

  std::string url() const { return env_.at("KWIRE_POSTGRES_URL"); }
  std::string password() const { return env_.at("KWIRE_POSTGRES_PASSWORD"); }
  std::map<std::string, std::string> sink_opts(std::map<std::string, std::string> extra = {}) const {
    std::map<std::string, std::string> o = {{"url", url()}, {"password", password()}, {"dbtable", table_}};
    for (auto& [k, v] : extra) o[k] = v;
    return o;
  }
  std::int64_t count() { return std::stoll(pg_->value("SELECT count(*) FROM " + table_)); }

  std::map<std::string, std::string> env_;
  std::unique_ptr<Pg> pg_;
  std::string table_;
};

}  // namespace

TEST_F(PostgresSinkTest, StreamWritesSparksKafkaColumnsAndItsProgressInOneTransactionPerBatch) {
  const auto in = unique_topic("pg-in");
  create_topic(in, 3);
  produce_with_headers(in, 0, 300);
  TempDir dir;
  source::PostgresSink sink(sink_opts());
  source::StreamingQuery q(source_opts(in, {{"maxOffsetsPerTrigger", "100"}}), dir / "ck", sink);
  std::int64_t rows = 0;
  q.run([&](const source::BatchProgress& p) { rows += p.num_output_rows; });
  EXPECT_EQ(rows, 300);
  EXPECT_EQ(count(), 300);
  // Every record once, with its bytes, partition, offset and headers.
  auto got = pg_->query(
      "SELECT convert_from(key, 'UTF8'), convert_from(value, 'UTF8'), topic, \"offset\", "
      "headers->0->>'key', headers->0->>'value', \"timestampType\", "
      "extract(epoch from now() - \"timestamp\") < 600 FROM " +
      table_ + " ORDER BY convert_from(key, 'UTF8')::int");
  ASSERT_EQ(got.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(got[i][0], std::to_string(i));
    EXPECT_EQ(got[i][1], "v-" + std::to_string(i));
    EXPECT_EQ(got[i][2], in);
    EXPECT_EQ(got[i][4], "n");
    EXPECT_EQ(got[i][5], std::to_string(i));
    EXPECT_EQ(got[i][6], "0");  // CreateTime
    EXPECT_EQ(got[i][7], "t");
  }
  EXPECT_EQ(pg_->value("SELECT count(DISTINCT (\"partition\", \"offset\")) FROM " + table_), "300");
  // The progress row: the last batch and its end offsets, as in offsets/N.
  auto cp = checkpoint::Checkpoint::open_read_only(dir / "ck");
  const auto last = cp.latest_commit_batch();
  ASSERT_TRUE(last.has_value());
  EXPECT_GE(*last, 2);
  auto progress =
      pg_->query("SELECT batch_id, end_offsets, sink_table FROM kwire_progress WHERE query_id = '" + cp.id() + "'");
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0][0], std::to_string(*last));
  EXPECT_EQ(progress[0][1], checkpoint::offsets_to_json(cp.read_offsets(*last)));
  EXPECT_EQ(progress[0][2], table_);
  EXPECT_EQ(sink.last_committed_batch(), *last);
  EXPECT_EQ(pg_->value("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = '" + table_ +
                       "'::regclass AND attname = 'timestamp'"),
            "timestamp with time zone");
}

TEST_F(PostgresSinkTest, DecodedColumnsUpsertKeepsTheLastRowOfEachKeyAndMalformedTextInCorruptRecord) {
  const auto in = unique_topic("pg-upsert-in");
  create_topic(in, 1);
  produce_json(in, {{"a", R"({"id":"a","amount":1.5,"n":1,"at":"2026-12-01T10:00:00Z","ok":true})"},
                    {"b", R"({"id":"b","amount":2.0,"n":2,"at":"2026-12-01T10:00:01.250Z","ok":false})"},
                    {"a", R"({"id":"a","amount":3.25,"n":3})"},
                    {"c", R"({"id":"c","amount":"not a number","n":4})"}});
  source::PostgresColumns columns{source::Schema::parse_ddl("id STRING, amount DOUBLE, n BIGINT, at TIMESTAMP, ok "
                                                            "BOOLEAN"),
                                  {source::KafkaColumn::partition, source::KafkaColumn::offset}};
  TempDir dir;
  {
    source::PostgresSink sink(sink_opts({{"upsertKey", "id"}}), columns);
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();
  }
  auto rows = pg_->query(
      "SELECT id, amount, n, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'), ok, "
      "\"offset\", _corrupt_record IS NOT NULL FROM " +
      table_ + " ORDER BY id");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"a", "3.25", "3", "<null>", "<null>", "2", "f"}));  // the last "a"
  EXPECT_EQ(rows[1], (std::vector<std::string>{"b", "2", "2", "2026-12-01 10:00:01.250", "f", "1", "f"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"c", "<null>", "4", "<null>", "<null>", "3", "t"}));
  // A later batch updates a key in place.
  produce_json(in, {{"b", R"({"id":"b","amount":9,"n":5})"}});
  {
    source::PostgresSink sink(sink_opts({{"upsertKey", "id"}}), columns);
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();
  }
  EXPECT_EQ(count(), 3);
  EXPECT_EQ(pg_->value("SELECT amount FROM " + table_ + " WHERE id = 'b'"), "9");
  EXPECT_EQ(pg_->value("SELECT string_agg(a.attname, ',' ORDER BY a.attnum) FROM pg_index i JOIN pg_attribute a ON "
                       "a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = '" +
                       table_ + "'::regclass AND i.indisprimary"),
            "id");
}

TEST_F(PostgresSinkTest, MalformedValueWithoutACorruptRecordColumnFailsTheBatchNamingTheRecord) {
  const auto in = unique_topic("pg-malformed-in");
  create_topic(in, 1);
  pg_->query("CREATE TABLE " + table_ + " (id text, amount double precision)");
  produce_json(in, {{"a", R"({"id":"a","amount":1})"}, {"b", "not json"}});
  TempDir dir;
  source::PostgresSink sink(sink_opts(), {source::Schema::parse_ddl("id STRING, amount DOUBLE"), {}});
  source::StreamingQuery q(source_opts(in), dir / "ck", sink);
  try {
    q.run();
    FAIL() << "a malformed value was written or dropped";
  } catch (const source::PostgresSinkError& e) {
    EXPECT_NE(std::string(e.what()).find(in + "-0 offset 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("_corrupt_record"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count(), 0);  // the batch's transaction was rolled back
}

TEST_F(PostgresSinkTest, BatchCommittedBeforeACrashIsNotWrittenAgain) {
  const auto in = unique_topic("pg-crash-in");
  create_topic(in, 2);
  produce_with_headers(in, 0, 100);
  TempDir dir;
  {
    source::PostgresSink inner(sink_opts());
    FailAfterCommit sink(inner, "crash after the database transaction committed");
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    EXPECT_THROW(q.run(), std::runtime_error);
  }
  EXPECT_FALSE(checkpoint::Checkpoint::open_read_only(dir / "ck").latest_commit_batch().has_value());
  EXPECT_EQ(count(), 100);
  produce_with_headers(in, 100, 150);
  source::PostgresSink sink(sink_opts());
  source::StreamingQuery q(source_opts(in), dir / "ck", sink);
  std::vector<std::int64_t> output_rows;
  q.run([&](const source::BatchProgress& p) { output_rows.push_back(p.num_output_rows); });
  EXPECT_EQ(sink.batches_skipped(), 1);
  ASSERT_EQ(output_rows.size(), 2u);  // the replay of batch 0 (rows seen, not written), then batch 1
  EXPECT_EQ(output_rows[0], 100);
  EXPECT_EQ(output_rows[1], 50);
  EXPECT_EQ(count(), 150);
  EXPECT_EQ(pg_->value("SELECT count(DISTINCT value) FROM " + table_), "150");
}

TEST_F(PostgresSinkTest, CheckpointBehindTheTableIsRefused) {
  const auto in = unique_topic("pg-behind-in");
  create_topic(in, 1);
  produce_with_headers(in, 0, 10);
  TempDir dir;
  {
    source::PostgresSink sink(sink_opts());
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();  // batch 0
  }
  fs::copy(dir / "ck", dir / "old", fs::copy_options::recursive);
  produce_with_headers(in, 10, 20);
  {
    source::PostgresSink sink(sink_opts());
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();  // batch 1
  }
  produce_with_headers(in, 20, 30);
  source::PostgresSink sink(sink_opts());
  source::StreamingQuery q(source_opts(in), dir / "old", sink);
  try {
    q.run();
    FAIL() << "a stale checkpoint wrote a batch";
  } catch (const source::PostgresSinkError& e) {
    EXPECT_NE(std::string(e.what()).find("is not the last batch this query committed to table " + table_ + " (batch 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(count(), 20);
}

TEST_F(PostgresSinkTest, TlsVerifiesTheServerAndAnUnknownCaIsRefused) {
  const auto in = unique_topic("pg-tls-in");
  create_topic(in, 1);
  produce_with_headers(in, 0, 5);
  const std::string tls_url = url() + "?sslmode=verify-full&sslrootcert=" + env_.at("KWIRE_POSTGRES_CA");
  {
    source::PostgresSink sink(sink_opts({{"url", tls_url}}));
    TempDir dir;
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();
    // The sink's connection is still open: the server says it uses TLS.
    EXPECT_EQ(pg_->value("SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE "
                         "a.application_name = 'kwire'"),
              "t");
  }
  EXPECT_EQ(count(), 5);
  // A CA that did not sign the server's certificate.
  TempDir dir;
  std::ofstream(dir / "other-ca.crt") << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  source::PostgresSink sink(
      sink_opts({{"url", url() + "?sslmode=verify-full&sslrootcert=" + (dir / "other-ca.crt").string()},
                 {"dbtable", table_ + "_other"}}));
  source::StreamingQuery q(source_opts(in), dir / "ck", sink);
  try {
    q.run();
    FAIL() << "connected with a CA that did not sign the server";
  } catch (const source::PostgresSinkError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect to"), std::string::npos) << e.what();
  }
}

TEST_F(PostgresSinkTest, WrongPasswordIsAClearErrorThatNeverPrintsThePassword) {
  const auto in = unique_topic("pg-password-in");
  create_topic(in, 1);
  produce_with_headers(in, 0, 3);
  const std::string secret = "wrong-secret-7f3a";
  TempDir dir;
  source::PostgresSink sink(sink_opts({{"password", secret}}));
  source::StreamingQuery q(source_opts(in), dir / "ck", sink);
  try {
    q.run();
    FAIL() << "connected with a wrong password";
  } catch (const source::PostgresSinkError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("password authentication failed for user \"kwire\""), std::string::npos) << what;
    EXPECT_EQ(what.find(secret), std::string::npos) << what;
  }
  EXPECT_EQ(sink.description().find(secret), std::string::npos);
  // The CLI: the same text, and nothing of the secret in its output.
  setenv("PGPASSWORD", secret.c_str(), 1);
  auto r = run_kwire({"read", "-b", bootstrap(), "-o", "subscribe=" + in, "--sink", "postgres", "-S", "url=" + url(),
                      "-S", "dbtable=" + table_});
  setenv("PGPASSWORD", password().c_str(), 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("password authentication failed"), std::string::npos) << r.describe();
  EXPECT_EQ((r.out + r.err).find(secret), std::string::npos) << r.describe();
}

TEST_F(PostgresSinkTest, ColumnOfTheWrongTypeIsRefusedBeforeAnythingIsWritten) {
  const auto in = unique_topic("pg-type-in");
  create_topic(in, 1);
  pg_->query("CREATE TABLE " + table_ + " (id text, amount integer)");
  produce_json(in, {{"a", R"({"id":"a","amount":1.5})"}});
  TempDir dir;
  {
    source::PostgresSink sink(sink_opts(), {source::Schema::parse_ddl("id STRING, amount DOUBLE"), {}});
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    try {
      q.run();
      FAIL() << "wrote DOUBLE values into an integer column";
    } catch (const source::SinkOptionError& e) {
      EXPECT_NE(std::string(e.what()).find("column \"amount\" of table " + table_ +
                                           " is integer, which does not take the sink's double precision values"),
                std::string::npos)
          << e.what();
    }
  }
  // Fixed: the query runs from where it stopped.
  pg_->query("ALTER TABLE " + table_ + " ALTER COLUMN amount TYPE double precision");
  source::PostgresSink fixed(sink_opts(), {source::Schema::parse_ddl("id STRING, amount DOUBLE"), {}});
  source::StreamingQuery again(source_opts(in), dir / "ck", fixed);
  again.run();
  EXPECT_EQ(pg_->value("SELECT amount FROM " + table_), "1.5");
}

TEST_F(PostgresSinkTest, ReadOnlyDatabaseAndDroppedTableFailTheBatchAndTheQueryResumesAfterTheFix) {
  const auto in = unique_topic("pg-readonly-in");
  create_topic(in, 1);
  produce_with_headers(in, 0, 10);
  TempDir dir;
  {
    source::PostgresSink sink(sink_opts());
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    q.run();  // batch 0, the tables exist
  }
  // New sessions of the database are read-only.
  struct ReadWriteAgain {
    Pg& pg;
    ~ReadWriteAgain() {
      pg.query("SET default_transaction_read_only = off");
      pg.query("ALTER DATABASE kwire RESET default_transaction_read_only");
    }
  } reset{*pg_};
  pg_->query("ALTER DATABASE kwire SET default_transaction_read_only = on");
  produce_with_headers(in, 10, 20);
  {
    source::PostgresSink sink(sink_opts());
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    try {
      q.run();
      FAIL() << "wrote into a read-only database";
    } catch (const source::PostgresSinkError& e) {
      EXPECT_NE(std::string(e.what()).find("read-only transaction"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(count(), 10);
  pg_->query("ALTER DATABASE kwire RESET default_transaction_read_only");
  // A table dropped under a running query: the batch fails; run again, the
  // sink creates the table and the batch is written.
  {
    source::PostgresSink sink(sink_opts());
    source::StreamingQuery q(source_opts(in), dir / "ck", sink, source::Trigger::parse("processing-time=0"));
    ASSERT_TRUE(q.run_once_batch().has_value());  // batch 1 (the one refused above): rows 10-19
    EXPECT_EQ(count(), 20);
    pg_->query("DROP TABLE " + table_);
    produce_with_headers(in, 20, 30);
    try {
      q.run_once_batch();
      FAIL() << "wrote into a dropped table";
    } catch (const source::PostgresSinkError& e) {
      EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    }
  }
  source::PostgresSink again(sink_opts());
  source::StreamingQuery resumed(source_opts(in), dir / "ck", again);
  resumed.run();
  EXPECT_EQ(count(), 10);  // batch 2 (rows 20-29) once; what the drop removed stays removed
  EXPECT_EQ(pg_->value("SELECT min(convert_from(value, 'UTF8')) FROM " + table_), "v-20");
}

TEST_F(PostgresSinkTest, KillNineAtRandomPointsLeavesEveryRowExactlyOnce) {
  const auto in = unique_topic("pg-kill-in");
  create_topic(in, 3);
  TempDir dir;
  setenv("PGPASSWORD", password().c_str(), 1);
  const std::vector<std::string> args = {"stream",
                                         "-b",
                                         bootstrap(),
                                         "-o",
                                         "subscribe=" + in,
                                         "-o",
                                         "startingOffsets=earliest",
                                         "-o",
                                         "maxOffsetsPerTrigger=15",
                                         "--checkpoint",
                                         (dir / "ck").string(),
                                         "--sink",
                                         "postgres",
                                         "-S",
                                         "url=" + url(),
                                         "-S",
                                         "dbtable=" + table_};
  const auto sweep = kill_sweep(args, dir / "ck", [&](int from, int to) { produce_with_headers(in, from, to); });
  auto rows = pg_->query("SELECT convert_from(value, 'UTF8'), count(*) FROM " + table_ + " GROUP BY 1");
  std::size_t missing = 0, doubled = 0;
  std::set<std::string> seen;
  for (auto& r : rows) {
    seen.insert(r[0]);
    doubled += r[1] != "1";
  }
  for (int i = 0; i < sweep.produced; ++i) missing += !seen.contains("v-" + std::to_string(i));
  std::cout << fmt::format("postgres: {} input rows, {} table rows, {} missing, {} doubled\n", sweep.produced, count(),
                           missing, doubled);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(doubled, 0u);
  EXPECT_EQ(count(), sweep.produced);
}

TEST_F(PostgresSinkTest, PurchasesExampleWritesItsPurchasesIntoATable) {
  const auto in = unique_topic("pg-purchases-in");
  create_topic(in, 1);
  std::vector<std::pair<std::string, std::string>> events;
  for (int i = 0; i < 50; ++i)
    events.emplace_back("u" + std::to_string(i),
                        fmt::format(R"({{"user_id":{},"action":"{}","amount":{}.5,"event_ts":{}}})", i,
                                    i % 2 ? "purchase" : "view", i, 1700000000000 + i));
  events.emplace_back("bad", "not an event");
  produce_json(in, events);
  TempDir dir;
  setenv("PGPASSWORD", password().c_str(), 1);
  auto r = run(join_quoted({std::string(KWIRE_BIN_DIR) + "/purchases", "--bootstrap", bootstrap(), "--topic", in,
                            "--checkpoint", (dir / "ck").string(), "--output-postgres", url(), "--table", table_,
                            "--max-offsets-per-trigger", "20"}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("25 purchases written to table " + table_), std::string::npos) << r.out;
  auto rows = pg_->query("SELECT user_id, action, amount, event_ts, \"partition\", \"offset\" FROM " + table_ +
                         " ORDER BY user_id");
  ASSERT_EQ(rows.size(), 25u);
  for (std::size_t j = 0; j < rows.size(); ++j) {
    const int user = 2 * static_cast<int>(j) + 1;
    EXPECT_EQ(rows[j], (std::vector<std::string>{std::to_string(user), "purchase", std::to_string(user) + ".5",
                                                 std::to_string(1700000000000 + user), "0", std::to_string(user)}));
  }
}

// ------------------------------------------------------------ decoded Avro

namespace {

// Every column type the sink writes for Avro values: the schema's fields in
// this order, then the Kafka columns partition and offset.
const char* kAllTypes = R"({"type":"record","name":"All","fields":[
  {"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"f","type":"float"},
  {"name":"d","type":"double"},{"name":"s","type":"string"},
  {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},{"name":"b","type":"boolean"},
  {"name":"raw","type":"bytes"},{"name":"fx","type":{"type":"fixed","name":"F2","size":2}},
  {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}},
  {"name":"day","type":{"type":"int","logicalType":"date"}},
  {"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
  {"name":"local","type":{"type":"long","logicalType":"local-timestamp-millis"}},
  {"name":"id","type":{"type":"string","logicalType":"uuid"}},
  {"name":"inner","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"},
    {"name":"y","type":["null","bytes"],"default":null}]}},
  {"name":"tags","type":{"type":"array","items":["null","string"]}},
  {"name":"counts","type":{"type":"map","values":"long"}},
  {"name":"opt","type":["null","int"],"default":null}]})";

const std::vector<std::string> kAllTypesRows = {
    R"({"i":-7,"l":9007199254740993,"f":1.5,"d":-0.25,"s":"tab\there\nback\\slash \u00e9","e":"B","b":true,)"
    R"("raw":"AAH/","fx":"YWI=","dec":"-1234.5","day":"2024-02-29","ms":"2024-05-01T10:00:00.123Z",)"
    R"("us":"2024-05-01T10:00:00.123456Z","local":"2024-05-01 10:00:00.5",)"
    R"("id":"6f1b3c1e-8d2a-4c55-9b0e-0a1b2c3d4e5f","inner":{"x":1,"y":"AP8="},"tags":["a",null,"b\tc"],)"
    R"("counts":{"k":9,"z":-1},"opt":5})",
    R"({"i":2147483647,"l":-9223372036854775808,"f":"-Infinity","d":"NaN","s":"","e":"A","b":false,"raw":"",)"
    R"("fx":"AAA=","dec":"0.05","day":"1969-12-31","ms":"1969-12-31T23:59:59.999Z",)"
    R"("us":"1900-01-01T00:00:00.000001Z","local":"1970-01-01T00:00:00",)"
    R"("id":"00000000-0000-0000-0000-000000000000","inner":{"x":-2},"tags":[],"counts":{}})",
};

// What the table holds for kAllTypesRows (TimeZone UTC), then the
// tombstone's row: NULL in every decoded column.
const Rows kAllTypesTable = {
    {"-7",
     "9007199254740993",
     "1.5",
     "-0.25",
     "tab\there\nback\\slash \xc3\xa9",
     "B",
     "t",
     "\\x0001ff",
     "\\x6162",
     "-1234.50",
     "2024-02-29",
     "2024-05-01 10:00:00.123+00",
     "2024-05-01 10:00:00.123456+00",
     "2024-05-01 10:00:00.5",
     "6f1b3c1e-8d2a-4c55-9b0e-0a1b2c3d4e5f",
     R"({"x": 1, "y": "AP8="})",
     R"(["a", null, "b\tc"])",
     R"({"k": 9, "z": -1})",
     "5",
     "0",
     "0"},
    {"2147483647",
     "-9223372036854775808",
     "-Infinity",
     "NaN",
     "",
     "A",
     "f",
     "\\x",
     "\\x0000",
     "0.05",
     "1969-12-31",
     "1969-12-31 23:59:59.999+00",
     "1900-01-01 00:00:00.000001+00",
     "1970-01-01 00:00:00",
     "00000000-0000-0000-0000-000000000000",
     R"({"x": -2})",
     "[]",
     "{}",
     "<null>",
     "0",
     "1"},
    {"<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>",
     "<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>", "0",      "2"},
};

const char* kAllTypesSelect =
    "SELECT i, l, f, d, s, e, b, raw, fx, dec, day, ms, us, local, id, \"inner\"::text, tags::text, counts::text, opt, "
    "\"partition\", \"offset\" FROM ";

// Each JSON text (the JSON `kwire stream --value-format avro` writes) as one
// Avro value of `avro_json`.
std::vector<protocol::Bytes> avro_values(const std::string& avro_json, const std::vector<std::string>& lines) {
  const source::AvroSchema avro = source::AvroSchema::parse(avro_json);
  ArrowSchema shape{};
  source::AvroDecoder(avro).export_schema(&shape);
  source::JsonRowBuilder rows(shape);
  for (const auto& l : lines) rows.append(l);
  source::ArrowBatch batch = rows.finish();
  source::ArrowBatch out = source::AvroEncoder(avro).encode(shape, batch.array());
  shape.release(&shape);
  const ArrowArray& v = *out.array().children[0];
  const auto* offsets = static_cast<const std::int32_t*>(v.buffers[1]);
  const auto* data = static_cast<const std::uint8_t*>(v.buffers[2]);
  std::vector<protocol::Bytes> values;
  for (std::int64_t i = 0; i < v.length; ++i) values.emplace_back(data + offsets[i], data + offsets[i + 1]);
  return values;
}

// Values (nullopt: a tombstone) to partition 0 of `topic`, in order.
void produce_values(const std::string& topic, const std::vector<std::optional<protocol::Bytes>>& values) {
  client::Producer p({{"bootstrap.servers", bootstrap()}});
  for (const auto& v : values) {
    client::ProducerMessage m;
    m.topic = topic;
    m.partition = 0;
    m.value = v;
    p.send(m);
  }
  p.flush();
}

// The sink's columns for Avro values of `avro_json`: the decoded ones (an
// Avro uuid as uuid, as `kwire stream` does), then partition and offset.
source::PostgresColumns avro_columns(const std::string& avro_json, const std::string& topic) {
  auto reader = std::make_shared<source::AvroValueReader>(
      source::AvroFormatOptions::parse({{"jsonFormatSchema", avro_json}}), topic);
  source::ArrowValueDecoder decoded = source::arrow_value_decoder(reader);
  for (const auto& name : source::avro_uuid_columns(source::AvroSchema::parse(avro_json))) decoded.types[name] = "uuid";
  return {std::nullopt, {source::KafkaColumn::partition, source::KafkaColumn::offset}, std::move(decoded)};
}

}  // namespace

TEST_F(PostgresSinkTest, AvroValuesAreTypedColumnsWithTombstonesAsNullsExactlyOnce) {
  const auto in = unique_topic("pg-avro-in");
  create_topic(in, 1);
  std::vector<std::optional<protocol::Bytes>> values;
  for (auto& v : avro_values(kAllTypes, kAllTypesRows)) values.emplace_back(std::move(v));
  values.emplace_back(std::nullopt);  // a tombstone
  produce_values(in, values);
  pg_->query("SET TimeZone = 'UTC'");
  TempDir dir;
  {
    // The batch commits in the database, then the query fails before its
    // commit log: run again, the batch is not written a second time.
    source::PostgresSink inner(sink_opts(), avro_columns(kAllTypes, in));
    FailAfterCommit sink(inner, "crash after the database transaction committed");
    source::StreamingQuery q(source_opts(in), dir / "ck", sink);
    EXPECT_THROW(q.run(), std::runtime_error);
  }
  EXPECT_EQ(pg_->query(kAllTypesSelect + table_ + " ORDER BY \"offset\""), kAllTypesTable);
  EXPECT_EQ(pg_->query("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = '" +
                       table_ + "'::regclass AND attnum > 0 ORDER BY attnum"),
            (Rows{{"i", "integer"},
                  {"l", "bigint"},
                  {"f", "real"},
                  {"d", "double precision"},
                  {"s", "text"},
                  {"e", "text"},
                  {"b", "boolean"},
                  {"raw", "bytea"},
                  {"fx", "bytea"},
                  {"dec", "numeric(6,2)"},
                  {"day", "date"},
                  {"ms", "timestamp with time zone"},
                  {"us", "timestamp with time zone"},
                  {"local", "timestamp without time zone"},
                  {"id", "uuid"},
                  {"inner", "jsonb"},
                  {"tags", "jsonb"},
                  {"counts", "jsonb"},
                  {"opt", "integer"},
                  {"partition", "integer"},
                  {"offset", "bigint"}}));
  // Again, with one more value: the replayed batch is skipped, the new one
  // written, nothing twice.
  auto more = avro_values(kAllTypes,
                          {R"({"i":1,"l":2,"f":0.1,"d":1e300,"s":"x","e":"A","b":true,"raw":"AA==",)"
                           R"("fx":"AAE=","dec":9999.99,"day":"9999-12-31","ms":0,"us":"1969-12-31T23:59:59.999999Z",)"
                           R"("local":"2000-02-29T23:59:59.999","id":"6F1B3C1E-8D2A-4C55-9B0E-0A1B2C3D4E5F",)"
                           R"("inner":{"x":0,"y":null},"tags":[null],"counts":{"a\"b":0},"opt":-1})"});
  produce_values(in, {more[0]});
  source::PostgresSink sink(sink_opts(), avro_columns(kAllTypes, in));
  source::StreamingQuery q(source_opts(in), dir / "ck", sink);
  std::vector<std::int64_t> output_rows;
  q.run([&](const source::BatchProgress& p) { output_rows.push_back(p.num_output_rows); });
  EXPECT_EQ(sink.batches_skipped(), 1);
  EXPECT_EQ(output_rows, (std::vector<std::int64_t>{3, 1}));  // the replay of batch 0 (seen, not written)
  Rows expected = kAllTypesTable;
  expected.push_back({"1",
                      "2",
                      "0.1",
                      "1e+300",
                      "x",
                      "A",
                      "t",
                      "\\x00",
                      "\\x0001",
                      "9999.99",
                      "9999-12-31",
                      "1970-01-01 00:00:00+00",
                      "1969-12-31 23:59:59.999999+00",
                      "2000-02-29 23:59:59.999",
                      "6f1b3c1e-8d2a-4c55-9b0e-0a1b2c3d4e5f",
                      R"({"x": 0})",
                      "[null]",
                      R"({"a\"b": 0})",
                      "-1",
                      "0",
                      "3"});
  EXPECT_EQ(pg_->query(kAllTypesSelect + table_ + " ORDER BY \"offset\""), expected);
  EXPECT_EQ(pg_->value("SELECT count(DISTINCT \"offset\") FROM " + table_), "4");
}

TEST_F(PostgresSinkTest, StreamCliWritesAvroValuesIntoTypedColumns) {
  const auto in = unique_topic("pg-avro-cli-in");
  create_topic(in, 1);
  std::vector<std::optional<protocol::Bytes>> values;
  for (auto& v : avro_values(kAllTypes, kAllTypesRows)) values.emplace_back(std::move(v));
  values.emplace_back(std::nullopt);
  produce_values(in, values);
  TempDir dir;
  std::ofstream(dir / "all.avsc") << kAllTypes;
  setenv("PGPASSWORD", password().c_str(), 1);
  const std::vector<std::string> args = {"stream",
                                         "-b",
                                         bootstrap(),
                                         "-o",
                                         "subscribe=" + in,
                                         "-o",
                                         "startingOffsets=earliest",
                                         "--checkpoint",
                                         (dir / "ck").string(),
                                         "--trigger",
                                         "available-now",
                                         "--value-format",
                                         "avro",
                                         "--schema",
                                         "@" + (dir / "all.avsc").string(),
                                         "--kafka-columns",
                                         "partition,offset",
                                         "--sink",
                                         "postgres",
                                         "-S",
                                         "url=" + url(),
                                         "-S",
                                         "dbtable=" + table_};
  auto r = run_kwire(args);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  pg_->query("SET TimeZone = 'UTC'");
  EXPECT_EQ(pg_->query(kAllTypesSelect + table_ + " ORDER BY \"offset\""), kAllTypesTable);
  // Run again: nothing new, nothing written twice.
  r = run_kwire(args);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(count(), 3);
  // A Kafka column of the same name as a decoded one is refused.
  TempDir other;
  std::ofstream(other / "p.avsc") << R"({"type":"record","name":"P","fields":[{"name":"offset","type":"long"}]})";
  r = run_kwire({"stream", "-b", bootstrap(), "-o", "subscribe=" + in, "--checkpoint", (other / "ck").string(),
                 "--value-format", "avro", "--schema", "@" + (other / "p.avsc").string(), "--kafka-columns",
                 "partition,offset", "--sink", "postgres", "-S", "url=" + url(), "-S", "dbtable=" + table_ + "_p"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'offset' is a decoded column of the values and a --kafka-columns one"), std::string::npos)
      << r.describe();
}

// The PostgreSQL sink: a query's rows written into a PostgreSQL table
// through libpq, each micro-batch in one database transaction together with
// the query's progress, so that a streaming query writes every row exactly
// once whatever crashes (Kafka's "store the offsets in the same database as
// the results" recipe).
//
// Options, by the names of Spark's JDBC data source where it has one:
//   url            required: a libpq connection string or URI
//                  ("postgresql://user@host:5432/db?sslmode=verify-full",
//                  "host=... dbname=..."); Spark's "jdbc:postgresql://..." is
//                  taken too (the "jdbc:" prefix is dropped). libpq reads
//                  PGPASSWORD, PGPASSFILE (~/.pgpass) and the other PG*
//                  variables as usual; a password is never printed.
//   dbtable        required: the target table, as written in SQL
//                  ("purchases", "sales.purchases", "\"Mixed\"")
//   user, password libpq's user and password, when not in the url
//   upsertKey      kwire's: comma-separated columns; rows are upserted
//                  (INSERT ... ON CONFLICT (key) DO UPDATE) instead of
//                  appended, and of the rows of one batch with the same key
//                  the last one (in offset order) wins. The table needs a
//                  unique index on those columns (a created table gets them
//                  as its primary key).
//   progressTable  kwire's (default kwire_progress): where streaming queries
//                  keep their last batch (see below)
// Other options are refused with SinkOptionError, so that a misspelt one is
// not silently ignored.
//
// Columns: with decoded Avro or Protobuf values (--value-format
// avro|protobuf, PostgresColumns::decoded), the top-level columns of the
// decoder's rows, then the chosen Kafka columns. Their types, from the Arrow
// type of each column: int32 integer, int64 bigint, float32 real, float64
// double precision, utf8 (string, enum) text, bool boolean, binary (bytes,
// fixed) bytea, decimal128(p, s) numeric(p,s), date32 date, timestamp with a
// zone (timestamp-millis / -micros, Protobuf's Timestamp) timestamptz,
// without one (local-timestamp-*) timestamp, duration interval, null text,
// and struct, list and map jsonb, holding the JSON RecordJsonWriter writes
// for them (the JSON of `kwire stream --value-format avro` lines: bytes in
// base64, timestamps in UTC to the millisecond); an Avro
// uuid is uuid. A tombstone (a null value) is a row whose decoded columns are
// all NULL. A malformed value fails the batch (the decoder's FAILFAST) or,
// PERMISSIVE, is a row of NULLs as well.
// With a value schema (--value-format json), the schema's columns,
// then `_corrupt_record` (text) when the table has it, then the chosen Kafka
// columns; without one, Spark's Kafka columns (key, value, topic, partition,
// offset, timestamp, timestampType, headers). Types: STRING text, TINYINT and
// SMALLINT smallint, INT integer, BIGINT bigint, FLOAT real, DOUBLE double
// precision, BOOLEAN boolean, TIMESTAMP and the Kafka timestamp
// timestamptz, key and value bytea, headers jsonb ([{"key":..,"value":..}],
// values as text). A table that does not exist is created with those
// columns (as Spark's JDBC writer creates a missing table). An existing
// table must have every column the sink writes, with a type that takes the
// values (e.g. bigint or numeric for BIGINT): otherwise SinkOptionError
// names the column, its type and what would fit, before anything is written.
// A malformed value (PERMISSIVE decoding gives a `_corrupt_record`) fails
// the batch with PostgresSinkError naming its topic, partition and offset
// when the table has no `_corrupt_record` column: no row is dropped
// silently. Rows are sent with COPY (text format).
//
// Streaming queries (prepare_batch called): batch N is one transaction:
//   1. BEGIN; an advisory lock on the query id (two copies of one query
//      wait for each other); the query's row of the progress table is read:
//      (query_id text primary key, batch_id bigint, end_offsets text: the
//      batch's end offsets as in offsets/N, sink_table text,
//      committed_at timestamptz);
//   2. the rows are copied into the table (upsert: into a temporary table,
//      then merged);
//   3. the progress row is set to (N, the batch's end offsets); COMMIT.
// The query then writes commits/N. A crash before the COMMIT leaves nothing
// (PostgreSQL rolls the transaction back): the batch is replayed. A crash
// after it leaves commits/N unwritten: the replay of N over the same end
// offsets finds N in the progress table and writes nothing. Any other batch
// id at or below the stored one means the checkpoint is behind the table
// (PostgresSinkError; nothing is written).
// Batch queries (no prepare_batch): the whole write is one transaction, with
// no progress row.
//
// Errors: PostgresSinkError with libpq's or the server's message (a wrong
// password, a read-only database, a dropped table...), the batch's
// transaction rolled back: the query stops and, run again, replays the
// batch. The connection is made again for the next batch after an error.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/source/arrow.hpp"
#include "kwire/source/json_writer.hpp"
#include "kwire/source/sink.hpp"
#include "kwire/source/value_format.hpp"

namespace kwire::source {

/// A PostgreSQL error (connection, SQL, COPY) or a checkpoint behind the
/// table. what() carries the server's message; never a password.
class PostgresSinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PostgresSinkOptions {
  std::string url;  // without a "jdbc:" prefix
  std::string dbtable;
  std::optional<std::string> user;
  std::optional<std::string> password;
  std::vector<std::string> upsert_key;  // empty: append
  std::string progress_table = "kwire_progress";

  /// Throws SinkOptionError for a missing url or dbtable, a url libpq cannot
  /// parse, an empty upsertKey column or an unknown option.
  static PostgresSinkOptions parse(const std::map<std::string, std::string>& options);
  /// host, port, dbname and user of the url (no password), for messages.
  std::string describe() const;
};

/// Values decoded into Arrow rows (AvroValueReader, ProtobufValueReader:
/// see arrow_value_decoder) for the sink's decoded columns.
struct ArrowValueDecoder {
  /// The rows' schema: a struct ("+s") whose children are the columns.
  std::function<void(ArrowSchema* out)> export_schema;
  /// Appends one record's row; a null value gives a null row. Throws what
  /// the decoder throws (e.g. AvroDecodeError for a malformed value under
  /// FAILFAST).
  std::function<void(std::optional<std::span<const std::uint8_t>> value, std::string_view topic, std::int32_t partition,
                     std::int64_t offset)>
      append;
  /// The rows appended since the last call, as one batch.
  std::function<ArrowBatch()> finish;
  /// PostgreSQL types of columns whose Arrow type does not tell theirs
  /// (an Avro uuid, a utf8 column, is "uuid"), by column name.
  std::map<std::string, std::string> types;
};

/// An ArrowValueDecoder over a reader with append / export_schema / finish.
template <class Reader>
ArrowValueDecoder arrow_value_decoder(std::shared_ptr<Reader> reader) {
  ArrowValueDecoder d;
  d.export_schema = [reader](ArrowSchema* out) { reader->export_schema(out); };
  d.append = [reader](std::optional<std::span<const std::uint8_t>> value, std::string_view topic,
                      std::int32_t partition, std::int64_t offset) { reader->append(value, topic, partition, offset); };
  d.finish = [reader] { return reader->finish(); };
  return d;
}

/// The columns a PostgresSink writes (see the top of this file).
struct PostgresColumns {
  std::optional<Schema> schema;  // decoded value columns (--value-format json)
  std::vector<KafkaColumn> kafka_columns = all_kafka_columns();
  std::optional<ArrowValueDecoder> decoded = std::nullopt;  // --value-format avro|protobuf
};

/// One column the sink writes: its name and PostgreSQL type.
struct PostgresColumn {
  std::string name;
  std::string type;  // "text", "bigint", "timestamptz", ...
  bool operator==(const PostgresColumn&) const = default;
};

/// The columns written for `columns`, in order (without `_corrupt_record`).
std::vector<PostgresColumn> postgres_columns(const PostgresColumns& columns);

/// The PostgreSQL type of a column of decoded Arrow rows (see the top of
/// this file). Throws SinkOptionError naming the column for an Arrow type
/// the sink cannot write.
std::string postgres_arrow_type(const ArrowSchema& field);

/// Whether a table column of type `table_type` (as format_type() prints it:
/// "integer", "character varying(20)", "numeric(10,2)", ...) takes the values
/// of a sink column of type `sink_type`.
bool postgres_type_accepts(std::string_view table_type, std::string_view sink_type);

/// Appends `text` escaped for COPY's text format (backslash, tab, newline,
/// carriage return).
void append_copy_text(std::string& out, std::string_view text);
/// Appends bytes as a bytea value in COPY's text format (\\x + hex).
void append_copy_bytea(std::string& out, protocol::ByteSpan bytes);

class PostgresSink : public Sink {
 public:
  /// Keeps a row (true) or drops it (false), as a `where` clause: given the
  /// source row and its decoded value (no cells without a value schema).
  using Filter = std::function<bool(const Row& row, const DecodedValue& value)>;

  /// Connects at the first batch. Throws SinkOptionError (options).
  explicit PostgresSink(const std::map<std::string, std::string>& options, PostgresColumns columns = {},
                        Filter filter = {});
  PostgresSink(PostgresSinkOptions options, PostgresColumns columns, Filter filter = {});
  ~PostgresSink() override;

  void prepare_batch(const BatchContext& context) override;
  /// Connects (creating or checking the table and, for a streaming query,
  /// the progress table) and begins the batch's transaction. Throws
  /// PostgresSinkError (connection, SQL, a checkpoint behind the table),
  /// SinkOptionError (an existing table whose columns do not fit).
  void begin_batch(std::int64_t batch_id) override;
  /// Copies the rows. Throws PostgresSinkError (a malformed value and no
  /// `_corrupt_record` column, the server refusing the data).
  void write(std::span<const Row> rows) override;
  /// Ends the copy, records the progress and commits. Returns the rows
  /// written (for a batch committed before a crash: the rows seen).
  std::int64_t commit_batch(std::int64_t batch_id) override;
  std::string description() const override;

  /// Rolls back an open batch and closes the connection.
  void close() noexcept;

  const PostgresSinkOptions& options() const noexcept { return options_; }
  /// Streaming: the query's last batch in the progress table (-1: none), as
  /// read at the first batch and moved by the sink's commits.
  std::int64_t last_committed_batch() const noexcept { return last_committed_; }
  /// Batches found committed before a crash and not written again.
  std::int64_t batches_skipped() const noexcept { return batches_skipped_; }

 private:
  struct Connection;
  void connect();
  void prepare_tables();
  void start_copy();
  std::string column_list() const;
  void flush_copy(bool final);
  [[noreturn]] void fail_batch(std::exception_ptr error);

  PostgresSinkOptions options_;
  PostgresColumns columns_;
  std::vector<PostgresColumn> sink_columns_;
  Filter filter_;
  void write_decoded(std::span<const Row> rows);
  // The row's Kafka columns in COPY text, each after a tab unless `first`.
  void append_kafka_columns(const Row& row, bool first);

  std::unique_ptr<JsonValueDecoder> decoder_;
  std::size_t decoded_columns_ = 0;  // columns of columns_.schema or columns_.decoded
  RecordJsonWriter headers_writer_;
  std::unique_ptr<Connection> conn_;
  std::optional<BatchContext> context_;
  bool corrupt_column_ = false;  // the table has _corrupt_record
  bool in_txn_ = false;
  bool copying_ = false;
  bool skip_ = false;
  std::int64_t batch_id_ = -1;
  std::int64_t rows_ = 0;
  std::int64_t last_committed_ = -1;
  std::string last_committed_end_;  // offsets_to_json of the stored end offsets
  std::int64_t batches_skipped_ = 0;
  std::string buffer_;  // COPY data not yet sent
  DecodedValue decoded_;
  std::string headers_json_;  // a row's headers as JSON, reused row after row
};

}  // namespace kwire::source

// The PostgreSQL sink's options, columns and COPY encoding (no server: the
// real-server tests are tests/broker/postgres_sink_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kwire/source/postgres_sink.hpp"

using namespace kwire::source;

namespace {

std::string error_of(const std::map<std::string, std::string>& options) {
  try {
    PostgresSinkOptions::parse(options);
  } catch (const SinkOptionError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(PostgresSinkOptions, TakesSparksJdbcNamesAndKwiresOwn) {
  auto o = PostgresSinkOptions::parse({{"url", "jdbc:postgresql://db.example:5433/sales?sslmode=require"},
                                       {"dbtable", " sales.purchases "},
                                       {"user", "writer"},
                                       {"password", "s3cret"},
                                       {"upsertKey", "id, region"},
                                       {"progressTable", "ops.progress"}});
  EXPECT_EQ(o.url, "postgresql://db.example:5433/sales?sslmode=require");  // "jdbc:" dropped
  EXPECT_EQ(o.dbtable, "sales.purchases");
  EXPECT_EQ(o.user, "writer");
  EXPECT_EQ(o.password, "s3cret");
  EXPECT_EQ(o.upsert_key, (std::vector<std::string>{"id", "region"}));
  EXPECT_EQ(o.progress_table, "ops.progress");
  EXPECT_EQ(o.describe(), "host=db.example port=5433 dbname=sales user=writer");
  auto d = PostgresSinkOptions::parse({{"url", "host=h dbname=d"}, {"dbtable", "t"}});
  EXPECT_TRUE(d.upsert_key.empty());
  EXPECT_EQ(d.progress_table, "kwire_progress");
  EXPECT_EQ(d.describe(), "host=h dbname=d");
}

TEST(PostgresSinkOptions, ThePasswordIsNeverDescribed) {
  auto o = PostgresSinkOptions::parse({{"url", "postgresql://u:hunter2@h/db"}, {"dbtable", "t"}});
  EXPECT_EQ(o.describe(), "host=h dbname=db user=u");
  PostgresSink sink(o, {});
  EXPECT_EQ(sink.description(), "PostgresSink[host=h dbname=db user=u table=t]");
}

TEST(PostgresSinkOptions, ErrorsNameTheOption) {
  EXPECT_EQ(error_of({{"dbtable", "t"}}), "Option 'url' is required (a libpq connection string or URI)");
  EXPECT_EQ(error_of({{"url", "host=h"}}), "Option 'dbtable' is required");
  EXPECT_EQ(error_of({{"url", "host=h"}, {"dbtable", "t"}, {"batchsize", "10"}}),
            "Unknown PostgreSQL sink option 'batchsize' (known: url, dbtable, user, password, upsertKey, "
            "progressTable)");
  EXPECT_EQ(error_of({{"url", "host=h"}, {"dbtable", "t"}, {"upsertKey", "id,,x"}}),
            "Option 'upsertKey' has an empty column name: 'id,,x'");
  const auto bad = error_of({{"url", "postgresql://h/db?nosuchparam=1"}, {"dbtable", "t"}});
  EXPECT_EQ(bad.rfind("Option 'url' is not a libpq connection string or URI: ", 0), 0u) << bad;
  EXPECT_NE(bad.find("nosuchparam"), std::string::npos) << bad;
  try {
    PostgresSink sink({{"url", "host=h"}, {"dbtable", "t"}, {"upsertKey", "nope"}});
    FAIL();
  } catch (const SinkOptionError& e) {
    EXPECT_STREQ(e.what(), "Option 'upsertKey': 'nope' is not a column the sink writes");
  }
}

TEST(PostgresSinkColumns, SparksKafkaColumnsOrTheDecodedOnesWithTheChosenKafkaColumns) {
  EXPECT_EQ(postgres_columns({}), (std::vector<PostgresColumn>{{"key", "bytea"},
                                                               {"value", "bytea"},
                                                               {"topic", "text"},
                                                               {"partition", "integer"},
                                                               {"offset", "bigint"},
                                                               {"timestamp", "timestamptz"},
                                                               {"timestampType", "integer"},
                                                               {"headers", "jsonb"}}));
  PostgresColumns decoded{Schema::parse_ddl("s STRING, b TINYINT, h SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE, "
                                            "ok BOOLEAN, at TIMESTAMP"),
                          {KafkaColumn::offset}};
  EXPECT_EQ(postgres_columns(decoded), (std::vector<PostgresColumn>{{"s", "text"},
                                                                    {"b", "smallint"},
                                                                    {"h", "smallint"},
                                                                    {"i", "integer"},
                                                                    {"l", "bigint"},
                                                                    {"f", "real"},
                                                                    {"d", "double precision"},
                                                                    {"ok", "boolean"},
                                                                    {"at", "timestamptz"},
                                                                    {"offset", "bigint"}}));
}

TEST(PostgresSinkColumns, ATableColumnTakesTheValuesOfWiderOrExactTypes) {
  EXPECT_TRUE(postgres_type_accepts("bigint", "integer"));
  EXPECT_TRUE(postgres_type_accepts("numeric(20,0)", "bigint"));
  EXPECT_FALSE(postgres_type_accepts("integer", "bigint"));
  EXPECT_FALSE(postgres_type_accepts("integer", "double precision"));
  EXPECT_TRUE(postgres_type_accepts("character varying(40)", "text"));
  EXPECT_FALSE(postgres_type_accepts("bytea", "text"));
  EXPECT_TRUE(postgres_type_accepts("timestamp without time zone", "timestamptz"));
  EXPECT_TRUE(postgres_type_accepts("timestamp with time zone", "timestamptz"));
  EXPECT_FALSE(postgres_type_accepts("date", "timestamptz"));
  EXPECT_TRUE(postgres_type_accepts("json", "jsonb"));
  EXPECT_FALSE(postgres_type_accepts("text", "bytea"));
  EXPECT_FALSE(postgres_type_accepts("smallint", "boolean"));
}

TEST(PostgresSinkCopy, TextAndByteaAreEscapedForCopysTextFormat) {
  std::string out;
  append_copy_text(out, "a\tb\nc\rd\\e \"f\"");
  EXPECT_EQ(out, "a\\tb\\nc\\rd\\\\e \"f\"");
  out.clear();
  const std::vector<std::uint8_t> bytes{0x00, 0x7f, 0xff, 0x09};
  append_copy_bytea(out, bytes);
  EXPECT_EQ(out, "\\\\x007fff09");
  out.clear();
  append_copy_bytea(out, {});
  EXPECT_EQ(out, "\\\\x");
}

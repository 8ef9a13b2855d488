// PostgresSink's column types and options: the columns and PostgreSQL
// types it writes, which table columns take them, COPY text, and the
// options (postgres_sink.hpp).
#include <libpq-fe.h>

#include <algorithm>

#include <fmt/format.h>

#include "kwire/source/postgres_sink.hpp"

namespace kwire::source {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::string_view sql_type(ColumnType type) {
  switch (type) {
    case ColumnType::string: return "text";
    case ColumnType::int8:
    case ColumnType::int16: return "smallint";
    case ColumnType::int32: return "integer";
    case ColumnType::int64: return "bigint";
    case ColumnType::float32: return "real";
    case ColumnType::float64: return "double precision";
    case ColumnType::boolean: return "boolean";
    case ColumnType::timestamp: return "timestamptz";
  }
  return "text";
}

std::string_view sql_type(KafkaColumn column) {
  switch (column) {
    case KafkaColumn::key:
    case KafkaColumn::value: return "bytea";
    case KafkaColumn::topic: return "text";
    case KafkaColumn::partition:
    case KafkaColumn::timestamp_type: return "integer";
    case KafkaColumn::offset: return "bigint";
    case KafkaColumn::timestamp: return "timestamptz";
    case KafkaColumn::headers: return "jsonb";
  }
  return "text";
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

// ------------------------------------------------------------ free functions

std::vector<PostgresColumn> postgres_columns(const PostgresColumns& columns) {
  std::vector<PostgresColumn> out;
  if (columns.schema)
    for (const auto& c : columns.schema->columns) out.push_back({c.name, std::string(sql_type(c.type))});
  if (columns.decoded) {
    ArrowSchema schema{};
    columns.decoded->export_schema(&schema);
    try {
      for (std::int64_t i = 0; i < schema.n_children; ++i) {
        const ArrowSchema& field = *schema.children[i];
        const std::string name = field.name ? field.name : "";
        auto it = columns.decoded->types.find(name);
        out.push_back({name, it != columns.decoded->types.end() ? it->second : postgres_arrow_type(field)});
      }
    } catch (...) {
      schema.release(&schema);
      throw;
    }
    schema.release(&schema);
  }
  for (KafkaColumn k : columns.kafka_columns)
    out.push_back({std::string(kafka_column_name(k)), std::string(sql_type(k))});
  return out;
}

bool postgres_type_accepts(std::string_view table_type, std::string_view sink_type) {
  auto any_of = [&](std::initializer_list<std::string_view> prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(),
                       [&](std::string_view p) { return starts_with(table_type, p); });
  };
  if (sink_type == "text") return any_of({"text", "character", "citext", "json", "jsonb", "name", "uuid"});
  if (sink_type == "smallint") return any_of({"smallint", "integer", "bigint", "numeric", "real", "double precision"});
  if (sink_type == "integer") return any_of({"integer", "bigint", "numeric", "double precision"});
  if (sink_type == "bigint") return any_of({"bigint", "numeric"});
  if (sink_type == "real") return any_of({"real", "double precision", "numeric"});
  if (sink_type == "double precision") return any_of({"double precision", "numeric"});
  if (sink_type == "boolean") return any_of({"boolean"});
  if (sink_type == "timestamptz" || sink_type == "timestamp") return any_of({"timestamp"});
  if (sink_type == "date") return any_of({"date", "timestamp"});
  if (sink_type == "uuid") return any_of({"uuid", "text", "character"});
  if (sink_type == "interval") return any_of({"interval"});
  if (starts_with(sink_type, "numeric")) return any_of({"numeric"});
  if (sink_type == "bytea") return any_of({"bytea"});
  if (sink_type == "jsonb") return any_of({"jsonb", "json", "text"});
  return table_type == sink_type;
}

void append_copy_text(std::string& out, std::string_view text) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char* esc = nullptr;
    switch (c) {
      case '\\': esc = "\\\\"; break;
      case '\t': esc = "\\t"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      default: continue;
    }
    out.append(text.data() + start, i - start);
    out += esc;
    start = i + 1;
  }
  out.append(text.data() + start, text.size() - start);
}

void append_copy_bytea(std::string& out, protocol::ByteSpan bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::size_t at = out.size();
  out.resize(at + 3 + 2 * bytes.size());
  char* p = out.data() + at;
  *p++ = '\\';
  *p++ = '\\';
  *p++ = 'x';
  for (const std::uint8_t v : bytes) {
    *p++ = kHex[v >> 4];
    *p++ = kHex[v & 15];
  }
}

// ------------------------------------------------------------------ options

PostgresSinkOptions PostgresSinkOptions::parse(const std::map<std::string, std::string>& options) {
  PostgresSinkOptions out;
  for (const auto& [name, value] : options) {
    if (name == "url") {
      out.url = starts_with(value, "jdbc:") ? value.substr(5) : value;
    } else if (name == "dbtable") {
      out.dbtable = trim(value);
    } else if (name == "user") {
      out.user = value;
    } else if (name == "password") {
      out.password = value;
    } else if (name == "upsertKey") {
      std::string_view rest = value;
      while (true) {
        const auto comma = rest.find(',');
        std::string column = trim(rest.substr(0, comma));
        if (column.empty())
          throw SinkOptionError(fmt::format("Option 'upsertKey' has an empty column name: '{}'", value));
        out.upsert_key.push_back(std::move(column));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    } else if (name == "progressTable") {
      out.progress_table = trim(value);
      if (out.progress_table.empty()) throw SinkOptionError("Option 'progressTable' must name a table");
    } else {
      throw SinkOptionError(fmt::format(
          "Unknown PostgreSQL sink option '{}' (known: url, dbtable, user, password, upsertKey, progressTable)", name));
    }
  }
  if (out.url.empty()) throw SinkOptionError("Option 'url' is required (a libpq connection string or URI)");
  if (out.dbtable.empty()) throw SinkOptionError("Option 'dbtable' is required");
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(out.url.c_str(), &error);
  if (!parsed) {
    std::string why = error ? trim(error) : "out of memory";
    while (!why.empty() && why.back() == '\n') why.pop_back();
    PQfreemem(error);
    throw SinkOptionError(fmt::format("Option 'url' is not a libpq connection string or URI: {}", why));
  }
  PQconninfoFree(parsed);
  return out;
}

std::string PostgresSinkOptions::describe() const {
  std::map<std::string, std::string> fields;
  if (PQconninfoOption* parsed = PQconninfoParse(url.c_str(), nullptr)) {
    for (auto* o = parsed; o->keyword; ++o)
      if (o->val && *o->val) fields[o->keyword] = o->val;
    PQconninfoFree(parsed);
  }
  if (user) fields["user"] = *user;
  std::string out;
  for (const char* key : {"host", "hostaddr", "port", "dbname", "user"}) {
    auto it = fields.find(key);
    if (it == fields.end()) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", key, it->second);
  }
  return out.empty() ? "(libpq defaults)" : out;
}

}  // namespace kwire::source

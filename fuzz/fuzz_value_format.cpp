// JsonValueDecoder with a fixed schema holding every column type, on
// arbitrary text (and as a tombstone). decode() never throws; every cell
// matches its column's type; append_json_members() never throws, and
// append_decoded_json() (no cells) writes the same members. The input
// is also tried as a DDL schema (SchemaError allowed; to_ddl() must parse
// back to the same schema) and as a timestamp.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_common.hpp"
#include "kwire/source/json_writer.hpp"
#include "kwire/source/value_format.hpp"

namespace {

using namespace kwire::source;

JsonValueDecoder& decoder() {
  static JsonValueDecoder d(Schema::parse_ddl(
      "s STRING, i INT, b BIGINT, t TINYINT, sm SMALLINT, f FLOAT, d DOUBLE, ok BOOLEAN, ts TIMESTAMP, "
      "`weird name` STRING"));
  return d;
}

bool cell_fits(const Cell& c, ColumnType type) {
  if (std::holds_alternative<std::monostate>(c)) return true;
  switch (type) {
    case ColumnType::string: return std::holds_alternative<std::string>(c);
    case ColumnType::int8:
    case ColumnType::int16:
    case ColumnType::int32:
    case ColumnType::int64:
    case ColumnType::timestamp: return std::holds_alternative<std::int64_t>(c);
    case ColumnType::float32:
    case ColumnType::float64: return std::holds_alternative<double>(c);
    case ColumnType::boolean: return std::holds_alternative<bool>(c);
  }
  return false;
}

void decode_and_check(std::optional<std::string_view> text) {
  JsonValueDecoder& d = decoder();
  const DecodedValue v = d.decode(text);
  KWIRE_FUZZ_CHECK(v.cells.size() == d.schema().columns.size());
  for (std::size_t i = 0; i < v.cells.size(); ++i) KWIRE_FUZZ_CHECK(cell_fits(v.cells[i], d.schema().columns[i].type));
  if (!text) KWIRE_FUZZ_CHECK(!v.corrupt_record);
  // One member per non-null cell, plus _corrupt_record when set; nulls are left out.
  std::string json;
  const std::size_t members = d.append_json_members(json, v);
  std::size_t want = v.corrupt_record ? 1 : 0;
  for (const auto& c : v.cells)
    if (!std::holds_alternative<std::monostate>(c)) ++want;
  KWIRE_FUZZ_CHECK(members == want);
  KWIRE_FUZZ_CHECK(json.empty() == (members == 0));
  std::string direct;
  KWIRE_FUZZ_CHECK(d.append_decoded_json(direct, text, RecordJsonWriter()) == members);
  KWIRE_FUZZ_CHECK(direct == json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  decode_and_check(text);
  decode_and_check(std::nullopt);

  try {
    const Schema schema = Schema::parse_ddl(text);
    Schema again;
    try {
      again = Schema::parse_ddl(schema.to_ddl());
    } catch (const SchemaError&) {
      kwire::fuzz::finding("to_ddl() output does not parse");
    }
    KWIRE_FUZZ_CHECK(again.columns == schema.columns);
  } catch (const SchemaError&) {
  }

  if (const auto ms = parse_timestamp_ms(text)) {
    const std::string formatted = format_timestamp_ms(*ms);
    KWIRE_FUZZ_CHECK(parse_timestamp_ms(formatted) == ms);
  }
  if (size >= 8) {
    std::int64_t ms = 0;
    for (int i = 0; i < 8; ++i) ms = static_cast<std::int64_t>((static_cast<std::uint64_t>(ms) << 8) | data[i]);
    (void)format_timestamp_ms(ms);
  }
  return 0;
}

// The one JSON string escaper: fixed cases, and random byte strings (ASCII
// only, and with UTF-8 and invalid bytes) against a byte-by-byte reference.
#include <cstdio>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "kwire/checkpoint/json_escape.hpp"

using kwire::checkpoint::append_json_string;
using kwire::checkpoint::json_string;

namespace {

// RFC 8259 escapes, valid UTF-8 sequences kept, any other byte >= 0x80 as
// \u00XX of its value.
std::string reference(const std::string& s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[8];
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      std::size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      bool ok = n > 0 && i + n <= s.size();
      for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok) {
        out += s.substr(i, n);
        i += n - 1;
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
    }
  }
  return out + "\"";
}

}  // namespace

TEST(JsonEscape, FixedCases) {
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(json_string("plain"), "\"plain\"");
  EXPECT_EQ(json_string("{\"a\":\"b\\c\"}"), "\"{\\\"a\\\":\\\"b\\\\c\\\"}\"");
  EXPECT_EQ(json_string("a\nb\rc\td"), "\"a\\nb\\rc\\td\"");
  EXPECT_EQ(json_string(std::string("\0\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(json_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");            // valid UTF-8 kept
  EXPECT_EQ(json_string("\xff\xc3"), "\"\\u00ff\\u00c3\"");            // invalid and cut short
  EXPECT_EQ(json_string("\xe2\x82\xac\"x"), "\"\xe2\x82\xac\\\"x\"");  // UTF-8 then an escape
  std::string out = "prefix:";
  append_json_string(out, "q\"");
  EXPECT_EQ(out, "prefix:\"q\\\"\"");  // appended after what was there
}

TEST(JsonEscape, RandomStringsMatchTheReference) {
  std::mt19937 rng(20261206);
  for (int round = 0; round < 20000; ++round) {
    const bool ascii = round % 2 == 0;
    // Up to ten 16-byte blocks; every fourth string mostly quotes and
    // backslashes (several in a block, and up to its last bytes).
    const bool dense = round % 4 == 1;
    std::string s(rng() % 160, '\0');
    for (auto& ch : s) {
      const unsigned r = rng();
      // Mostly printable text, with quotes, backslashes and control bytes.
      if (dense && r % 3 != 0) ch = "\"\\"[r % 2];
      else if (r % 4 == 0) ch = "\"\\\n\t\x01\x1f"[r % 6];
      else ch = static_cast<char>(ascii ? 0x20 + r % 0x60 : r % 256);
    }
    std::string out = "x";
    append_json_string(out, s);
    ASSERT_EQ(out, "x" + reference(s)) << "round " << round;
  }
}

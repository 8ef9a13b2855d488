#include "kwire/checkpoint/json_escape.hpp"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kwire::checkpoint {

namespace {
// Length of a valid UTF-8 sequence starting at s[i], or 0.
std::size_t utf8_len(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}
}  // namespace

namespace {
// Bytes written as they are: printable ASCII other than " and \.
constexpr bool plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

// Copies the plain bytes from `p` to `w` up to the first other byte or
// `end`, advancing both. With SSE2 (every x86-64), 16 bytes per step, each
// block stored whole (the caller's room covers it: at least two bytes per
// input byte left) of which only the bytes before the first special one are
// kept; a signed compare below 0x20 catches the control bytes and the bytes
// >= 0x80 at once.
inline void copy_plain(const char*& p, char*& w, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w), v);
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), _mm_cmplt_epi8(v, space));
    if (const int mask = _mm_movemask_epi8(hit); mask != 0) {
      const auto n = __builtin_ctz(static_cast<unsigned>(mask));
      p += n;
      w += n;
      return;
    }
    p += 16;
    w += 16;
  }
#endif
  while (p < end && plain(static_cast<unsigned char>(*p))) *w++ = *p++;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  // Written in place. Room for every byte escaped as two is made first, and
  // kept: a plain byte or a UTF-8 sequence takes one output byte per input
  // byte and a short escape two, so only a \u00XX escape (six) can need
  // more, and it makes room for itself and the rest. The string is cut to
  // what was written at the end.
  std::size_t at = out.size();
  out.resize(at + 2 * s.size() + 2);
  char* w = out.data() + at;
  char* limit = out.data() + out.size();
  *w++ = '"';
  const char* p = s.data();
  const char* const end = p + s.size();
  static constexpr char hex[] = "0123456789abcdef";
  while (true) {
    // Runs of plain bytes (most of most keys and values) are copied whole.
    copy_plain(p, w, end);
    if (p == end) break;
    const auto c = static_cast<unsigned char>(*p);
    char second = 0;
    switch (c) {
      case '"': second = '"'; break;
      case '\\': second = '\\'; break;
      case '\n': second = 'n'; break;
      case '\r': second = 'r'; break;
      case '\t': second = 't'; break;
      default: break;
    }
    if (second != 0) {
      w[0] = '\\';
      w[1] = second;
      w += 2;
      ++p;
      continue;
    }
    if (c >= 0x80) {
      if (auto n = utf8_len(s, static_cast<std::size_t>(p - s.data())); n > 0) {
        std::memcpy(w, p, n);
        w += n;
        p += n;
        continue;
      }
    }
    // A control byte, or a byte that is not valid UTF-8: six bytes for one,
    // and room for the rest of the input at two bytes each and the quote.
    const auto rest = static_cast<std::size_t>(end - p - 1);
    if (static_cast<std::size_t>(limit - w) < 6 + 2 * rest + 1) {
      const auto used = static_cast<std::size_t>(w - out.data());
      out.resize(used + 6 + 2 * rest + 1);
      w = out.data() + used;
      limit = out.data() + out.size();
    }
    w[0] = '\\';
    w[1] = 'u';
    w[2] = '0';
    w[3] = '0';
    w[4] = hex[c >> 4];
    w[5] = hex[c & 0xf];
    w += 6;
    ++p;
  }
  *w++ = '"';
  out.resize(static_cast<std::size_t>(w - out.data()));
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace kwire::checkpoint

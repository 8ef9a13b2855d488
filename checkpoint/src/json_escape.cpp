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

// Copies the bytes from `p` to `w` up to the first control byte or byte >=
// 0x80, or `end`, advancing both: plain bytes as they are, " and \ with a
// backslash before them (a JSON text as a value has a quote every few
// bytes; they are written here, not one call each). The caller's room
// covers two output bytes per input byte left.
//
// With SSE2 (every x86-64), 16 bytes per step: the block is stored whole,
// of which only the bytes before the first control or high byte are kept (a
// signed compare below 0x20 catches both at once). The stores may reach past
// what is kept, never past the room: at most 2 bytes per input byte left.
inline void copy_plain(const char*& p, char*& w, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const auto escaped =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
    const auto other = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmplt_epi8(v, space)));
    // The bytes of this block that are written here.
    const unsigned n = other != 0 ? static_cast<unsigned>(__builtin_ctz(other)) : 16;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w), v);
    // Each " or \ gets its backslash, and the input from it on is stored
    // again one further along (16 bytes from there, when the input has them;
    // else the rest of the block byte by byte).
    unsigned shift = 0;
    for (unsigned m = escaped & ((1u << n) - 1); m != 0; m &= m - 1) {
      const auto k = static_cast<unsigned>(__builtin_ctz(m));
      if (end - (p + k) < 16) {
        for (unsigned i = k; i < n; ++i) {
          w[i + shift] = '\\';
          shift += (escaped >> i) & 1;
          w[i + shift] = p[i];
        }
        break;
      }
      w[k + shift] = '\\';
      ++shift;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(w + k + shift),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k)));
    }
    w += n + shift;
    p += n;
    if (n < 16) return;
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') *w++ = '\\';
    else if (!plain(c)) return;
    *w++ = static_cast<char>(c);
  }
}

// Escapes [p, end) of `s` to `w`, advancing both. Returns false, before the
// byte that needs it, when a \u00XX escape would leave less room before
// `limit` than the rest of the input at two bytes per byte and the closing
// quote. The room at the start covers two bytes per input byte.
bool escape(const char*& p, char*& w, const char* const end, const char* limit, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  while (true) {
    // Runs of plain bytes, quotes and backslashes (most of most keys and
    // values) are copied whole.
    copy_plain(p, w, end);
    if (p == end) return true;
    const auto c = static_cast<unsigned char>(*p);
    char second = 0;
    switch (c) {
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
    if (static_cast<std::size_t>(limit - w) < 6 + 2 * rest + 1) return false;
    w[0] = '\\';
    w[1] = 'u';
    w[2] = '0';
    w[3] = '0';
    w[4] = hex[c >> 4];
    w[5] = hex[c & 0xf];
    w += 6;
    ++p;
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  // Written in place. Room for every byte escaped as two is made first, and
  // kept: a plain byte or a UTF-8 sequence takes one output byte per input
  // byte and a short escape two, so only a \u00XX escape (six) can need
  // more, and it makes room for itself and the rest. The string is cut to
  // what was written at the end.
  const std::size_t at = out.size();
  out.resize(at + 2 * s.size() + 2);
  char* w = out.data() + at;
  *w++ = '"';
  const char* p = s.data();
  const char* const end = p + s.size();
  while (!escape(p, w, end, out.data() + out.size(), s)) {
    const auto used = static_cast<std::size_t>(w - out.data());
    out.resize(used + 6 + 2 * static_cast<std::size_t>(end - p - 1) + 1);
    w = out.data() + used;
  }
  *w++ = '"';
  out.resize(static_cast<std::size_t>(w - out.data()));
}

char* write_json_string(char* w, char* limit, std::string_view s) {
  *w++ = '"';
  const char* p = s.data();
  if (!escape(p, w, p + s.size(), limit, s)) return nullptr;
  *w++ = '"';
  return w;
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace kwire::checkpoint

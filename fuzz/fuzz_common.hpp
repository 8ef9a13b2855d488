// Small helpers shared by the fuzz targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace kwire::fuzz {

/// Hands out pieces of the fuzzer's input; reads past the end yield zeros.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::size_t remaining() const { return size_ - pos_; }
  bool empty() const { return pos_ >= size_; }

  std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>((u8() << 8) | u8()); }
  std::uint32_t u32() { return (std::uint32_t(u16()) << 16) | u16(); }
  std::uint64_t u64() { return (std::uint64_t(u32()) << 32) | u32(); }

  /// The next n bytes (fewer at the end).
  std::span<const std::uint8_t> take(std::size_t n) {
    if (n > remaining()) n = remaining();
    std::span<const std::uint8_t> s(data_ + pos_, n);
    pos_ += n;
    return s;
  }
  std::span<const std::uint8_t> rest() { return take(remaining()); }

  /// A string of up to max_len bytes, its length taken from one input byte.
  std::string short_string(std::size_t max_len = 64) {
    const std::size_t n = u8() % (max_len + 1);
    auto s = take(n);
    return std::string(reinterpret_cast<const char*>(s.data()), s.size());
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

/// Reports a broken invariant and aborts, so libFuzzer records the input.
[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

#define KWIRE_FUZZ_CHECK(cond)                                    \
  do {                                                            \
    if (!(cond)) ::kwire::fuzz::finding(#cond " (" __FILE__ ")"); \
  } while (0)

}  // namespace kwire::fuzz

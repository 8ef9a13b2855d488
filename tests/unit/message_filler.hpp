// Every field of a message filled with a distinct value, and the round trips
// of a request/response pair at every declared version.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "kwire/protocol/messages.hpp"
#include "message_round_trip.hpp"

namespace kwire::protocol::testing {

// Gives every field a distinct non-default value (a running counter) and
// every array two elements, whatever the version: encode picks the fields
// that exist, so a field read in the wrong place changes the decoded value.
struct MessageFiller : VisitorBase<MessageFiller> {
  int n = 0;
  int depth = 0;
  template <class T>
  void operator()(T& x) {
    fill(x);
  }
  template <class T>
  void tagged(std::uint32_t, std::int16_t, T& x, const T& = T{}) {
    fill(x);
  }
  template <class T>
  void since(std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void until(std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void range(std::int16_t, std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void fill(T& x) {
    ++n;
    if constexpr (std::is_same_v<T, bool>) {
      x = true;
    } else if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(n % 100 + 1);
    } else if constexpr (std::is_same_v<T, Uuid>) {
      for (std::size_t i = 0; i < x.bytes.size(); ++i) x.bytes[i] = static_cast<std::uint8_t>(n + i);
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::optional<std::string>>) {
      x = "s" + std::to_string(n);
    } else if constexpr (std::is_same_v<T, Bytes> || std::is_same_v<T, std::optional<Bytes>>) {
      x = Bytes{static_cast<std::uint8_t>(n), 2, 3};
    } else if constexpr (std::is_same_v<T, Records>) {
      // left null: a view needs storage that outlives the message
    } else if constexpr (detail::is_vector<T>::value) {
      x.resize(depth < 3 ? 2 : 1);
      for (auto& e : x) fill(e);
    } else if constexpr (detail::is_optional<T>::value) {
      x.emplace();
      fill(*x);
    } else if constexpr (MessageStruct<T>) {
      ++depth;
      x.fields(*this);
      --depth;
    }
  }
};

// The filled message as it exists at `v` (fields of other versions drop out).
template <class M>
M filled_message_at(std::int16_t v) {
  M m;
  MessageFiller f;
  m.fields(f);
  Bytes b = encode(m, v);
  Reader r{ByteSpan(b)};
  M out;
  decode(r, out, v);
  EXPECT_TRUE(r.ok() && r.empty()) << api_name(M::api_key) << " v" << v;
  return out;
}

// Request and response, filled and empty, at every declared version (with
// unknown tags in flexible ones); returns the number of versions.
template <class Req, class Resp>
int round_trip_all_versions() {
  static_assert(Req::min_version == Resp::min_version && Req::max_version == Resp::max_version);
  int n = 0;
  for (std::int16_t v = Req::min_version; v <= Req::max_version; ++v) {
    Req req = filled_message_at<Req>(v);
    if (is_flexible<Req>(v)) req.unknown_tagged_fields = {{40, bytes_of({0x5a})}};
    request_round_trip(req, v);
    request_round_trip(Req{}, v);
    Resp resp = filled_message_at<Resp>(v);
    if (is_flexible<Resp>(v)) resp.unknown_tagged_fields = {{41, bytes_of({0x5b, 0x01})}};
    response_round_trip(resp, v);
    response_round_trip(Resp{}, v);
    ++n;
  }
  return n;
}

}  // namespace kwire::protocol::testing

// The round trip every message declaration must pass, shared by the message
// fuzz targets: decode a body at a version; whatever decodes re-encodes to
// bytes (no longer than the input, of the encoder's own size count) that
// decode to an equal value and encode again to the same bytes. The same bytes
// also go through the framing helpers (header, then body).
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "fuzz_common.hpp"
#include "kwire/protocol/messages.hpp"

namespace kwire::fuzz {

/// A request and response pair of one API.
template <class Req, class Resp>
struct Api {
  using Request = Req;
  using Response = Resp;
  static_assert(Req::api_key == Resp::api_key);
  static_assert(Req::min_version == Resp::min_version && Req::max_version == Resp::max_version);
};

template <class M>
void round_trip(protocol::ByteSpan body, std::int16_t version) {
  using namespace kwire::protocol;
  M first;
  Reader r(body);
  decode(r, first, version);
  if (!r.ok()) return;
  const Bytes encoded = encode(first, version);
  KWIRE_FUZZ_CHECK(encoded_size(first, version) == encoded.size());
  // Trailing input bytes are not part of the value (and a nullable struct's
  // presence marker may be any value >= 0 on input, written as 1), so only
  // the length can be compared with the input: never longer.
  KWIRE_FUZZ_CHECK(encoded.size() <= r.offset());
  M second;
  Reader r2{ByteSpan(encoded)};
  decode(r2, second, version);
  KWIRE_FUZZ_CHECK(r2.ok());
  KWIRE_FUZZ_CHECK(r2.empty());
  KWIRE_FUZZ_CHECK(first == second);
  KWIRE_FUZZ_CHECK(encode(second, version) == encoded);
}

template <class A>
void framed(protocol::ByteSpan payload, std::int16_t version) {
  using namespace kwire::protocol;
  {
    typename A::Response body;
    ResponseHeader h;
    Reader r(payload);
    (void)decode_response(r, body, version, &h);
  }
  {
    typename A::Request body;
    RequestHeader h;
    Reader r(payload);
    (void)decode_request(r, body, version, &h);
  }
}

/// Both bodies of API `A` at the version `version_selector` picks (modulo
/// its declared range), then the framed forms.
template <class A>
void run_api(std::uint16_t version_selector, protocol::ByteSpan body) {
  using Req = typename A::Request;
  constexpr int span = Req::max_version - Req::min_version + 1;
  const auto version = static_cast<std::int16_t>(Req::min_version + version_selector % span);
  round_trip<typename A::Response>(body, version);
  round_trip<typename A::Request>(body, version);
  framed<A>(body, version);
}

/// run_api for the `index`-th Api of the tuple `Apis`.
template <class Apis, std::size_t... I>
void run_api_at(std::size_t index, std::uint16_t version_selector, protocol::ByteSpan body, std::index_sequence<I...>) {
  ((index == I ? run_api<std::tuple_element_t<I, Apis>>(version_selector, body) : void()), ...);
}
template <class Apis>
void run_api_at(std::size_t index, std::uint16_t version_selector, protocol::ByteSpan body) {
  run_api_at<Apis>(index, version_selector, body, std::make_index_sequence<std::tuple_size_v<Apis>>{});
}

}  // namespace kwire::fuzz

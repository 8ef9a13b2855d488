// Request and response bodies and headers of every message in messages.hpp.
//
// Input: int16 selecting the API (modulo the number of APIs below), int16
// selecting the version (modulo the declared range), then the bytes decoded as
// that API's response body and as its request body. Whatever decodes must
// re-encode to bytes that decode to an equal value, consume every byte, and
// match the encoder's own size count. Headers get the same treatment.
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "fuzz_common.hpp"
#include "kwire/protocol/messages.hpp"

namespace {

using namespace kwire::protocol;

template <class Req, class Resp>
struct Api {
  using Request = Req;
  using Response = Resp;
  static_assert(Req::api_key == Resp::api_key);
  static_assert(Req::min_version == Resp::min_version && Req::max_version == Resp::max_version);
};

using Apis = std::tuple<Api<ProduceRequest, ProduceResponse>,                    //
                        Api<FetchRequest, FetchResponse>,                        //
                        Api<ListOffsetsRequest, ListOffsetsResponse>,            //
                        Api<MetadataRequest, MetadataResponse>,                  //
                        Api<ApiVersionsRequest, ApiVersionsResponse>,            //
                        Api<CreateTopicsRequest, CreateTopicsResponse>,          //
                        Api<DeleteTopicsRequest, DeleteTopicsResponse>,          //
                        Api<DeleteRecordsRequest, DeleteRecordsResponse>,        //
                        Api<CreatePartitionsRequest, CreatePartitionsResponse>,  //
                        Api<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse>>;

// Decode, and when that works, check the encode/decode round trip.
template <class M>
void round_trip(ByteSpan body, std::int16_t version) {
  M first;
  Reader r(body);
  decode(r, first, version);
  if (!r.ok()) return;

  const Bytes encoded = encode(first, version);
  KWIRE_FUZZ_CHECK(encoded_size(first, version) == encoded.size());
  // Trailing input bytes are not part of the value, so the encoding is never longer.
  KWIRE_FUZZ_CHECK(encoded.size() <= r.offset());

  M second;
  Reader r2{ByteSpan(encoded)};
  decode(r2, second, version);
  KWIRE_FUZZ_CHECK(r2.ok());
  KWIRE_FUZZ_CHECK(r2.empty());
  KWIRE_FUZZ_CHECK(first == second);
  KWIRE_FUZZ_CHECK(encode(second, version) == encoded);
}

// The same bytes through the framing helpers (header, then body).
template <class A>
void framed(ByteSpan payload, std::int16_t version) {
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

template <class A>
void run_api(std::uint16_t version_selector, ByteSpan body) {
  using Req = typename A::Request;
  constexpr int span = Req::max_version - Req::min_version + 1;
  const auto version = static_cast<std::int16_t>(Req::min_version + version_selector % span);
  round_trip<typename A::Response>(body, version);
  round_trip<typename A::Request>(body, version);
  framed<A>(body, version);
}

template <std::size_t... I>
void dispatch(std::size_t index, std::uint16_t version_selector, ByteSpan body, std::index_sequence<I...>) {
  ((index == I ? run_api<std::tuple_element_t<I, Apis>>(version_selector, body) : void()), ...);
}

void headers(ByteSpan bytes) {
  for (std::int16_t hv = 0; hv <= 1; ++hv) {
    ResponseHeader h;
    Reader r(bytes);
    decode_response_header(r, h, hv);
    if (!r.ok()) continue;
    Bytes out;
    Writer w(out);
    encode_response_header(w, h, hv);
    ResponseHeader h2;
    Reader r2{ByteSpan(out)};
    decode_response_header(r2, h2, hv);
    KWIRE_FUZZ_CHECK(r2.ok() && r2.empty());
    KWIRE_FUZZ_CHECK(h.correlation_id == h2.correlation_id);
    KWIRE_FUZZ_CHECK(h.unknown_tagged_fields == h2.unknown_tagged_fields);
  }
  for (std::int16_t hv = 1; hv <= 2; ++hv) {
    RequestHeader h;
    Reader r(bytes);
    decode_request_header(r, h, hv);
    if (!r.ok()) continue;
    Bytes out;
    Writer w(out);
    encode_request_header(w, h, hv);
    RequestHeader h2;
    Reader r2{ByteSpan(out)};
    decode_request_header(r2, h2, hv);
    KWIRE_FUZZ_CHECK(r2.ok() && r2.empty());
    KWIRE_FUZZ_CHECK(h == h2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kwire::fuzz::Input in(data, size);
  const std::uint16_t api_selector = in.u16();
  const std::uint16_t version_selector = in.u16();
  const ByteSpan body = in.rest();
  constexpr std::size_t n = std::tuple_size_v<Apis>;
  dispatch(api_selector % n, version_selector, body, std::make_index_sequence<n>{});
  headers(body);
  return 0;
}

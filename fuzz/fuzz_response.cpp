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
#include "message_fuzz.hpp"

namespace {

using namespace kwire::protocol;

using kwire::fuzz::Api;

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
  kwire::fuzz::run_api_at<Apis>(api_selector % n, version_selector, body);
  headers(body);
  return 0;
}

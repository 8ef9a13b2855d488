// Consumer-group messages (FindCoordinator, the classic membership calls,
// offsets, group listing and description, KIP-848 heartbeats) and the
// consumer protocol's subscription and assignment payloads.
//
// Input: int16 selecting the API (modulo the number of APIs below plus two
// for the payloads), int16 selecting the version (modulo the declared range),
// then the bytes decoded as that API's response and request body, or as a
// versioned payload. Whatever decodes must re-encode to bytes that decode to
// an equal value, consume every byte, and match the encoder's size count.
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

using Apis = std::tuple<Api<FindCoordinatorRequest, FindCoordinatorResponse>,                //
                        Api<JoinGroupRequest, JoinGroupResponse>,                            //
                        Api<SyncGroupRequest, SyncGroupResponse>,                            //
                        Api<HeartbeatRequest, HeartbeatResponse>,                            //
                        Api<LeaveGroupRequest, LeaveGroupResponse>,                          //
                        Api<OffsetCommitRequest, OffsetCommitResponse>,                      //
                        Api<OffsetFetchRequest, OffsetFetchResponse>,                        //
                        Api<OffsetDeleteRequest, OffsetDeleteResponse>,                      //
                        Api<ListGroupsRequest, ListGroupsResponse>,                          //
                        Api<DescribeGroupsRequest, DescribeGroupsResponse>,                  //
                        Api<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse>,  //
                        Api<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>>;

template <class M>
void round_trip(ByteSpan body, std::int16_t version) {
  M first;
  Reader r(body);
  decode(r, first, version);
  if (!r.ok()) return;
  const Bytes encoded = encode(first, version);
  KWIRE_FUZZ_CHECK(encoded_size(first, version) == encoded.size());
  // A nullable struct's presence marker may be any value >= 0 on input and
  // is written as 1, so only the length can be compared with the input.
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
void run_api(std::uint16_t version_selector, ByteSpan body) {
  using Req = typename A::Request;
  constexpr int span = Req::max_version - Req::min_version + 1;
  const auto version = static_cast<std::int16_t>(Req::min_version + version_selector % span);
  round_trip<typename A::Response>(body, version);
  round_trip<typename A::Request>(body, version);
  {
    typename A::Response resp;
    ResponseHeader h;
    Reader r(body);
    (void)decode_response(r, resp, version, &h);
  }
}

template <std::size_t... I>
void dispatch(std::size_t index, std::uint16_t version_selector, ByteSpan body, std::index_sequence<I...>) {
  ((index == I ? run_api<std::tuple_element_t<I, Apis>>(version_selector, body) : void()), ...);
}

// A payload that decodes re-encodes (at its own version, or v3 for a newer
// one read by its prefix) to bytes that decode to the same value.
template <class S, class Decode, class Encode>
void payload(ByteSpan body, Decode dec, Encode enc) {
  S first;
  std::int16_t version = -1;
  try {
    version = dec(body, first);
  } catch (const ProtocolError&) {
    return;
  }
  if (version < 0) {
    KWIRE_FUZZ_CHECK(body.empty());
    return;
  }
  const std::int16_t write_as = version > S::max_version ? S::max_version : version;
  const Bytes encoded = enc(first, write_as);
  S second;
  KWIRE_FUZZ_CHECK(dec(ByteSpan(encoded), second) == write_as);
  KWIRE_FUZZ_CHECK(first == second);
  if (version <= S::max_version) KWIRE_FUZZ_CHECK(encoded.size() == body.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kwire::fuzz::Input in(data, size);
  const std::uint16_t selector = in.u16();
  const std::uint16_t version_selector = in.u16();
  const ByteSpan body = in.rest();
  constexpr std::size_t n = std::tuple_size_v<Apis>;
  const std::size_t index = selector % (n + 2);
  if (index < n) {
    dispatch(index, version_selector, body, std::make_index_sequence<n>{});
  } else if (index == n) {
    payload<ConsumerProtocolSubscription>(body, decode_consumer_subscription, encode_consumer_subscription);
  } else {
    payload<ConsumerProtocolAssignment>(body, decode_consumer_assignment, encode_consumer_assignment);
  }
  return 0;
}

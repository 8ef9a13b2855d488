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
#include "message_fuzz.hpp"

namespace {

using namespace kwire::protocol;

using kwire::fuzz::Api;

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
    kwire::fuzz::run_api_at<Apis>(index, version_selector, body);
  } else if (index == n) {
    payload<ConsumerProtocolSubscription>(body, decode_consumer_subscription, encode_consumer_subscription);
  } else {
    payload<ConsumerProtocolAssignment>(body, decode_consumer_assignment, encode_consumer_assignment);
  }
  return 0;
}

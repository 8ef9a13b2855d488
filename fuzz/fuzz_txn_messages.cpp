// The producer's idempotence and transaction calls (InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit) and the
// transaction admin calls (DescribeProducers, DescribeTransactions,
// ListTransactions).
//
// Input: int16 selecting the API (modulo the number of APIs below), int16
// selecting the version (modulo the declared range), then the bytes decoded
// as that API's response and request body. Whatever decodes must re-encode to
// bytes that decode to an equal value, consume every byte, and match the
// encoder's size count.
#include <cstddef>
#include <cstdint>
#include <tuple>

#include "fuzz_common.hpp"
#include "kwire/protocol/messages.hpp"
#include "message_fuzz.hpp"

namespace {

using namespace kwire::protocol;

using kwire::fuzz::Api;

using Apis = std::tuple<Api<InitProducerIdRequest, InitProducerIdResponse>,              //
                        Api<AddPartitionsToTxnRequest, AddPartitionsToTxnResponse>,      //
                        Api<AddOffsetsToTxnRequest, AddOffsetsToTxnResponse>,            //
                        Api<EndTxnRequest, EndTxnResponse>,                              //
                        Api<TxnOffsetCommitRequest, TxnOffsetCommitResponse>,            //
                        Api<DescribeProducersRequest, DescribeProducersResponse>,        //
                        Api<DescribeTransactionsRequest, DescribeTransactionsResponse>,  //
                        Api<ListTransactionsRequest, ListTransactionsResponse>>;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kwire::fuzz::Input in(data, size);
  const std::uint16_t selector = in.u16();
  const std::uint16_t version_selector = in.u16();
  const ByteSpan body = in.rest();
  kwire::fuzz::run_api_at<Apis>(selector % std::tuple_size_v<Apis>, version_selector, body);
  return 0;
}

// An aborted transaction as a Fetch response lists it (v4+): the producer and
// the offset of its first record in the transaction. One type serves both the
// message (FetchResponse::PartitionData::aborted_transactions) and the record
// decoder (DecodeOptions::aborted_transactions), so a response's list can be
// handed to the decoder as it is.
#pragma once

#include <cstdint>
#include <utility>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct AbortedTransaction {
  std::int64_t producer_id = -1;
  std::int64_t first_offset = -1;
  TaggedFields unknown_tagged_fields;  // flexible Fetch versions (v12+)

  AbortedTransaction() = default;
  AbortedTransaction(std::int64_t producer, std::int64_t first, TaggedFields tags = {})
      : producer_id(producer), first_offset(first), unknown_tagged_fields(std::move(tags)) {}

  template <class V>
  void fields(V& v) {
    v(producer_id);
    v(first_offset);
  }
  friend bool operator==(const AbortedTransaction&, const AbortedTransaction&) = default;
};

}  // namespace kwire::protocol

#pragma once

#include <cstddef>
#include <memory>

#include "kwire/protocol/bytes.hpp"

namespace kwire::client::detail {

/// A buffer for one response frame of `size` bytes, to be overwritten
/// entirely by the socket read. Frames come from a small process-wide pool of
/// buffers released earlier: a new frame of at most the size of a recycled
/// one is neither zero-filled nor page-faulted in again, which for a consumer
/// is a pass over every fetched byte saved. The pool keeps at most
/// kMaxPooledFrames buffers of at most kMaxPooledFrameBytes each and
/// kMaxPooledBytes in all; other buffers are freed when their last reference
/// goes. Thread-safe:
/// the last owner of a frame may be any thread.
std::shared_ptr<protocol::Bytes> make_frame(std::size_t size);
/// An empty buffer (size 0) with room for `capacity` bytes, from the same
/// pool: for a frame written by appending (a request).
std::shared_ptr<protocol::Bytes> make_empty_frame(std::size_t capacity);

inline constexpr std::size_t kMaxPooledFrames = 4;
inline constexpr std::size_t kMaxPooledFrameBytes = std::size_t{8} << 20;  // 8 MiB
inline constexpr std::size_t kMaxPooledBytes = std::size_t{16} << 20;      // 16 MiB

}  // namespace kwire::client::detail

// The response-frame pool: released frames are handed out again without a
// new allocation, within its bounds.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "../../client/src/frame_pool.hpp"

using kwire::client::detail::kMaxPooledFrameBytes;
using kwire::client::detail::make_frame;

TEST(FramePool, AReleasedFrameIsReusedForOneOfAtMostItsSize) {
  auto a = make_frame(100'000);
  ASSERT_EQ(a->size(), 100'000u);
  const auto* storage = a->data();
  (*a)[99'999] = 7;
  a.reset();
  auto b = make_frame(60'000);
  EXPECT_EQ(b->data(), storage);
  EXPECT_EQ(b->size(), 60'000u);
  b.reset();
  // Growing past the recycled buffer's capacity allocates anew.
  auto c = make_frame(200'000);
  EXPECT_EQ(c->size(), 200'000u);
  EXPECT_NE(c->data(), storage);
}

TEST(FramePool, TheSmallestFittingBufferIsTaken) {
  auto big = make_frame(1 << 20);
  auto small = make_frame(4096);
  const auto* small_storage = small->data();
  big.reset();
  small.reset();
  auto next = make_frame(1000);
  EXPECT_EQ(next->data(), small_storage);
}

TEST(FramePool, FramesOverTheLimitAreNotKept) {
  auto huge = make_frame(kMaxPooledFrameBytes + 1);
  huge.reset();
  // Had the huge buffer been kept, a request of any size could be given it.
  std::vector<std::shared_ptr<kwire::protocol::Bytes>> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(make_frame(10));
    EXPECT_LE(held.back()->capacity(), kMaxPooledFrameBytes);
  }
}

TEST(FramePool, FramesMayBeReleasedFromOtherThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 2000; ++i) {
        auto f = make_frame(static_cast<std::size_t>(1000 + i));
        (*f)[0] = 1;
        (*f)[f->size() - 1] = 2;
        auto copy = f;  // the last reference may go in either order
        f.reset();
        EXPECT_EQ(copy->front(), 1);
        EXPECT_EQ(copy->back(), 2);
      }
    });
  for (auto& t : threads) t.join();
}

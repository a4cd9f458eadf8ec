// Loops over the devices of a frontier plan (copies, rescaling, rebuilding) split between two threads: the
// work per device is independent, and CI and most desks have two cores (docs/scale.md, "Two threads").
#pragma once

#include <atomic>
#include <cstddef>
#include <future>
#include <system_error>

namespace paraproof {

// Cleared, every range runs on the calling thread: tests compare what two threads build with what one does.
inline std::atomic<bool> twoHalvesAllowed{true};

// Calls f(begin, end) on [0, n/2) on this thread and on [n/2, n) on a second one when `large`, else f(0, n)
// here (also when no second thread can be started). `f` must write only what its range owns. An exception of
// either half is rethrown once both ended.
template <class F>
void inTwoHalves(size_t n, bool large, F&& f) {
  if (!large || n < 2 || !twoHalvesAllowed) {
    f(size_t{0}, n);
    return;
  }
  const size_t mid = n / 2;
  std::future<void> second;
  try {
    second = std::async(std::launch::async, [&] { f(mid, n); });
  } catch (const std::system_error&) {  // no thread to be had (a thread or memory limit): one does both
    f(size_t{0}, n);
    return;
  }
  try {
    f(size_t{0}, mid);
  } catch (...) {
    second.wait();  // it uses `f` and what `f` refers to: not past this frame
    throw;
  }
  second.get();
}

}  // namespace paraproof

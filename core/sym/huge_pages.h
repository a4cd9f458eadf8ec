// An allocator for the pool's large arrays (nodes, the hash-consing index): probes land on random pages, and
// with 2 MB pages they miss the TLB far less. The hint must be given before the pages are first touched (a
// vector zeroes or moves into new storage at once, after which the kernel keeps 4 KB pages), so it is given
// at allocation. Small arrays use plain malloc.
#pragma once

#include <sys/mman.h>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace paraproof::sym {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = nullptr;
    if (bytes >= 4 * kHuge) {
      p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge);
      if (p)
        madvise(p, (bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);  // a hint: ignored where unsupported
    } else {
      p = std::malloc(bytes);
    }
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace paraproof::sym

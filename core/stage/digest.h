// A 128-bit non-cryptographic digest: two independent 64-bit FNV-style streams, so accidental collisions
// between the stages of one plan are negligible. Shared by the canonical hash and the stage signature.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace paraproof::stage {

struct Digest {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  void mix(uint64_t x) {
    a = (a ^ x) * 0x100000001b3ull;
    b = (b ^ (x * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    b ^= b >> 29;
  }
  // Length first, so that the boundaries of consecutive strings are part of the digest.
  void mix(std::string_view s) {
    mix(static_cast<uint64_t>(s.size()));
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      mix(w);
    }
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    mix(w);
  }
  std::string hex() const {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                  static_cast<unsigned long long>(b));
    return buf;
  }
};

}  // namespace paraproof::stage

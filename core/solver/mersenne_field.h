// Arithmetic modulo the Mersenne prime p = 2^61 - 1: reduction is a shift and an add, and 2^61 = 1 (mod p)
// makes every power of two (hence every double, an exact binary rational) cheap to map into the field.
#pragma once

#include <cmath>
#include <cstdint>

namespace paraproof::solver::field {

// __extension__: unsigned __int128 is a GCC/Clang extension (one 64x64->128 multiply).
__extension__ typedef unsigned __int128 u128;

inline constexpr uint64_t kP = (uint64_t{1} << 61) - 1;

inline uint64_t reduce(u128 x) {
  uint64_t lo = static_cast<uint64_t>(x & kP);
  uint64_t hi = static_cast<uint64_t>(x >> 61);
  uint64_t r = lo + (hi & kP) + static_cast<uint64_t>(hi >> 61);
  r = (r & kP) + (r >> 61);
  return r >= kP ? r - kP : r;
}
inline uint64_t add(uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s >= kP ? s - kP : s;
}
inline uint64_t neg(uint64_t a) {
  return a == 0 ? 0 : kP - a;
}
inline uint64_t mul(uint64_t a, uint64_t b) {
  return reduce(static_cast<u128>(a) * b);
}

inline uint64_t power(uint64_t a, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r = mul(r, a);
    a = mul(a, a);
    e >>= 1;
  }
  return r;
}
// Fermat: a^(p-2) = a^-1 for a != 0.
inline uint64_t inverse(uint64_t a) {
  return power(a, kP - 2);
}

inline uint64_t fromInt(int64_t v) {
  uint64_t m = v < 0 ? (~static_cast<uint64_t>(v) + 1) : static_cast<uint64_t>(v);
  m = (m & kP) + (m >> 61);
  m = m >= kP ? m - kP : m;
  return v < 0 ? neg(m) : m;
}
// 2^k for any integer k: 2^61 = 1, so only k mod 61 matters.
inline uint64_t pow2(int k) {
  return uint64_t{1} << (((k % 61) + 61) % 61);
}

// A finite double is m * 2^k with |m| < 2^53: map it exactly.
inline uint64_t fromDouble(double v) {
  if (v == 0) return 0;
  int e = 0;
  double f = std::frexp(v, &e);
  auto m = static_cast<int64_t>(std::ldexp(f, 53));
  return mul(fromInt(m), pow2(e - 53));
}

// A 64-bit mixer (splitmix64 finaliser): keyed hashes for functions and the comparison order.
inline uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace paraproof::solver::field

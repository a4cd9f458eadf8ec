#include "core/stage/canonical.h"

#include <bit>
#include <cstdio>

namespace paraproof::stage {

namespace {
// Two independent 64-bit FNV-style streams: a 128-bit digest makes accidental collisions negligible.
struct Digest {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  void mix(uint64_t x) {
    a = (a ^ x) * 0x100000001b3ull;
    b = (b ^ (x * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    b ^= b >> 29;
  }
};
}  // namespace

std::string canonicalHash(const sym::Problem& pb) {
  Digest d;
  const sym::ExprPool& pool = pb.pool;
  d.mix(pool.size());
  for (sym::ExprId e = 0; e < pool.size(); ++e) {
    const sym::Node& n = pool.node(e);
    d.mix(static_cast<uint64_t>(n.kind) << 16 | static_cast<uint64_t>(n.sort) << 8 |
          static_cast<uint64_t>(n.fn));
    d.mix(std::bit_cast<uint64_t>(n.value));
    d.mix(static_cast<uint64_t>(n.ivalue));
    if (n.kind == sym::Kind::Var) {
      const sym::VarInfo& v = pool.vars()[n.var];
      d.mix(static_cast<uint64_t>(v.sort));
      d.mix(static_cast<uint64_t>(v.lo));
      d.mix(static_cast<uint64_t>(v.hi));
    }
    d.mix(n.args.size());
    for (auto a : n.args)
      d.mix(a);
  }
  d.mix(pb.obligations.size());
  for (const auto& o : pb.obligations) {
    d.mix(o.expected);
    d.mix(o.actual);
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(d.a),
                static_cast<unsigned long long>(d.b));
  return buf;
}

}  // namespace paraproof::stage

#include "core/stage/canonical.h"

#include <bit>

#include "core/stage/digest.h"

namespace paraproof::stage {

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
      const sym::VarSlot& v = pool.vars()[n.var];
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
  return d.hex();
}

}  // namespace paraproof::stage

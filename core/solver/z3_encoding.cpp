#include "core/solver/z3_encoding.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace paraproof::solver {

namespace {
// Decimal digits of m * 2^k (k >= 0) by repeated doubling in base 1e9 limbs, least significant first.
std::string decimal(uint64_t m, int k) {
  std::vector<uint64_t> limbs;
  for (; m; m /= 1000000000)
    limbs.push_back(m % 1000000000);
  if (limbs.empty()) limbs.push_back(0);
  for (int i = 0; i < k; ++i) {
    uint64_t carry = 0;
    for (auto& l : limbs) {
      uint64_t x = l * 2 + carry;
      l = x % 1000000000;
      carry = x / 1000000000;
    }
    if (carry) limbs.push_back(carry);
  }
  std::string s = std::to_string(limbs.back());
  char buf[16];
  for (size_t i = limbs.size() - 1; i-- > 0;) {
    std::snprintf(buf, sizeof buf, "%09llu", static_cast<unsigned long long>(limbs[i]));
    s += buf;
  }
  return s;
}
}  // namespace

std::string exactRational(double v) {
  if (v == 0) return "0";
  int e = 0;
  double f = std::frexp(std::fabs(v), &e);
  auto m = static_cast<uint64_t>(std::ldexp(f, 53));
  int k = e - 53;
  while ((m & 1) == 0) {
    m >>= 1;
    ++k;
  }
  std::string sign = v < 0 ? "-" : "";
  if (k >= 0) return sign + decimal(m, k);
  return sign + decimal(m, 0) + "/" + decimal(1, -k);
}

Z3Encoding::Z3Encoding(z3::context& ctx, const sym::ExprPool& pool) : ctx_(ctx), pool_(pool) {}

z3::expr Z3Encoding::constant(const sym::Node& n) {
  switch (n.sort) {
    case sym::Sort::Int:
      return ctx_.int_val(n.ivalue);
    case sym::Sort::Bool:
      return ctx_.bool_val(n.ivalue != 0);
    case sym::Sort::Real:
      break;
  }
  if (std::isfinite(n.value)) return ctx_.real_val(exactRational(n.value).c_str());
  // inf/nan are not reals: an opaque constant (sound, both sides see the same symbol).
  return ctx_.real_const(("const!" + std::to_string(std::bit_cast<uint64_t>(n.value))).c_str());
}

z3::expr Z3Encoding::coerce(sym::ExprId arg, sym::Sort to) const {
  if (to == sym::Sort::Real && pool_.sort(arg) == sym::Sort::Int) return z3::to_real(terms_[arg]);
  return terms_[arg];
}

z3::expr Z3Encoding::realTerm(sym::ExprId e) const {
  return coerce(e, sym::Sort::Real);
}

z3::func_decl Z3Encoding::function(sym::Fn fn, unsigned arity) {
  auto key = std::make_pair(static_cast<int>(fn), arity);
  auto it = functions_.find(key);
  if (it != functions_.end()) return it->second;
  z3::sort_vector domain(ctx_);
  for (unsigned i = 0; i < arity; ++i)
    domain.push_back(ctx_.real_sort());
  std::string name = std::string(sym::fnName(fn)) + (arity == 1 ? "" : "/" + std::to_string(arity));
  z3::func_decl d = ctx_.function(name.c_str(), domain, ctx_.real_sort());
  functions_.emplace(key, d);
  return d;
}

bool Z3Encoding::translate(const ProblemScope& scope, const std::function<bool()>& stop) {
  terms_.assign(pool_.size(), ctx_.bool_val(false));
  partial_.assign(pool_.size(), 0);
  defined_.assign(pool_.size(), ctx_.bool_val(true));
  std::vector<Z3_ast> buf;
  size_t done = 0;
  for (sym::ExprId e : scope.order) {
    if ((++done & 0xfff) == 0 && stop()) return false;
    const sym::Node& n = pool_.node(e);
    auto arg = [&](size_t i) { return coerce(n.args[i], n.sort); };
    auto realArg = [&](size_t i) { return coerce(n.args[i], sym::Sort::Real); };
    // Comparison operands: both integer, or both real.
    auto cmpArgs = [&]() {
      bool same = pool_.sort(n.args[0]) == pool_.sort(n.args[1]);
      return same ? std::make_pair(terms_[n.args[0]], terms_[n.args[1]])
                  : std::make_pair(realArg(0), realArg(1));
    };
    switch (n.kind) {
      case sym::Kind::Const:
        terms_[e] = constant(n);
        break;
      case sym::Kind::Var: {
        const sym::VarSlot& v = pool_.vars()[n.var];
        std::string name = pool_.varName(n.var) + "#" + std::to_string(n.var);
        z3::expr x = n.sort == sym::Sort::Int    ? ctx_.int_const(name.c_str())
                     : n.sort == sym::Sort::Bool ? ctx_.bool_const(name.c_str())
                                                 : ctx_.real_const(name.c_str());
        if (n.sort == sym::Sort::Int && v.hi > v.lo) {
          side_.push_back(x >= ctx_.int_val(v.lo));
          side_.push_back(x < ctx_.int_val(v.hi));
        }
        vars_.emplace_back(n.var, x);
        terms_[e] = x;
        break;
      }
      case sym::Kind::Add:
      case sym::Kind::Mul: {
        std::vector<z3::expr> keep;  // coerced args must outlive the call
        buf.clear();
        for (size_t i = 0; i < n.args.size(); ++i) {
          keep.push_back(arg(i));
          buf.push_back(keep.back());
        }
        Z3_ast r = n.kind == sym::Kind::Add ? Z3_mk_add(ctx_, static_cast<unsigned>(buf.size()), buf.data())
                                            : Z3_mk_mul(ctx_, static_cast<unsigned>(buf.size()), buf.data());
        ctx_.check_error();
        terms_[e] = z3::expr(ctx_, r);
        break;
      }
      case sym::Kind::Div:
        terms_[e] = realArg(0) / realArg(1);
        break;
      case sym::Kind::Apply: {
        z3::expr_vector args(ctx_);
        for (size_t i = 0; i < n.args.size(); ++i)
          args.push_back(realArg(i));
        terms_[e] = function(n.fn, static_cast<unsigned>(n.args.size()))(args);
        break;
      }
      case sym::Kind::Lt: {
        auto [a, b] = cmpArgs();
        terms_[e] = a < b;
        break;
      }
      case sym::Kind::Le: {
        auto [a, b] = cmpArgs();
        terms_[e] = a <= b;
        break;
      }
      case sym::Kind::Eq: {
        auto [a, b] = cmpArgs();
        terms_[e] = a == b;
        break;
      }
      case sym::Kind::And:
        terms_[e] = terms_[n.args[0]] && terms_[n.args[1]];
        break;
      case sym::Kind::Or:
        terms_[e] = terms_[n.args[0]] || terms_[n.args[1]];
        break;
      case sym::Kind::Not:
        terms_[e] = !terms_[n.args[0]];
        break;
      case sym::Kind::Ite:
        terms_[e] = z3::ite(terms_[n.args[0]], arg(1), arg(2));
        break;
      case sym::Kind::ToReal:
        terms_[e] = z3::to_real(terms_[n.args[0]]);
        break;
      case sym::Kind::Max:
      case sym::Kind::Min: {
        z3::expr m = arg(0);
        for (size_t i = 1; i < n.args.size(); ++i) {
          z3::expr x = arg(i);
          m = n.kind == sym::Kind::Max ? z3::ite(x <= m, m, x) : z3::ite(m <= x, m, x);
        }
        terms_[e] = m;
        break;
      }
    }
    noteDefinedness(e);
  }
  return true;
}

void Z3Encoding::noteDefinedness(sym::ExprId e) {
  const sym::Node& n = pool_.node(e);
  bool partial = n.kind == sym::Kind::Div;
  for (sym::ExprId a : n.args)
    partial = partial || partial_[a];
  if (!partial) return;
  partial_[e] = 1;
  if (n.kind == sym::Kind::Ite) {
    const sym::ExprId c = n.args[0], t = n.args[1], f = n.args[2];
    defined_[e] = defined(c) && z3::ite(terms_[c], defined(t), defined(f));
    return;
  }
  z3::expr_vector conj(ctx_);
  for (sym::ExprId a : n.args)
    if (partial_[a]) conj.push_back(defined_[a]);
  if (n.kind == sym::Kind::Div) conj.push_back(realTerm(n.args[1]) != ctx_.real_val(0));
  defined_[e] = conj.size() == 1 ? conj[0] : z3::mk_and(conj);
}

}  // namespace paraproof::solver

// Translation of an expression DAG into Z3 terms: reals for Real, integers for Int, one uninterpreted
// function per (Fn, arity), real division. Memoised by node id; nodes are visited in increasing id order (a
// topological order, since the pool creates arguments first), so no recursion is needed for million-node
// pools.
#pragma once

#include <z3++.h>

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "core/solver/problem_scope.h"

namespace paraproof::solver {

class Z3Encoding {
 public:
  Z3Encoding(z3::context& ctx, const sym::ExprPool& pool);

  // Translates every node of `scope`. Returns false if `stop` asked to abandon (it is polled periodically).
  bool translate(const ProblemScope& scope, const std::function<bool()>& stop);

  const z3::expr& term(sym::ExprId e) const { return terms_[e]; }
  // `term(e)`, converted to a real if it is an integer (for comparing mixed-sort obligation sides).
  z3::expr realTerm(sym::ExprId e) const;
  // lo <= v < hi for every integer input: the only global side conditions.
  const std::vector<z3::expr>& sideConditions() const { return side_; }
  // Where `e` is defined over the reals: every divisor it evaluates is nonzero (an ite evaluates only the
  // branch it takes). Guards one obligation's logical side only, never the whole query.
  z3::expr defined(sym::ExprId e) const { return partial_[e] ? defined_[e] : ctx_.bool_val(true); }
  // (pool variable index, its Z3 constant) for every variable in scope.
  const std::vector<std::pair<uint32_t, z3::expr>>& variables() const { return vars_; }

 private:
  z3::expr constant(const sym::Node& n);
  z3::expr coerce(sym::ExprId arg, sym::Sort to) const;
  z3::func_decl function(sym::Fn fn, unsigned arity);
  void noteDefinedness(sym::ExprId e);

  z3::context& ctx_;
  const sym::ExprPool& pool_;
  std::vector<z3::expr> terms_;
  std::vector<z3::expr> side_;
  std::vector<uint8_t> partial_;   // per node: some division lies below it
  std::vector<z3::expr> defined_;  // meaningful where partial_
  std::vector<std::pair<uint32_t, z3::expr>> vars_;
  std::map<std::pair<int, unsigned>, z3::func_decl> functions_;
};

// The exact rational value of a finite double, as Z3 numeral text ("-3/8",
// "1267650600228229401496703205376").
std::string exactRational(double v);

}  // namespace paraproof::solver

// How a stage depends on a fold count (docs/soundness.md, "Size points", condition D). A folded plan is
// checked at two counts; that proves every count only when each obligation's dependence on the count t is
// a Laurent polynomial of width <= 1 (two exponents of t at most: a count times a constant, a mean's 1/t), as
// two distinct roots then force it to vanish. This bounds the width from the ops, per stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/plan/plan.h"
#include "core/stage/reduce.h"
#include "core/stage/stage.h"

namespace paraproof::stage {

// What scales with the count t in a folded plan (device indices and ids of the folded plan; shape
// reduction keeps both).
struct FoldParameter {
  std::set<std::pair<ValueId, int>> logicalAxes;  // logical (value, dim) whose extent is linear in t
  std::set<std::pair<size_t, OpId>> sums;         // device ops that sum over the t members or copies
  std::set<std::pair<size_t, OpId>> averages;     // ... and divide by their number
  std::set<std::pair<size_t, ValueId>> varying;   // device values that are the member's or copy's own
  bool empty() const { return logicalAxes.empty() && sums.empty() && averages.empty(); }
  // Takes `from`'s entries (a fold's halves, built on two threads).
  void merge(FoldParameter& from) {
    logicalAxes.merge(from.logicalAxes);
    sums.merge(from.sums);
    averages.merge(from.averages);
    varying.merge(from.varying);
  }
};

// A FoldParameter's sets as flat per-device bitmaps and a hash set: the same membership in O(1), without a
// tree walk per lookup (condition D runs over every stage of every size point). Built once per parameter;
// answers exactly what the parameter's sets answer (tests/test_microbatch_fold.cpp checks this).
class FoldIndex {
 public:
  explicit FoldIndex(const FoldParameter& t);
  bool logicalAxis(ValueId v, int a) const { return logicalAxes_.count(key(v, a)) > 0; }
  bool sums(size_t d, OpId o) const { return has(sums_, d, o); }
  bool averages(size_t d, OpId o) const { return has(averages_, d, o); }
  bool varying(size_t d, ValueId v) const { return has(varying_, d, v); }
  bool empty() const { return empty_; }

 private:
  using Bits = std::vector<std::vector<bool>>;  // [device][id]
  static uint64_t key(ValueId v, int a) {       // one-to-one: both halves kept whole
    return static_cast<uint64_t>(static_cast<uint32_t>(v)) << 32 | static_cast<uint32_t>(a);
  }
  static bool has(const Bits& b, size_t d, int64_t id) {
    return d < b.size() && id >= 0 && static_cast<size_t>(id) < b[d].size() && b[d][static_cast<size_t>(id)];
  }
  std::unordered_set<uint64_t> logicalAxes_;
  Bits sums_, averages_, varying_;
  bool empty_ = true;
};

// The number of distinct counts at which the stage must verify for it to verify at every count: 1 + the
// largest width, over its obligations, of the exponents of t that one monomial of the stage's inputs can
// carry on either side (an over-approximation from the ops).
int countsNeeded(const Plan& plan, const Stage& stage, const FoldParameter& t);
int countsNeeded(const Plan& plan, const Stage& stage, const FoldIndex& t);  // the same, index built once

// Condition D for shape reduction, per axis class (docs/soundness.md, "Size points"): the parameter is the
// extent t of one class; `inClass(graph, value, dim)` says which axes it holds (graph 0 is the logical graph,
// d + 1 device d). A value with an axis in the class is a member's own data (it differs along the class); a
// reduction over such an axis sums over the members, a declared count divides by t (logical and device ops
// alike).
using AxisPredicate = std::function<bool(size_t graph, ValueId v, int dim)>;
int classCountsNeeded(const Plan& plan, const Stage& stage, const AxisPredicate& inClass);

// The reduced classes a stage touches, by the counts of each its obligations need (classCountsNeeded):
// `twoCounts` need two (width 1), `more` need more than two. The two size points of shape reduction move
// every reduced class together, so they prove a stage with at most one class in `twoCounts` and none in
// `more` (docs/soundness.md, "Size points", condition D for reduction).
struct ClassNeeds {
  std::vector<size_t> twoCounts, more;
  bool provedByTwoPoints() const { return twoCounts.size() <= 1 && more.empty(); }
};
ClassNeeds reducedClassNeeds(const Plan& reduced, const Stage& stage, const ReductionClasses& classes);

}  // namespace paraproof::stage

// Shape reduction: shrink every dimension to the smallest size that keeps the plan's partition structure
// (divisible by every lineage cut and index attribute, >= 2 along contracted and reduced dims, consistent
// across reshapes). The argument for why this preserves the verdict is in docs/soundness.md.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof::stage {

// The axis classes of a reduction (axis_graph.h), for condition D per class (count_degree.h): the class of
// every axis of every value, and the factor each class took. Graph 0 is the logical graph, d + 1 device d.
struct ReductionClasses {
  std::vector<std::vector<size_t>> axisBase;  // [graph][value] -> the node of its axis 0
  std::vector<size_t> root;                   // node -> its class
  std::vector<int64_t> factor;                // class -> its factor (1: kept at full size)
  size_t classOf(size_t graph, ValueId v, int dim) const {
    return root[axisBase[graph][v] + static_cast<size_t>(dim)];
  }
};

// What a reduction learns of a plan before it chooses factors (the axis graph, the plan's count-like
// constants, its counts): the same at both size points, so the second takes the first's.
class ReductionAnalysis;

struct ReducedPlan {
  Plan plan;  // the plan at reduced shapes (or the original when not applicable)
  bool reduced = false;
  std::shared_ptr<const ReductionClasses> classes;  // set when reduced
  int64_t elementsBefore = 0, elementsAfter = 0;    // summed over all values of all graphs
  std::vector<std::string> notes;                   // what was done, or why it was not
  std::shared_ptr<ReductionAnalysis> analysis;      // of the plan as given, for reducePlan's `again`
};

// `point` 0 reduces every class as far as its conditions allow; point 1 (the second size point,
// docs/soundness.md "Size points") gives every class reduced at point 0 a strictly smaller factor, so its
// extents differ from point 0's on every reduced class. `keep`: logical axes (value, dim) whose classes keep
// their extents (the axes a fold scaled: the fold's own size points must stay apart).
// `move` (point 1 only): the classes (ReductionClasses roots of the same plan) that take the smaller
// factor; the others keep point 0's. Null: every reduced class moves.
// `again`: the analysis of an earlier reduction (ReducedPlan::analysis), taken when it was of this very plan
// object with the same `keep` (the plan unchanged since); otherwise the plan is analysed afresh.
ReducedPlan reducePlan(const Plan& plan, int point = 0, const std::vector<std::pair<ValueId, int>>& keep = {},
                       const std::set<size_t>* move = nullptr,
                       const std::shared_ptr<ReductionAnalysis>& again = nullptr);

// The logical axes (value, dim) whose extent differs between two versions of one graph.
std::vector<std::pair<ValueId, int>> scaledAxes(const Graph& before, const Graph& after);

// The count-like integers >= 2 the numeric constants of `graphs` could stand for: c, 1/c, c^2, 1/c^2,
// sqrt(c), 1/sqrt(c) (a hard-coded mean divisor, its reciprocal as a factor, a squared or rooted attention
// scale) and c*d, c/d for two constants, when integral; with `triples`, also the products of three constants
// or their reciprocals (c*d*e, c*d/e, ...: a count split over a divisor, an avg group and a factor; what
// shape reduction keeps its reduced counts apart from); with `avgGroupSizes`, constants include the group
// sizes of avg collectives (a divisor the collective applies). Without `powers`, no squares and roots
// (products of constants are what can scale a sum of copies).
std::set<int64_t> countLikeConstants(const std::vector<const Graph*>& graphs, bool avgGroupSizes,
                                     bool powers = true, bool triples = false);
// The same over some ops (a stage's).
std::set<int64_t> countLikeConstants(const std::vector<const Op*>& ops, bool avgGroupSizes,
                                     bool powers = true, bool triples = false);

// The logical graph with the classes of `axes` (logical value, dim) scaled down by `factor` and every other
// class kept: the folds' logical batch (fold.h). A fold keeps a prefix of the replica or copy blocks, so the
// scaled classes must be uniform along the batch: no index boundary of a logical op and no position inside
// them, and in every reshape run the factor on the outermost axis of each side only. nullopt with `why` when
// a condition fails.
std::optional<Graph> scaleLogicalAxes(const Plan& plan, const std::vector<std::pair<ValueId, int>>& axes,
                                      int64_t factor, std::string& why);

}  // namespace paraproof::stage

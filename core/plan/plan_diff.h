// What differs between two plans, op by op: the correct plan and an injected one, two exports of one model,
// a plan before and after a fix. Ops are matched by id within the same graph (the logical graph, or the
// device of the same rank); ops left over are matched by kind and output lineage (a renamed op). Used by
// `paraproof diff` and the inspector's compare mode (docs/plan-format.md, "Comparing plans").
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace paraproof {

struct PlanElementDiff {
  enum class Change { Added, Removed, Changed };
  enum class Element { Op, Input, Output };  // an op, or a value the graph takes or gives
  Change change = Change::Changed;
  int rank = kNone;  // kNone: the logical graph
  Element element = Element::Op;
  std::string a, b;  // the op id (or value name) in the first / second plan; empty where absent
  // What differs, one aspect a line: "attribute eps: 1e-05 -> 0.001", "input 1: 'x' -> 'y'".
  std::vector<std::string> details;
  const std::string& name() const { return b.empty() ? a : b; }
};

struct PlanDiff {
  std::vector<PlanElementDiff> elements;  // logical graph first, then by rank; graph order within each
  // Plan-level differences: mesh, state pairs, devices stated in one plan only (a compact plan implies the
  // others; they are not compared op by op).
  std::vector<std::string> plan;
  bool identical() const { return elements.empty() && plan.empty(); }
};

PlanDiff diffPlans(const Plan& a, const Plan& b);

const char* changeName(PlanElementDiff::Change c);    // "added", "removed", "changed"
const char* elementName(PlanElementDiff::Element e);  // "op", "input", "output"
// One line: "rank 2 op 'layers.1.attention_norm.out#0' changed: attribute eps: 1e-05 -> 0.001".
std::string describe(const PlanElementDiff& d);

}  // namespace paraproof

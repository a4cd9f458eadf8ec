// Builds a stage's verification condition: logical ops on free inputs, device ops on inputs
// parametrised by their lineage, and one obligation per element of every device value with lineage.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/ir/limits.h"
#include "core/ops/registry.h"
#include "core/plan/plan.h"
#include "core/stage/int_domains.h"
#include "core/stage/stage.h"
#include "core/sym/problem.h"

namespace paraproof::stage {

// The stage cannot be encoded (op without semantics, value-part group split across stages, ...).
struct UnsupportedStage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The plan itself is wrong in a way only lowering sees (after constant folding): an op divides by a constant
// zero. `op` names it ("logical op d" / "device 3 op d"); the plan is invalid, never a verdict.
struct InvalidStage : std::runtime_error {
  InvalidStage(std::string where, const std::string& what) : std::runtime_error(what), op(std::move(where)) {}
  std::string op;
};

// The stage holds more scalar elements, or grows more expression nodes, than the limits allow: checking it
// would exhaust memory long before any engine could decide it. The message starts "stage too large".
struct StageTooLarge : UnsupportedStage {
  using UnsupportedStage::UnsupportedStage;
};

struct LoweringLimits {
  int64_t maxElements = limits::kMaxStageElements;    // scalar elements of the stage's tensors
  int64_t maxExprNodes = limits::kMaxStageExprNodes;  // nodes of the stage's expression DAG
};

// Thrown when `cancel` was set while lowering (checked before every op: a huge stage can take minutes).
struct LoweringCancelled : std::runtime_error {
  LoweringCancelled() : std::runtime_error("cancelled while lowering") {}
};

// Thrown when lowering passed `deadline` (a stage too big to lower within its time limit).
struct LoweringTimeout : std::runtime_error {
  explicit LoweringTimeout(size_t nodes)
      : std::runtime_error("timeout while lowering the stage (" + std::to_string(nodes) +
                           " expression nodes)") {}
};

// Scalar elements of every tensor the stage reads or writes and of the logical tensors its lineage names
// (what LoweringLimits::maxElements bounds); saturating. Cheap: a bound on the work of lowering, before
// lowering.
int64_t stageElements(const Plan& plan, const Stage& stage);

// What one lowering leaves for lowering variants of the same plan (the end-to-end oracle's mutants) cheaply:
// its pool, the logical values and value-part variables, and every device op's and collective's outputs
// keyed by everything that determines them (kind, attributes, input types and element expressions). A
// variant lowered with the memo starts from a copy of the pool; an op whose inputs and attributes did not
// change costs a lookup, and the unchanged logical graph is not lowered again. The result is the problem a
// fresh lowering gives, up to the names of expression ids (op lowering is a pure function of its key).
struct LoweringMemo {
  sym::ExprPool pool;
  std::string logicalKey;                     // the logical graph the values below belong to
  std::vector<ops::IntRange> logicalDomains;  // and the integer domains of its values
  std::unordered_map<ValueId, ops::SymTensor> logical;
  std::vector<sym::NamedTensor> logicalInputs;
  std::map<std::tuple<std::string, Box, int>, std::vector<std::vector<sym::ExprId>>> parts;
  std::unordered_map<std::string, std::vector<ops::SymTensor>> ops;
};

// `domains`: intDomains(plan), computed once per plan (the overload without computes it). `cancel` and
// `deadline` are also checked inside an op's lowering (every 65536 new nodes).
sym::Problem lowerStage(
    const Plan& plan, const Stage& stage, const IntDomains& domains,
    const std::atomic<bool>* cancel = nullptr,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
    const LoweringLimits& limits = {});
sym::Problem lowerStage(const Plan& plan, const Stage& stage, const std::atomic<bool>* cancel = nullptr,
                        const LoweringLimits& limits = {});

// Lowers like lowerStage and fills `record` (empty before) for later variants.
sym::Problem lowerStageRecording(const Plan& plan, const Stage& stage, LoweringMemo& record,
                                 const std::atomic<bool>* cancel = nullptr,
                                 const LoweringLimits& limits = {});
// Lowers a variant of the plan `memo` was recorded for, reusing it (read only: safe from several threads).
sym::Problem lowerStageWithMemo(const Plan& plan, const Stage& stage, const LoweringMemo& memo,
                                const std::atomic<bool>* cancel = nullptr, const LoweringLimits& limits = {});

}  // namespace paraproof::stage

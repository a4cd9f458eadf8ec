// Verification state of a stage as shown in the inspector (its colours are the theme's, ui/theme.h).
#pragma once

#include "core/solver/problem.h"
#include "core/verify/report.h"

namespace paraproof::ui {

// Ordered by how loudly a group containing elements in this state must show it (Failed wins).
enum class StageState { None, Verified, Pending, Inconclusive, Running, Failed };

StageState stateOf(solver::Status status);
StageState stateOf(const verify::StageResult& result);  // a stage never run (cancel, deadline): None
const char* stateName(StageState s);                    // "not run", "verified", ...
// The state a group shows for the states of its members.
inline StageState combine(StageState a, StageState b) {
  return a > b ? a : b;
}

}  // namespace paraproof::ui

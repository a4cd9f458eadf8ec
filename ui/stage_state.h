// Verification state of a stage as shown in the inspector, and the one palette every widget uses.
#pragma once

#include <QColor>
#include <QString>

#include "core/solver/problem.h"
#include "core/verify/report.h"

namespace paraproof::ui {

// Ordered by how loudly a group containing elements in this state must show it (Failed wins).
enum class StageState { None, Verified, Pending, Inconclusive, Running, Failed };

StageState stateOf(solver::Status status);
StageState stateOf(const verify::StageResult& result);  // a stage never run (cancel, deadline): None
QString stateName(StageState s);
QColor stateColor(StageState s);      // strong colour: borders, table decorations, legend
QColor stateFillColor(StageState s);  // light tint: node fill
// The state a group shows for the states of its members.
inline StageState combine(StageState a, StageState b) {
  return a > b ? a : b;
}

// Colours for selection and lineage links, distinct from every stage state.
QColor selectionColor();
QColor linkColor();

}  // namespace paraproof::ui

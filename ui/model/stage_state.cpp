#include "ui/model/stage_state.h"

namespace paraproof::ui {

StageState stateOf(solver::Status status) {
  switch (status) {
    case solver::Status::Verified:
      return StageState::Verified;
    case solver::Status::Failed:
      return StageState::Failed;
    case solver::Status::Inconclusive:
      return StageState::Inconclusive;
  }
  return StageState::Inconclusive;
}

StageState stateOf(const verify::StageResult& result) {
  return result.ran ? stateOf(result.status) : StageState::None;
}

const char* stateName(StageState s) {
  switch (s) {
    case StageState::None:
      return "not run";
    case StageState::Pending:
      return "pending";
    case StageState::Running:
      return "running";
    case StageState::Verified:
      return "verified";
    case StageState::Failed:
      return "failed";
    case StageState::Inconclusive:
      return "inconclusive";
  }
  return "";
}

}  // namespace paraproof::ui

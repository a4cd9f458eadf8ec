#include "ui/stage_state.h"

#include "ui/theme.h"

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

QString stateName(StageState s) {
  switch (s) {
    case StageState::None:
      return QStringLiteral("not run");
    case StageState::Pending:
      return QStringLiteral("pending");
    case StageState::Running:
      return QStringLiteral("running");
    case StageState::Verified:
      return QStringLiteral("verified");
    case StageState::Failed:
      return QStringLiteral("failed");
    case StageState::Inconclusive:
      return QStringLiteral("inconclusive");
  }
  return {};
}

QColor stateColor(StageState s) {
  switch (s) {
    case StageState::None:
      return QColor(0x90, 0xA4, 0xAE);
    case StageState::Pending:
      return QColor(0x9E, 0x9E, 0x9E);
    case StageState::Running:
      return QColor(0x1E, 0x88, 0xE5);
    case StageState::Verified:
      return QColor(0x43, 0xA0, 0x47);
    case StageState::Failed:
      return QColor(0xE5, 0x39, 0x35);
    case StageState::Inconclusive:
      return QColor(0xFF, 0xA0, 0x00);
  }
  return Qt::gray;
}

QColor stateFillColor(StageState s) {
  return theme().stateFill(s);
}

QColor selectionColor() {
  return QColor(0x28, 0x35, 0x93);
}
QColor linkColor() {
  return QColor(0x8E, 0x24, 0xAA);
}

}  // namespace paraproof::ui

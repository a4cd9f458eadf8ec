#include "ui/stage_table.h"
#include "ui/theme.h"

#include <algorithm>

#include <QBrush>
#include <QFont>
#include <QStringList>

namespace paraproof::ui {

QString compactRanks(const std::vector<int>& ranks) {
  QStringList parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    parts << (j == i ? QString::number(ranks[i]) : QStringLiteral("%1-%2").arg(ranks[i]).arg(ranks[j]));
    i = j + 1;
  }
  return parts.join(',');
}

void StageTableModel::setStages(std::vector<verify::StageInfo> stages) {
  beginResetModel();
  stages_ = std::move(stages);
  results_.assign(stages_.size(), std::nullopt);
  states_.assign(stages_.size(), StageState::Pending);
  endResetModel();
}

void StageTableModel::clear() {
  setStages({});
}

int StageTableModel::indexOfStage(int stageId) const {
  if (stageId >= 0 && stageId < stageCount() && stages_[stageId].id == stageId) return stageId;
  for (int i = 0; i < stageCount(); ++i)
    if (stages_[i].id == stageId) return i;
  return -1;
}

void StageTableModel::markRunning(int stageId) {
  int i = indexOfStage(stageId);
  if (i < 0 || results_[i]) return;
  states_[i] = StageState::Running;
  changed(i);
}

void StageTableModel::setResult(const verify::StageResult& result) {
  int i = indexOfStage(result.stage);
  if (i < 0) return;
  results_[i] = result;
  states_[i] = stateOf(result);
  changed(i);
}

void StageTableModel::setResults(const std::vector<verify::StageResult>& results) {
  int first = stageCount(), last = -1;
  for (const verify::StageResult& r : results) {
    int i = indexOfStage(r.stage);
    if (i < 0) continue;
    results_[i] = r;
    states_[i] = stateOf(r);
    first = std::min(first, i);
    last = std::max(last, i);
  }
  if (last >= first) emit dataChanged(index(first, 0), index(last, ColumnCount - 1));
}

void StageTableModel::markUnfinishedCancelled() {
  int first = stageCount(), last = -1;
  for (int i = 0; i < stageCount(); ++i)
    if (!results_[i] && states_[i] != StageState::None) {
      states_[i] = StageState::None;
      first = std::min(first, i);
      last = i;
    }
  if (last >= first) emit dataChanged(index(first, 0), index(last, ColumnCount - 1));
}

int StageTableModel::count(StageState s) const {
  int n = 0;
  for (StageState st : states_)
    n += st == s;
  return n;
}

void StageTableModel::changed(int row) {
  emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

int StageTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : stageCount();
}
int StageTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant StageTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Stage", "Status",   "Kind",   "Scope", "Devices",
                                "Ops",   "Time (s)", "Engine", "Note"};
  return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

QVariant StageTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= stageCount()) return {};
  const int row = index.row();
  const verify::StageInfo& st = stages_[row];
  const auto& res = results_[row];
  const StageState state = states_[row];
  if (role == kStageIndexRole) return row;
  if (role == kStateRole) return static_cast<int>(state);
  if (role == Qt::DecorationRole && index.column() == Status) return stateColor(state);
  if (role == Qt::ForegroundRole && index.column() == Status) return QBrush(theme().stateText(state));
  if (role == Qt::BackgroundRole && state == StageState::Failed) return QBrush(stateFillColor(state));
  if (role == Qt::FontRole && state == StageState::Failed) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole &&
      (index.column() == Id || index.column() == Time || index.column() == Ops))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  const bool sort = role == Qt::UserRole;
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole && !sort) return {};
  switch (index.column()) {
    case Id:
      return st.id;
    case Status:
      return sort ? QVariant(static_cast<int>(state)) : QVariant(stateName(state));
    case Kind:
      return QString::fromLatin1(verify::stageKindName(st.kind));
    case Scope: {
      QStringList scopes;
      for (const auto& s : st.scopes)
        scopes << QString::fromStdString(s);
      if (role == Qt::ToolTipRole) return scopes.join('\n');
      return scopes.size() > 2 ? scopes.mid(0, 2).join(", ") + QStringLiteral(" +%1").arg(scopes.size() - 2)
                               : scopes.join(", ");
    }
    case Devices:
      return sort ? QVariant(static_cast<int>(st.devices.size())) : QVariant(compactRanks(st.devices));
    case Ops:
      return sort ? QVariant(static_cast<int>(st.logicalOps.size() + st.parallelOps.size()))
                  : QVariant(QStringLiteral("%1 / %2").arg(st.logicalOps.size()).arg(st.parallelOps.size()));
    case Time:
      if (!res) return sort ? QVariant(-1.0) : QVariant();
      return sort ? QVariant(res->seconds) : QVariant(QString::number(res->seconds, 'f', 3));
    case Engine:
      return res ? QString::fromStdString(res->engine) : QString();
    case Note: {
      if (!res) return {};
      QString note = QString::fromStdString(res->reason);
      if (res->reusedFrom != kNone)
        note = tr("same as stage %1").arg(res->reusedFrom) + (note.isEmpty() ? "" : "; " + note);
      if (res->counterexample && !res->counterexample->diffs.empty())
        note = tr("%1 differing elements").arg(res->counterexample->diffs.size()) +
               (note.isEmpty() ? "" : "; " + note);
      return note;
    }
    default:
      return {};
  }
}

void StageFilterProxy::setStateFilter(std::optional<StageState> s) {
  state_ = s;
  invalidateFilter();
}

bool StageFilterProxy::filterAcceptsRow(int row, const QModelIndex& parent) const {
  if (state_) {
    QModelIndex i = sourceModel()->index(row, 0, parent);
    if (static_cast<StageState>(i.data(StageTableModel::kStateRole).toInt()) != *state_) return false;
  }
  return QSortFilterProxyModel::filterAcceptsRow(row, parent);
}

}  // namespace paraproof::ui

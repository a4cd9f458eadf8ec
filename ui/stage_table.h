// The stage table: one row per verification stage, live status, sortable and filterable.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <optional>
#include <vector>

#include "core/verify/report.h"
#include "ui/model/stage_state.h"

namespace paraproof::ui {

class StageTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Id, Status, Kind, Scope, Devices, Ops, Time, Engine, Note, ColumnCount };
  static constexpr int kStageIndexRole = Qt::UserRole + 1;
  static constexpr int kStateRole = Qt::UserRole + 2;

  using QAbstractTableModel::QAbstractTableModel;

  void setStages(std::vector<verify::StageInfo> stages);  // all pending
  void clear();
  void markRunning(int stageId);
  void setResult(const verify::StageResult& result);
  void setResults(const std::vector<verify::StageResult>& results);  // one change notification for all
  void markUnfinishedCancelled();  // pending/running stages of a cancelled run back to "not run"

  int stageCount() const { return static_cast<int>(stages_.size()); }
  const verify::StageInfo& stage(int index) const { return stages_[index]; }
  const std::optional<verify::StageResult>& result(int index) const { return results_[index]; }
  StageState state(int index) const { return states_[index]; }
  const std::vector<StageState>& states() const { return states_; }
  int indexOfStage(int stageId) const;
  int count(StageState s) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  void changed(int row);
  std::vector<verify::StageInfo> stages_;
  std::vector<std::optional<verify::StageResult>> results_;
  std::vector<StageState> states_;
};

// Text filter over every column plus an optional state filter.
class StageFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setStateFilter(std::optional<StageState> s);

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

 private:
  std::optional<StageState> state_;
};

// "0-3,8,12-15"
QString compactRanks(const std::vector<int>& ranks);

}  // namespace paraproof::ui

#include "ui/search_panel.h"

#include <QLabel>
#include <QListWidget>
#include <QSignalBlocker>
#include <QVBoxLayout>

namespace paraproof::ui {

SearchPanel::SearchPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  count_ = new QLabel(tr("Find an op, tensor or scope with Ctrl+F."), this);
  count_->setWordWrap(true);
  list_ = new QListWidget(this);
  list_->setUniformItemSizes(true);
  list_->setAlternatingRowColors(true);
  layout->addWidget(count_);
  layout->addWidget(list_, 1);
  connect(list_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { emit matchChosen(list_->row(item)); });
  connect(list_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { emit matchChosen(list_->row(item)); });
}

void SearchPanel::setResults(const QString& text, const std::vector<Match>& matches) {
  QSignalBlocker quiet(list_);
  list_->clear();
  // One item per match: a plan's search can hit thousands of leaves, the list stays a flat, uniform one.
  QStringList rows;
  rows.reserve(static_cast<int>(matches.size()));
  for (const Match& m : matches)
    rows.push_back(m.label + QStringLiteral("  \u2014  ") + m.where);
  list_->addItems(rows);
  const int n = static_cast<int>(matches.size());
  if (n == 0)
    count_->setText(tr("No op, tensor or scope matches \u201c%1\u201d.").arg(text));
  else
    count_->setText((n == 1 ? tr("1 match for \u201c%1\u201d").arg(text)
                            : tr("%1 matches for \u201c%2\u201d").arg(n).arg(text)) +
                    tr(" (Enter / F3: next, Shift+F3: previous)"));
}

void SearchPanel::setCurrent(int index) {
  if (index < 0 || index >= list_->count()) return;
  QSignalBlocker quiet(list_);
  list_->setCurrentRow(index);
  list_->scrollToItem(list_->item(index));
}

int SearchPanel::count() const {
  return list_->count();
}

int SearchPanel::current() const {
  return list_->currentRow();
}

QString SearchPanel::countText() const {
  return count_->text();
}

}  // namespace paraproof::ui

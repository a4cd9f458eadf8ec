#include "ui/properties_panel.h"
#include "ui/theme.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace paraproof::ui {

PropertiesPanel::PropertiesPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  title_ = new QLabel(this);
  title_->setWordWrap(true);
  title_->setTextFormat(Qt::RichText);
  table_ = new QTableWidget(this);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setWordWrap(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  v->addWidget(title_);
  v->addWidget(table_, 1);
  clear();
}

void PropertiesPanel::clear(const QString& hint) {
  shown_ = {};
  table_->clear();
  table_->setRowCount(0);
  table_->setColumnCount(0);
  title_->setText(hint.isEmpty() ? tr("Select an op to see it on every device and micro-batch that runs it.")
                                 : hint);
}

void PropertiesPanel::showOp(const Plan& plan, const std::string& opId) {
  shown_ = opVariants(plan, opId);
  const QString name = QString::fromStdString(shown_.name).toHtmlEscaped();
  if (shown_.empty()) {
    clear(tr("<b>%1</b>: no device runs this op.").arg(name));
    return;
  }
  const int columns = std::min<int>(static_cast<int>(shown_.variants.size()), kMaxColumns);
  const int rows = static_cast<int>(shown_.rows.size());
  int differing = 0;
  for (bool d : shown_.differs)
    differing += d;
  QString title = tr("<b>%1</b> on %2 device op(s), %3")
                      .arg(name)
                      .arg(shown_.instanceCount())
                      .arg(shown_.variants.size() == 1
                               ? tr("all the same op")
                               : tr("<span style='color:%4'><b>%1 variants</b></span>, differing in %2 "
                                    "propert%3")
                                     .arg(shown_.variants.size())
                                     .arg(differing)
                                     .arg(differing == 1 ? "y" : "ies")
                                     .arg(theme().bad.name()));
  if (static_cast<int>(shown_.variants.size()) > columns)
    title += tr(" (the %1 most common shown)").arg(columns);
  if (plan.replicas || plan.microbatches)
    title += tr("<br>Stated devices and copies of a compact plan: the implied ones are their translates.");
  title_->setText(title);

  table_->clear();
  table_->setColumnCount(columns);
  table_->setRowCount(rows);
  for (int c = 0; c < columns; ++c) {
    const OpVariant& var = shown_.variants[static_cast<size_t>(c)];
    auto* header = new QTableWidgetItem(QString::fromStdString(describeInstances(plan, var.instances)) +
                                        QStringLiteral(" (%1)").arg(var.instances.size()));
    table_->setHorizontalHeaderItem(c, header);
  }
  const QColor deviant = theme().deviantFill, deviantText = theme().deviantText;
  for (int r = 0; r < rows; ++r) {
    auto* header = new QTableWidgetItem(QString::fromStdString(shown_.rows[static_cast<size_t>(r)]));
    if (shown_.differs[static_cast<size_t>(r)]) {
      QFont f = header->font();
      f.setBold(true);
      header->setFont(f);
      header->setText(QStringLiteral("\u25B6 ") + header->text());
    }
    table_->setVerticalHeaderItem(r, header);
    const std::string& common = shown_.variants[0].values[static_cast<size_t>(r)];
    for (int c = 0; c < columns; ++c) {
      const std::string& value = shown_.variants[static_cast<size_t>(c)].values[static_cast<size_t>(r)];
      auto* item = new QTableWidgetItem(QString::fromStdString(value));
      item->setToolTip(item->text());
      if (value != common) {  // the deviation itself, in its column
        item->setBackground(deviant);
        item->setForeground(deviantText);
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
      }
      table_->setItem(r, c, item);
    }
  }
}

}  // namespace paraproof::ui

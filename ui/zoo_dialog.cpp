#include "ui/zoo_dialog.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <memory>
#include <stdexcept>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "ui/background.h"
#include "ui/theme.h"

namespace paraproof::ui {

namespace {

struct ZooSpec {
  const models::ModelConfig* model;
  parallel::ParallelSpec spec;
  parallel::GenerateOptions options;
};

ZooSpec specOf(const ZooRequest& r) {
  const models::ModelConfig* model = models::findModel(r.model.toStdString());
  if (!model)
    throw std::invalid_argument("unknown model '" + r.model.toStdString() + "' (see `paraproof models`)");
  ZooSpec z{model, parallel::parseParallel(r.parallel.toStdString()), {}};
  z.options.layers = r.layers;
  z.options.inject = r.inject.toStdString();
  return z;
}

}  // namespace

Plan generateFromZoo(const ZooRequest& r) {
  const ZooSpec z = specOf(r);
  return parallel::generatePlan(*z.model, z.spec, z.options);
}

parallel::BugComparison generateComparisonFromZoo(const ZooRequest& injected) {
  if (injected.inject.isEmpty()) throw std::invalid_argument("choose a bug to compare the plan with");
  const ZooSpec z = specOf(injected);
  return parallel::generateBugComparison(*z.model, z.spec, z.options);
}

QString describe(const ZooRequest& r) {
  QString s = r.model + " " + r.parallel;
  if (r.layers > 0) s += QStringLiteral(" L%1").arg(r.layers);
  if (!r.inject.isEmpty()) s += " + " + r.inject;
  return s;
}

ZooDialog::ZooDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("New Plan from Model Zoo"));
  setMinimumWidth(560);
  auto* form = new QFormLayout(this);
  model_ = new QComboBox(this);
  for (const auto& m : models::modelZoo())
    model_->addItem(QString::fromStdString(m.name));
  modelNote_ = new QLabel(this);
  modelNote_->setWordWrap(true);
  modelNote_->setStyleSheet(QStringLiteral("color: %1;").arg(theme().dimText.name()));
  layers_ = new QSpinBox(this);
  layers_->setRange(0, 200);
  layers_->setSpecialValueText(tr("model's own"));
  layers_->setValue(2);
  layers_->setToolTip(
      tr("Transformer layers to build; shape reduction makes the width free, layers cost time"));
  parallel_ = new QLineEdit(QStringLiteral("dp=2,tp=2"), this);
  parallel_->setPlaceholderText("dp=2,tp=2,pp=2,mb=2[,sp][,cp=2][,ep=2][,zero=1]");
  bug_ = new QComboBox(this);
  bug_->addItem(tr("(none: a correct plan)"), QString());
  for (const auto& b : parallel::bugCatalog()) {
    bug_->addItem(
        QStringLiteral("%1  \u2014  %2").arg(QString::fromStdString(b.id), QString::fromStdString(b.cls)),
        QString::fromStdString(b.id));
    bug_->setItemData(bug_->count() - 1, QString::fromStdString(b.description), Qt::ToolTipRole);
  }
  where_ = new QLineEdit(this);
  where_->setPlaceholderText(tr("optional: layer=1,rank=2,mb=0"));
  bugNote_ = new QLabel(this);
  bugNote_->setWordWrap(true);
  bugNote_->setMinimumHeight(48);
  bugNote_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::MinimumExpanding);
  bugNote_->setStyleSheet(QStringLiteral("background: %1; border: 1px solid %2; padding: 6px; color: %3;")
                              .arg(theme().bugFill.name(), theme().bugBorder.name(), theme().text.name()));
  verifyAfter_ = new QCheckBox(tr("&Verify after generating"), this);
  model_->setObjectName("model");
  layers_->setObjectName("layers");
  parallel_->setObjectName("parallel");
  bug_->setObjectName("bug");
  where_->setObjectName("where");
  verifyAfter_->setObjectName("verifyAfter");
  error_ = new QLabel(this);
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: %1;").arg(theme().bad.name()));
  form->addRow(tr("Model:"), model_);
  form->addRow(QString(), modelNote_);
  form->addRow(tr("Layers:"), layers_);
  form->addRow(tr("Parallelism:"), parallel_);
  form->addRow(tr("Inject bug:"), bug_);
  form->addRow(tr("Where:"), where_);
  form->addRow(QString(), bugNote_);
  form->addRow(QString(), verifyAfter_);
  form->addRow(error_);
  // The dialog grows with the bug's text instead of cutting it.
  form->setSizeConstraint(QLayout::SetMinimumSize);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Generate"));
  connect(buttons, &QDialogButtonBox::accepted, this, &ZooDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
  connect(model_, &QComboBox::currentIndexChanged, this, &ZooDialog::onModelChanged);
  connect(bug_, &QComboBox::currentIndexChanged, this, &ZooDialog::onBugChanged);
  onModelChanged();
  onBugChanged();
  restoreLastRequest();
}

// The last request generated (saved on accept): a lesson goes on where it was.
void ZooDialog::restoreLastRequest() {
  QSettings s;
  if (!s.contains(QStringLiteral("zoo/model"))) return;
  if (int i = model_->findText(s.value(QStringLiteral("zoo/model")).toString()); i >= 0)
    model_->setCurrentIndex(i);
  layers_->setValue(s.value(QStringLiteral("zoo/layers"), layers_->value()).toInt());
  QString bug = s.value(QStringLiteral("zoo/bug")).toString();
  const QString where = bug.section('@', 1);
  bug = bug.section('@', 0, 0);
  if (int i = bug_->findData(bug); i >= 0) bug_->setCurrentIndex(i);  // sets the catalog's model and spec
  if (int i = model_->findText(s.value(QStringLiteral("zoo/model")).toString()); i >= 0)
    model_->setCurrentIndex(i);
  parallel_->setText(s.value(QStringLiteral("zoo/parallel"), parallel_->text()).toString());
  where_->setText(where);
  verifyAfter_->setChecked(s.value(QStringLiteral("zoo/verify"), false).toBool());
}

bool ZooDialog::verifyAfterGenerating() const {
  return verifyAfter_->isChecked();
}

void ZooDialog::onModelChanged() {
  const models::ModelConfig* m = models::findModel(model_->currentText().toStdString());
  modelNote_->setText(m ? QString::fromStdString(m->note) + tr(" (%1 layers)").arg(m->layers) : QString());
}

void ZooDialog::onBugChanged() {
  const QString id = bug_->currentData().toString();
  const parallel::BugEntry* b = id.isEmpty() ? nullptr : parallel::findBug(id.toStdString());
  where_->setEnabled(b != nullptr);
  if (!b) {
    bugNote_->setText(tr("No bug: verification should prove the plan equivalent."));
    return;
  }
  bugNote_->setText(tr("<b>%1</b><br>%2<br><i>Seen in: %3</i>")
                        .arg(QString::fromStdString(b->cls).toHtmlEscaped(),
                             QString::fromStdString(b->description).toHtmlEscaped(),
                             QString::fromStdString(b->source).toHtmlEscaped()));
  // The catalog says where each bug applies: start from there.
  if (int i = model_->findText(QString::fromStdString(b->model)); i >= 0) model_->setCurrentIndex(i);
  if (!b->parallel.empty()) parallel_->setText(QString::fromStdString(b->parallel));
}

ZooRequest ZooDialog::request() const {
  ZooRequest r;
  r.model = model_->currentText();
  r.parallel = parallel_->text().trimmed();
  r.layers = layers_->value();
  r.inject = bug_->currentData().toString();
  if (!r.inject.isEmpty() && !where_->text().trimmed().isEmpty()) r.inject += "@" + where_->text().trimmed();
  return r;
}

// Generation takes seconds for the big models (llama3-405b: ~2.5 s): it runs on a pool thread while the
// dialog stays responsive; the dialog closes when the plan is there, or shows why it cannot be built.
void ZooDialog::accept() {
  if (generating_) return;
  generating_ = true;
  error_->setText(tr("Generating\u2026"));
  setEnabled(false);
  struct Generated {
    std::shared_ptr<Plan> plan;
    QString error;
  };
  runInBackground(
      this,
      [r = request(), generate = generator_] {
        Generated g;
        try {
          g.plan = std::make_shared<Plan>(generate(r));
        } catch (const std::exception& e) {
          g.error = QString::fromUtf8(e.what());
        }
        return g;
      },
      [this](Generated g) {
        generating_ = false;
        setEnabled(true);
        error_->setText(g.error);
        if (!g.plan) return;
        plan_ = std::move(*g.plan);
        const ZooRequest r = request();
        QSettings s;
        s.setValue(QStringLiteral("zoo/model"), r.model);
        s.setValue(QStringLiteral("zoo/layers"), r.layers);
        s.setValue(QStringLiteral("zoo/parallel"), r.parallel);
        s.setValue(QStringLiteral("zoo/bug"), r.inject);
        s.setValue(QStringLiteral("zoo/verify"), verifyAfter_->isChecked());
        QDialog::accept();
      });
}

}  // namespace paraproof::ui

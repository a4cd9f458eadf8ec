#include "ui/zoo_dialog.h"

#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QtConcurrent>
#include <memory>
#include <stdexcept>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"

namespace paraproof::ui {

Plan generateFromZoo(const ZooRequest& r) {
  const models::ModelConfig* model = models::findModel(r.model.toStdString());
  if (!model)
    throw std::invalid_argument("unknown model '" + r.model.toStdString() + "' (see `paraproof models`)");
  parallel::ParallelSpec spec = parallel::parseParallel(r.parallel.toStdString());
  parallel::GenerateOptions options;
  options.layers = r.layers;
  options.inject = r.inject.toStdString();
  return parallel::generatePlan(*model, spec, options);
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
  modelNote_->setStyleSheet("color: #607d8b;");
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
  for (const auto& b : parallel::bugCatalog())
    bug_->addItem(
        QStringLiteral("%1  \u2014  %2").arg(QString::fromStdString(b.id), QString::fromStdString(b.cls)),
        QString::fromStdString(b.id));
  where_ = new QLineEdit(this);
  where_->setPlaceholderText(tr("optional: layer=1,rank=2,mb=0"));
  bugNote_ = new QLabel(this);
  bugNote_->setWordWrap(true);
  bugNote_->setMinimumHeight(48);
  bugNote_->setStyleSheet("background: #fff8e1; border: 1px solid #ffe082; padding: 6px;");
  error_ = new QLabel(this);
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #c62828;");
  form->addRow(tr("Model:"), model_);
  form->addRow(QString(), modelNote_);
  form->addRow(tr("Layers:"), layers_);
  form->addRow(tr("Parallelism:"), parallel_);
  form->addRow(tr("Inject bug:"), bug_);
  form->addRow(tr("Where:"), where_);
  form->addRow(QString(), bugNote_);
  form->addRow(error_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Generate"));
  connect(buttons, &QDialogButtonBox::accepted, this, &ZooDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
  connect(model_, &QComboBox::currentIndexChanged, this, &ZooDialog::onModelChanged);
  connect(bug_, &QComboBox::currentIndexChanged, this, &ZooDialog::onBugChanged);
  onModelChanged();
  onBugChanged();
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
  QtConcurrent::run([r = request(), generate = generator_] {
    Generated g;
    try {
      g.plan = std::make_shared<Plan>(generate(r));
    } catch (const std::exception& e) {
      g.error = QString::fromUtf8(e.what());
    }
    return g;
  }).then(this, [this](Generated g) {
    generating_ = false;
    setEnabled(true);
    error_->setText(g.error);
    if (!g.plan) return;
    plan_ = std::move(*g.plan);
    QDialog::accept();
  });
}

}  // namespace paraproof::ui

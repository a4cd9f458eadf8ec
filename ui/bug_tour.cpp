#include "ui/bug_tour.h"

#include <QComboBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/parallel/bugs.h"
#include "ui/compare_window.h"
#include "ui/main_window.h"
#include "ui/properties_panel.h"
#include "ui/theme.h"

namespace paraproof::ui {

namespace {

QString html(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

// What the properties panel shows for the failing op, in a sentence: the properties in which its variants
// disagree, each variant's value and where it runs ("eps: 0.001 on rank 0 · mb 0; 1e-05 on ...").
QString describeDifferences(const Plan& plan, const OpVariants& v) {
  if (v.empty()) return {};
  if (v.variants.size() == 1)
    return QObject::tr(
               "<code>%1</code> is the same on all %2 instances: what is wrong is not a difference between "
               "ranks; step 5 compares it with the correct plan.")
        .arg(html(v.name))
        .arg(v.instanceCount());
  QStringList rows;
  for (size_t r = 0; r < v.rows.size() && rows.size() < 3; ++r) {
    if (!v.differs[r]) continue;
    QStringList values;
    for (size_t c = 0; c < v.variants.size() && c < 3; ++c)
      values << QObject::tr("%1 on %2")
                    .arg(html(v.variants[c].values[r]),
                         html(describeInstances(plan, v.variants[c].instances)));
    rows << QStringLiteral("<b>%1</b>: %2").arg(html(v.rows[r]), values.join("; "));
  }
  return QObject::tr("Its %1 variants differ in %2.").arg(v.variants.size()).arg(rows.join("; "));
}

QString verdictText(std::optional<verify::Verdict> v) {
  if (!v) return QObject::tr("not verified yet");
  return QString::fromLatin1(verify::verdictName(*v)).replace('_', ' ').toUpper();
}

}  // namespace

QString tourStepTitle(TourStep step) {
  switch (step) {
    case TourStep::Bug:
      return QObject::tr("The bug");
    case TourStep::CorrectPlan:
      return QObject::tr("The correct plan, verified");
    case TourStep::InjectedPlan:
      return QObject::tr("The plan with the bug, verified");
    case TourStep::FailingOp:
      return QObject::tr("Where it fails: the counterexample");
    case TourStep::Difference:
      return QObject::tr("What the bug changed: compare mode");
  }
  return {};
}

QString tourStepSlug(TourStep step) {
  static const char* slugs[] = {"bug", "correct", "injected", "failing-op", "difference"};
  return QString::fromLatin1(slugs[static_cast<int>(step)]);
}

ZooRequest tourRequest(const parallel::BugEntry& bug, int layers) {
  ZooRequest r;
  r.model = QString::fromStdString(bug.model);
  r.parallel = QString::fromStdString(bug.parallel);
  r.layers = layers;
  r.inject = QString::fromStdString(bug.id);
  return r;
}

BugTour::BugTour(MainWindow* window, QObject* parent) : QObject(parent), window_(window) {}

BugTour::~BugTour() {
  disconnect(waiting_);
}

bool BugTour::start(const QString& bugId, int layers) {
  const parallel::BugEntry* bug = parallel::findBug(bugId.toStdString());
  if (!bug) {
    emit failed(tr("unknown bug '%1' (see `paraproof bugs`)").arg(bugId));
    return false;
  }
  ++generation_;
  disconnect(waiting_);
  bug_ = bug;
  request_ = tourRequest(*bug, layers);
  correctVerdict_.reset();
  injectedVerdict_.reset();
  failingStage_.clear();
  failingOp_.clear();
  propertiesDiff_.clear();
  if (compare_) compare_->close();
  step_ = TourStep::Bug;
  runStep();
  return true;
}

void BugTour::next() {
  if (!bug_ || running_ || step_ == TourStep::Difference) return;
  step_ = static_cast<TourStep>(static_cast<int>(step_) + 1);
  runStep();
}

void BugTour::restartStep() {
  if (bug_ && !running_) runStep();
}

bool BugTour::succeeded() const {
  return correctVerdict_ == verify::Verdict::Equivalent &&
         injectedVerdict_ == verify::Verdict::NotEquivalent && compare_ && compare_->differenceCount() > 0;
}

void BugTour::runStep() {
  running_ = true;
  emit stepStarted(step_);
  switch (step_) {
    case TourStep::Bug:
      finishStep();
      return;
    case TourStep::CorrectPlan: {
      ZooRequest correct = request_;
      correct.inject.clear();
      generateAndVerify(correct);
      return;
    }
    case TourStep::InjectedPlan:
      generateAndVerify(request_);
      return;
    case TourStep::FailingOp:
      // Verification already selected the first failing stage; selecting it again brings its op back into
      // view after any browsing between the steps.
      if (int stage = window_->firstFailingStage(); stage >= 0) window_->selectStage(stage);
      propertiesDiff_ = window_->plan()
                            ? describeDifferences(*window_->plan(), window_->propertiesPanel()->shown())
                            : QString();
      finishStep();
      return;
    case TourStep::Difference: {
      if (compare_) compare_->close();
      compare_ = MainWindow::newCompareWindow();
      compare_->resize(window_->size());
      const uint64_t generation = generation_;
      connect(compare_, &CompareWindow::compared, this, [this, generation] {
        if (generation == generation_) finishStep();
      });
      connect(compare_, &CompareWindow::failed, this, [this, generation](const QString& e) {
        if (generation != generation_) return;
        running_ = false;
        emit failed(e);
      });
      compare_->compareWithBug(request_);
      return;
    }
  }
}

// Generation, hierarchy and verification each end in a signal of the window: the tour follows them one
// after the other, and drops them once a newer tour started.
void BugTour::generateAndVerify(const ZooRequest& request) {
  const uint64_t generation = generation_;
  disconnect(waiting_);
  waiting_ = connect(window_, &MainWindow::planOpened, this, [this, generation] {
    disconnect(waiting_);
    if (generation != generation_) return;
    waiting_ = connect(window_, &MainWindow::verificationFinished, this,
                       [this, generation](const verify::Report& report) {
                         disconnect(waiting_);
                         if (generation == generation_) onVerified(report);
                       });
    window_->runVerification();
  });
  connect(
      window_, &MainWindow::openFailed, this,
      [this, generation](const QString& e) {
        if (generation != generation_ || !running_) return;
        disconnect(waiting_);
        running_ = false;
        emit failed(e);
      },
      Qt::SingleShotConnection);
  window_->generatePlanInBackground(request, false);
}

void BugTour::onVerified(const verify::Report& report) {
  if (step_ == TourStep::CorrectPlan) {
    correctVerdict_ = report.verdict;
  } else {
    injectedVerdict_ = report.verdict;
    for (size_t i = 0; i < report.results.size() && i < report.stages.size(); ++i) {
      if (report.results[i].status != solver::Status::Failed) continue;
      const verify::StageInfo& s = report.stages[i];
      failingStage_ = QString::fromStdString(s.scopes.empty() ? std::string() : s.scopes.front());
      const auto& cex = report.results[i].counterexample;
      if (s.firstDifference)
        failingOp_ = tr("rank %1, <code>%2</code>")
                         .arg(s.firstDifference->rank)
                         .arg(html(s.firstDifference->tensor.empty() ? s.firstDifference->op
                                                                     : s.firstDifference->tensor));
      else if (cex && !cex->diffs.empty())  // the counterexample's first differing element
        failingOp_ = (cex->diffs.front().device == kNone ? tr("the sum over ranks, ")
                                                         : tr("rank %1, ").arg(cex->diffs.front().device)) +
                     QStringLiteral("<code>%1</code>").arg(html(cex->diffs.front().tensor));
      break;
    }
  }
  finishStep();
}

void BugTour::finishStep() {
  running_ = false;
  emit stepReady(step_);
}

QString BugTour::explanation() const {
  if (!bug_) return tr("Choose a bug to tour.");
  const QString where =
      tr("%1 with %2, %3 layers").arg(request_.model, request_.parallel).arg(request_.layers);
  switch (step_) {
    case TourStep::Bug:
      return tr("<p><b>%1</b> &middot; <i>%2</i></p><p>%3</p><p><b>Seen in:</b> %4</p>"
                "<p>The tour builds %5 twice, without and with this bug, and lets ParaProof find it.</p>")
          .arg(html(bug_->id), html(bug_->cls), html(bug_->description), html(bug_->source), where);
    case TourStep::CorrectPlan:
      return tr("<p>The correct plan (%1) splits the model over its devices. ParaProof cuts both the logical "
                "model and the plan into stages and proves each one.</p><p>Verdict: <b>%2</b>.</p>")
          .arg(where, verdictText(correctVerdict_));
    case TourStep::InjectedPlan:
      return tr("<p>The same plan with <b>%1</b> injected. The training step still runs and the loss still "
                "looks plausible; only the proof can tell.</p><p>Verdict: <b>%2</b>.</p>")
          .arg(html(bug_->id), verdictText(injectedVerdict_));
    case TourStep::FailingOp:
      return tr("<p>The failing stage%1 is selected and drawn red; the op whose value differs first is %2. "
                "The counterexample gives concrete inputs on which the plan and the model disagree; the "
                "properties panel shows the op's attributes, its variants across ranks marked.</p><p>%3</p>")
          .arg(failingStage_.isEmpty() ? QString()
                                       : tr(" (<code>%1</code>)").arg(html(failingStage_.toStdString())),
               failingOp_.isEmpty() ? tr("marked in both graphs") : failingOp_, propertiesDiff_);
    case TourStep::Difference:
      return tr("<p>The correct plan (left) and the injected one (right), side by side. %1</p><p>Each "
                "difference is listed; F3 steps through them and shows the op in both plans.</p>")
          .arg(compare_ ? compare_->summary().toHtmlEscaped() : QString());
  }
  return {};
}

TourPanel::TourPanel(MainWindow* window, QWidget* parent)
    : QWidget(parent), tour_(new BugTour(window, this)) {
  auto* layout = new QVBoxLayout(this);
  bugs_ = new QComboBox(this);
  for (const auto& b : parallel::bugCatalog())
    bugs_->addItem(QString::fromStdString(b.id + "  (" + b.cls + ")"), QString::fromStdString(b.id));
  bugs_->setToolTip(tr("The catalog bug to tour: each is a real distributed-training bug"));
  text_ = new QLabel(this);
  text_->setWordWrap(true);
  text_->setTextFormat(Qt::RichText);
  text_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  steps_ = new QListWidget(this);
  for (int i = 0; i < kTourSteps; ++i)
    steps_->addItem(QStringLiteral("%1. %2").arg(i + 1).arg(tourStepTitle(static_cast<TourStep>(i))));
  steps_->setSelectionMode(QAbstractItemView::NoSelection);
  steps_->setMaximumHeight(steps_->sizeHintForRow(0) * (kTourSteps + 1));
  next_ = new QPushButton(tr("&Next Step"), this);
  next_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Right));
  nextBug_ = new QPushButton(tr("Next &Bug"), this);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(next_);
  buttons->addWidget(nextBug_);
  layout->addWidget(bugs_);
  layout->addWidget(steps_);
  layout->addWidget(text_, 1);
  layout->addLayout(buttons);

  connect(bugs_, &QComboBox::activated, this, [this] { startBug(bugs_->currentData().toString(), layers_); });
  connect(next_, &QPushButton::clicked, tour_, &BugTour::next);
  connect(nextBug_, &QPushButton::clicked, this, &TourPanel::nextBug);
  connect(tour_, &BugTour::stepStarted, this, &TourPanel::refresh);
  connect(tour_, &BugTour::stepReady, this, &TourPanel::refresh);
  connect(tour_, &BugTour::failed, this, [this](const QString& e) {
    refresh();
    text_->setText(
        tr("<p style='color:%1'><b>The step failed:</b> %2</p>").arg(theme().bad.name(), e.toHtmlEscaped()));
  });
  refresh();
}

bool TourPanel::startBug(const QString& bugId, int layers) {
  if (int i = bugs_->findData(bugId); i >= 0) bugs_->setCurrentIndex(i);
  layers_ = layers;
  return tour_->start(bugId, layers);
}

void TourPanel::nextBug() {
  const int n = bugs_->count();
  if (n == 0) return;
  bugs_->setCurrentIndex((bugs_->currentIndex() + 1) % n);
  startBug(bugs_->currentData().toString(), layers_);
}

void TourPanel::refresh() {
  const int current = static_cast<int>(tour_->step());
  for (int i = 0; i < kTourSteps; ++i) {
    QListWidgetItem* item = steps_->item(i);
    QFont f = item->font();
    f.setBold(tour_->bug() && i == current);
    item->setFont(f);
    const bool done = tour_->bug() && (i < current || (i == current && !tour_->running()));
    item->setText(QStringLiteral("%1 %2. %3")
                      .arg(done                               ? QStringLiteral("\u2713")
                           : i == current && tour_->running() ? QStringLiteral("\u2026")
                                                              : QStringLiteral("  "))
                      .arg(i + 1)
                      .arg(tourStepTitle(static_cast<TourStep>(i))));
  }
  text_->setText(tour_->running() ? tour_->explanation() + tr("<p><i>Working\u2026</i></p>")
                                  : tour_->explanation());
  next_->setEnabled(tour_->bug() && !tour_->running() && !tour_->atEnd());
}

}  // namespace paraproof::ui

#include "ui/compare_window.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStatusBar>
#include <QToolBar>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <optional>
#include <tuple>

#include "ui/background.h"
#include "ui/graph_view.h"
#include "ui/hierarchy_builder.h"
#include "ui/layout_worker.h"
#include "ui/plan_files.h"
#include "ui/theme.h"
#include "ui/zoo_dialog.h"

namespace paraproof::ui {
namespace {

constexpr int kOverviewBudget = 40;  // visible nodes per view before the first step

using Change = PlanElementDiff::Change;

// Index into Plan::devices of the device with this rank; nullopt when the plan does not state it.
std::optional<int> deviceOfRank(const Plan& plan, int rank) {
  for (size_t i = 0; i < plan.devices.size(); ++i)
    if (plan.devices[i].rank == rank) return static_cast<int>(i);
  return std::nullopt;
}

// The colour a difference has on one side (None: it is not on that side).
StageState diffState(Change change, bool first) {
  switch (change) {
    case Change::Added:
      return first ? StageState::None : StageState::Verified;
    case Change::Removed:
      return first ? StageState::Failed : StageState::None;
    case Change::Changed:
      return StageState::Inconclusive;
  }
  return StageState::None;
}

void colour(ComparedPlan& side, const PlanDiff& diff, bool first) {
  side.logicalStates.assign(side.logical->elements().size(), StageState::None);
  side.parallelStates.assign(side.parallel->elements().size(), StageState::None);
  for (const PlanElementDiff& d : diff.elements) {
    const int e = elementOfDifference(side, d, first);
    if (e < 0) continue;
    auto& states = d.rank == kNone ? side.logicalStates : side.parallelStates;
    states[e] = combine(states[e], diffState(d.change, first));
  }
}

ComparedPlan sideOf(std::shared_ptr<const Plan> plan, const QString& name) {
  ComparedPlan side;
  side.plan = std::move(plan);
  side.name = name;
  side.logical = std::make_shared<GraphModel>(GraphModel::logical(*side.plan));
  side.parallel = std::make_shared<GraphModel>(GraphModel::parallel(*side.plan, ParallelSelection{}));
  side.logical->autoExpand(kOverviewBudget);
  side.parallel->autoExpand(kOverviewBudget);
  return side;
}

QString whereOf(const PlanElementDiff& d) {
  return d.rank == kNone ? QObject::tr("logical") : QObject::tr("rank %1").arg(d.rank);
}

}  // namespace

int elementOfDifference(const ComparedPlan& side, const PlanElementDiff& d, bool first) {
  const std::string& name = first ? d.a : d.b;
  if (name.empty()) return -1;
  const bool logical = d.rank == kNone;
  const GraphModel& model = logical ? *side.logical : *side.parallel;
  int device = kNone;
  if (!logical) {
    const std::optional<int> stated = deviceOfRank(*side.plan, d.rank);
    if (!stated) return -1;
    device = *stated;
    if (model.representative(device) == kNone) return -1;
  }
  if (d.element == PlanElementDiff::Element::Op) return model.elementOfOp(device, name);
  // A value: looked up in the graph the view draws for this device (its replica group's representative).
  const Graph& g = logical ? side.plan->logical : side.plan->devices[model.representative(device)].graph;
  const ValueId v = g.findValue(name);
  if (v == kNone) return -1;
  const OpId producer = g.values[v].producer;
  if (d.element == PlanElementDiff::Element::Output && producer != kNone)
    return model.elementOfOp(logical ? kNone : device, producer);
  return model.elementOfInput(logical ? kNone : device, v);
}

std::shared_ptr<Comparison> buildComparison(std::shared_ptr<const Plan> a, const QString& nameA,
                                            std::shared_ptr<const Plan> b, const QString& nameB) {
  auto c = std::make_shared<Comparison>();
  c->diff = diffPlans(*a, *b);
  c->a = sideOf(std::move(a), nameA);
  c->b = sideOf(std::move(b), nameB);
  colour(c->a, c->diff, true);
  colour(c->b, c->diff, false);
  return c;
}

CompareWindow::CompareWindow(QWidget* parent) : QMainWindow(parent), worker_(LayoutWorker::shared()) {
  setWindowTitle(tr("Compare Plans \u2014 ParaProof Inspector"));
  setWindowIcon(QIcon(":/icons/paraproof.svg"));
  viewA_ = new GraphView(worker_.get(), this);
  viewB_ = new GraphView(worker_.get(), this);
  viewA_->setPlaceholder(tr("The first plan appears here"));
  viewB_->setPlaceholder(tr("The second plan appears here"));
  headerA_ = new QLabel(this);
  headerB_ = new QLabel(this);
  auto panel = [this](QLabel* header, GraphView* view) {
    auto* w = new QWidget(this);
    auto* v = new QVBoxLayout(w);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    header->setContentsMargins(8, 4, 8, 2);
    header->setTextFormat(Qt::PlainText);
    v->addWidget(header);
    v->addWidget(view, 1);
    return w;
  };
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->addWidget(panel(headerA_, viewA_));
  splitter->addWidget(panel(headerB_, viewB_));
  splitter->setHandleWidth(3);
  setCentralWidget(splitter);

  auto* dock = new QDockWidget(tr("Differences"), this);
  dock->setObjectName("differencesDock");
  auto* body = new QWidget(dock);
  auto* v = new QVBoxLayout(body);
  v->setContentsMargins(4, 4, 4, 4);
  summary_ = new QLabel(body);
  summary_->setWordWrap(true);
  list_ = new QTreeWidget(body);
  list_->setHeaderLabels({tr("#"), tr("change"), tr("where"), tr("op or value"), tr("what differs")});
  list_->setRootIsDecorated(false);
  list_->setUniformRowHeights(true);
  list_->setAlternatingRowColors(true);
  list_->header()->setStretchLastSection(true);
  for (auto [col, w] : {std::pair{0, 44}, {1, 70}, {2, 70}, {3, 300}})
    list_->setColumnWidth(col, w);
  v->addWidget(summary_);
  v->addWidget(list_, 1);
  dock->setWidget(body);
  addDockWidget(Qt::BottomDockWidgetArea, dock);
  resizeDocks({dock}, {220}, Qt::Vertical);
  connect(list_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (item) stepTo(list_->indexOfTopLevelItem(item));
  });

  QToolBar* bar = addToolBar(tr("Compare"));
  bar->setObjectName("compareToolbar");
  bar->setMovable(false);
  graph_ = new QComboBox(bar);
  graph_->addItems({tr("Logical graph"), tr("Parallel: all devices")});
  graph_->setToolTip(tr("Which graph of both plans the views show (a step switches to the difference's)"));
  connect(graph_, &QComboBox::activated, this, [this](int i) { showGraph(i == 1); });
  bar->addWidget(graph_);
  bar->addSeparator();
  QAction* previous = bar->addAction(tr("Previous"), this, &CompareWindow::previousDifference);
  previous->setShortcut(QKeySequence(tr("Shift+F3")));
  previous->setToolTip(tr("Previous difference (Shift+F3)"));
  QAction* next = bar->addAction(tr("Next"), this, &CompareWindow::nextDifference);
  next->setShortcuts({QKeySequence(QKeySequence::FindNext), QKeySequence(tr("F3"))});
  next->setToolTip(tr("Next difference (F3)"));
  bar->addSeparator();
  bar->addAction(tr("Fit"), this, [this] {
    viewA_->fitAll();
    viewB_->fitAll();
  });
  auto* legend = new QLabel(bar);
  legend->setText(tr("  <span style='color:%1'>\u25A0</span> only in the second plan &nbsp; "
                     "<span style='color:%2'>\u25A0</span> only in the first &nbsp; "
                     "<span style='color:%3'>\u25A0</span> changed")
                      .arg(stateColor(StageState::Verified).name(), stateColor(StageState::Failed).name(),
                           stateColor(StageState::Inconclusive).name()));
  bar->addWidget(legend);
  resize(1500, 940);
}

CompareWindow::~CompareWindow() {
  delete viewA_;  // before the layout worker they talk to
  delete viewB_;
  viewA_ = viewB_ = nullptr;
  destroyInBackground(std::move(comparison_));
}

void CompareWindow::comparePlans(std::shared_ptr<const Plan> a, const QString& nameA,
                                 std::shared_ptr<const Plan> b, const QString& nameB) {
  start([a, nameA, b, nameB](QString*) { return buildComparison(a, nameA, b, nameB); },
        tr("Comparing %1 with %2\u2026").arg(nameA, nameB));
}

void CompareWindow::compareFiles(const QString& a, const QString& b) {
  start(
      [a, b](QString* error) -> std::shared_ptr<Comparison> {
        auto planA = readPlan(a, error, Checked::Validated);
        if (!planA) return nullptr;
        auto planB = readPlan(b, error, Checked::Validated);
        if (!planB) return nullptr;
        return buildComparison(std::move(planA), a, std::move(planB), b);
      },
      tr("Loading %1 and %2\u2026").arg(a, b));
}

void CompareWindow::comparePlanWithFile(std::shared_ptr<const Plan> a, const QString& nameA,
                                        const QString& b) {
  start(
      [a, nameA, b](QString* error) -> std::shared_ptr<Comparison> {
        auto planB = readPlan(b, error, Checked::Validated);
        return planB ? buildComparison(a, nameA, std::move(planB), b) : nullptr;
      },
      tr("Loading %1\u2026").arg(b));
}

void CompareWindow::compareWithBug(const ZooRequest& injected) {
  start(
      [injected](QString* error) -> std::shared_ptr<Comparison> {
        ZooRequest correct = injected;
        correct.inject.clear();
        try {
          auto pair = generateComparisonFromZoo(injected);
          return buildComparison(std::make_shared<const Plan>(std::move(pair.correct)), describe(correct),
                                 std::make_shared<const Plan>(std::move(pair.injected)), describe(injected));
        } catch (const std::exception& e) {
          *error = QString::fromUtf8(e.what());
          return nullptr;
        }
      },
      tr("Generating %1 with and without its bug\u2026").arg(describe(injected)));
}

void CompareWindow::start(Source source, const QString& busy) {
  const uint64_t generation = ++generation_;
  pending_ = true;
  statusBar()->showMessage(busy);
  summary_->setText(busy);
  struct Built {
    std::shared_ptr<Comparison> comparison;
    QString error;
  };
  runInBackground(
      this,
      [source = std::move(source)] {
        Built b;
        b.comparison = source(&b.error);
        return b;
      },
      [this, generation](Built built) {
        if (generation != generation_) {  // superseded
          destroyInBackground(std::move(built.comparison));
          return;
        }
        pending_ = false;
        if (!built.comparison) {
          summary_->setText(tr("Cannot compare: %1").arg(built.error));
          statusBar()->showMessage(tr("Cannot compare: %1").arg(built.error.section('\n', 0, 0)));
          emit failed(built.error);
          return;
        }
        present(std::move(built.comparison));
      });
}

void CompareWindow::present(std::shared_ptr<Comparison> comparison) {
  viewA_->setModel(nullptr);
  viewB_->setModel(nullptr);
  destroyInBackground(std::move(comparison_));
  comparison_ = std::move(comparison);
  current_ = -1;
  headerA_->setText(tr("First: %1").arg(comparison_->a.name));
  headerB_->setText(tr("Second: %1").arg(comparison_->b.name));
  const PlanDiff& diff = comparison_->diff;

  QSignalBlocker quiet(list_);
  list_->clear();
  int counts[3] = {0, 0, 0};
  QList<QTreeWidgetItem*> items;
  for (size_t i = 0; i < diff.elements.size(); ++i) {
    const PlanElementDiff& d = diff.elements[i];
    ++counts[static_cast<int>(d.change)];
    QString details;
    for (const std::string& line : d.details)
      details += (details.isEmpty() ? "" : "; ") + QString::fromStdString(line);
    auto* item = new QTreeWidgetItem({QString::number(i + 1), changeName(d.change), whereOf(d),
                                      QString::fromStdString(d.name()), details});
    item->setForeground(1, stateColor(diffState(d.change, d.change != Change::Added)).darker(115));
    item->setToolTip(4, QString::fromStdString(describe(d)));
    items.push_back(item);
  }
  for (const std::string& line : diff.plan) {
    auto* item =
        new QTreeWidgetItem({QString(), tr("plan"), QString(), QString(), QString::fromStdString(line)});
    item->setFlags(item->flags() & ~Qt::ItemIsSelectable);
    items.push_back(item);
  }
  list_->addTopLevelItems(items);

  if (diff.identical()) {
    summary_->setText(tr("The plans are identical."));
  } else {
    const size_t n = diff.elements.size();
    QString text = (n == 1 ? tr("1 difference: ") : tr("%1 differences: ").arg(n)) +
                   tr("%1 changed, %2 only in the second plan, %3 only in the first")
                       .arg(counts[static_cast<int>(Change::Changed)])
                       .arg(counts[static_cast<int>(Change::Added)])
                       .arg(counts[static_cast<int>(Change::Removed)]);
    if (!diff.plan.empty()) text += tr("; %n plan-level", nullptr, static_cast<int>(diff.plan.size()));
    summary_->setText(text + tr(". F3 / Shift+F3 step through them."));
  }
  statusBar()->showMessage(summary_->text().section('.', 0, 0));
  parallelShown_ = !diff.elements.empty() && diff.elements.front().rank != kNone;
  graph_->setCurrentIndex(parallelShown_ ? 1 : 0);
  const bool parallel = parallelShown_;
  parallelShown_ = !parallel;  // showGraph sets the models
  showGraph(parallel);
  emit compared();
  if (differenceCount() > 0) stepTo(0);
}

void CompareWindow::showGraph(bool parallel) {
  if (!comparison_ || parallel == parallelShown_) return;
  parallelShown_ = parallel;
  graph_->setCurrentIndex(parallel ? 1 : 0);
  for (auto [view, side] : {std::pair{viewA_, &comparison_->a}, {viewB_, &comparison_->b}}) {
    view->setModel(parallel ? side->parallel : side->logical);
    view->setElementStates(parallel ? side->parallelStates : side->logicalStates);
  }
}

bool CompareWindow::layoutsPending() const {
  return pending_ || viewA_->layoutPending() || viewB_->layoutPending();
}

int CompareWindow::differenceCount() const {
  return comparison_ ? static_cast<int>(comparison_->diff.elements.size()) : 0;
}

QString CompareWindow::summary() const {
  return summary_->text();
}

void CompareWindow::stepTo(int index) {
  if (index < 0 || index >= differenceCount()) return;
  current_ = index;
  const PlanElementDiff& d = comparison_->diff.elements[index];
  {
    QSignalBlocker quiet(list_);
    list_->setCurrentItem(list_->topLevelItem(index));
    list_->scrollToItem(list_->topLevelItem(index));
  }
  showGraph(d.rank != kNone);
  QStringList missing;
  for (auto [view, side, first] :
       {std::tuple{viewA_, &comparison_->a, true}, std::tuple{viewB_, &comparison_->b, false}}) {
    const int e = elementOfDifference(*side, d, first);
    view->setFirstDifference(e);
    if (e >= 0) {
      view->bringIntoView({e}, e);
    } else {
      view->selectElements({}, false);
      missing << side->name;
    }
  }
  QString text =
      tr("%1 of %2: %3").arg(index + 1).arg(differenceCount()).arg(QString::fromStdString(describe(d)));
  if (!missing.isEmpty()) text += tr(" (not in %1)").arg(missing.join(tr(" or ")));
  statusBar()->showMessage(text);
}

void CompareWindow::nextDifference() {
  if (int n = differenceCount(); n > 0) stepTo((current_ + 1) % n);
}

void CompareWindow::previousDifference() {
  if (int n = differenceCount(); n > 0) stepTo((current_ - 1 + n) % n);
}

}  // namespace paraproof::ui

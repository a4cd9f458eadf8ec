#include "ui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QShortcut>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <set>

#include "core/parallel/bugs.h"
#include "core/plan/json_io.h"
#include "ui/background.h"
#include "ui/bug_tour.h"
#include "ui/compare_window.h"
#include "ui/counterexample_panel.h"
#include "ui/failure_report.h"
#include "ui/graph_view.h"
#include "ui/layout_worker.h"
#include "ui/legend_widget.h"
#include "ui/link_overlay.h"
#include "ui/minimap.h"
#include "ui/model/stage_focus.h"
#include "ui/plan_files.h"
#include "ui/properties_panel.h"
#include "ui/search_panel.h"
#include "ui/selection_coordinator.h"
#include "ui/settings_dialog.h"
#include "ui/stage_table.h"
#include "ui/theme.h"
#include "ui/verification_controller.h"
#include "ui/verification_presenter.h"
#include "ui/verification_status.h"
#include "ui/zoo_dialog.h"

// Resources of a static library must be registered explicitly (outside any namespace).
static void initInspectorResources() {
  Q_INIT_RESOURCE(paraproof);
}

namespace paraproof::ui {
namespace {

constexpr int kOverviewBudget = 40;  // visible nodes per view after opening a plan

QWidget* titled(QLabel* header, QWidget* extra, QWidget* body, QWidget* parent) {
  auto* panel = new QWidget(parent);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(0);
  auto* bar = new QWidget(panel);
  bar->setObjectName("viewHeader");
  auto* h = new QHBoxLayout(bar);
  h->setContentsMargins(10, 4, 6, 4);
  h->addWidget(header, 1);
  if (extra) h->addWidget(extra);
  v->addWidget(bar);
  v->addWidget(body, 1);
  return panel;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  initInspectorResources();
  setWindowIcon(QIcon(":/icons/paraproof.svg"));
  setAcceptDrops(true);
  setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);
  worker_ = LayoutWorker::shared();
  builder_ = new HierarchyBuilder(this);
  connect(builder_, &HierarchyBuilder::built, this, &MainWindow::onHierarchyBuilt);
  options_ = loadVerifyOptions();
  status_ = new VerificationStatus(this);
  verification_ = new VerificationPresenter(status_, this);
  stageModel_ = verification_->table();
  buildCentral();
  buildDocks();
  buildActions();
  buildStatusBar();
  renderHeaders();

  connect(verification_, &VerificationPresenter::statesChanged, this,
          [this](const std::vector<StageState>& logical, const std::vector<StageState>& parallel) {
            logicalView_->setElementStates(logical);
            parallelView_->setElementStates(parallel);
          });
  connect(verification_, &VerificationPresenter::runningChanged, this, [this](bool running) {
    runAction_->setEnabled(!running);
    cancelAction_->setEnabled(running);
  });
  connect(verification_, &VerificationPresenter::finished, this, &MainWindow::onFinished);

  resize(1500, 940);
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  updateTitle();
  statusBar()->showMessage(tr("Open a plan with Ctrl+O or drop a plan file on the window"));
}

MainWindow::~MainWindow() {
  delete verification_;  // joins a running verification before the views go away
  verification_ = nullptr;
  delete builder_;  // waits for a build in progress; its result is never delivered
  builder_ = nullptr;
  delete logicalView_;
  delete parallelView_;
  logicalView_ = parallelView_ = nullptr;
}

void MainWindow::buildCentral() {
  logicalView_ = new GraphView(worker_.get(), this);
  parallelView_ = new GraphView(worker_.get(), this);
  logicalView_->setPlaceholder(tr("Open a plan (Ctrl+O) or drop a plan file here"));
  parallelView_->setPlaceholder(tr("Device programs appear here"));
  logicalHeader_ = new QLabel(tr("<b>Logical</b>"), this);
  parallelHeader_ = new QLabel(tr("<b>Parallel</b>"), this);

  auto* choose = new QWidget(this);
  auto* h = new QHBoxLayout(choose);
  h->setContentsMargins(0, 0, 0, 0);
  parallelMode_ = new QComboBox(choose);
  parallelMode_->addItem(tr("All devices"), static_cast<int>(ParallelSelection::Mode::AllDevices));
  parallelMode_->addItem(tr("Pipeline stage"), static_cast<int>(ParallelSelection::Mode::PipelineStage));
  parallelMode_->addItem(tr("One device"), static_cast<int>(ParallelSelection::Mode::Device));
  parallelMode_->setToolTip(tr("Which devices the parallel view shows (data-parallel replicas are folded)"));
  parallelValue_ = new QComboBox(choose);
  parallelValue_->setMinimumContentsLength(8);
  parallelValue_->setVisible(false);
  foldMicroBatches_ = new QCheckBox(tr("fold micro-batches"), choose);
  foldMicroBatches_->setChecked(true);
  foldMicroBatches_->setToolTip(tr("Show the copies of an op for each micro-batch (name#m) as one node"));
  h->addWidget(parallelMode_);
  h->addWidget(parallelValue_);
  h->addWidget(foldMicroBatches_);
  connect(foldMicroBatches_, &QCheckBox::toggled, this, [this] { rebuildParallelModel(); });
  connect(parallelMode_, &QComboBox::currentIndexChanged, this, [this] {
    refreshParallelChoices();
    rebuildParallelModel();
  });
  connect(parallelValue_, &QComboBox::activated, this, [this] { rebuildParallelModel(); });

  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->addWidget(titled(logicalHeader_, nullptr, logicalView_, splitter));
  splitter->addWidget(titled(parallelHeader_, choose, parallelView_, splitter));
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 1);
  splitter->setHandleWidth(3);
  splitter_ = splitter;
  // The splitter sits in a plain host so the link overlay can cover both views without becoming a pane.
  auto* host = new QWidget(this);
  auto* hostLayout = new QVBoxLayout(host);
  hostLayout->setContentsMargins(0, 0, 0, 0);
  hostLayout->addWidget(splitter);
  setCentralWidget(host);
  links_ = new LinkOverlay(host, logicalView_, parallelView_);
  selection_ = std::make_unique<SelectionCoordinator>(logicalView_, parallelView_, links_);
  connect(splitter, &QSplitter::splitterMoved, links_, qOverload<>(&QWidget::update));

  connect(logicalView_, &GraphView::elementsSelected, this, &MainWindow::onLogicalSelection);
  connect(parallelView_, &GraphView::elementsSelected, this, &MainWindow::onParallelSelection);
  for (GraphView* v : {logicalView_, parallelView_}) {
    connect(v, &GraphView::statusMessage, this,
            [this](const QString& m) { statusBar()->showMessage(m, 4000); });
    connect(v, &GraphView::elementsSelected, this, [this, v] { lastActiveView_ = v; });
  }
}

void MainWindow::buildDocks() {
  auto* stageDock = stageDock_ = new QDockWidget(tr("Stages"), this);
  stageDock->setObjectName("stagesDock");
  auto* stagePanel = new QWidget(stageDock);
  auto* v = new QVBoxLayout(stagePanel);
  v->setContentsMargins(4, 4, 4, 4);
  auto* filterRow = new QHBoxLayout;
  stageFilter_ = new QLineEdit(stagePanel);
  stageFilter_->setPlaceholderText(tr("Filter stages by scope, kind, device, note\u2026"));
  stageFilter_->setClearButtonEnabled(true);
  stateFilter_ = new QComboBox(stagePanel);
  stateFilter_->addItem(tr("All states"), -1);
  for (StageState s : {StageState::Failed, StageState::Inconclusive, StageState::Verified,
                       StageState::Running, StageState::Pending})
    stateFilter_->addItem(stateName(s), static_cast<int>(s));
  filterRow->addWidget(stageFilter_, 1);
  filterRow->addWidget(stateFilter_);
  v->addLayout(filterRow);
  stageProxy_ = new StageFilterProxy(this);
  stageProxy_->setSourceModel(stageModel_);
  stageProxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  stageProxy_->setFilterKeyColumn(-1);
  stageProxy_->setSortRole(Qt::UserRole);
  stageTable_ = new QTableView(stagePanel);
  stageTable_->setModel(stageProxy_);
  stageTable_->setSortingEnabled(true);
  stageTable_->sortByColumn(StageTableModel::Id, Qt::AscendingOrder);
  stageTable_->setSelectionBehavior(QAbstractItemView::SelectRows);
  stageTable_->setSelectionMode(QAbstractItemView::SingleSelection);
  stageTable_->setAlternatingRowColors(true);
  stageTable_->verticalHeader()->hide();
  stageTable_->verticalHeader()->setDefaultSectionSize(22);
  stageTable_->horizontalHeader()->setStretchLastSection(true);
  stageTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  for (auto [col, w] : {std::pair{StageTableModel::Id, 56},
                        {StageTableModel::Status, 110},
                        {StageTableModel::Kind, 110},
                        {StageTableModel::Scope, 220},
                        {StageTableModel::Devices, 90},
                        {StageTableModel::Ops, 70},
                        {StageTableModel::Time, 70},
                        {StageTableModel::Engine, 70}})
    stageTable_->setColumnWidth(col, w);
  v->addWidget(stageTable_);
  stageDock->setWidget(stagePanel);
  connect(stageFilter_, &QLineEdit::textChanged, stageProxy_, &QSortFilterProxyModel::setFilterFixedString);
  connect(stateFilter_, &QComboBox::currentIndexChanged, this, [this] {
    int s = stateFilter_->currentData().toInt();
    stageProxy_->setStateFilter(s < 0 ? std::nullopt : std::optional(static_cast<StageState>(s)));
  });
  connect(stageTable_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &MainWindow::onStageRowChanged);

  auto* cexDock = cexDock_ = new QDockWidget(tr("Counterexample"), this);
  cexDock->setObjectName("counterexampleDock");
  cexPanel_ = new CounterexamplePanel(cexDock);
  cexDock->setWidget(cexPanel_);
  propsDock_ = new QDockWidget(tr("Properties"), this);
  propsDock_->setObjectName("propertiesDock");
  propsPanel_ = new PropertiesPanel(propsDock_);
  propsDock_->setWidget(propsPanel_);
  addDockWidget(Qt::BottomDockWidgetArea, stageDock);
  addDockWidget(Qt::BottomDockWidgetArea, cexDock);
  splitDockWidget(stageDock, cexDock, Qt::Horizontal);
  tabifyDockWidget(cexDock, propsDock_);
  searchDock_ = new QDockWidget(tr("Search"), this);
  searchDock_->setObjectName("searchDock");
  searchPanel_ = new SearchPanel(searchDock_);
  searchDock_->setWidget(searchPanel_);
  tabifyDockWidget(propsDock_, searchDock_);
  connect(searchPanel_, &SearchPanel::matchChosen, this,
          [this](int index) { showSearchStep(selection_->goToMatch(static_cast<size_t>(index))); });
  cexDock->raise();
  resizeDocks({stageDock, cexDock}, {820, 640}, Qt::Horizontal);
  resizeDocks({stageDock}, {300}, Qt::Vertical);
}

void MainWindow::buildActions() {
  auto icon = [](const char* name) { return QIcon(QStringLiteral(":/icons/%1.svg").arg(name)); };
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(icon("open"), tr("&Open Plan\u2026"), this, &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  QAction* zoo =
      file->addAction(icon("zoo"), tr("&New Plan from Model Zoo\u2026"), this, &MainWindow::openZooDialog);
  zoo->setShortcut(QKeySequence::New);
  open->setIconText(tr("Open"));
  zoo->setIconText(tr("Model Zoo"));
  savePlanAction_ = file->addAction(tr("&Save Plan As\u2026"), this, &MainWindow::savePlanDialog);
  savePlanAction_->setShortcut(QKeySequence::Save);
  savePlanAction_->setEnabled(false);
  file->addSeparator();
  compareFileAction_ =
      file->addAction(tr("&Compare With Plan\u2026"), this, &MainWindow::compareWithFileDialog);
  compareFileAction_->setToolTip(tr("Open another plan beside this one and step through what differs"));
  compareBugAction_ =
      file->addAction(tr("Compare With &Correct Plan"), this, &MainWindow::compareWithCorrectPlan);
  compareBugAction_->setToolTip(tr("The generated plan without its injected bug beside the plan with it"));
  compareFileAction_->setEnabled(false);
  compareBugAction_->setEnabled(false);
  file->addSeparator();
  QAction* exportViewAction =
      file->addAction(icon("export"), tr("Export &View as PNG/SVG\u2026"), this, &MainWindow::exportView);
  exportViewAction->setShortcut(QKeySequence(tr("Ctrl+E")));
  QAction* exportReportAction =
      file->addAction(tr("Export &Report as JSON\u2026"), this, &MainWindow::exportReport);
  file->addAction(tr("Export &Failure Report (HTML/Markdown)\u2026"), this,
                  &MainWindow::exportFailureReportDialog)
      ->setToolTip(tr("One self-contained file to attach to a bug report: verdict, failing stages, "
                      "counterexamples, the views"));
  exportReportAction->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  auto both = [this](void (GraphView::*f)()) { return [this, f] { (activeView()->*f)(); }; };
  QAction* fit = view->addAction(icon("fit"), tr("&Fit to Window"), this, both(&GraphView::fitAll));
  fit->setShortcut(QKeySequence(tr("Ctrl+0")));
  QAction* zin = view->addAction(icon("zoom-in"), tr("Zoom &In"), this, both(&GraphView::zoomIn));
  zin->setShortcuts({QKeySequence::ZoomIn, QKeySequence(tr("Ctrl+="))});
  QAction* zout = view->addAction(icon("zoom-out"), tr("Zoom &Out"), this, both(&GraphView::zoomOut));
  zout->setShortcut(QKeySequence::ZoomOut);
  view->addSeparator();
  QAction* expand = view->addAction(icon("expand"), tr("&Expand All"), this, both(&GraphView::expandAll));
  expand->setShortcut(QKeySequence(tr("Ctrl+Shift+Down")));
  QAction* collapse =
      view->addAction(icon("collapse"), tr("&Collapse All"), this, both(&GraphView::collapseAll));
  collapse->setShortcut(QKeySequence(tr("Ctrl+Shift+Up")));
  view->addSeparator();
  QAction* find = view->addAction(icon("search"), tr("&Find\u2026"), this, [this] {
    searchBox_->setFocus();
    searchBox_->selectAll();
  });
  find->setShortcut(QKeySequence::Find);
  QAction* findNext = view->addAction(tr("Find &Next"), this, [this] { search(searchBox_->text()); });
  findNext->setShortcut(QKeySequence::FindNext);
  QAction* findPrevious =
      view->addAction(tr("Find &Previous"), this, [this] { search(searchBox_->text(), true); });
  findPrevious->setShortcut(QKeySequence::FindPrevious);
  QAction* minimap = view->addAction(tr("&Minimap"));
  minimap->setCheckable(true);
  minimap->setChecked(QSettings().value("view/minimap", true).toBool());
  minimap->setToolTip(tr("The whole drawing in the corner of each view, the part in view framed"));
  auto showMinimaps = [this](bool on) {
    for (GraphView* v : {logicalView_, parallelView_})
      v->minimap()->setOn(on);
  };
  showMinimaps(minimap->isChecked());
  connect(minimap, &QAction::toggled, this, [showMinimaps](bool on) {
    QSettings().setValue("view/minimap", on);
    showMinimaps(on);
  });
  view->addSeparator();
  QMenu* themeMenu = view->addMenu(tr("&Theme"));
  themeMenu->setToolTip(tr("System follows the desktop's palette; Light and Dark force one"));
  auto* themes = new QActionGroup(this);
  const ThemeChoice saved = savedThemeChoice();
  for (ThemeChoice c : {ThemeChoice::System, ThemeChoice::Light, ThemeChoice::Dark}) {
    QAction* a = themeMenu->addAction(themeChoiceName(c), this, [this, c] { setTheme(c); });
    a->setCheckable(true);
    a->setChecked(c == saved);
    a->setData(static_cast<int>(c));
    themes->addAction(a);
    themeActions_.push_back(a);
  }
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    view->addAction(dock->toggleViewAction());

  QMenu* verifyMenu = menuBar()->addMenu(tr("&Verify"));
  runAction_ =
      verifyMenu->addAction(icon("run"), tr("&Run Verification"), this, &MainWindow::runVerification);
  runAction_->setShortcuts({QKeySequence(tr("F5")), QKeySequence(tr("Ctrl+R"))});
  runAction_->setEnabled(false);
  cancelAction_ = verifyMenu->addAction(icon("stop"), tr("&Cancel"), this, &MainWindow::cancelVerification);
  cancelAction_->setShortcut(QKeySequence(tr("Shift+F5")));
  cancelAction_->setEnabled(false);
  verifyMenu->addSeparator();
  QAction* nextFailure = verifyMenu->addAction(tr("Go to First &Failure"), this, [this] {
    if (int i = firstFailingStage(); i >= 0) selectStage(i);
  });
  nextFailure->setShortcut(QKeySequence(tr("Ctrl+J")));
  verifyMenu->addSeparator();
  verifyMenu->addAction(icon("settings"), tr("&Settings\u2026"), this, &MainWindow::showSettings);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* tour = help->addAction(tr("Bug &Tour\u2026"), this, [this] { openTour(); });
  tour->setToolTip(
      tr("A catalog bug step by step: the correct plan, the bug, where it fails, what it changed"));
  help->addSeparator();
  help->addAction(tr("&About ParaProof Inspector"), this, &MainWindow::showAbout);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName("mainToolbar");
  bar->setMovable(false);
  bar->setIconSize(QSize(20, 20));
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addAction(open);
  bar->addAction(zoo);
  bar->addSeparator();
  runAction_->setIconText(tr("Run"));
  bar->addAction(runAction_);
  cancelAction_->setPriority(QAction::LowPriority);
  bar->addAction(cancelAction_);
  bar->addSeparator();
  for (QAction* a : {fit, zin, zout, expand, collapse}) {
    bar->addAction(a);
  }
  for (QAction* a : {fit, zin, zout, expand, collapse})
    a->setPriority(QAction::LowPriority);
  bar->addSeparator();
  searchBox_ = new QLineEdit(bar);
  searchBox_->setPlaceholderText(tr("Find op, tensor or scope (Ctrl+F)"));
  searchBox_->setClearButtonEnabled(true);
  searchBox_->addAction(icon("search"), QLineEdit::LeadingPosition);
  searchBox_->setFixedWidth(260);
  connect(searchBox_, &QLineEdit::returnPressed, this, [this] { search(searchBox_->text()); });
  bar->addWidget(searchBox_);
  auto* spacer = new QWidget(bar);
  spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  bar->addWidget(spacer);
  legend_ = new LegendWidget(bar);
  bar->addWidget(legend_);
}

// Below kCompactWidth x kCompactHeight the window keeps the graphs large: the bottom docks share one tab
// group and a quarter of the height, the legend shows its chips only, the search box and progress bar narrow.
void MainWindow::adaptToSize() {
  constexpr int kCompactWidth = 1280, kCompactHeight = 760;
  const bool compact = width() < kCompactWidth || height() < kCompactHeight;
  if (!legend_ || compact == compact_) return;
  compact_ = compact;
  legend_->setCompact(compact);
  searchBox_->setFixedWidth(compact ? 170 : 260);
  status_->setCompact(compact);
  if (compact) {
    wideLayout_ = saveState();  // the arrangement to go back to (the user's own, if they moved docks)
    tabifyDockWidget(stageDock_, cexDock_);
    tabifyDockWidget(stageDock_, propsDock_);
    tabifyDockWidget(stageDock_, searchDock_);
    stageDock_->raise();
    resizeDocks({stageDock_}, {std::max(120, height() / 4)}, Qt::Vertical);
  } else if (!wideLayout_.isEmpty()) {
    restoreState(wideLayout_);  // a dock tabbed with another cannot be split from it again
  }
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  adaptToSize();
}

void MainWindow::buildStatusBar() {
  connect(status_, &VerificationStatus::cancelRequested, this, &MainWindow::cancelVerification);
  statusBar()->addPermanentWidget(status_);
}

bool MainWindow::openPlanFile(const QString& path, QString* error) {
  QString text;
  std::shared_ptr<Plan> p = readPlan(path, &text);
  if (!p) {
    if (error) *error = text;
    statusBar()->showMessage(tr("Could not open %1").arg(path));
    return false;
  }
  openPlan(std::move(*p), path);
  return true;
}

void MainWindow::openPlanFileInBackground(const QString& path, bool dialogOnError) {
  const bool script = isScript(path);
  openInBackground(
      [path](QString* error) { return readPlan(path, error); }, path,
      script ? tr("Importing %1 with PyTorch\u2026").arg(path) : tr("Loading %1\u2026").arg(path),
      script ? tr("Cannot import script") : tr("Cannot open plan"), dialogOnError);
}

void MainWindow::generatePlanInBackground(const ZooRequest& request, bool dialogOnError) {
  zooRequest_ = request;  // its plan is named describe(request): compare mode finds it by that name
  openInBackground(
      [request](QString* error) -> std::shared_ptr<Plan> {
        try {
          return std::make_shared<Plan>(generateFromZoo(request));
        } catch (const std::exception& e) {
          *error = QString::fromUtf8(e.what());
          return nullptr;
        }
      },
      describe(request), tr("Generating %1\u2026").arg(describe(request)), tr("Cannot generate plan"),
      dialogOnError);
}

void MainWindow::openInBackground(PlanSource load, const QString& source, const QString& busy,
                                  const QString& failure, bool dialogOnError) {
  const uint64_t generation = ++loadGeneration_;
  loading_ = true;
  statusBar()->showMessage(busy);
  status_->busy(true);  // until the plan is there
  if (!plan_) {
    logicalView_->setPlaceholder(busy);
    parallelView_->setPlaceholder(busy);
  }
  struct Loaded {
    std::shared_ptr<Plan> plan;
    QString error;
  };
  runInBackground(
      this,
      [load = std::move(load)] {
        Loaded l;
        l.plan = load(&l.error);
        return l;
      },
      [this, generation, source, failure, dialogOnError](Loaded loaded) {
        if (generation != loadGeneration_) {  // another plan was opened meanwhile
          destroyInBackground(std::move(loaded.plan));
          return;
        }
        loading_ = false;
        if (!loaded.plan) {
          status_->busy(false);
          if (!plan_) {
            logicalView_->setPlaceholder(failure);
            parallelView_->setPlaceholder(QString());
          }
          // The status names the first error (for a script: its FILE:LINE); the dialog has them all.
          statusBar()->showMessage(tr("%1: %2").arg(failure, loaded.error.section('\n', 0, 0)));
          emit openFailed(loaded.error);
          if (dialogOnError) QMessageBox::warning(this, failure, loaded.error);
          return;
        }
        openPlan(std::move(*loaded.plan), source);
        destroyInBackground(std::move(loaded.plan));  // the moved-from shell
      });
}

void MainWindow::openPlan(Plan plan, const QString& source) {
  ++loadGeneration_;  // a background load still running must not replace this plan
  loading_ = false;
  planPath_ = source;
  std::shared_ptr<const Plan> previous = std::move(plan_);
  plan_ = std::make_shared<const Plan>(std::move(plan));
  savePlanAction_->setEnabled(true);
  updateCompareActions();
  StageMap oldStages = verification_->reset();
  cexPanel_->showNothing(tr("Run verification (F5) to check every stage."));
  propsPanel_->clear();
  // Nothing of the previous plan stays: element numbers of its models mean nothing now. Freeing them (and the
  // plan) is left to a pool thread; the views show a placeholder until the new hierarchies arrive.
  selection_->reset();
  searchPanel_->setResults(QString(), {});
  logicalView_->setModel(nullptr);
  parallelView_->setModel(nullptr);
  destroyInBackground(std::move(previous), std::move(logicalModel_), std::move(parallelModel_),
                      std::move(logicalStructure_),
                      std::make_shared<LineageIndex>(selection_->setLineage(LineageIndex())),
                      std::make_shared<StageMap>(std::move(oldStages)));
  logicalView_->setPlaceholder(
      tr("Building the hierarchy of %1 logical ops\u2026").arg(plan_->logical.ops.size()));
  parallelView_->setPlaceholder(tr("Building the hierarchy of %1 devices\u2026").arg(plan_->devices.size()));
  parallelHeader_->setText(tr("<b>Parallel</b>"));
  refreshParallelChoices();
  requestHierarchy(true);
  runAction_->setEnabled(true);
  updateTitle();
  statusBar()->showMessage(tr("Building the hierarchy of %1\u2026").arg(source));
  emit planOpened();
}

ParallelSelection MainWindow::currentSelection() const {
  ParallelSelection sel;
  sel.mode = static_cast<ParallelSelection::Mode>(parallelMode_->currentData().toInt());
  sel.value = parallelValue_->count() ? parallelValue_->currentData().toInt() : 0;
  sel.foldMicroBatches = foldMicroBatches_->isChecked();
  return sel;
}

void MainWindow::requestHierarchy(bool withLogical) {
  HierarchyRequest r;
  r.plan = plan_;
  r.selection = currentSelection();
  if (!withLogical) r.logicalStructure = logicalStructure_;  // null while the first build runs: built again
  r.stages = verification_->stages();
  r.stagesVersion = verification_->stagesVersion();
  r.overviewBudget = kOverviewBudget;
  builder_->request(std::move(r));
}

void MainWindow::onHierarchyBuilt(std::shared_ptr<HierarchyBuild> build) {
  if (build->plan != plan_) return;
  if (!build->error.empty()) {
    const QString text = tr("Cannot build the hierarchy: %1").arg(QString::fromStdString(build->error));
    logicalView_->setPlaceholder(text);
    statusBar()->showMessage(text);
    return;
  }
  // The previous models, lineage and stage map go to a pool thread; the views take the new ones.
  std::shared_ptr<GraphModel> oldLogical;
  if (build->logical) {
    oldLogical = std::move(logicalModel_);
    logicalModel_ = build->logical;
    logicalStructure_ = build->logicalStructure;
    logicalView_->setModel(logicalModel_);
  }
  std::shared_ptr<GraphModel> oldParallel = std::move(parallelModel_);
  parallelModel_ = build->parallel;
  parallelView_->setModel(parallelModel_);
  auto oldLineage = std::make_shared<LineageIndex>(selection_->setLineage(std::move(build->lineage)));
  auto oldStages = std::make_shared<StageMap>(verification_->setModels(
      *logicalModel_, *parallelModel_, std::move(build->stageMap), build->stagesVersion));
  const bool opened = build->logical != nullptr;
  const double ms = build->milliseconds;
  destroyInBackground(std::move(oldLogical), std::move(oldParallel), std::move(oldLineage),
                      std::move(oldStages), std::move(build));
  int shown = static_cast<int>(parallelModel_->shownDevices().size());
  // Devices of the plan, implied replicas of a compact plan included; each shown group counts the replicas
  // it stands for.
  const int64_t covered = parallelModel_->devicesCovered();
  int64_t total = static_cast<int64_t>(plan_->devices.size());
  if (plan_->replicas) {
    total = 1;
    for (int64_t extent : plan_->mesh.shape)
      total *= extent;
  }
  parallelDetail_ = tr("%1 of %2 devices shown%3")
                        .arg(covered)
                        .arg(total)
                        .arg(shown < covered ? tr(", %1 groups of replicas").arg(shown) : QString());
  renderHeaders();
  // A stage selected while the hierarchy was being built is shown now.
  if (stageTable_->selectionModel()->hasSelection()) onStageRowChanged();
  if (opened)
    statusBar()->showMessage(tr("Opened %1: %2 logical ops, %3 devices (hierarchy built in %4 s)")
                                 .arg(planPath_)
                                 .arg(plan_->logical.ops.size())
                                 .arg(plan_->devices.size())
                                 .arg(ms / 1000, 0, 'f', 2),
                             5000);
  emit hierarchyBuilt();
}

void MainWindow::refreshParallelChoices() {
  parallelValue_->clear();
  if (!plan_) return;
  auto mode = static_cast<ParallelSelection::Mode>(parallelMode_->currentData().toInt());
  if (mode == ParallelSelection::Mode::PipelineStage) {
    std::set<int64_t> stages;
    int pp = -1;
    for (size_t a = 0; a < plan_->mesh.axes.size(); ++a)
      if (plan_->mesh.axes[a] == "pp") pp = static_cast<int>(a);
    for (const Device& d : plan_->devices)
      if (pp >= 0 && d.coord.size() > static_cast<size_t>(pp)) stages.insert(d.coord[pp]);
    if (stages.empty()) stages.insert(0);
    for (int64_t s : stages)
      parallelValue_->addItem(tr("pp %1").arg(s), static_cast<int>(s));
  } else if (mode == ParallelSelection::Mode::Device) {
    for (const Device& d : plan_->devices)
      parallelValue_->addItem(tr("rank %1").arg(d.rank), d.rank);
  }
  parallelValue_->setVisible(parallelValue_->count() > 0);
}

void MainWindow::setParallelSelection(ParallelSelection selection) {
  const QSignalBlocker block(foldMicroBatches_);
  foldMicroBatches_->setChecked(selection.foldMicroBatches);
  parallelMode_->setCurrentIndex(parallelMode_->findData(static_cast<int>(selection.mode)));
  refreshParallelChoices();
  int i = parallelValue_->findData(selection.value);
  if (i >= 0) parallelValue_->setCurrentIndex(i);
  rebuildParallelModel();
}

void MainWindow::rebuildParallelModel() {
  if (!plan_) return;
  // The current parallel view stays until the new hierarchy arrives.
  requestHierarchy(false);
  statusBar()->showMessage(tr("Building the device hierarchy\u2026"), 3000);
}

void MainWindow::updateTitle() {
  QString name = plan_ ? QString::fromStdString(plan_->name) : QString();
  setWindowTitle(plan_ ? tr("%1 \u2014 ParaProof Inspector").arg(name.isEmpty() ? planPath_ : name)
                       : tr("ParaProof Inspector"));
  if (plan_) {
    QStringList mesh;
    for (size_t a = 0; a < plan_->mesh.axes.size() && a < plan_->mesh.shape.size(); ++a)
      mesh << QStringLiteral("%1=%2")
                  .arg(QString::fromStdString(plan_->mesh.axes[a]))
                  .arg(plan_->mesh.shape[a]);
    logicalDetail_ = tr("%1 &middot; %2 ops &middot; mesh %3")
                         .arg(name.toHtmlEscaped())
                         .arg(plan_->logical.ops.size())
                         .arg(mesh.join(' '));
    renderHeaders();
  }
}

void MainWindow::renderHeaders() {
  const Theme& t = theme();
  for (QWidget* bar : findChildren<QWidget*>(QStringLiteral("viewHeader")))
    bar->setStyleSheet(QStringLiteral("#viewHeader { background: %1; border-bottom: 1px solid %2; }")
                           .arg(t.header.name(), t.headerBorder.name()));
  // The header's own text colour follows the palette; only the detail is dimmed.
  logicalHeader_->setText(tr("<b>Logical</b>") +
                          (logicalDetail_.isEmpty() ? QString() : " &nbsp;" + t.dim(logicalDetail_)));
  parallelHeader_->setText(tr("<b>Parallel</b>") +
                           (parallelDetail_.isEmpty() ? QString() : " &nbsp;" + t.dim(parallelDetail_)));
}

void MainWindow::changeEvent(QEvent* event) {
  QMainWindow::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && logicalHeader_) renderHeaders();
}

void MainWindow::setTheme(ThemeChoice choice) {
  applyTheme(choice);
  saveThemeChoice(choice);
  for (QAction* a : themeActions_)
    a->setChecked(a->data().toInt() == static_cast<int>(choice));
}

void MainWindow::runVerification() {
  if (!plan_) return;
  cexPanel_->showNothing(tr("Verifying\u2026"));
  verification_->start(plan_, options_);
  statusBar()->showMessage(tr("Verification started with %1 workers").arg(options_.jobs), 3000);
}

void MainWindow::cancelVerification() {
  if (!verification_->isRunning()) return;
  verification_->cancel();
  cancelAction_->setEnabled(false);
  statusBar()->showMessage(tr("Cancelling\u2026"));
}

bool MainWindow::isVerifying() const {
  return verification_->isRunning();
}

int MainWindow::firstFailingStage() const {
  return verification_->firstFailingStage();
}

VerificationController* MainWindow::controller() const {
  return verification_->controller();
}

void MainWindow::onFinished(const verify::Report& report, const QString& message) {
  statusBar()->showMessage(message);
  if (report.verdict == verify::Verdict::Invalid) {
    QString errors;
    for (const auto& d : report.errors)
      errors += QString::fromStdString(d.str()).toHtmlEscaped() + "<br>";
    cexPanel_->showHtml(tr("<h3 class='err'>The plan is invalid</h3><p>%1</p>").arg(errors));
  }
  if (int first = firstFailingStage(); first >= 0)
    selectStage(first);
  else if (report.verdict != verify::Verdict::Invalid)
    cexPanel_->showNothing(verification_->outcomeText(report));
  emit verificationFinished(report);
}

void MainWindow::selectStage(int stageIndex) {
  if (stageIndex < 0 || stageIndex >= stageModel_->stageCount()) return;
  QModelIndex proxyIndex = stageProxy_->mapFromSource(stageModel_->index(stageIndex, 0));
  if (proxyIndex.isValid()) {
    // Selecting the row shows the stage through onStageRowChanged.
    stageTable_->selectionModel()->select(proxyIndex,
                                          QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    stageTable_->scrollTo(proxyIndex);
  }
  showStage(stageIndex);  // a filtered-out row is shown directly
}

void MainWindow::onStageRowChanged() {
  QModelIndexList rows = stageTable_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return;
  showStage(rows.first().data(StageTableModel::kStageIndexRole).toInt());
}

// Both views select the stage's ops and take you to the op the failure names (its groups opened, centred at
// a readable zoom); the counterexample and properties docks show it.
void MainWindow::showStage(int stage) {
  const verify::StageInfo& info = stageModel_->stage(stage);
  const std::optional<verify::StageResult> result = stageModel_->result(stage);
  const StageFocus focus = plan_ ? stageFocus(*plan_, info, result) : StageFocus();
  const StageMap& map = verification_->stageMap();
  if (stage < map.stageCount() && logicalModel_ && parallelModel_) {
    const int logicalFocus =
        focus.logicalOp.empty() ? -1 : logicalModel_->elementOfOp(kNone, focus.logicalOp);
    const int parallelFocus =
        focus.device == kNone ? -1 : parallelModel_->elementOfOp(focus.device, focus.parallelOp);
    selection_->showStage(map.logicalElements(stage), logicalFocus, map.parallelElements(stage),
                          parallelFocus, focus.logicalDiffers, focus.parallelDiffers);
  }
  cexPanel_->showStage(info, result, bugNote());
  if (!focus.parallelOp.empty()) showProperties(focus.parallelOp, false);
}

void MainWindow::showProperties(const std::string& opId, bool raise) {
  if (!plan_) return;
  propsPanel_->showOp(*plan_, opId);
  if (raise) propsDock_->raise();
}

void MainWindow::onLogicalSelection(const std::vector<int>& elements) {
  const size_t counterparts = selection_->linkFrom(logicalView_, elements);
  if (elements.size() == 1 && logicalModel_->element(elements[0]).kind == Element::Kind::Op)
    showProperties(plan_->logical.ops[static_cast<size_t>(logicalModel_->element(elements[0]).index)].id,
                   true);
  if (!elements.empty())
    statusBar()->showMessage(
        tr("%1 selected: %2 parallel counterparts")
            .arg(elements.size() == 1 ? QString::fromStdString(logicalModel_->elementName(elements[0]))
                                      : tr("%1 nodes").arg(elements.size()))
            .arg(counterparts),
        5000);
}

void MainWindow::onParallelSelection(const std::vector<int>& elements) {
  const size_t origins = selection_->linkFrom(parallelView_, elements);
  if (elements.size() == 1 && parallelModel_->element(elements[0]).kind == Element::Kind::Op) {
    const Element& e = parallelModel_->element(elements[0]);
    showProperties(plan_->devices[static_cast<size_t>(e.device)].graph.ops[static_cast<size_t>(e.index)].id,
                   true);
  }
  if (!elements.empty())
    statusBar()->showMessage(
        tr("%1 selected: %2 logical origins")
            .arg(elements.size() == 1 ? QString::fromStdString(parallelModel_->elementName(elements[0]))
                                      : tr("%1 nodes").arg(elements.size()))
            .arg(origins),
        5000);
}

bool MainWindow::search(const QString& text, bool backwards) {
  if (!logicalModel_ || !parallelModel_ || text.trimmed().isEmpty()) return false;
  if (searchBox_->text() != text) searchBox_->setText(text);  // F3 steps on from here
  const SelectionCoordinator::SearchStep step = selection_->search(text, backwards);
  if (step.fresh || !step.view) {
    std::vector<SearchPanel::Match> matches;
    matches.reserve(selection_->searchHits().size());
    for (auto [view, node] : selection_->searchHits()) {
      const GraphModel& m = *view->model();
      QStringList path;
      for (int p = m.node(node).parent; p > m.root(); p = m.node(p).parent)
        path.push_front(QString::fromStdString(m.node(p).label));
      matches.push_back({QString::fromStdString(m.node(node).label),
                         (view == logicalView_ ? tr("logical") : tr("parallel")) +
                             (path.isEmpty() ? QString() : ": " + path.join(" \u203a "))});
    }
    searchPanel_->setResults(text, matches);
    searchDock_->show();
    searchDock_->raise();
  }
  if (!step.view) {
    statusBar()->showMessage(tr("No op, tensor or scope matches \u201c%1\u201d").arg(text), 4000);
    return false;
  }
  showSearchStep(step);
  return true;
}

void MainWindow::showSearchStep(const SelectionCoordinator::SearchStep& step) {
  if (!step.view) return;
  lastActiveView_ = step.view;
  searchPanel_->setCurrent(static_cast<int>(step.match) - 1);
  statusBar()->showMessage(tr("Match %1 of %2: %3 (%4)")
                               .arg(step.match)
                               .arg(step.matches)
                               .arg(QString::fromStdString(step.view->model()->node(step.node).label),
                                    step.view == logicalView_ ? tr("logical") : tr("parallel")),
                           5000);
}

bool MainWindow::hierarchyPending() const {
  return loading_ || builder_->pending();
}

bool MainWindow::layoutsPending() const {
  return hierarchyPending() || logicalView_->layoutPending() || parallelView_->layoutPending();
}

GraphView* MainWindow::activeView() const {
  if (parallelView_->hasFocus()) return parallelView_;
  if (logicalView_->hasFocus()) return logicalView_;
  return lastActiveView_ ? lastActiveView_ : logicalView_;
}

QString MainWindow::bugNote() const {
  return plan_ ? QString::fromStdString(parallel::injectedBugNote(plan_->metadata)) : QString();
}

void MainWindow::openDialog() {
  QSettings s;
  QString path =
      QFileDialog::getOpenFileName(this, tr("Open Plan"), s.value("files/lastDir").toString(),
                                   tr("Plans and PyTorch scripts (*.json *.json.gz *.py);;ParaProof plans "
                                      "(*.json *.json.gz);;PyTorch scripts (*.py);;All files (*)"));
  if (path.isEmpty()) return;
  s.setValue("files/lastDir", QFileInfo(path).absolutePath());
  openPlanFileInBackground(path);
}

void MainWindow::openZooDialog() {
  ZooDialog dialog(this);
  if (dialog.exec() != QDialog::Accepted) return;
  if (std::optional<Plan> plan = dialog.takePlan()) {
    openPlan(std::move(*plan), describe(dialog.request()));
    zooRequest_ = dialog.request();
    if (dialog.verifyAfterGenerating()) runVerification();
  }
  updateCompareActions();
}

void MainWindow::updateCompareActions() {
  compareFileAction_->setEnabled(plan_ != nullptr);
  compareBugAction_->setEnabled(plan_ && zooRequest_ && !zooRequest_->inject.isEmpty() &&
                                planPath_ == describe(*zooRequest_));
}

CompareWindow* MainWindow::newCompareWindow() {
  auto* w = new CompareWindow;
  w->setAttribute(Qt::WA_DeleteOnClose);
  w->show();
  return w;
}

TourPanel* MainWindow::openTour() {
  if (!tourDock_) {
    tourDock_ = new QDockWidget(tr("Bug Tour"), this);
    tourDock_->setObjectName("tourDock");
    tourDock_->setWidget(new TourPanel(this, tourDock_));
    addDockWidget(Qt::RightDockWidgetArea, tourDock_);
  }
  tourDock_->show();
  tourDock_->raise();
  return static_cast<TourPanel*>(tourDock_->widget());
}

void MainWindow::compareWithFileDialog() {
  if (!plan_) return;
  QSettings s;
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Compare With Plan"), s.value("files/lastDir").toString(),
                                   tr("ParaProof plans (*.json *.json.gz);;All files (*)"));
  if (path.isEmpty()) return;
  s.setValue("files/lastDir", QFileInfo(path).absolutePath());
  newCompareWindow()->comparePlanWithFile(plan_, planPath_, path);
}

void MainWindow::compareWithCorrectPlan() {
  if (zooRequest_ && !zooRequest_->inject.isEmpty()) newCompareWindow()->compareWithBug(*zooRequest_);
}

void MainWindow::savePlanDialog() {
  if (!plan_) return;
  QSettings s;
  const QString suggested =
      QDir(s.value("files/lastDir").toString())
          .filePath(QString::fromStdString(plan_->name.empty() ? std::string("plan") : plan_->name) +
                    ".json");
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save Plan"), suggested,
                                   tr("ParaProof plans (*.json);;Compressed ParaProof plans (*.json.gz)"));
  if (path.isEmpty()) return;
  s.setValue("files/lastDir", QFileInfo(path).absolutePath());
  savePlanInBackground(path);
}

bool MainWindow::savePlanInBackground(const QString& path, bool dialogOnError) {
  if (!plan_) return false;
  statusBar()->showMessage(tr("Saving the plan to %1\u2026").arg(path));
  // The plan is shared and immutable: the pool thread holds it even if another plan is opened meanwhile.
  runInBackground(
      this,
      [plan = plan_, file = path.toStdString()] {
        try {
          savePlan(*plan, file);
          return QString();
        } catch (const std::exception& e) {
          return QString::fromUtf8(e.what());
        }
      },
      [this, path, dialogOnError](const QString& error) {
        statusBar()->showMessage(
            error.isEmpty() ? tr("Saved the plan to %1").arg(path) : tr("Save failed: %1").arg(error), 5000);
        emit planSaved(path, error);
        if (!error.isEmpty() && dialogOnError) QMessageBox::warning(this, tr("Save failed"), error);
      });
  return true;
}

void MainWindow::exportView() {
  GraphView* view = activeView();
  QString path = QFileDialog::getSaveFileName(this, tr("Export View"), QString(),
                                              tr("PNG image (*.png);;SVG drawing (*.svg)"));
  if (path.isEmpty()) return;
  QSaveFile file(path.endsWith(".svg", Qt::CaseInsensitive) || path.endsWith(".png", Qt::CaseInsensitive)
                     ? path
                     : path + ".png");
  const bool svg = file.fileName().endsWith(".svg", Qt::CaseInsensitive);
  const bool ok =
      file.open(QIODevice::WriteOnly) &&
      (svg ? file.write(view->renderSvg(windowTitle())) >= 0 : view->renderImage().save(&file, "PNG")) &&
      file.commit();
  if (!ok) {
    QMessageBox::warning(this, tr("Export failed"), tr("Could not write %1").arg(file.fileName()));
    return;
  }
  statusBar()->showMessage(tr("Exported view to %1").arg(path), 5000);
}

bool MainWindow::exportFailureReport(const QString& path, QString* error) {
  if (!verification_->hasReport() || !plan_) {
    if (error) *error = tr("run verification first (F5)");
    return false;
  }
  FailureReport r;
  r.report = &verification_->lastReport();
  r.planName = QString::fromStdString(plan_->name.empty() ? std::string("plan") : plan_->name);
  r.planSource = planPath_;
  r.bugNote = bugNote();
  const bool markdown =
      path.endsWith(".md", Qt::CaseInsensitive) || path.endsWith(".markdown", Qt::CaseInsensitive);
  if (markdown) {
    r.logicalImage = logicalView_->renderImage(2000);
    r.parallelImage = parallelView_->renderImage(2000);
  } else {
    r.logicalSvg = logicalView_->renderSvg(tr("Logical"));
    r.parallelSvg = parallelView_->renderSvg(tr("Parallel"));
  }
  return writeFailureReport(path, r, error);
}

void MainWindow::exportFailureReportDialog() {
  if (!verification_->hasReport()) {
    QMessageBox::information(this, tr("No report"), tr("Run verification first (F5)."));
    return;
  }
  const QString path = QFileDialog::getSaveFileName(this, tr("Export Failure Report"), QString(),
                                                    tr("HTML page (*.html);;Markdown (*.md)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportFailureReport(path, &error)) {
    QMessageBox::warning(this, tr("Export failed"), error);
    return;
  }
  statusBar()->showMessage(tr("Wrote the failure report to %1").arg(path), 5000);
}

void MainWindow::exportReport() {
  if (!verification_->hasReport()) {
    QMessageBox::information(this, tr("No report"), tr("Run verification first (F5)."));
    return;
  }
  QString path = QFileDialog::getSaveFileName(this, tr("Export Report"), QString(), tr("JSON (*.json)"));
  if (path.isEmpty()) return;
  try {
    verify::saveReportJson(verification_->lastReport(), path.toStdString());
    statusBar()->showMessage(tr("Saved report to %1").arg(path), 5000);
  } catch (const std::exception& e) {
    QMessageBox::warning(this, tr("Export failed"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::showSettings() {
  SettingsDialog dialog(options_, this);
  if (dialog.exec() != QDialog::Accepted) return;
  options_ = dialog.options();
  saveVerifyOptions(options_);
  statusBar()->showMessage(
      tr("Settings saved: %1 workers, %2 s per stage").arg(options_.jobs).arg(options_.timeoutSeconds), 4000);
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, tr("About ParaProof Inspector"),
      tr("<h3>ParaProof Inspector %1</h3>"
         "<p>Proves that a distributed training plan computes what its single-device model computes, "
         "stage by stage, and shows where and why it does not.</p>"
         "<p>Left: the logical model. Right: the device programs. Select a node to see its counterparts; "
         "double-click a group to expand or collapse it.</p>"
         "<p>Shortcuts: Ctrl+O open, F5 run, Shift+F5 cancel, Ctrl+F find, F3 find next, Ctrl+J first "
         "failure, "
         "Ctrl+0 fit, Ctrl+&plusmn; zoom.</p>"
         "<p>Built with Qt %2, Z3 and Graphviz.</p>")
          .arg(QStringLiteral(PARAPROOF_VERSION_STRING), QString::fromLatin1(qVersion())));
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (splitSized_) return;
  splitSized_ = true;  // equal halves on first show, unless a saved layout said otherwise
  const int half = std::max(200, splitter_->width() / 2);
  splitter_->setSizes({half, half});
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  // A compact window saves the arrangement it restores when it grows (the docks it tabbed for small sizes).
  s.setValue("window/state", compact_ && !wideLayout_.isEmpty() ? wideLayout_ : saveState());
  if (verification_->isRunning()) verification_->cancel();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) {
      openPlanFileInBackground(url.toLocalFile());
      return;
    }
}

}  // namespace paraproof::ui

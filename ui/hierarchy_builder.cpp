#include "ui/hierarchy_builder.h"

#include <QElapsedTimer>
#include <QMetaObject>

namespace paraproof::ui {

HierarchyBuilder::HierarchyBuilder(QObject* parent) : QObject(parent) {
  pool_.setMaxThreadCount(1);
  pool_.setObjectName("hierarchy builder");
}

HierarchyBuilder::~HierarchyBuilder() {
  cancel();
  pool_.waitForDone();  // the worker posts to `this`: it must be done before we go
}

uint64_t HierarchyBuilder::request(HierarchyRequest request) {
  const uint64_t generation = ++generation_;
  newest_ = generation;
  {
    std::lock_guard lock(mutex_);
    latest_.emplace(generation, std::move(request));
  }
  pool_.start([this] { runLatest(); });
  return generation;
}

void HierarchyBuilder::cancel() {
  {
    std::lock_guard lock(mutex_);
    latest_.reset();
  }
  delivered_ = ++generation_;
  newest_ = generation_;
}

void HierarchyBuilder::runLatest() {
  std::optional<std::pair<uint64_t, HierarchyRequest>> job;
  {
    std::lock_guard lock(mutex_);
    job.swap(latest_);
  }
  if (!job) return;  // a later task already took it, or it was cancelled
  std::shared_ptr<HierarchyBuild> result = build(job->second);
  result->generation = job->first;
  if (result->generation != newest_.load()) return;  // superseded meanwhile: freed here, off the UI thread
  QMetaObject::invokeMethod(
      this, [this, result] { deliver(result); }, Qt::QueuedConnection);
}

void HierarchyBuilder::deliver(std::shared_ptr<HierarchyBuild> build) {
  if (build->generation != generation_) {  // superseded after the worker's check
    destroyInBackground(std::move(build));
    return;
  }
  delivered_ = build->generation;
  emit built(std::move(build));
}

std::shared_ptr<HierarchyBuild> HierarchyBuilder::build(const HierarchyRequest& r) {
  auto out = std::make_shared<HierarchyBuild>();
  QElapsedTimer clock;
  clock.start();
  out->plan = r.plan;
  out->selection = r.selection;
  out->stagesVersion = r.stagesVersion;
  try {
    out->logicalStructure = r.logicalStructure;
    if (!out->logicalStructure) {
      auto logical = std::make_shared<GraphModel>(GraphModel::logical(*r.plan));
      out->logical = std::make_shared<GraphModel>(*logical);  // the UI's copy, with its own collapse state
      out->logical->autoExpand(r.overviewBudget);
      out->logicalStructure = std::move(logical);
    }
    out->parallel = std::make_shared<GraphModel>(GraphModel::parallel(*r.plan, r.selection));
    out->parallel->autoExpand(r.overviewBudget);
    out->lineage = LineageIndex(*out->logicalStructure, *out->parallel);
    out->stageMap = StageMap(r.stages, *out->logicalStructure, *out->parallel);
  } catch (const std::exception& e) {
    auto failed = std::make_shared<HierarchyBuild>();
    failed->plan = r.plan;
    failed->error = e.what();
    return failed;
  }
  out->milliseconds = static_cast<double>(clock.nsecsElapsed()) / 1e6;
  return out;
}

}  // namespace paraproof::ui

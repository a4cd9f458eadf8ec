#include "ui/layout_worker.h"

#include <gvc.h>

#include <QElapsedTimer>
#include <QMetaObject>
#include <string>
#include <unordered_map>

extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
}

namespace paraproof::ui {

// Owns one Graphviz context; every call happens on the thread that created it.
class GraphvizLayouter {
 public:
  GraphvizLayouter() {
    // The dot plugin is linked in and preloaded, so no plugin configuration file is looked up.
    static const lt_symlist_t builtins[] = {
        {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library}, {nullptr, nullptr}};
    gvc_ = gvContextPlugins(builtins, 0);
  }
  ~GraphvizLayouter() { gvFreeContext(gvc_); }
  GraphvizLayouter(const GraphvizLayouter&) = delete;
  GraphvizLayouter& operator=(const GraphvizLayouter&) = delete;

  LayoutResult layout(const LayoutJob& job);

 private:
  GVC_t* gvc_ = nullptr;
};

namespace {

char* cs(const char* s) {
  return const_cast<char*>(s);
}

constexpr size_t kBigJobEdges = 120, kBigJobNodes = 150;
// Beyond this, edges are straight: dot's spline routing around the frames (shortest paths through every
// cluster box) grows with edges x frames and ran for minutes on L3's logical view expanded to 800 nodes.
constexpr size_t kStraightEdgesNodes = 400;

std::string inches(double points) {
  return std::to_string(points / 72.0);
}

}  // namespace

LayoutResult GraphvizLayouter::layout(const LayoutJob& job) {
  QElapsedTimer timer;
  timer.start();
  LayoutResult r;
  r.id = job.id;
  Agraph_t* g = agopen(cs("layout"), Agdirected, nullptr);
  agattr(g, AGRAPH, cs("rankdir"), cs("TB"));
  agattr(g, AGRAPH, cs("newrank"), cs("true"));  // rank across clusters: dataflow reads top-down
  agattr(g, AGRAPH, cs("nodesep"), cs("0.25"));
  agattr(g, AGRAPH, cs("ranksep"), cs("0.4"));
  agattr(g, AGRAPH, cs("fontsize"), cs("13"));
  agattr(g, AGRAPH, cs("labeljust"), cs("l"));
  if (job.edges.size() > kBigJobEdges || job.nodes.size() > kBigJobNodes) {
    // Overviews of deep models have many long edges (every layer feeds the optimizer): dot's network simplex
    // then dominates (seconds for 40 nodes on llama3-405b). Bounded iterations cost little in the drawing.
    agattr(g, AGRAPH, cs("nslimit"), cs("1"));
    agattr(g, AGRAPH, cs("nslimit1"), cs("1"));
    agattr(g, AGRAPH, cs("mclimit"), cs("0.5"));
  }
  if (job.nodes.size() > kStraightEdgesNodes) agattr(g, AGRAPH, cs("splines"), cs("line"));
  agattr(g, AGRAPH, cs("margin"), cs("12"));
  agattr(g, AGRAPH, cs("label"), cs(""));
  agattr(g, AGNODE, cs("shape"), cs("box"));
  agattr(g, AGNODE, cs("fixedsize"), cs("true"));
  agattr(g, AGNODE, cs("label"), cs(""));
  agattr(g, AGNODE, cs("width"), cs("1"));
  agattr(g, AGNODE, cs("height"), cs("0.5"));
  agattr(g, AGEDGE, cs("weight"), cs("1"));
  agattr(g, AGEDGE, cs("arrowsize"), cs("0.7"));

  std::vector<Agraph_t*> clusters(job.clusters.size(), nullptr);
  for (size_t i = 0; i < job.clusters.size(); ++i) {
    const auto& c = job.clusters[i];
    Agraph_t* parent = c.parent >= 0 && clusters[c.parent] ? clusters[c.parent] : g;
    std::string name = "cluster_" + std::to_string(c.id);
    clusters[i] = agsubg(parent, cs(name.c_str()), 1);
    // Two spaces of padding leave room for the expand marker drawn before the title.
    std::string label = "    " + c.label.toStdString() + "  ";
    // Padded to a multiple of the LayoutCache bucket, so labels of one bucket reserve the same space.
    const size_t padded = LayoutCache::labelBucket(c.label.size()) * LayoutCache::kLabelBucket + 6;
    if (label.size() < padded) label.resize(padded, ' ');
    agsafeset(clusters[i], cs("label"), cs(label.c_str()), cs(""));
  }
  std::vector<Agnode_t*> nodes;
  nodes.reserve(job.nodes.size());
  std::unordered_map<int, Agnode_t*> byId;
  for (const auto& n : job.nodes) {
    Agraph_t* owner = n.cluster >= 0 ? clusters[n.cluster] : g;
    std::string name = "n" + std::to_string(n.id);
    Agnode_t* an = agnode(owner, cs(name.c_str()), 1);
    agsafeset(an, cs("width"), cs(inches(n.width).c_str()), cs("1"));
    agsafeset(an, cs("height"), cs(inches(n.height).c_str()), cs("0.5"));
    nodes.push_back(an);
    byId[n.id] = an;
  }
  std::vector<std::pair<Agedge_t*, const LayoutJob::Edge*>> edges;
  for (const auto& e : job.edges) {
    auto a = byId.find(e.from), b = byId.find(e.to);
    if (a == byId.end() || b == byId.end()) continue;
    Agedge_t* ae = agedge(g, a->second, b->second, nullptr, 1);
    if (e.weight > 1)
      agsafeset(ae, cs("weight"), cs(std::to_string(std::min(e.weight, 20)).c_str()), cs("1"));
    edges.emplace_back(ae, &e);
  }

  if (gvLayout(gvc_, g, "dot") != 0) {
    r.error = QStringLiteral("Graphviz dot layout failed");
    agclose(g);
    return r;
  }
  const boxf bb = GD_bb(g);
  const double top = bb.UR.y;
  auto flip = [&](pointf p) { return std::pair<double, double>(p.x - bb.LL.x, top - p.y); };
  r.width = bb.UR.x - bb.LL.x;
  r.height = bb.UR.y - bb.LL.y;
  for (size_t i = 0; i < nodes.size(); ++i) {
    double w = ND_width(nodes[i]) * 72, h = ND_height(nodes[i]) * 72;
    auto [x, y] = flip(ND_coord(nodes[i]));
    r.nodes.push_back({job.nodes[i].id, x - w / 2, y - h / 2, w, h});
  }
  for (size_t i = 0; i < clusters.size(); ++i) {
    boxf cb = GD_bb(clusters[i]);
    auto [x0, y0] = flip(cb.LL);
    auto [x1, y1] = flip(cb.UR);
    r.clusters.push_back({job.clusters[i].id, x0, y1, x1 - x0, y0 - y1});
  }
  for (auto [ae, e] : edges) {
    LayoutResult::Edge out;
    out.from = e->from;
    out.to = e->to;
    if (splines* spl = ED_spl(ae); spl && spl->size > 0) {
      const bezier& bz = spl->list[0];
      for (int p = 0; p < bz.size; ++p)
        out.points.push_back(flip(bz.list[p]));
      if (bz.eflag) {
        out.hasArrow = true;
        out.arrowTip = flip(bz.ep);
      }
    }
    r.edges.push_back(std::move(out));
  }
  gvFreeLayout(gvc_, g);
  agclose(g);
  r.milliseconds = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return r;
}

LayoutWorker::LayoutWorker() {
  qRegisterMetaType<LayoutJob>();
  qRegisterMetaType<LayoutResult>();
  thread_.setObjectName(QStringLiteral("graphviz-layout"));
  context_ = new QObject;
  context_->moveToThread(&thread_);
  thread_.start();
}

std::shared_ptr<LayoutWorker> LayoutWorker::shared() {
  static std::weak_ptr<LayoutWorker> current;
  std::shared_ptr<LayoutWorker> worker = current.lock();
  if (!worker) {
    worker = std::make_shared<LayoutWorker>();
    current = worker;
  }
  return worker;
}

LayoutWorker::~LayoutWorker() {
  QMetaObject::invokeMethod(
      context_,
      [this] {
        delete layouter_;
        layouter_ = nullptr;
        delete context_;
      },
      Qt::BlockingQueuedConnection);
  thread_.quit();
  thread_.wait();
}

void LayoutWorker::submit(LayoutJob job) {
  QMetaObject::invokeMethod(
      context_, [this, job = std::move(job)] { run(job); }, Qt::QueuedConnection);
}

void LayoutWorker::run(const LayoutJob& job) {
  if (job.latest && job.latest->load() != job.id) return;  // a newer job of the same view is queued
  if (std::optional<LayoutResult> known = cache_.find(job)) {
    emit finished(*known);
    return;
  }
  if (!layouter_) layouter_ = new GraphvizLayouter;
  LayoutResult r = layouter_->layout(job);
  cache_.store(job, r);
  emit finished(r);
}

}  // namespace paraproof::ui

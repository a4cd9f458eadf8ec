// Shape reduction by per-dimension scale factors. Every axis of every value (logical and device) is a node;
// ops tie axes that index the same dimension, lineage ties a device axis to its logical axis. Each class of
// tied axes gets one factor f: all its extents and index boundaries (lineage box ends, slice offsets, split
// points) must be divisible by f, and every extent >= 2 must stay >= 2. Reshapes require the product of
// factors to match on both sides. The reduced plan is re-inferred op by op; any disagreement falls back to
// the full-size plan, so reduction can only make checking faster, never unsound.
#include "core/stage/reduce.h"
#include "core/stage/union_find.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include "core/ops/registry.h"

namespace paraproof::stage {

namespace {

struct ClassInfo {
  int64_t gcd = 0;        // of extents and boundaries
  int64_t minExtent = 0;  // smallest extent >= 2 (0: none)
  bool pinned = false;
};

// Graph 0 is the logical graph, graph d+1 is device d.
class Reducer {
 public:
  explicit Reducer(const Plan& plan) : plan_(plan) {
    graphs_.push_back(&plan.logical);
    for (const Device& d : plan.devices)
      graphs_.push_back(&d.graph);
    size_t n = 0;
    for (const Graph* g : graphs_) {
      std::vector<size_t> offs;
      for (const Value& v : g->values) {
        offs.push_back(n);
        n += v.type.shape.size();
      }
      axisBase_.push_back(std::move(offs));
    }
    uf_ = std::make_unique<UnionFind>(n);
    extent_.resize(n);
    for (size_t g = 0; g < graphs_.size(); ++g)
      for (size_t v = 0; v < graphs_[g]->values.size(); ++v)
        for (size_t a = 0; a < graphs_[g]->values[v].type.shape.size(); ++a)
          extent_[axisBase_[g][v] + a] = graphs_[g]->values[v].type.shape[a];
    pinnedAxes_.assign(n, false);
  }

  ReducedPlan run() {
    ReducedPlan out;
    for (size_t g = 0; g < graphs_.size(); ++g)
      collectOps(g);
    collectLineage();
    if (!chooseFactors()) {
      out.plan = plan_;
      out.notes.push_back("shape reduction skipped (reshape factors did not settle): checking at full size");
      return out;
    }
    out.plan = plan_;
    std::string why;
    if (!rebuild(out.plan, why)) {
      out.plan = plan_;
      out.notes.push_back("shape reduction skipped (" + why + "): checking at full size");
      return out;
    }
    for (const Graph* g : graphs_)
      for (const Value& v : g->values)
        out.elementsBefore += numElements(v.type.shape);
    out.elementsAfter = 0;
    for (const Value& v : out.plan.logical.values)
      out.elementsAfter += numElements(v.type.shape);
    for (const Device& d : out.plan.devices)
      for (const Value& v : d.graph.values)
        out.elementsAfter += numElements(v.type.shape);
    out.reduced = out.elementsAfter < out.elementsBefore;
    std::ostringstream os;
    os << "shapes reduced: " << out.elementsBefore << " -> " << out.elementsAfter << " tensor elements";
    out.notes.push_back(os.str());
    return out;
  }

 private:
  size_t axis(size_t g, ValueId v, int a) const { return axisBase_[g][v] + a; }

  ValueId portValue(const Op& op, int port) const {
    int nIn = static_cast<int>(op.inputs.size());
    return port < nIn ? op.inputs.at(port) : op.outputs.at(port - nIn);
  }

  std::vector<TensorType> types(const Graph& g, const std::vector<ValueId>& vs) const {
    std::vector<TensorType> t;
    for (ValueId v : vs)
      t.push_back(g.values[v].type);
    return t;
  }

  void pinValue(size_t g, ValueId v) {
    for (size_t a = 0; a < graphs_[g]->values[v].type.shape.size(); ++a)
      pinnedAxes_[axis(g, v, a)] = true;
  }

  void collectOps(size_t g) {
    const Graph& graph = *graphs_[g];
    for (const Op& op : graph.ops) {
      const ops::OpDef* def = ops::findOp(op.kind);
      ops::AxisInfo info;
      bool ok = def && def->axes;
      if (ok) {
        try {
          info = def->axes(types(graph, op.inputs), types(graph, op.outputs), op.attrs);
        } catch (const std::exception&) {
          ok = false;
        }
      }
      if (!ok) {
        for (ValueId v : op.inputs)
          pinValue(g, v);
        for (ValueId v : op.outputs)
          pinValue(g, v);
        continue;
      }
      auto ax = [&](ops::AxisRef r) { return axis(g, portValue(op, r.port), r.axis); };
      for (const auto& [a, b] : info.ties)
        uf_->unite(ax(a), ax(b));
      // Axes that data indexes along (gather sources, top-k candidates) keep their full size.
      for (auto r : info.fixed)
        pinnedAxes_[ax(r)] = true;
      for (const auto& [r, value] : info.boundaries)
        boundaries_.push_back({ax(r), value});
      for (const auto& p : info.products) {
        Product prod;
        for (auto r : p.from)
          prod.from.push_back(ax(r));
        for (auto r : p.to)
          prod.to.push_back(ax(r));
        products_.push_back(std::move(prod));
      }
    }
  }

  void collectLineage() {
    for (size_t d = 0; d < plan_.devices.size(); ++d) {
      const Device& dev = plan_.devices[d];
      for (const auto& [v, lin] : dev.lineage) {
        ValueId lv = plan_.logical.findValue(lin.tensor);
        if (lv == kNone) continue;
        const Shape& ls = plan_.logical.values[lv].type.shape;
        const Shape& ds = dev.graph.values[v].type.shape;
        if (ls.size() != ds.size()) {
          pinValue(d + 1, v);
          pinValue(0, lv);
          continue;
        }
        for (size_t a = 0; a < ls.size(); ++a) {
          uf_->unite(axis(d + 1, v, a), axis(0, lv, a));
          if (a < lin.box.ranges.size()) {
            boundaries_.push_back({axis(0, lv, a), lin.box.ranges[a].first});
            boundaries_.push_back({axis(0, lv, a), lin.box.ranges[a].second});
          }
        }
      }
    }
  }

  // O(sqrt(g)); memoised, since the same extents recur in every layer and on every device.
  int64_t largestDivisorAtMost(int64_t g, int64_t limit) {
    if (g <= 0) return 1;
    auto [it, fresh] = divisorMemo_.try_emplace({g, limit}, 1);
    if (!fresh) return it->second;
    int64_t best = 1;
    for (int64_t i = 1; i <= g / i; ++i) {
      if (g % i) continue;
      if (i <= limit) best = std::max(best, i);
      if (g / i <= limit) best = std::max(best, g / i);
    }
    return it->second = best;
  }

  // False when the reshape constraints do not settle within a bounded number of passes (each pass lowers
  // some factor, so real plans settle in a few; a hostile chain of reshapes must not stall the run).
  bool chooseFactors() {
    const size_t n = extent_.size();
    std::vector<ClassInfo> cls(n);
    for (size_t a = 0; a < n; ++a) {
      ClassInfo& c = cls[uf_->find(a)];
      c.gcd = std::gcd(c.gcd, extent_[a]);
      if (extent_[a] >= 2) c.minExtent = c.minExtent ? std::min(c.minExtent, extent_[a]) : extent_[a];
      c.pinned |= pinnedAxes_[a];
    }
    for (const auto& [a, value] : boundaries_) {
      ClassInfo& c = cls[uf_->find(a)];
      c.gcd = std::gcd(c.gcd, value < 0 ? -value : value);
    }
    factor_.assign(n, 1);
    for (size_t a = 0; a < n; ++a) {
      if (uf_->find(a) != a) continue;
      const ClassInfo& c = cls[a];
      if (c.pinned || c.minExtent < 4) continue;  // extents below 4 cannot shrink while staying >= 2
      factor_[a] = largestDivisorAtMost(c.gcd, c.minExtent / 2);
    }
    // Reshapes: the product of factors must agree on both sides; lower factors until they do.
    constexpr int kMaxPasses = 256;
    int passes = 0;
    for (bool changed = true; changed;) {
      if (++passes > kMaxPasses) return false;
      changed = false;
      for (const Product& p : products_) {
        int64_t f = 1, t = 1;
        for (size_t a : p.from)
          f *= factor_[uf_->find(a)];
        for (size_t a : p.to)
          t *= factor_[uf_->find(a)];
        if (f == t) continue;
        int64_t g = std::gcd(f, t);
        for (const auto* side : {&p.from, &p.to}) {
          int64_t target = g;
          for (size_t a : *side) {
            int64_t& fa = factor_[uf_->find(a)];
            int64_t nf = std::gcd(fa, target);
            target /= nf;
            if (nf != fa) {
              fa = nf;
              changed = true;
            }
          }
        }
      }
    }
    return true;
  }

  int64_t factorOf(size_t a) { return factor_[uf_->find(a)]; }

  bool rebuild(Plan& out, std::string& why) {
    std::vector<Graph*> graphs{&out.logical};
    for (Device& d : out.devices)
      graphs.push_back(&d.graph);
    for (size_t g = 0; g < graphs.size(); ++g) {
      Graph& graph = *graphs[g];
      for (size_t v = 0; v < graph.values.size(); ++v)
        for (size_t a = 0; a < graph.values[v].type.shape.size(); ++a) {
          int64_t f = factorOf(axis(g, static_cast<ValueId>(v), static_cast<int>(a)));
          int64_t& e = graph.values[v].type.shape[a];
          if (e % f) {
            why = "extent not divisible";
            return false;
          }
          e /= f;
        }
    }
    for (size_t g = 0; g < graphs.size(); ++g) {
      Graph& graph = *graphs[g];
      for (Op& op : graph.ops) {
        const ops::OpDef* def = ops::findOp(op.kind);
        if (!def) continue;
        std::vector<TensorType> in = types(graph, op.inputs), outT = types(graph, op.outputs);
        if (def->rescale) {
          ops::AxisFactor factor = [&](ops::AxisRef r) {
            return factorOf(axis(g, portValue(op, r.port), r.axis));
          };
          try {
            op.attrs = def->rescale(op.attrs, in, outT, factor);
          } catch (const std::exception& e) {
            why = "op '" + op.id + "': " + e.what();
            return false;
          }
        }
        try {
          if (def->infer && ops::inferTypes(*def, in, op.attrs) != outT) {
            why = "op '" + op.id + "' (" + op.kind + ") does not re-infer at reduced shapes";
            return false;
          }
        } catch (const std::exception& e) {
          why = "op '" + op.id + "': " + e.what();
          return false;
        }
      }
    }
    for (Device& dev : out.devices)
      for (auto& [v, lin] : dev.lineage) {
        ValueId lv = out.logical.findValue(lin.tensor);
        if (lv == kNone) continue;
        for (size_t a = 0; a < lin.box.ranges.size(); ++a) {
          int64_t f = factorOf(axis(0, lv, static_cast<int>(a)));
          auto& [s, e] = lin.box.ranges[a];
          if (s % f || e % f) {
            why = "lineage box of '" + dev.graph.values[v].name + "' not divisible";
            return false;
          }
          s /= f;
          e /= f;
        }
      }
    return true;
  }

  struct Product {
    std::vector<size_t> from, to;
  };

  const Plan& plan_;
  std::vector<const Graph*> graphs_;
  std::vector<std::vector<size_t>> axisBase_;
  std::unique_ptr<UnionFind> uf_;
  std::vector<int64_t> extent_;
  std::vector<bool> pinnedAxes_;
  std::vector<std::pair<size_t, int64_t>> boundaries_;
  std::vector<Product> products_;
  std::vector<int64_t> factor_;
  std::map<std::pair<int64_t, int64_t>, int64_t> divisorMemo_;
};

}  // namespace

ReducedPlan reducePlan(const Plan& plan) {
  return Reducer(plan).run();
}

}  // namespace paraproof::stage

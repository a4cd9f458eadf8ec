// Shape reduction by per-dimension scale factors over the plan's axis classes (axis_graph.h: every axis of
// every value, and the values of every integer tensor, which scale with the axis they index). Each class
// gets one factor f: all its extents and index boundaries (lineage box ends, slice offsets, split points,
// id offsets) must be divisible by f, and every extent >= 2 must stay >= 2. Reshapes require the product of
// factors to match on both sides. The reduced plan is re-inferred op by op; any disagreement falls back to
// the full-size plan, so reduction can only make checking faster, never unsound.
#include "core/stage/reduce.h"
#include "core/stage/axis_graph.h"

#include <algorithm>
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
  explicit Reducer(const Plan& plan) : plan_(plan), ag_(plan) {}

  ReducedPlan run() {
    ReducedPlan out;
    chooseFactors();
    out.plan = plan_;
    std::string why;
    if (!rebuild(out.plan, why)) {
      out.plan = plan_;
      out.notes.push_back("shape reduction skipped (" + why + "): checking at full size");
      return out;
    }
    for (const Graph* g : ag_.graphs())
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

  static int64_t largestDivisorAtMost(int64_t g, int64_t limit) {
    if (g <= 0) return 1;
    int64_t best = 1;
    for (int64_t i = 1; i * i <= g; ++i) {
      if (g % i) continue;
      if (i <= limit) best = std::max(best, i);
      if (g / i <= limit) best = std::max(best, g / i);
    }
    return best;
  }

  void chooseFactors() {
    const size_t n = ag_.size();
    std::vector<ClassInfo> cls(n);
    for (size_t a = 0; a < n; ++a) {
      ClassInfo& c = cls[ag_.find(a)];
      const int64_t e = ag_.extent(a);  // 0 for the values of an integer tensor: no constraint
      c.gcd = std::gcd(c.gcd, e);
      if (e >= 2) c.minExtent = c.minExtent ? std::min(c.minExtent, e) : e;
      c.pinned = c.pinned || ag_.pinned(a);
    }
    for (const auto& [a, value] : ag_.boundaries()) {
      ClassInfo& c = cls[ag_.find(a)];
      c.gcd = std::gcd(c.gcd, value < 0 ? -value : value);
    }
    factor_.assign(n, 1);
    for (size_t a = 0; a < n; ++a) {
      if (ag_.find(a) != a) continue;
      const ClassInfo& c = cls[a];
      if (c.pinned || c.minExtent < 4) continue;  // extents below 4 cannot shrink while staying >= 2
      factor_[a] = largestDivisorAtMost(c.gcd, c.minExtent / 2);
    }
    // Reshapes: the product of factors must agree on both sides; lower factors until they do.
    for (bool changed = true; changed;) {
      changed = false;
      for (const AxisGraph::Product& p : ag_.products()) {
        int64_t f = 1, t = 1;
        for (size_t a : p.from)
          f *= factor_[ag_.find(a)];
        for (size_t a : p.to)
          t *= factor_[ag_.find(a)];
        if (f == t) continue;
        int64_t g = std::gcd(f, t);
        for (const auto* side : {&p.from, &p.to}) {
          int64_t target = g;
          for (size_t a : *side) {
            int64_t& fa = factor_[ag_.find(a)];
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
  }

  int64_t factorOf(size_t a) { return a == kNoNode ? 1 : factor_[ag_.find(a)]; }
  int64_t factorOf(size_t g, ValueId v, int a) {
    return factorOf(a == ops::kValues ? ag_.values(g, v) : ag_.axis(g, v, a));
  }

  bool rebuild(Plan& out, std::string& why) {
    std::vector<Graph*> graphs{&out.logical};
    for (Device& d : out.devices)
      graphs.push_back(&d.graph);
    for (size_t g = 0; g < graphs.size(); ++g) {
      Graph& graph = *graphs[g];
      for (size_t v = 0; v < graph.values.size(); ++v)
        for (size_t a = 0; a < graph.values[v].type.shape.size(); ++a) {
          int64_t f = factorOf(ag_.axis(g, static_cast<ValueId>(v), static_cast<int>(a)));
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
          ops::AxisFactor factor = [&](ops::AxisRef r) { return factorOf(g, portValue(op, r.port), r.axis); };
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
          int64_t f = factorOf(ag_.axis(0, lv, static_cast<int>(a)));
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

  const Plan& plan_;
  AxisGraph ag_;
  std::vector<int64_t> factor_;
};

}  // namespace

ReducedPlan reducePlan(const Plan& plan) {
  return Reducer(plan).run();
}

}  // namespace paraproof::stage

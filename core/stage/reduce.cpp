// Shape reduction by per-dimension scale factors over the plan's axis classes (axis_graph.h: every axis of
// every value, and the values of every integer tensor, which scale with the axis they index). Each class
// gets one factor f: all its extents and index boundaries (lineage box ends, slice offsets, split points,
// id offsets) must be divisible by f, and every extent >= 2 must stay >= 2. Reshapes require the product of
// factors to match on both sides. Extents that enter the arithmetic as numbers (counts) are kept apart from
// the plan's numeric constants and from each other. The reduced plan is re-validated and re-inferred op by
// op; any failure falls back to the full-size plan, so reduction can only make checking faster, never
// unsound.
#include "core/stage/reduce.h"

#include "core/stage/axis_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "core/ir/halves.h"
#include "core/ops/registry.h"
#include "core/plan/validate.h"

namespace paraproof::stage {

namespace {

// Attributes that index or name structure (rescaled with their dimension, or not numbers at all); every
// other number in an attribute is a constant of the arithmetic.
bool structural(const std::string& key) {
  static const std::set<std::string> keys{
      "dim",        "dims",     "start",      "end",    "sizes",  "shape",          "n",
      "k",          "perm",     "peer",       "src",    "group",  "instance",       "split_dim",
      "concat_dim", "dtype",    "keepdim",    "causal", "reduce", "num_embeddings", "num_classes",
      "reduction",  "equation", "approximate"};
  return keys.count(key) > 0;
}

void numbersIn(const Json& j, std::vector<double>& out) {
  if (j.is_number()) {
    out.push_back(j.get<double>());
  } else if (j.is_array()) {
    for (const Json& e : j)
      numbersIn(e, out);
  }
}

}  // namespace

std::set<int64_t> countLikeConstants(const std::vector<const Graph*>& graphs, bool avgGroupSizes, bool powers,
                                     bool triples) {
  std::vector<const Op*> ops;
  for (const Graph* g : graphs)
    for (const Op& op : g->ops)
      ops.push_back(&op);
  return countLikeConstants(ops, avgGroupSizes, powers, triples);
}

std::set<int64_t> countLikeConstants(const std::vector<const Op*>& ops, bool avgGroupSizes, bool powers,
                                     bool triples) {
  std::set<int64_t> constants;
  {
    std::vector<double> cs;
    for (const Op* o : ops) {
      const Op& op = *o;
      if (!op.attrs.is_object()) continue;
      for (const auto& [key, v] : op.attrs.items())
        if (!structural(key)) numbersIn(v, cs);
      auto red = op.attrs.find("reduce");
      auto grp = op.attrs.find("group");
      if (avgGroupSizes && red != op.attrs.end() && *red == "avg" && grp != op.attrs.end() && grp->is_array())
        cs.push_back(static_cast<double>(grp->size()));
    }
    auto add = [&constants](double x) {
      if (!std::isfinite(x) || x < 1.5 || x > 1e12) return;
      double r = std::round(x);
      if (std::abs(x - r) <= 1e-9 * r) constants.insert(static_cast<int64_t>(r));
    };
    std::set<double> distinct;
    for (double c : cs)
      if (c != 0 && std::isfinite(c)) distinct.insert(std::abs(c));
    for (double c : distinct) {
      add(c), add(1 / c);
      if (powers)
        for (double x : {c * c, 1 / (c * c), std::sqrt(c), 1 / std::sqrt(c)})
          add(x);
      for (double d : distinct)  // two constants standing for one count: sum * 0.125 against mean * 2
        add(c * d), add(c / d), add(1 / (c * d));
    }
    // Three standing for one count: a loss divided by a hard-coded micro-batch count, the avg of a dp group
    // and a tp factor (sum / 4 with avg over 2 and * 0.5: 16). Products of c, d, e or their reciprocals, with
    // a repeated constant allowed (c * c * d). Bounded: a plan with very many distinct constants keeps pairs.
    // (The folds keep to pairs: their count conditions are stated for them, docs/soundness.md.)
    constexpr size_t kMaxForTriples = 96;
    if (triples && distinct.size() <= kMaxForTriples) {
      std::vector<double> signedPowers;  // every constant and its reciprocal
      for (double c : distinct)
        signedPowers.push_back(c), signedPowers.push_back(1 / c);
      for (size_t a = 0; a < signedPowers.size(); ++a)
        for (size_t b = a; b < signedPowers.size(); ++b) {
          const double ab = signedPowers[a] * signedPowers[b];
          for (size_t k = b; k < signedPowers.size(); ++k)
            add(ab * signedPowers[k]);
        }
    }
  }
  return constants;
}

namespace {

struct ClassInfo {
  int64_t gcd = 0;        // of extents and boundaries
  int64_t minExtent = 0;  // smallest extent >= 2 (0: none)
  bool pinned = false;
};

// Graph 0 is the logical graph, graph d+1 is device d.
class Reducer {
 public:
  explicit Reducer(const Plan& plan, const std::vector<std::pair<ValueId, int>>& keep = {})
      : plan_(plan), ag_(plan) {
    for (auto [v, a] : keep)
      if (static_cast<size_t>(v) < plan.logical.values.size() &&
          a < static_cast<int>(plan.logical.values[v].type.shape.size()))
        kept_.insert(ag_.find(ag_.axis(0, v, a)));
  }

  // The folds' scaled logical graph (fold.h): factor `factor` on the classes of `seeds` (logical value, dim)
  // and 1 on every other class. The class is not pinned, its extents are multiples of the factor, extents
  // >= 2 stay >= 2; the fold keeps a prefix of blocks, so the class holds no boundary of a logical op and
  // no position, and every reshape run carries the factor on its outermost axes only.
  std::optional<Graph> scaleClasses(const std::vector<std::pair<ValueId, int>>& seeds, int64_t factor,
                                    std::string& why) {
    const size_t n = ag_.size();
    const std::vector<ClassInfo> cls = classInfo();
    factor_.assign(n, 1);
    auto take = [&](size_t r, int64_t f, const std::string& what) -> bool {
      const ClassInfo& c = cls[r];
      if (c.pinned)
        why = what + " is in a class shape reduction keeps at full size";
      else if (c.gcd % f)
        why = what + ": an extent of its class is not a multiple of " + std::to_string(f);
      else if (c.minExtent >= 2 && c.minExtent / f < 2)
        why = what + ": its class has an extent below 2 after the fold";
      else
        factor_[r] = f;
      return factor_[r] == f;
    };
    for (auto [v, a] : seeds)
      if (!take(ag_.find(ag_.axis(0, v, a)), factor,
                "'" + plan_.logical.values[v].name + "' dim " + std::to_string(a)))
        return std::nullopt;
    // A reshape run that holds a folded axis: the factor goes on the outermost axis of each side (a prefix
    // of the flat index is a prefix of the outermost axis, and of nothing else).
    for (bool changed = true; changed;) {
      changed = false;
      for (const AxisGraph::Product& p : ag_.products()) {
        const auto [f, t] = productFactors(p);
        if (f == t) continue;
        const auto& side = f < t ? p.from : p.to;
        if (std::max(f, t) % std::min(f, t)) return fail(why, "a reshape does not balance the fold");
        const size_t r = ag_.find(side.front());
        if (factor_[r] != 1) return fail(why, "a reshape run takes the fold on an inner axis");
        if (!take(r, std::max(f, t) / std::min(f, t), "the outermost axis of a reshape run"))
          return std::nullopt;
        changed = true;
      }
    }
    for (const AxisGraph::Product& p : ag_.products())
      for (const auto* side : {&p.from, &p.to})
        for (size_t i = 1; i < side->size(); ++i)
          if (factor_[ag_.find((*side)[i])] != 1)
            return fail(why, "a reshape run would carry the fold on an inner axis");
    for (const auto& [a, value] : ag_.boundaries())
      if (factor_[ag_.find(a)] > 1 && value != 0 && value != ag_.extent(a))
        return fail(why, "a logical op indexes at " + std::to_string(value) + " inside the folded dimension");
    for (size_t a : ag_.positions())
      if (factor_[ag_.find(a)] > 1)
        return fail(why, "a logical op computes positions along the folded dimension");
    Plan out = plan_;
    if (!rebuild(out, why)) return std::nullopt;
    return std::move(out.logical);
  }

  // The classes and their factors, for condition D per class (reduce.h).
  std::shared_ptr<const ReductionClasses> classes() {
    auto c = std::make_shared<ReductionClasses>();
    const std::vector<const Graph*>& graphs = ag_.graphs();
    c->axisBase.resize(graphs.size());
    for (size_t g = 0; g < graphs.size(); ++g) {
      c->axisBase[g].resize(graphs[g]->values.size());
      for (size_t v = 0; v < graphs[g]->values.size(); ++v)
        c->axisBase[g][v] = ag_.axis(g, static_cast<ValueId>(v), 0);
    }
    c->root.resize(ag_.size());
    for (size_t n = 0; n < ag_.size(); ++n)
      c->root[n] = ag_.find(n);
    c->factor = factor_;
    return c;
  }

  // Once per plan; then once per size point (`move`: as reducePlan's).
  ReducedPlan run(int point, const std::set<size_t>* move) {
    ReducedPlan out;
    move_ = move;
    if (!analysed_) {
      collectConstants();
      countClasses();
      analysed_ = true;
    }
    if (!chooseFactors(point)) {
      out.plan = plan_;
      out.notes.push_back("shape reduction skipped (reshape factors did not settle): checking at full size");
      return out;
    }
    out.plan = copyPlan(plan_);
    std::string why;
    if (!rebuild(out.plan, why) || !revalidate(out.plan, why)) {
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
    if (out.reduced) out.classes = classes();
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

  void collectConstants() { constants_ = countLikeConstants(ag_.graphs(), true, true, true); }

  // O(sqrt(g)); memoised, since the same extents recur in every layer and on every device.
  int64_t largestDivisorAtMost(int64_t g, int64_t limit) {
    if (g <= 0) return 1;
    auto [memo, fresh] = divisorMemo_.try_emplace({g, limit}, 1);
    if (!fresh) return memo->second;
    int64_t best = 1;
    for (int64_t i = 1; i <= g / i; ++i) {
      if (g % i) continue;
      if (i <= limit) best = std::max(best, i);
      if (g / i <= limit) best = std::max(best, g / i);
    }
    memo->second = best;
    return best;
  }

  // False when the reshape constraints do not settle within a bounded number of passes.
  // The product of the factors on each side of a reshape.
  std::pair<int64_t, int64_t> productFactors(const AxisGraph::Product& p) {
    int64_t f = 1, t = 1;
    for (size_t a : p.from)
      f *= factor_[ag_.find(a)];
    for (size_t a : p.to)
      t *= factor_[ag_.find(a)];
    return {f, t};
  }

  static std::nullopt_t fail(std::string& why, std::string what) {
    why = std::move(what);
    return std::nullopt;
  }

  // By class root: the gcd of its extents and boundaries, its smallest extent >= 2, whether it is pinned.
  std::vector<ClassInfo> classInfo() {
    const size_t n = ag_.size();
    std::vector<ClassInfo> cls(n);
    for (size_t a = 0; a < n; ++a) {
      ClassInfo& c = cls[ag_.find(a)];
      const int64_t e = ag_.extent(a);  // 0 for the values of an integer tensor: no constraint
      c.gcd = std::gcd(c.gcd, e);
      if (e >= 2) c.minExtent = c.minExtent ? std::min(c.minExtent, e) : e;
      c.pinned = c.pinned || ag_.pinned(a);
    }
    for (size_t r : kept_)
      cls[r].pinned = true;
    for (const auto& [a, value] : ag_.boundaries()) {
      ClassInfo& c = cls[ag_.find(a)];
      c.gcd = std::gcd(c.gcd, value < 0 ? -value : value);
    }
    return cls;
  }

  bool chooseFactors(int point) {
    const size_t n = ag_.size();
    const std::vector<ClassInfo> cls = classInfo();
    // limit[root]: the largest factor the class may take; lowered when a count would collide.
    std::vector<int64_t> limit(n, 1);
    for (size_t a = 0; a < n; ++a) {
      if (ag_.find(a) != a) continue;
      const ClassInfo& c = cls[a];
      if (!c.pinned && c.minExtent >= 4) limit[a] = c.minExtent / 2;  // below 4 cannot stay >= 2
    }
    for (size_t r : innerAxesOfAmbiguousRuns())
      limit[r] = 1;
    auto settle = [&] {
      do {
        factor_.assign(n, 1);
        for (size_t a = 0; a < n; ++a)
          if (ag_.find(a) == a && limit[a] > 1) factor_[a] = largestDivisorAtMost(cls[a].gcd, limit[a]);
        if (!balanceProducts()) return false;
      } while (separateCounts(limit));
      return true;
    };
    if (!settle()) return false;
    if (point == 0) return true;
    // The second size point: every class reduced at point 0 that moves takes a strictly smaller factor
    // (limits only ever go down), so its extents differ from point 0's; the others keep point 0's factor.
    const std::vector<int64_t> first = factor_;
    for (size_t a = 0; a < n; ++a)
      if (ag_.find(a) == a)
        limit[a] =
            first[a] > 1 && (!move_ || move_->count(a)) ? first[a] / smallestPrimeFactor(first[a]) : first[a];
    return settle();
  }

  static int64_t smallestPrimeFactor(int64_t f) {
    for (int64_t p = 2; p <= f / p; ++p)
      if (f % p == 0) return p;
    return f;
  }

  // Reshape runs keep their flat-index map when each class is split alike everywhere: a run whose flat
  // class (a side of one axis) is split elsewhere into a sequence with other inner axes (every axis but the
  // outermost, by class and extent), or a run with several axes on both sides, carries its factor on the
  // outermost axes only (two different row-major splits of one axis agree once shrunk to equal extents).
  // Splits that differ only in their outermost class (the heads of each layer over one head dim) are alike:
  // the same inner axes take the same factors, and each run's balance gives the outermost the rest.
  // Returns the classes of the other axes of such runs.
  std::set<size_t> innerAxesOfAmbiguousRuns() {
    using Inner = std::vector<std::pair<size_t, int64_t>>;  // (class, extent) of every axis but the first
    std::map<size_t, std::set<Inner>> splits;               // flat class -> the inner axes it splits into
    auto inner = [&](const std::vector<size_t>& side) {
      Inner r;
      for (size_t i = 1; i < side.size(); ++i)
        r.push_back({ag_.find(side[i]), ag_.extent(side[i])});
      return r;
    };
    for (const AxisGraph::Product& p : ag_.products()) {
      if (p.from.size() == 1) splits[ag_.find(p.from[0])].insert(inner(p.to));
      if (p.to.size() == 1) splits[ag_.find(p.to[0])].insert(inner(p.from));
    }
    std::set<size_t> out;
    for (const AxisGraph::Product& p : ag_.products()) {
      const bool ambiguous = (p.from.size() > 1 && p.to.size() > 1) ||
                             (p.from.size() == 1 && splits[ag_.find(p.from[0])].size() > 1) ||
                             (p.to.size() == 1 && splits[ag_.find(p.to[0])].size() > 1);
      if (!ambiguous) continue;
      for (const auto* side : {&p.from, &p.to})
        for (size_t i = 1; i < side->size(); ++i)
          out.insert(ag_.find((*side)[i]));
    }
    return out;
  }

  // Reshapes: the product of factors must agree on both sides; lower factors until they do (each pass
  // lowers some factor, so a bound on the passes only matters for hostile plans).
  bool balanceProducts() {
    constexpr int kMaxPasses = 256;
    int passes = 0;
    for (bool changed = true; changed;) {
      if (++passes > kMaxPasses) return false;
      changed = false;
      for (const AxisGraph::Product& p : ag_.products()) {
        const auto [f, t] = productFactors(p);
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
    return true;
  }

  // The counts: each declared group (its product is one number), and every axis of every class a group
  // touches (a mean over a sharded axis on a device stands for the logical extent times the shard count).
  void countClasses() {
    std::map<size_t, std::pair<std::set<int64_t>, bool>> declared;  // root -> count extents, positions only
    for (size_t a : ag_.positions())
      declared.emplace(ag_.find(a), std::pair{std::set<int64_t>{}, true})
          .first->second.first.insert(ag_.extent(a));
    for (const auto& group : ag_.counts())
      for (size_t a : group) {
        auto& d = declared[ag_.find(a)];
        d.first.insert(ag_.extent(a));
        d.second = false;
      }
    if (declared.empty()) return;
    // A count over a shard stands for its multiples in the class (the logical extent, other shardings),
    // not for every extent the class holds (concat and slice tie unrelated widths).
    std::map<size_t, std::set<int64_t>> extents;
    for (size_t a = 0; a < ag_.size(); ++a) {
      if (ag_.extent(a) < 2) continue;
      auto d = declared.find(ag_.find(a));
      if (d == declared.end()) continue;
      for (int64_t e : d->second.first)
        if (e >= 1 && ag_.extent(a) % e == 0) {
          extents[d->first].insert(ag_.extent(a));
          break;
        }
    }
    for (const auto& [r, es] : extents)
      for (int64_t e : es)
        countItems_.push_back({{r}, {e}, declared[r].second});
    for (const auto& group : ag_.counts()) {
      CountItem item;
      for (size_t a : group) {
        item.roots.push_back(ag_.find(a));
        item.extents.push_back(ag_.extent(a));
      }
      countItems_.push_back(std::move(item));
    }
  }

  // A correct plan may hard-code a count (sum / 16 for a mean over 16) and a wrong one may hard-code a count
  // that only the reduced extent matches (mean * 2 over a vocabulary of 16 reduced to 2). So: a count that
  // equals a constant-derived number keeps its full value; a reduced count never equals one it did not
  // equal at full size; two counts are equal after reduction exactly when they were before. Lowers the
  // limit of the classes behind each violation; returns whether any limit changed.
  bool separateCounts(std::vector<int64_t>& limit) {
    struct Value {
      int64_t full = 1, reduced = 1;
    };
    std::vector<Value> values(countItems_.size());
    for (size_t i = 0; i < countItems_.size(); ++i)
      for (size_t k = 0; k < countItems_[i].roots.size(); ++k) {
        int64_t e = countItems_[i].extents[k];
        values[i].full *= e;
        values[i].reduced *= e / factor_[countItems_[i].roots[k]];
      }
    std::set<size_t> pin, lower;
    std::map<int64_t, std::vector<size_t>> byFull, byReduced;
    for (size_t i = 0; i < values.size(); ++i) {
      const Value& v = values[i];
      if (v.full == v.reduced) continue;
      if (constants_.count(v.full)) pin.insert(i);
      if (constants_.count(v.reduced)) lower.insert(i);
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (countItems_[i].position) continue;  // a position is no multiplicity
      byFull[values[i].full].push_back(i);
      byReduced[values[i].reduced].push_back(i);
    }
    // Equal counts reduced apart: lower those reduced furthest (towards the largest reduced value among
    // them). Different counts reduced together: lower all but the largest (lowering a small count is cheap,
    // lowering a model width is not).
    for (const auto& [full, items] : byFull) {
      int64_t top = 0;
      for (size_t i : items)
        top = std::max(top, values[i].reduced);
      for (size_t i : items)
        if (values[i].reduced != top) lower.insert(i);
    }
    for (const auto& [red, items] : byReduced) {
      int64_t top = 0;
      for (size_t i : items)
        top = std::max(top, values[i].full);
      for (size_t i : items)
        if (values[i].full != top) lower.insert(i);
    }
    bool changed = false;
    auto cap = [&](size_t i, bool toOne) {
      for (size_t r : countItems_[i].roots) {
        int64_t f = factor_[r];
        int64_t nl = toOne ? 1 : f - 1;
        if (f > 1 && limit[r] > nl) {
          limit[r] = nl;
          changed = true;
        }
      }
    };
    for (size_t i : pin)
      cap(i, true);
    for (size_t i : lower)
      cap(i, false);
    return changed;
  }

  // By node of the axis graph; set by `rebuild` before its threads read it (`find` compresses paths).
  int64_t factorOf(size_t a) const { return a == kNoNode ? 1 : nodeFactor_[a]; }
  int64_t factorOf(size_t g, ValueId v, int a) const {
    return factorOf(a == ops::kValues ? ag_.values(g, v) : ag_.axis(g, v, a));
  }

  // Divides every extent, op attribute and lineage box by its class's factor, the graphs of a large plan on
  // two threads. `why`: the first failure in graph order.
  bool rebuild(Plan& out, std::string& why) {
    nodeFactor_.resize(ag_.size());
    for (size_t n = 0; n < ag_.size(); ++n)
      nodeFactor_[n] = factor_[ag_.find(n)];
    std::vector<Graph*> graphs{&out.logical};
    for (Device& d : out.devices)
      graphs.push_back(&d.graph);
    std::vector<std::string> failed(graphs.size());  // by graph (device d's lineage: graph d + 1)
    auto firstFailure = [&] {
      const auto first = std::find_if(failed.begin(), failed.end(), [](const auto& f) { return !f.empty(); });
      if (first != failed.end()) why = *first;
      return first != failed.end();
    };
    const bool large = largePlan(out);
    inTwoHalves(graphs.size(), large, [&](size_t begin, size_t end) {
      for (size_t g = begin; g < end && rebuildGraph(g, *graphs[g], failed[g]); ++g) {
      }
    });
    if (firstFailure()) return false;
    inTwoHalves(out.devices.size(), large, [&](size_t begin, size_t end) {
      for (size_t d = begin; d < end && rescaleLineage(out.logical, out.devices[d], failed[d + 1]); ++d) {
      }
    });
    return !firstFailure();
  }

  bool rebuildGraph(size_t g, Graph& graph, std::string& why) const {
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
    for (Op& op : graph.ops) {
      const ops::OpDef* def = ops::findOp(op.kind);
      if (!def) continue;
      std::vector<TensorType> in = types(graph, op.inputs), outT = types(graph, op.outputs);
      if (def->rescale) {
        ops::AxisFactor factor = [&](ops::AxisRef r) { return factorOf(g, portValue(op, r.port), r.axis); };
        try {
          Json rescaled = def->rescale(op.attrs, in, outT, factor);
          if (def->communication && !sameCommunicationKey(op.attrs, rescaled)) {
            why = "op '" + op.id + "': rescaling changed its pairing (instance, peer or group)";
            return false;
          }
          if (rescaled != op.attrs.json()) op.attrs = std::move(rescaled);  // else it stays shared
        } catch (const std::bad_alloc&) {
          throw;  // out of memory is no property of the plan
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
      } catch (const std::bad_alloc&) {
        throw;  // out of memory is no property of the plan
      } catch (const std::exception& e) {
        why = "op '" + op.id + "': " + e.what();
        return false;
      }
    }
    return true;
  }

  bool rescaleLineage(const Graph& logical, Device& dev, std::string& why) const {
    for (auto& [v, lin] : dev.lineage) {
      ValueId lv = lineageValue(logical, lin);
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

  // Reduction keeps the cut (docs/soundness.md): the stage cutter pairs communication by these keys, and
  // the second reduction and the full-size re-check reuse the first reduction's stages.
  static bool sameCommunicationKey(const Json& before, const Json& after) {
    for (const char* key : {"instance", "peer", "group"}) {
      const auto b = before.find(key), a = after.find(key);
      if ((b == before.end()) != (a == after.end()) || (b != before.end() && *b != *a)) return false;
    }
    return true;
  }

  // The reduced plan must be a valid plan in its own right: shapes of send and recv, collective members,
  // lineage boxes in bounds, coverage. (A tie that an op or a pairing failed to declare shows up here.)
  bool revalidate(const Plan& reduced, std::string& why) {
    std::vector<Diagnostic> errs;
    try {
      errs = validateReducedPlan(reduced);
    } catch (const std::bad_alloc&) {
      throw;  // out of memory is no property of the plan
    } catch (const std::exception& e) {
      why = std::string("reduced plan: validation failed: ") + e.what();
      return false;
    }
    if (errs.empty()) return true;
    why = "reduced plan invalid: " + errs.front().where + ": " + errs.front().message;
    return false;
  }

  struct CountItem {
    std::vector<size_t> roots;     // class of each axis
    std::vector<int64_t> extents;  // full extent of each axis
    bool position = false;         // an axis of positions (iota): compared with constants only
  };

  const Plan& plan_;
  AxisGraph ag_;
  const std::set<size_t>* move_ = nullptr;  // point 1: the classes that move (null: all)
  bool analysed_ = false;                   // the constants and counts below are collected
  std::vector<CountItem> countItems_;
  std::set<int64_t> constants_;  // count-like numbers derived from the plan's constants
  std::set<size_t> kept_;        // classes a fold scaled: kept as they are
  std::vector<int64_t> factor_;
  std::vector<int64_t> nodeFactor_;  // factor_ by node, not only by root: read by rebuild's threads
  std::map<std::pair<int64_t, int64_t>, int64_t> divisorMemo_;
};

}  // namespace

class ReductionAnalysis {
 public:
  ReductionAnalysis(const Plan& plan, const std::vector<std::pair<ValueId, int>>& keep)
      : plan_(&plan), keep_(keep), reducer_(plan, keep) {}
  bool of(const Plan& plan, const std::vector<std::pair<ValueId, int>>& keep) const {
    return plan_ == &plan && keep_ == keep;
  }
  Reducer& reducer() { return reducer_; }

 private:
  const Plan* plan_;
  std::vector<std::pair<ValueId, int>> keep_;
  Reducer reducer_;
};

ReducedPlan reducePlan(const Plan& plan, int point, const std::vector<std::pair<ValueId, int>>& keep,
                       const std::set<size_t>* move, const std::shared_ptr<ReductionAnalysis>& again) {
  std::shared_ptr<ReductionAnalysis> analysis =
      again && again->of(plan, keep) ? again : std::make_shared<ReductionAnalysis>(plan, keep);
  ReducedPlan out = analysis->reducer().run(point, move);
  out.analysis = std::move(analysis);
  return out;
}

std::optional<Graph> scaleLogicalAxes(const Plan& plan, const std::vector<std::pair<ValueId, int>>& axes,
                                      int64_t factor, std::string& why) {
  Plan logicalOnly;
  logicalOnly.logical = plan.logical;
  logicalOnly.mesh = plan.mesh;
  return Reducer(logicalOnly).scaleClasses(axes, factor, why);
}

std::vector<std::pair<ValueId, int>> scaledAxes(const Graph& before, const Graph& after) {
  std::vector<std::pair<ValueId, int>> out;
  for (size_t v = 0; v < before.values.size() && v < after.values.size(); ++v) {
    const Shape &a = before.values[v].type.shape, &b = after.values[v].type.shape;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      if (a[i] != b[i]) out.push_back({static_cast<ValueId>(v), static_cast<int>(i)});
  }
  return out;
}

}  // namespace paraproof::stage

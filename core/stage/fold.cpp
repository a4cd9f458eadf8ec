#include "core/stage/fold.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/ir/halves.h"
#include "core/plan/validate.h"
#include "core/stage/reduce.h"

namespace paraproof::stage {

namespace {

using Coord = std::vector<int64_t>;

bool isRankKey(const std::string& k) {
  return k == "group" || k == "peer" || k == "src";
}

// How one replica's program advances to the next along the axis: per lineage site (device value, box dim)
// the step of its offsets, per value the step of its part index.
struct Steps {
  std::map<std::pair<ValueId, size_t>, int64_t> box;
  std::map<ValueId, int64_t> part;
};

class Folder {
 public:
  Folder(const Plan& plan, size_t axis)
      : plan_(plan),
        a_(axis),
        n_(plan.mesh.shape[axis]),
        compact_(plan.replicas && plan.replicas->axis == plan.mesh.axes[axis]) {}

  // Every implied replica of a compact plan written out: the explicit plan it stands for.
  Plan expand() {
    std::string why;
    if (!indexDevices(why) || !learnLines(why)) throw std::invalid_argument("replicas: " + why);
    Plan p = plan_;
    p.replicas.reset();
    for (const Line& l : lines_)
      for (int64_t k = 0; k < n_; ++k)
        if (!l.byCoord.count(k)) p.devices.push_back(translate(l, k));
    std::sort(p.devices.begin(), p.devices.end(),
              [](const Device& x, const Device& y) { return x.rank < y.rank; });
    return p;
  }

  // Line by line: a line whose replicas are no translates (its template pair differs: a bug on one of two
  // replicas) stands for nothing but itself, the other lines still fold.
  ReplicaTranslates translates() {
    ReplicaTranslates out;
    if (!indexDevices(out.why)) return out;
    out.templateOf.resize(plan_.devices.size());
    for (Line& l : lines_) {
      std::string why;
      const bool learnt = learnLine(l, why);
      if (!learnt && out.why.empty()) out.why = why;
      for (const auto& [k, d] : l.byCoord)
        out.templateOf[static_cast<size_t>(d)] =
            !learnt || std::count(l.deviants.begin(), l.deviants.end(), k) ? d : l.byCoord.at(l.base);
    }
    return out;
  }

  FoldedPlan run(int point) {
    FoldedPlan out;
    std::string why;
    if (!indexDevices(why) || !learnLines(why)) return skipped(out, why);
    std::set<int64_t> kept;
    for (const Line& l : lines_) {
      kept.insert(l.base);
      kept.insert(l.next);
      kept.insert(l.deviants.begin(), l.deviants.end());
      if (compact_)  // a stated replica is kept as stated
        for (const auto& [k, d] : l.byCoord)
          kept.insert(k);
    }
    // Candidate counts: the divisors m < n that hold the kept replicas. The plan is checked at one or two
    // of them (docs/soundness.md, "Size points"), so no count has to dodge the plan's constants.
    std::vector<int64_t> counts;
    for (int64_t m = 2; m < n_; ++m)
      if (n_ % m == 0 && m >= static_cast<int64_t>(kept.size())) counts.push_back(m);
    if (counts.empty())
      return skipped(out, "no replica count below " + std::to_string(n_) + " holds the " +
                              std::to_string(kept.size()) + " kept replicas");
    int usable = 0;
    for (int64_t m : counts) {
      std::optional<Graph> logical = scaleLogicalAxes(plan_, seeds(), n_ / m, why);
      if (!logical || usable++ < point) continue;
      std::set<int64_t> k = kept;
      for (int64_t c = 0; static_cast<int64_t>(k.size()) < m; ++c)
        k.insert(c);
      out.scaled = scaledAxes(plan_.logical, *logical);
      out.parameter.logicalAxes.insert(out.scaled.begin(), out.scaled.end());
      if (!build(out, k, std::move(*logical), why)) return skipped(out, why);
      out.count = m;
      out.countsMet = fullCountsMet();
      if (!out.countsMet.empty())
        out.notes.push_back("a constant of the plan equals " + std::to_string(*out.countsMet.begin()) +
                            ", the size of a group over the replicas: a failing stage that holds it is "
                            "checked unfolded");
      return out;
    }
    if (point > 0 && usable == point)
      return skipped(out, "no second replica count folds: the full count is the second size point");
    return skipped(out, why.empty() ? "no replica count divides " + std::to_string(n_) : why);
  }

 private:
  // Completeness, not soundness: a constant that equals a full group size over the replicas (a hard-coded
  // 1/dp) makes a correct plan fail folded; a failing stage holding one is checked again unfolded.
  std::set<int64_t> fullCountsMet() const {
    std::vector<const Graph*> graphs{&plan_.logical};
    for (const Device& d : plan_.devices)
      graphs.push_back(&d.graph);
    const std::set<int64_t> constants = countLikeConstants(graphs, false, true, true);
    std::set<int64_t> met;
    for (int64_t g : lineGroupSizes_)
      if (constants.count(g)) met.insert(g);
    return met;
  }

  struct Line {
    std::map<int64_t, int> byCoord;  // axis coordinate -> device index
    int64_t base = 0, next = 1;      // the template pair
    Steps steps;
    std::vector<int64_t> deviants;
  };

  FoldedPlan& skipped(FoldedPlan& out, const std::string& why) {
    out = FoldedPlan{};
    out.notes.push_back("replica fold of " + plan_.mesh.axes[a_] + "=" + std::to_string(n_) +
                        " not applied (" + why + "): every replica is checked");
    return out;
  }

  bool indexDevices(std::string& why) {
    std::map<Coord, size_t> lineOf;
    for (size_t d = 0; d < plan_.devices.size(); ++d) {
      const Device& dev = plan_.devices[d];
      if (dev.coord.size() != plan_.mesh.shape.size()) {
        why = "rank " + std::to_string(dev.rank) + " has no mesh coordinate";
        return false;
      }
      coordOfRank_[dev.rank] = dev.coord;
      rankOfCoord_[dev.coord] = dev.rank;
      Coord rest = dev.coord;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(a_));
      auto [it, fresh] = lineOf.emplace(rest, lines_.size());
      if (fresh) lines_.emplace_back();
      lines_[it->second].byCoord[dev.coord[a_]] = static_cast<int>(d);
    }
    if (compact_) {
      for (const Device& dev : plan_.devices) {
        int64_t r = 0;
        for (size_t i = 0; i < dev.coord.size(); ++i)
          r = r * plan_.mesh.shape[i] + dev.coord[i];
        if (r != dev.rank) {
          why = "rank " + std::to_string(dev.rank) + " is not the row-major index of its coordinate";
          return false;
        }
      }
      for (const Line& l : lines_) {
        if (!l.byCoord.count(plan_.replicas->from) || !l.byCoord.count(plan_.replicas->to)) {
          why = "a line of the mesh does not state the template replicas";
          return false;
        }
        if (l.byCoord.size() != lines_.front().byCoord.size() ||
            !std::equal(l.byCoord.begin(), l.byCoord.end(), lines_.front().byCoord.begin(),
                        [](const auto& x, const auto& y) { return x.first == y.first; })) {
          why = "the stated replicas are not whole (every device of a stated coordinate is stated)";
          return false;
        }
      }
      return true;
    }
    for (const Line& l : lines_)
      if (static_cast<int64_t>(l.byCoord.size()) != n_) {
        why = "a line of the mesh lacks some of its " + std::to_string(n_) + " replicas";
        return false;
      }
    return true;
  }

  const Device& device(const Line& l, int64_t k) const { return plan_.devices[l.byCoord.at(k)]; }

  // Rank <-> coordinate. A compact plan implies the devices it does not state: their ranks are the row-major
  // index of the coordinate (checked on the stated ones).
  int64_t rankAt(const Coord& c) const {
    auto it = rankOfCoord_.find(c);
    if (it != rankOfCoord_.end()) return it->second;
    if (!compact_ || c.size() != plan_.mesh.shape.size()) return kNone;
    int64_t r = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      if (c[i] < 0 || c[i] >= plan_.mesh.shape[i]) return kNone;
      r = r * plan_.mesh.shape[i] + c[i];
    }
    return r;
  }
  std::optional<Coord> coordOf(int64_t r) const {
    auto it = coordOfRank_.find(r);
    if (it != coordOfRank_.end()) return it->second;
    if (!compact_ || r < 0) return std::nullopt;
    Coord c(plan_.mesh.shape.size());
    for (size_t i = c.size(); i-- > 0;) {
      c[i] = r % plan_.mesh.shape[i];
      r /= plan_.mesh.shape[i];
    }
    if (r != 0) return std::nullopt;
    return c;
  }

  // Learns each line's steps from a template pair and checks every other replica against it; a replica
  // that is not the translate of the template is a deviant, kept as it is.
  bool learnLines(std::string& why) {
    for (Line& l : lines_)
      if (!learnLine(l, why)) return false;
    return true;
  }

  bool learnLine(Line& l, std::string& why) {
    std::optional<Line> best;
    std::vector<std::pair<int64_t, int64_t>> pairs{{0, 1}, {n_ - 2, n_ - 1}};
    if (compact_) pairs = {{plan_.replicas->from, plan_.replicas->to}};
    for (auto [b, c] : pairs) {
      Line trial;
      trial.byCoord = l.byCoord;
      trial.base = b;
      trial.next = c;
      if (!compare(device(l, b), device(l, c), b, c, &trial.steps, why)) continue;
      for (const auto& [k, d] : l.byCoord)
        if (k != b && k != c && !compare(device(l, b), device(l, k), b, k, &trial.steps, why, false))
          trial.deviants.push_back(k);
      if (!best || trial.deviants.size() < best->deviants.size()) best = std::move(trial);
      if (best->deviants.size() <= 1) break;
    }
    if (!best) return false;  // `why` says where the template pair differs
    if (!compact_ && static_cast<int64_t>(best->deviants.size()) * 2 >= n_) {
      why = "most replicas differ from each other";
      return false;
    }
    l = std::move(*best);
    return checkSteps(l, why);
  }

  // A lineage offset that advances along the axis must tile a logical dimension (n blocks of its step);
  // a part index that advances must be the coordinate itself, over n parts.
  bool checkSteps(const Line& l, std::string& why) {
    const Device& base = device(l, l.base);
    for (const auto& [site, step] : l.steps.box) {
      if (step == 0) continue;
      const Lineage& lin = base.lineage.at(site.first);
      const ValueId lv = lineageValue(plan_.logical, lin);
      if (lv == kNone || site.second >= plan_.logical.values[lv].type.shape.size()) {
        why = "lineage of an unknown logical tensor";
        return false;
      }
      const int64_t extent = plan_.logical.values[lv].type.shape[site.second];
      const auto [s, e] = lin.box.ranges[site.second];
      const int64_t offset = s - l.base * step;
      if (step < 0 || extent != n_ * step || offset < 0 || e - s + offset > step) {
        why = "'" + lin.tensor + "' dim " + std::to_string(site.second) +
              " is not split into one block per replica";
        return false;
      }
      seeds_.insert({lv, static_cast<int>(site.second)});
    }
    for (const auto& [v, step] : l.steps.part) {
      if (step == 0) continue;
      // parts = n * step: each replica holds `step` consecutive parts (e.g. one per micro-batch).
      const Lineage& lin = base.lineage.at(v);
      const int64_t offset = lin.part - l.base * step;
      if (step < 0 || lin.parts != n_ * step || offset < 0 || offset >= step) {
        why = "a value part of '" + lin.tensor + "' is not indexed by the replica";
        return false;
      }
    }
    return true;
  }

  std::vector<std::pair<ValueId, int>> seeds() const { return {seeds_.begin(), seeds_.end()}; }

  // The rank r advanced by `delta` replicas (kNone past the axis).
  int64_t advance(int64_t r, int64_t delta) const {
    std::optional<Coord> to = coordOf(r);
    if (!to) return kNone;
    (*to)[a_] += delta;
    return rankAt(*to);
  }

  // A rank list either is closed under the axis (a union of whole lines: the data-parallel group, or the
  // dp x cp group of a loss count) or lies within the device's own replica.
  enum class RankKind { Lines, Own, Other };
  RankKind kindOf(const Json& ranks, const Coord& self) const {
    auto own = [&](const Json& r) {
      if (!r.is_number_integer()) return false;
      std::optional<Coord> c = coordOf(r.get<int64_t>());
      return c && (*c)[a_] == self[a_];
    };
    if (!ranks.is_array()) return own(ranks) ? RankKind::Own : RankKind::Other;
    bool allOwn = true;
    std::set<int64_t> members;
    for (const Json& r : ranks) {
      if (!r.is_number_integer()) return RankKind::Other;
      members.insert(r.get<int64_t>());
      allOwn = allOwn && own(r);
    }
    if (allOwn) return RankKind::Own;
    for (int64_t r : members) {
      std::optional<Coord> next = coordOf(r);
      if (!next) return RankKind::Other;
      (*next)[a_] = ((*next)[a_] + 1) % n_;
      const int64_t nr = rankAt(*next);
      if (nr == kNone || !members.count(nr)) return RankKind::Other;
    }
    return members.count(rankAt(self)) ? RankKind::Lines : RankKind::Other;
  }

  bool sameRanks(const Json& b, const Json& d, const Coord& bc, int64_t delta) const {
    const RankKind kb = kindOf(b, bc);
    if (kb == RankKind::Other) return false;
    if (kb == RankKind::Lines) {
      lineGroupSizes_.insert(static_cast<int64_t>(b.size()));
      return b == d;  // the same collective: dev lies on the same lines
    }
    auto one = [&](const Json& x, const Json& y) {
      return x.is_number_integer() && y.is_number_integer() &&
             advance(x.get<int64_t>(), delta) == y.get<int64_t>();
    };
    if (!b.is_array()) return one(b, d);
    if (!d.is_array() || b.size() != d.size()) return false;
    for (size_t i = 0; i < b.size(); ++i)
      if (!one(b[i], d[i])) return false;
    return true;
  }

  // Is `dev` (coordinate kd) the translate of `base` (coordinate kb)? With `learn`, records the steps of
  // the lineage offsets and part indices instead of checking them.
  bool compare(const Device& base, const Device& dev, int64_t kb, int64_t kd, Steps* steps, std::string& why,
               bool learn = true) const {
    const Graph& g = base.graph;
    const Graph& h = dev.graph;
    const int64_t delta = kd - kb;
    auto differ = [&](const std::string& what) {
      if (learn)
        why =
            "ranks " + std::to_string(base.rank) + " and " + std::to_string(dev.rank) + " differ in " + what;
      return false;
    };
    if (g.values.size() != h.values.size() || g.ops.size() != h.ops.size() || g.inputs != h.inputs ||
        g.outputs != h.outputs)
      return differ("their programs");
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].name != h.values[v].name || g.values[v].type != h.values[v].type ||
          g.values[v].producer != h.values[v].producer)
        return differ("value '" + g.values[v].name + "'");
    std::map<std::string, std::string> instanceTo, instanceFrom;
    for (size_t o = 0; o < g.ops.size(); ++o) {
      const Op& x = g.ops[o];
      const Op& y = h.ops[o];
      if (x.id != y.id || x.kind != y.kind || x.inputs != y.inputs || x.outputs != y.outputs ||
          x.attrs.size() != y.attrs.size())
        return differ("op '" + x.id + "'");
      for (const auto& [key, value] : x.attrs.items()) {
        auto it = y.attrs.find(key);
        if (it == y.attrs.end()) return differ("op '" + x.id + "'");
        bool ok;
        if (key == "instance") {
          // Collective instances are plan-wide names: the translate may rename them, one to one.
          auto [f, newF] = instanceTo.emplace(value.dump(), it->dump());
          auto [b, newB] = instanceFrom.emplace(it->dump(), value.dump());
          ok = f->second == it->dump() && b->second == value.dump();
          (void)newF, (void)newB;
        } else {
          ok = isRankKey(key) ? sameRanks(value, *it, base.coord, delta) : value == *it;
        }
        if (!ok) return differ("attribute `" + key + "` of op '" + x.id + "'");
      }
    }
    if (base.lineage.size() != dev.lineage.size()) return differ("lineage");
    for (const auto& [v, lb] : base.lineage) {
      auto it = dev.lineage.find(v);
      if (it == dev.lineage.end()) return differ("lineage");
      const Lineage& ld = it->second;
      if (lb.tensor != ld.tensor || lb.parts != ld.parts || lb.box.ranges.size() != ld.box.ranges.size())
        return differ("the lineage of '" + g.values[v].name + "'");
      for (size_t i = 0; i < lb.box.ranges.size(); ++i) {
        const int64_t ds = ld.box.ranges[i].first - lb.box.ranges[i].first;
        const int64_t de = ld.box.ranges[i].second - lb.box.ranges[i].second;
        if (ds != de) return differ("the lineage box of '" + g.values[v].name + "'");
        if (learn) {
          if (ds % delta) return differ("the lineage box of '" + g.values[v].name + "'");
          if (ds) steps->box[{v, i}] = ds / delta;
        } else {
          auto st = steps->box.find({v, i});
          if (ds != (st == steps->box.end() ? 0 : st->second * delta)) return false;
        }
      }
      const int64_t dp = ld.part - lb.part;
      if (learn) {
        if (dp % delta) return differ("the part index of '" + g.values[v].name + "'");
        if (dp) steps->part[v] = dp / delta;
      } else {
        auto st = steps->part.find(v);
        if (dp != (st == steps->part.end() ? 0 : st->second * delta)) return false;
      }
    }
    return true;
  }

  // Moves the lineage box of device value v by `delta` replicas along its line's steps.
  static void moveBoxes(ValueId v, Lineage& lin, const Line& l, int64_t delta) {
    for (size_t i = 0; i < lin.box.ranges.size(); ++i) {
      auto st = l.steps.box.find({v, i});
      if (st == l.steps.box.end()) continue;
      lin.box.ranges[i].first += delta * st->second;
      lin.box.ranges[i].second += delta * st->second;
    }
  }

  // The implied replica at coordinate k of a line: the template's base moved by k - base steps. Collectives
  // within one replica get instance names of that replica; groups over whole lines stay as written.
  Device translate(const Line& l, int64_t k) const {
    const Device& base = device(l, l.base);
    const int64_t delta = k - l.base;
    Device t = base;
    t.coord[a_] = k;
    t.rank = static_cast<int>(rankAt(t.coord));
    t.graph.name = "rank" + std::to_string(t.rank);
    for (Op& op : t.graph.ops) {
      // Only an op that names a rank of its own replica changes (and gets its own attribute object).
      const auto own = [&](const std::string& key, const Json& value) {
        return isRankKey(key) && kindOf(value, base.coord) == RankKind::Own;
      };
      const auto items = op.attrs.items();
      if (std::none_of(items.begin(), items.end(), [&](const auto& i) { return own(i.key(), i.value()); }))
        continue;
      Json& attrs = op.attrs.edit();
      for (auto& [key, value] : attrs.items()) {
        if (!own(key, value)) continue;
        if (value.is_array())
          for (Json& r : value)
            r = advance(r.get<int64_t>(), delta);
        else
          value = advance(value.get<int64_t>(), delta);
      }
      if (attrs.contains("instance"))
        attrs["instance"] = attrs["instance"].dump() + "@" + plan_.mesh.axes[a_] + "=" + std::to_string(k);
    }
    for (auto& [v, lin] : t.lineage) {
      moveBoxes(v, lin, l, delta);
      auto ps = l.steps.part.find(v);
      if (ps != l.steps.part.end()) lin.part += static_cast<int>(delta * ps->second);
    }
    return t;
  }

  // A kept device and the line it was taken from.
  struct Source {
    Device dev;
    const Line* line = nullptr;
  };

  // A kept device moved to its place in the folded plan (device `index`, in rank order): ranks renumbered,
  // groups over whole lines shrunk to their kept members, lineage boxes and parts moved with the replica; the
  // sums, averages and varying values it holds recorded in `t`. Writes only `c` and `t`.
  bool moveDevice(Source& c, size_t index, const std::map<int64_t, int64_t>& pos,
                  const std::map<int64_t, int64_t>& newRank, int64_t m, const Graph& scaledLogical,
                  FoldParameter& t, std::string& why) const {
    const struct {
      int rank;
      std::vector<int64_t> coord;
    } src{c.dev.rank, c.dev.coord};  // where the device was (not a copy of its graph)
    const Line& line = *c.line;
    const int64_t k = src.coord[a_], to = pos.at(k);
    Device& dev = c.dev;
    dev.rank = static_cast<int>(newRank.at(src.rank));
    dev.coord[a_] = to;
    auto mapRank = [&](const Json& r) -> std::optional<Json> {
      if (!r.is_number_integer()) return r;
      std::optional<Coord> c = coordOf(r.get<int64_t>());
      if (!c || !pos.count((*c)[a_])) return std::nullopt;
      return Json(newRank.at(r.get<int64_t>()));
    };
    for (size_t o = 0; o < dev.graph.ops.size(); ++o) {  // sums over the replicas (count_degree.h)
      const Op& op = dev.graph.ops[o];
      auto grp = op.attrs.find("group");
      if (grp == op.attrs.end() || kindOf(*grp, src.coord) != RankKind::Lines) continue;
      const std::string reduce = op.attrs.value("reduce", "");
      if (reduce == "sum") t.sums.insert({index, static_cast<OpId>(o)});
      if (reduce == "avg") t.averages.insert({index, static_cast<OpId>(o)});
    }
    for (const auto& [v, lin] : dev.lineage) {
      bool moves = line.steps.part.count(v) > 0;
      for (size_t i = 0; i < lin.box.ranges.size(); ++i)
        moves = moves || line.steps.box.count({v, i}) > 0;
      if (moves) t.varying.insert({index, v});
    }
    for (Op& op : dev.graph.ops) {
      const auto items = op.attrs.items();
      if (std::none_of(items.begin(), items.end(), [](const auto& i) { return isRankKey(i.key()); }))
        continue;
      // A new object, not an edit in place: devices are moved on two threads, and their ops share objects.
      Json edited = op.attrs.json();
      for (auto& [key, value] : edited.items()) {
        if (!isRankKey(key)) continue;
        if (kindOf(value, src.coord) == RankKind::Lines) {
          Json shrunk = Json::array();
          for (const Json& r : value)
            if (pos.count((*coordOf(r.get<int64_t>()))[a_])) shrunk.push_back(newRank.at(r.get<int64_t>()));
          value = shrunk;
          continue;
        }
        Json mapped = value.is_array() ? Json::array() : Json();
        for (const Json& r : value.is_array() ? value : Json::array({value})) {
          std::optional<Json> nr = mapRank(r);
          if (!nr) {
            why = "rank " + std::to_string(src.rank) + " op '" + op.id + "' names a replica that is not kept";
            return false;
          }
          if (value.is_array())
            mapped.push_back(*nr);
          else
            mapped = *nr;
        }
        value = mapped;
      }
      op.attrs = std::move(edited);
    }
    for (auto& [v, lin] : dev.lineage) {
      // A box on a folded dimension must move with its replica: a fixed box (the first quarter of the
      // batch on every replica) would stand for another part of the scaled batch than at full size.
      const ValueId lv = lineageValue(plan_.logical, lin);
      for (size_t i = 0; lv != kNone && i < lin.box.ranges.size(); ++i)
        if (plan_.logical.values[lv].type.shape.at(i) != scaledLogical.values[lv].type.shape.at(i) &&
            !line.steps.box.count({v, i})) {
          why = "rank " + std::to_string(src.rank) + " '" + dev.graph.values[v].name + "' has a box on dim " +
                std::to_string(i) + " of '" + lin.tensor + "' that does not move with the replica";
          return false;
        }
      moveBoxes(v, lin, line, to - k);
      auto ps = line.steps.part.find(v);
      if (ps != line.steps.part.end() && lin.parts == n_ * ps->second) {
        lin.part += static_cast<int>((to - k) * ps->second);
        lin.parts = static_cast<int>(m * ps->second);
      }
    }
    return true;
  }

  // The folded plan: the kept replicas at positions 0..m-1 of the axis, each moved there by its line's
  // steps; ranks renumbered in their original order; line groups shrunk to the kept replicas.
  bool build(FoldedPlan& out, const std::set<int64_t>& kept, Graph logical, std::string& why) {
    const int64_t m = static_cast<int64_t>(kept.size());
    std::map<int64_t, int64_t> pos;
    for (int64_t k : kept)
      pos.emplace(k, static_cast<int64_t>(pos.size()));
    std::vector<std::pair<const Line*, int64_t>> picks;  // (line, kept coordinate)
    for (const Line& l : lines_)
      for (int64_t k : kept)
        picks.push_back({&l, k});
    std::vector<Source> chosen(picks.size());
    inTwoHalves(picks.size(), largePlan(plan_), [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        const auto [l, k] = picks[i];
        auto it = l->byCoord.find(k);
        chosen[i] = {it != l->byCoord.end() ? plan_.devices[it->second] : translate(*l, k), l};
      }
    });
    std::sort(chosen.begin(), chosen.end(),
              [](const Source& x, const Source& y) { return x.dev.rank < y.dev.rank; });
    std::map<int64_t, int64_t> newRank;  // original rank -> folded rank (order-preserving)
    for (const Source& c : chosen)
      newRank.emplace(c.dev.rank, static_cast<int64_t>(newRank.size()));

    Plan p;
    p.name = plan_.name;
    p.mesh = plan_.mesh;
    p.mesh.shape[a_] = m;
    p.microbatches = plan_.microbatches;
    p.logical = std::move(logical);
    p.state = plan_.state;
    p.metadata = plan_.metadata;
    // Each kept device is edited on its own (two halves on a large plan, each with its own parameter sets and
    // first failure), then the devices go into the plan in rank order.
    struct Half {
      FoldParameter t;
      std::string why;
    };
    Half halves[2];
    out.originalRank.assign(chosen.size(), 0);
    inTwoHalves(chosen.size(), largePlan(plan_), [&](size_t begin, size_t end) {
      Half& h = halves[begin == 0 ? 0 : 1];
      for (size_t index = begin; index < end; ++index) {
        out.originalRank[index] = chosen[index].dev.rank;
        if (!moveDevice(chosen[index], index, pos, newRank, m, p.logical, h.t, h.why)) return;
      }
    });
    for (Half& h : halves) {
      if (!h.why.empty()) {
        why = h.why;
        return false;
      }
      out.parameter.merge(h.t);
    }
    for (Source& c : chosen)
      p.devices.push_back(std::move(c.dev));
    // The folded plan is a plan in its own right; a fold that breaks it is not applied. With compact
    // micro-batches still to be folded it is not whole yet: the verifier validates it after that fold.
    out.validated = !p.microbatches;
    std::vector<Diagnostic> errs = out.validated ? validatePlan(p) : std::vector<Diagnostic>{};
    if (!errs.empty()) {
      why = "the folded plan is invalid: " + errs.front().where + ": " + errs.front().message;
      return false;
    }
    size_t deviants = 0;
    for (const Line& l : lines_)
      deviants += l.deviants.size();
    std::ostringstream os;
    os << "replica fold: " << plan_.mesh.axes[a_] << "=" << n_ << " checked as " << m
       << " replicas (coordinates";
    for (int64_t k : kept)
      os << " " << k;
    os << "; " << deviants << " replica" << (deviants == 1 ? "" : "s")
       << " deviating from the translate of its neighbours, kept as written); the logical dimensions they "
          "split scaled by "
       << n_ / m;
    out.notes.push_back(os.str());
    out.plan = std::move(p);
    out.folded = true;
    return true;
  }

  const Plan& plan_;
  size_t a_;
  int64_t n_;
  bool compact_;
  std::vector<Line> lines_;
  std::map<int64_t, Coord> coordOfRank_;
  std::map<Coord, int64_t> rankOfCoord_;
  std::set<std::pair<ValueId, int>> seeds_;
  mutable std::set<int64_t> lineGroupSizes_;  // sizes of the groups over whole lines (multiples of n)
};

}  // namespace

Plan expandReplicas(const Plan& plan) {
  if (!plan.replicas) return plan;
  const auto it = std::find(plan.mesh.axes.begin(), plan.mesh.axes.end(), plan.replicas->axis);
  if (it == plan.mesh.axes.end()) throw std::invalid_argument("replicas: axis is not an axis of the mesh");
  return Folder(plan, static_cast<size_t>(it - plan.mesh.axes.begin())).expand();
}

ReplicaTranslates replicaTranslates(const Plan& plan, const std::string& requested) {
  const std::string& axis = plan.replicas ? plan.replicas->axis : requested;
  const auto it = std::find(plan.mesh.axes.begin(), plan.mesh.axes.end(), axis);
  const size_t a = static_cast<size_t>(it - plan.mesh.axes.begin());
  if (it == plan.mesh.axes.end() || a >= plan.mesh.shape.size() || plan.mesh.shape[a] < 2)
    return {{}, "the mesh has no " + axis + " axis of two or more replicas"};
  return Folder(plan, a).translates();
}

FoldedPlan foldReplicas(const Plan& plan, const std::string& requested, int point) {
  const std::string& axis = plan.replicas ? plan.replicas->axis : requested;
  const auto it = std::find(plan.mesh.axes.begin(), plan.mesh.axes.end(), axis);
  if (it == plan.mesh.axes.end()) return {};
  const size_t a = static_cast<size_t>(it - plan.mesh.axes.begin());
  if (a >= plan.mesh.shape.size() || plan.mesh.shape[a] < 4) return {};
  return Folder(plan, a).run(point);
}

}  // namespace paraproof::stage

#include "core/stage/microbatch_fold.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <ranges>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/ir/halves.h"
#include "core/plan/validate.h"
#include "core/stage/reduce.h"

namespace paraproof::stage {

namespace {

// The entries of device d in a set ordered by device: a range, not a scan of every device's entries (which
// made carrying a fold parameter quadratic in the devices).
template <class Id>
std::ranges::subrange<typename std::set<std::pair<size_t, Id>>::const_iterator> onDevice(
    const std::set<std::pair<size_t, Id>>& s, size_t d) {
  constexpr Id lo = std::numeric_limits<Id>::min();
  return {s.lower_bound({d, lo}), s.lower_bound({d + 1, lo})};
}

constexpr int kStepWide = -1;  // an op or value outside every micro-batch copy

// One device's copies: which micro-batch every op and value belongs to, and the copies by key. A key is
// the name with its copy marker made `#*` (value_names.h, copyTagOf); the keys of a device's copy values
// are numbered in the order of their texts, so the maps below compare integers and iterate as by text.
struct Copies {
  std::vector<int> valueMb, opMb;
  std::vector<int> valueKey, opKey;          // key numbers (-1 for step-wide values and ops)
  std::vector<std::string> keys, opKeys;     // the copy values' and ops' keys, by number, in text order
  std::vector<std::vector<OpId>> ops;        // per micro-batch, in program order
  std::vector<std::vector<ValueId>> values;  // per micro-batch: key -> value (kNone where absent)
  std::map<std::pair<int, size_t>, int64_t> boxStep;  // (key, dim) -> offset step per micro-batch
  std::map<int, int64_t> partStep;                    // key -> part-index step per micro-batch
  // Accumulation chains: per key of the summed value, the adds at positions 1..n-1.
  std::map<int, std::vector<OpId>> chains;
  // Micro-batch j's value of `key`; throws when it has none.
  ValueId at(int j, int key) const {
    const ValueId v = values.at(static_cast<size_t>(j)).at(static_cast<size_t>(key));
    if (v == kNone)
      throw std::out_of_range("micro-batch " + std::to_string(j) + " has no '" + keys[key] + "'");
    return v;
  }
  std::set<int> deviants;
  std::set<std::pair<ValueId, int>> seeds;  // the logical (value, dim) this device's copies advance along
  int base = 0;                             // the template pair of the programs is (base, base + 1)
  bool lineageDeviant = false;  // a stated copy is not the translate in its values (compact plans)
};

class MicroBatchFolder {
 public:
  // `given`: the plan itself, handed over: its device graphs and lineage are taken, not copied.
  MicroBatchFolder(const Plan& plan, int point, const FoldParameter* carry = nullptr, Plan* given = nullptr)
      : plan_(plan),
        given_(given),
        compact_(plan.microbatches.has_value()),
        from_(compact_ ? plan.microbatches->from : 0),
        point_(point),
        carry_(carry) {}

  // Every implied copy of a compact plan written out, each accumulation chain over all of them.
  Plan expand() {
    std::string why;
    if (!prepare(why)) throw std::invalid_argument("microbatches: " + why);
    std::set<int> all;
    for (int j = 0; j < n_; ++j)
      all.insert(j);
    Plan p = shell();
    if (!withCopies(p, all, false, why)) throw std::invalid_argument("microbatches: " + why);
    return p;
  }

  FoldedPlan run() {
    FoldedPlan out;
    std::string why;
    if (!prepare(why)) return skipped(out, why);
    if (n_ == 0) return out;  // no micro-batches: nothing to say
    if (n_ < 4 && !compact_) return skipped(out, "fewer than 4 micro-batches");

    std::set<int> kept = stated_;  // a compact plan's stated copies are kept as stated
    if (!compact_) {
      kept.clear();
      for (const Copies& c : copies_) {
        if (c.ops.empty()) continue;
        kept.insert({c.base, c.base + 1, 0, 1});
        kept.insert(c.deviants.begin(), c.deviants.end());
      }
    }
    bool tryFold = n_ >= 4;
    if (!tryFold) why = "fewer than 4 micro-batches";
    // A stated copy whose values or lineage differ from the template's translate cannot be moved to a
    // position of the folded batch: such a compact plan is written out.
    if (lineageDeviant_) {
      why = "a stated micro-batch copy differs from the template in its values or lineage";
      tryFold = false;
    }
    // Candidate counts: the divisors m < n that hold the kept copies. The plan is checked at one or two of
    // them (docs/soundness.md, "Size points"), so no count has to dodge the plan's constants.
    std::vector<int64_t> counts;
    for (int64_t m = 2; m < n_ && tryFold; ++m)
      if (n_ % m == 0 && m >= static_cast<int64_t>(kept.size())) counts.push_back(m);
    if (tryFold && counts.empty()) {
      why = "no micro-batch count below " + std::to_string(n_) + " holds the " + std::to_string(kept.size()) +
            " kept copies";
      tryFold = false;
    }
    const std::vector<std::pair<ValueId, int>> seeds(seeds_.begin(), seeds_.end());
    int usable = 0;
    for (int64_t m : tryFold ? counts : std::vector<int64_t>{}) {
      std::optional<Graph> logical = scaleLogicalAxes(plan_, seeds, n_ / m, why);
      if (!logical || usable++ < point_) continue;
      std::set<int> k = kept;
      for (int c = 0; static_cast<int64_t>(k.size()) < m; ++c)
        k.insert(c);
      out.scaled = scaledAxes(plan_.logical, *logical);
      std::set<int64_t> met = fullCountsMet();  // before build, which may take the devices' graphs
      if (!build(out, k, std::move(*logical), why)) break;
      out.count = m;
      out.countsMet = std::move(met);
      if (!out.countsMet.empty())
        out.notes.push_back("a constant of the plan could stand for " +
                            std::to_string(*out.countsMet.begin()) + ", the micro-batch count " +
                            std::to_string(n_) +
                            " (times a group size): a failing stage that holds it is checked unfolded");
      return out;
    }
    if (tryFold && point_ > 0 && usable == point_)
      why = "no second micro-batch count folds: the full count is the second size point";
    if (compact_) {  // not folded: the plan it stands for, copy by copy
      Plan p = shell();
      std::set<int> all;
      for (int j = 0; j < n_; ++j)
        all.insert(j);
      std::string how;
      FoldParameter carried;
      if (withCopies(p, all, false, how, nullptr, carry_, &carried)) {
        skipped(out, why.empty() ? "no smaller micro-batch count divides " + std::to_string(n_) : why);
        out.carried = std::move(carried);
        out.plan = std::move(p);
        out.folded = true;  // the plan to check is out.plan (expanded, not smaller)
        out.notes.back() = "micro-batch fold of " + std::to_string(n_) + " micro-batches not applied (" +
                           (why.empty() ? "no smaller count" : why) + "): every implied copy written out";
        return out;
      }
      return skipped(out, how);
    }
    return skipped(out, why.empty() ? "no smaller micro-batch count divides " + std::to_string(n_) : why);
  }

 private:
  // Completeness, not soundness: a constant that could stand for n times a group size (a hard-coded
  // 1/(n*dp)) makes a correct plan fail folded; a failing stage holding one is checked again unfolded.
  std::set<int64_t> fullCountsMet() const {
    std::vector<const Graph*> graphs{&plan_.logical};
    for (const Device& d : plan_.devices)
      graphs.push_back(&d.graph);
    const std::set<int64_t> constants = countLikeConstants(graphs, false, true, true);
    std::set<int64_t> sizes{1};
    for (const Device& d : plan_.devices)
      for (const Op& op : d.graph.ops) {
        auto grp = op.attrs.find("group");
        auto red = op.attrs.find("reduce");
        if (grp != op.attrs.end() && grp->is_array() && red != op.attrs.end() &&
            (*red == "sum" || *red == "avg"))
          sizes.insert(static_cast<int64_t>(grp->size()));
      }
    std::set<int64_t> met;
    for (int64_t a : sizes)
      for (int64_t b : sizes)
        if (constants.count(n_ * a * b)) met.insert(n_ * a * b);
    return met;
  }

  FoldedPlan& skipped(FoldedPlan& out, const std::string& why) {
    out = FoldedPlan{};
    out.notes.push_back("micro-batch fold" + (n_ ? " of " + std::to_string(n_) + " micro-batches" : "") +
                        " not applied (" + why + "): every micro-batch is checked");
    return out;
  }

  std::string where(size_t d) const { return "rank " + std::to_string(plan_.devices[d].rank) + " "; }

  bool prepare(std::string& why) {
    if (!index(why)) return false;
    if (n_ == 0) return true;
    order_.assign(stated_.begin(), stated_.end());
    // Devices are learnt independently, in two halves; the first failure in device order is the one reported.
    struct Half {
      bool failed = false;
      std::string why;
    };
    Half halves[2];
    inTwoHalves(copies_.size(), largePlan(plan_), [&](size_t begin, size_t end) {
      Half& h = halves[begin == 0 ? 0 : 1];
      for (size_t d = begin; d < end && !h.failed; ++d)
        h.failed = !copies_[d].ops.empty() && (!learn(d, h.why) || !findChains(d, h.why));
    });
    for (Half& h : halves)
      if (h.failed) {
        why = std::move(h.why);
        return false;
      }
    lineageDeviant_ =
        std::any_of(copies_.begin(), copies_.end(), [](const Copies& c) { return c.lineageDeviant; });
    for (const Copies& c : copies_)
      seeds_.insert(c.seeds.begin(), c.seeds.end());
    return instancesStayInTheirMicroBatch(why);
  }

  // The micro-batch and key of every value and op of `g`.
  static void tag(const Graph& g, Copies& c) {
    c.keys = numberKeys(
        g.values, [](const Value& v) -> const Name& { return v.name; }, c.valueMb, c.valueKey);
    c.opKeys = numberKeys(
        g.ops, [](const Op& op) -> const Name& { return op.id; }, c.opMb, c.opKey);
  }

  // Tags each item's name (copyTagOf): its micro-batch goes to `mb`, the number of its key to `key` (-1 for
  // a step-wide one); keys are numbered in the order of their texts, which are returned by number.
  template <class Item, class NameOf>
  static std::vector<std::string> numberKeys(const std::vector<Item>& items, NameOf nameOf,
                                             std::vector<int>& mb, std::vector<int>& key) {
    std::unordered_map<std::string, int> number;  // first by appearance
    mb.reserve(items.size());
    key.reserve(items.size());
    for (const Item& item : items) {
      CopyTag t = copyTagOf(nameOf(item));
      mb.push_back(t.mb);
      key.push_back(
          t.mb == kStepWide
              ? -1
              : number.try_emplace(std::move(t.key), static_cast<int>(number.size())).first->second);
    }
    std::vector<const std::string*> text(number.size());
    for (const auto& [k, n] : number)
      text[static_cast<size_t>(n)] = &k;
    std::vector<int> order(number.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return *text[a] < *text[b]; });
    std::vector<int> rank(number.size());
    std::vector<std::string> keys;
    keys.reserve(number.size());
    for (size_t r = 0; r < order.size(); ++r) {
      rank[static_cast<size_t>(order[r])] = static_cast<int>(r);
      keys.push_back(*text[static_cast<size_t>(order[r])]);
    }
    for (int& k : key)
      if (k >= 0) k = rank[static_cast<size_t>(k)];
    return keys;
  }

  // Tags every op and value; checks that a copy reads only itself and step-wide values, and that every device
  // has the same micro-batches 0..n-1.
  bool index(std::string& why) {
    for (const Value& v : plan_.logical.values)
      if (copyTagOf(v.name).mb != kStepWide) {
        why = "logical value '" + v.name + "' is named like a micro-batch copy";
        return false;
      }
    copies_.resize(plan_.devices.size());
    // Tagging every name is most of this and each device's own: two halves.
    inTwoHalves(copies_.size(), largePlan(plan_), [&](size_t begin, size_t end) {
      for (size_t d = begin; d < end; ++d)
        tag(plan_.devices[d].graph, copies_[d]);
    });
    for (size_t d = 0; d < plan_.devices.size(); ++d) {
      const Graph& g = plan_.devices[d].graph;
      Copies& c = copies_[d];
      int count = 0;
      for (int j : c.valueMb)
        count = std::max(count, j + 1);
      for (int j : c.opMb)
        count = std::max(count, j + 1);
      if (count == 0) continue;
      std::set<int> present;
      for (int j : c.valueMb)
        if (j != kStepWide) present.insert(j);
      for (int j : c.opMb)
        if (j != kStepWide) present.insert(j);
      if (compact_) {
        if (count > plan_.microbatches->count) {
          why = where(d) + "has micro-batch " + std::to_string(count - 1) + ", beyond the count " +
                std::to_string(plan_.microbatches->count);
          return false;
        }
        count = plan_.microbatches->count;
        if (!stated_.empty() && present != stated_) {
          why = where(d) + "states other micro-batches than rank " + std::to_string(plan_.devices[0].rank);
          return false;
        }
        if (!present.count(from_) || !present.count(from_ + 1)) {
          why = where(d) + "does not state the template micro-batches " + std::to_string(from_) + " and " +
                std::to_string(from_ + 1);
          return false;
        }
      } else if (static_cast<int>(present.size()) != count) {
        why = where(d) + "lacks some of its " + std::to_string(count) + " micro-batches";
        return false;
      }
      stated_ = present;
      if (n_ && count != n_) {
        why = where(d) + "has " + std::to_string(count) + " micro-batches, others " + std::to_string(n_);
        return false;
      }
      n_ = count;
      c.ops.resize(static_cast<size_t>(n_));
      c.values.assign(static_cast<size_t>(n_), std::vector<ValueId>(c.keys.size(), kNone));
      for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()); ++v) {
        const int j = c.valueMb[static_cast<size_t>(v)];
        if (j == kStepWide) continue;
        ValueId& slot =
            c.values[static_cast<size_t>(j)][static_cast<size_t>(c.valueKey[static_cast<size_t>(v)])];
        if (slot != kNone) {
          why = where(d) + "value '" + g.values[v].name + "' has a twin key";
          return false;
        }
        slot = v;
      }
      for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o) {
        const Op& op = g.ops[o];
        const int j = c.opMb[static_cast<size_t>(o)];
        for (ValueId v : op.outputs)
          if (c.valueMb[static_cast<size_t>(v)] != j) {
            why = where(d) + "op '" + op.id + "' writes '" + g.values[v].name + "' of another micro-batch";
            return false;
          }
        if (j == kStepWide) continue;
        c.ops[static_cast<size_t>(j)].push_back(o);
        for (ValueId v : op.inputs) {
          const int k = c.valueMb[static_cast<size_t>(v)];
          if (k != kStepWide && k != j) {
            why = where(d) + "op '" + op.id + "' reads '" + g.values[v].name + "' of another micro-batch";
            return false;
          }
        }
      }
      for (ValueId v : g.outputs)
        if (c.valueMb[static_cast<size_t>(v)] != kStepWide) {
          why = where(d) + "outputs '" + g.values[v].name + "', a value of one micro-batch";
          return false;
        }
      // A compact plan's stated copies other than the template pair are kept as written, whatever their
      // program; an explicit plan's copies must all have the template's size.
      const size_t f = static_cast<size_t>(from_);
      for (int j : compact_ ? std::set<int>{from_ + 1} : stated_)
        if (copyValues(c, j) != copyValues(c, from_) ||
            c.ops[static_cast<size_t>(j)].size() != c.ops[f].size()) {
          why = where(d) + "micro-batch " + std::to_string(j) + " has another program than micro-batch " +
                std::to_string(from_);
          return false;
        }
    }
    return true;
  }

  // The lineage steps from micro-batches 0 and 1; every copy's lineage must be the translate (a deviation in
  // lineage is not kept as a deviant: the fold is refused). Then the template pair for the programs and the
  // copies that deviate from it.
  bool learn(size_t d, std::string& why) {
    const Device& dev = plan_.devices[d];
    Copies& c = copies_[d];
    const size_t f = static_cast<size_t>(from_);
    for (int key = 0; key < static_cast<int>(c.keys.size()); ++key) {
      const ValueId v0 = c.values[f][static_cast<size_t>(key)];
      if (v0 == kNone) continue;
      const ValueId v1 = c.values[f + 1][static_cast<size_t>(key)];
      if (v1 == kNone) {
        why = where(d) + "micro-batch " + std::to_string(from_ + 1) + " has no copy of '" +
              dev.graph.values[v0].name + "'";
        return false;
      }
      const Lineage* l0 = lineageOf(dev, v0);
      const Lineage* l1 = lineageOf(dev, v1);
      if (!l0 != !l1 || (l0 && (l0->tensor != l1->tensor || l0->parts != l1->parts ||
                                l0->box.ranges.size() != l1->box.ranges.size()))) {
        why = where(d) + "the lineage of '" + dev.graph.values[v0].name + "' differs between micro-batches";
        return false;
      }
      if (!l0) continue;
      for (size_t i = 0; i < l0->box.ranges.size(); ++i) {
        const int64_t ds = l1->box.ranges[i].first - l0->box.ranges[i].first;
        if (ds != l1->box.ranges[i].second - l0->box.ranges[i].second) {
          why = where(d) + "the lineage box of '" + dev.graph.values[v0].name + "' changes size";
          return false;
        }
        if (ds) c.boxStep[{key, i}] = ds;
      }
      if (l1->part != l0->part) c.partStep[key] = l1->part - l0->part;
    }
    for (int j : stated_)
      if (!lineageIsTranslate(d, j, why)) return false;
    if (!checkSteps(d, why)) return false;

    std::set<int> best;
    bool found = false;
    // An implied copy is the translate of the template by definition: a compact plan's template is its own.
    const std::vector<int> bases = compact_ ? std::vector<int>{from_} : std::vector<int>{0, n_ - 2};
    for (int b : bases) {
      if (!compact_ && !sameProgram(d, b, b + 1)) continue;
      std::set<int> dev;
      for (int j : stated_)
        if (j != b && !sameProgram(d, b, j)) dev.insert(j);
      if (!found || dev.size() < best.size()) {
        best = dev;
        c.base = b;
        found = true;
      }
    }
    if (!found || (!compact_ && static_cast<int>(best.size()) * 2 >= n_)) {
      why = where(d) + "most micro-batches run different programs";
      return false;
    }
    c.deviants = best;
    return true;
  }

  // How many keys micro-batch j has a value of.
  static size_t copyValues(const Copies& c, int j) {
    const auto& v = c.values[static_cast<size_t>(j)];
    return static_cast<size_t>(std::count_if(v.begin(), v.end(), [](ValueId x) { return x != kNone; }));
  }

  static const Lineage* lineageOf(const Device& dev, ValueId v) {
    auto it = dev.lineage.find(v);
    return it == dev.lineage.end() ? nullptr : &it->second;
  }

  bool lineageIsTranslate(size_t d, int j, std::string& why) {
    const Device& dev = plan_.devices[d];
    const Copies& c = copies_[d];
    for (int key = 0; key < static_cast<int>(c.keys.size()); ++key) {
      const ValueId v0 = c.values[static_cast<size_t>(from_)][static_cast<size_t>(key)];
      if (v0 == kNone) continue;
      const ValueId vj = c.values[static_cast<size_t>(j)][static_cast<size_t>(key)];
      const std::string& name = dev.graph.values[v0].name;
      if (vj == kNone) {
        if (compact_) {  // a stated deviant without this value: kept as written, not folded
          copies_[d].lineageDeviant = true;
          continue;
        }
        why = where(d) + "micro-batch " + std::to_string(j) + " has no copy of '" + name + "'";
        return false;
      }
      if (dev.graph.values[v0].type != dev.graph.values[vj].type) {
        if (compact_) {
          copies_[d].lineageDeviant = true;
          continue;
        }
        why = where(d) + "the copies of '" + name + "' differ in type";
        return false;
      }
      const Lineage* l0 = lineageOf(dev, v0);
      const Lineage* lj = lineageOf(dev, vj);
      bool same = !l0 == !lj;
      if (same && l0) same = translated(c, key, *l0, j - from_) == *lj;
      if (!same && compact_) {
        copies_[d].lineageDeviant = true;
        continue;
      }
      if (!same) {
        why = where(d) + "the lineage of micro-batch " + std::to_string(j) + "'s '" +
              dev.graph.values[vj].name + "' is not the translate of micro-batch " + std::to_string(from_) +
              "'s";
        return false;
      }
    }
    return true;
  }

  // A copy's lineage moved by `delta` micro-batches along its steps.
  static Lineage translated(const Copies& c, int key, Lineage lin, int64_t delta) {
    for (size_t i = 0; i < lin.box.ranges.size(); ++i) {
      auto st = c.boxStep.find({key, i});
      const int64_t shift = st == c.boxStep.end() ? 0 : st->second * delta;
      lin.box.ranges[i].first += shift;
      lin.box.ranges[i].second += shift;
    }
    auto ps = c.partStep.find(key);
    if (ps != c.partStep.end()) lin.part += static_cast<int>(ps->second * delta);
    return lin;
  }

  // An offset that advances must tile its logical dimension in blocks of n steps (replica blocks of n
  // micro-batches each); a part index that advances likewise over the parts.
  bool checkSteps(size_t d, std::string& why) {
    const Device& dev = plan_.devices[d];
    const Copies& c = copies_[d];
    for (const auto& [site, step] : c.boxStep) {
      const Lineage lin = translated(c, site.first, *lineageOf(dev, c.at(from_, site.first)), -from_);
      const ValueId lv = lineageValue(plan_.logical, lin);
      if (lv == kNone || site.second >= plan_.logical.values[lv].type.shape.size()) {
        why = "lineage of an unknown logical tensor";
        return false;
      }
      const int64_t extent = plan_.logical.values[lv].type.shape[site.second];
      const auto [s, e] = lin.box.ranges[site.second];
      if (step < 0 || extent % (n_ * step) || (s % (n_ * step)) + (e - s) > step) {
        why = "'" + lin.tensor + "' dim " + std::to_string(site.second) +
              " is not split into one block per "
              "micro-batch";
        return false;
      }
      copies_[d].seeds.insert({lv, static_cast<int>(site.second)});  // per device: learnt on two threads
    }
    for (const auto& [key, step] : c.partStep) {
      const Lineage lin = translated(c, key, *lineageOf(dev, c.at(from_, key)), -from_);
      if (step < 0 || lin.parts % (n_ * step) || lin.part % (n_ * step) >= step) {
        why = "a value part of '" + lin.tensor + "' is not indexed by the micro-batch";
        return false;
      }
    }
    return true;
  }

  // Is micro-batch j's program the translate of micro-batch b's: op by op the same kinds, keys, step-wide
  // inputs, attributes, with collective instances renamed one to one?
  bool sameProgram(size_t d, int b, int j) const {
    const Graph& g = plan_.devices[d].graph;
    const Copies& c = copies_[d];
    const auto& ob = c.ops[static_cast<size_t>(b)];
    const auto& oj = c.ops[static_cast<size_t>(j)];
    if (ob.size() != oj.size()) return false;
    std::map<std::string, std::string> to, from;
    auto sameValue = [&](ValueId x, ValueId y) {
      const size_t ux = static_cast<size_t>(x), uy = static_cast<size_t>(y);
      if (c.valueMb[ux] == kStepWide || c.valueMb[uy] == kStepWide) return x == y;
      return c.valueKey[ux] == c.valueKey[uy];
    };
    for (size_t i = 0; i < ob.size(); ++i) {
      const Op& x = g.ops[ob[i]];
      const Op& y = g.ops[oj[i]];
      if (c.opKey[static_cast<size_t>(ob[i])] != c.opKey[static_cast<size_t>(oj[i])] || x.kind != y.kind ||
          x.inputs.size() != y.inputs.size() || x.outputs.size() != y.outputs.size() ||
          x.attrs.size() != y.attrs.size() || x.origin != y.origin)
        return false;
      for (size_t k = 0; k < x.inputs.size(); ++k)
        if (!sameValue(x.inputs[k], y.inputs[k])) return false;
      for (size_t k = 0; k < x.outputs.size(); ++k)
        if (!sameValue(x.outputs[k], y.outputs[k])) return false;
      for (const auto& [key, value] : x.attrs.items()) {
        auto it = y.attrs.find(key);
        if (it == y.attrs.end()) return false;
        if (key == "instance") {
          const auto f = to.emplace(value.dump(), it->dump()).first;
          const auto r = from.emplace(it->dump(), value.dump()).first;
          if (f->second != it->dump() || r->second != value.dump()) return false;
        } else if (value != *it) {
          return false;
        }
      }
    }
    return true;
  }

  // Step-wide ops may read a copy only as a gradient-accumulation chain: acc1 = add(x#0, x#1), then
  // acc_k = add(acc_{k-1}, x#k) up to k = n-1, each partial sum read by the next add alone.
  bool findChains(size_t d, std::string& why) {
    const Graph& g = plan_.devices[d].graph;
    Copies& c = copies_[d];
    std::map<ValueId, std::pair<int, int>> partial;  // partial sum -> (key, position)
    const std::vector<std::vector<OpId>> users = g.consumers();
    for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o) {
      if (c.opMb[static_cast<size_t>(o)] != kStepWide) continue;
      const Op& op = g.ops[o];
      bool readsCopy = false;
      for (ValueId v : op.inputs)
        readsCopy = readsCopy || c.valueMb[static_cast<size_t>(v)] != kStepWide || partial.count(v);
      if (!readsCopy) continue;
      auto fail = [&] {
        why = where(d) + "step-wide op '" + op.id +
              "' reads micro-batch values other than as a sum of the "
              "micro-batches' copies";
        return false;
      };
      if (op.kind != "add" || op.inputs.size() != 2 || op.outputs.size() != 1 || !op.attrs.empty())
        return fail();
      // Position k of the chain adds the k-th stated copy (every copy of an explicit plan) to the sum of
      // the ones before it.
      const ValueId a = op.inputs[0], x = op.inputs[1];
      const int j = c.valueMb[static_cast<size_t>(x)];
      const auto at = std::find(order_.begin(), order_.end(), j);
      if (j == kStepWide || at == order_.begin() || at == order_.end()) return fail();
      const int k = static_cast<int>(at - order_.begin());
      const int key = c.valueKey[static_cast<size_t>(x)];
      const bool starts = k == 1 && c.valueMb[static_cast<size_t>(a)] == order_[0] &&
                          c.valueKey[static_cast<size_t>(a)] == key;
      auto prev = partial.find(a);
      const bool continues = prev != partial.end() && prev->second == std::pair{key, k - 1};
      if (!starts && !continues) return fail();
      std::vector<OpId>& chain = c.chains[key];
      if (static_cast<int>(chain.size()) != k - 1) return fail();
      chain.push_back(o);
      if (k + 1 < static_cast<int>(order_.size())) partial[op.outputs[0]] = {key, k};
    }
    for (const auto& [key, chain] : c.chains)
      if (chain.size() + 1 != order_.size()) {
        why = where(d) + "the sum of '" + c.keys[static_cast<size_t>(key)] +
              "' over micro-batches stops at " + std::to_string(chain.size());
        return false;
      }
    for (const auto& [v, at] : partial)
      if (users[static_cast<size_t>(v)].size() != 1 ||
          std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) {
        why = where(d) + "partial sum '" + g.values[v].name + "' is read outside its accumulation";
        return false;
      }
    return true;
  }

  // A collective or point-to-point instance joins one micro-batch's copies only (or only step-wide ops) on
  // every rank, so dropping a micro-batch everywhere drops whole calls.
  bool instancesStayInTheirMicroBatch(std::string& why) const {
    std::map<std::string, int> mbOf;
    for (size_t d = 0; d < plan_.devices.size(); ++d) {
      const Graph& g = plan_.devices[d].graph;
      for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o) {
        auto it = g.ops[o].attrs.find("instance");
        if (it == g.ops[o].attrs.end()) continue;
        const int j = copies_[d].opMb.at(static_cast<size_t>(o));
        auto [at, fresh] = mbOf.emplace(it->dump(), j);
        if (!fresh && at->second != j) {
          why = "collective instance " + it->dump() + " joins micro-batches " + std::to_string(at->second) +
                " and " + std::to_string(j);
          return false;
        }
      }
    }
    return true;
  }

  // Moves a kept copy (micro-batch j at position p) to its place in a batch of m micro-batches.
  void place(const Copies& c, int key, int j, int64_t p, int64_t m, Lineage& lin) const {
    for (size_t i = 0; i < lin.box.ranges.size(); ++i) {
      auto st = c.boxStep.find({key, i});
      if (st == c.boxStep.end()) continue;
      const int64_t s = st->second, o0 = lin.box.ranges[i].first - j * s;
      const int64_t size = lin.box.ranges[i].second - lin.box.ranges[i].first;
      const int64_t o = o0 / (n_ * s) * m * s + p * s + o0 % (n_ * s);
      lin.box.ranges[i] = {o, o + size};
    }
    auto ps = c.partStep.find(key);
    if (ps != c.partStep.end()) {
      const int64_t t = ps->second, q0 = lin.part - j * t;
      lin.part = static_cast<int>(q0 / (n_ * t) * m * t + p * t + q0 % (n_ * t));
      lin.parts = static_cast<int>(lin.parts / n_ * m);
    }
  }

  static std::string nameOf(const std::string& key, int j) {
    const size_t at = key.find("#*");
    return key.substr(0, at) + "#" + std::to_string(j) + key.substr(at + 2);
  }

  // What withCopies keeps, shared by its devices.
  struct CopyLayout {
    const std::set<int>& kept;
    std::map<int, int64_t> pos;  // kept copy -> its position among the kept ones
    std::vector<int> fill;       // kept copies the plan does not state
    std::vector<int> ks;         // the kept copies in order
    bool fold;
  };

  // withCopies on device d of `p` (its copies rebuilt from plan_'s device d), writing only that device and
  // what `t` and `carried` receive for it.
  bool copyDevice(Plan& p, size_t d, const CopyLayout& layout, FoldParameter* t, const FoldParameter* carry,
                  FoldParameter* carried, std::string& why) const {
    const std::set<int>& kept = layout.kept;
    const std::map<int, int64_t>& pos = layout.pos;
    const std::vector<int>& fill = layout.fill;
    const std::vector<int>& ks = layout.ks;
    const int64_t m = static_cast<int64_t>(kept.size());
    const bool fold = layout.fold;
    const Copies& c = copies_[d];
    if (c.ops.empty()) return true;
    const Device& src = plan_.devices[d];
    const Graph& g = src.graph;
    const size_t f = static_cast<size_t>(from_);
    // A handed-over plan's op, value or lineage is moved, not copied, unless implied copies are cloned from
    // it later (the template micro-batch's, when some kept copy is not stated).
    Device* own = given_ ? &given_->devices[d] : nullptr;
    auto movable = [&](int mb) { return own && (fill.empty() || mb != from_); };
    std::vector<bool> keepOp(g.ops.size()), keepValue(g.values.size());
    for (size_t o = 0; o < g.ops.size(); ++o)
      keepOp[o] = c.opMb[o] == kStepWide || kept.count(c.opMb[o]);
    std::map<OpId, int> lastAdd;  // the add that yields a chain's total -> the chain's key
    for (const auto& [key, chain] : c.chains) {
      for (size_t i = 0; i + 1 < chain.size(); ++i)
        keepOp[static_cast<size_t>(chain[i])] = false;
      lastAdd[chain.back()] = key;
    }
    for (size_t v = 0; v < g.values.size(); ++v) {
      const OpId prod = g.values[v].producer;
      keepValue[v] = (c.valueMb[v] == kStepWide || kept.count(c.valueMb[v])) &&
                     (prod == kNone || keepOp[static_cast<size_t>(prod)]);
    }
    Graph h;
    h.name = g.name;
    std::vector<ValueId> newId(g.values.size(), kNone);
    for (size_t v = 0; v < g.values.size(); ++v)
      if (keepValue[v]) {
        newId[v] = static_cast<ValueId>(h.values.size());
        h.values.push_back(movable(c.valueMb[v]) ? Value(std::move(own->graph.values[v]))
                                                 : Value(g.values[v]));
      }
    auto valueName = [&](size_t v) -> const std::string& {  // a kept value may have moved to h
      return newId[v] != kNone ? h.values[static_cast<size_t>(newId[v])].name : g.values[v].name;
    };
    auto addValue = [&h](std::string name, const TensorType& type) {
      h.values.push_back(Value{std::move(name), type, kNone, 0});
      return static_cast<ValueId>(h.values.size() - 1);
    };
    std::map<std::pair<int, ValueId>, ValueId> cloneId;  // (copy, template value) -> value
    for (int j : fill)
      for (size_t key = 0; key < c.keys.size(); ++key)
        if (const ValueId v = c.values[f][key]; v != kNone)
          cloneId[{j, v}] = addValue(nameOf(c.keys[key], j), g.values[v].type);
    auto copyValue = [&](int key, int k) {
      return stated_.count(k) ? newId[static_cast<size_t>(c.at(k, key))] : cloneId.at({k, c.at(from_, key)});
    };
    auto emit = [&h](Op op) {
      const OpId id = static_cast<OpId>(h.ops.size());
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        h.values[op.outputs[k]].producer = id;
        h.values[op.outputs[k]].producerOutput = static_cast<int>(k);
      }
      h.ops.push_back(std::move(op));
    };
    std::map<OpId, OpId> newOp;                    // kept op -> its id in h
    std::map<std::pair<int, OpId>, OpId> cloneOp;  // (copy, template op) -> the implied copy's op
    for (OpId o = 0; o < static_cast<OpId>(g.ops.size()); ++o) {
      const Op& op = g.ops[o];
      auto last = lastAdd.find(o);
      if (last != lastAdd.end()) {
        ValueId acc = copyValue(last->second, ks[0]);
        const ValueId total = newId[static_cast<size_t>(op.outputs[0])];
        for (size_t i = 1; i + 1 < ks.size(); ++i) {
          Op add = op;
          add.id = op.id + ".fold." + std::to_string(i);
          const ValueId out =
              addValue(h.values[static_cast<size_t>(total)].name + ".fold." + std::to_string(i),
                       h.values[static_cast<size_t>(total)].type);
          add.inputs = {acc, copyValue(last->second, ks[i])};
          add.outputs = {out};
          emit(std::move(add));
          acc = out;
        }
        Op add = op;
        add.inputs = {acc, copyValue(last->second, ks.back())};
        add.outputs = {total};
        if (t) t->sums.insert({d, static_cast<OpId>(h.ops.size())});
        emit(std::move(add));
        continue;
      }
      if (!keepOp[static_cast<size_t>(o)]) continue;
      newOp[o] = static_cast<OpId>(h.ops.size());
      const int mb = c.opMb[static_cast<size_t>(o)];
      Op kept = movable(mb) ? Op(std::move(own->graph.ops[static_cast<size_t>(o)])) : Op(op);
      for (ValueId& v : kept.inputs) {
        if (newId[static_cast<size_t>(v)] == kNone) {
          why = where(d) + "op '" + kept.id + "' reads '" + g.values[v].name + "' of a micro-batch not kept";
          return false;
        }
        v = newId[static_cast<size_t>(v)];
      }
      for (ValueId& v : kept.outputs)
        v = newId[static_cast<size_t>(v)];
      emit(std::move(kept));
      if (mb != from_) continue;
      for (int j : fill) {  // the implied copies of this op, right after it
        Op clone = op;
        clone.id = nameOf(c.opKeys[static_cast<size_t>(c.opKey[static_cast<size_t>(o)])], j);
        for (ValueId& v : clone.inputs)
          v = c.valueMb[static_cast<size_t>(v)] == from_ ? cloneId.at({j, v}) : newId[static_cast<size_t>(v)];
        for (ValueId& v : clone.outputs)
          v = cloneId.at({j, v});
        auto inst = clone.attrs.find("instance");
        if (inst != clone.attrs.end() && inst->is_string())
          clone.attrs.set("instance", inst->get<std::string>() + "@mb=" + std::to_string(j));
        cloneOp[{j, o}] = static_cast<OpId>(h.ops.size());
        emit(std::move(clone));
      }
    }
    for (ValueId v : g.inputs) {
      if (!keepValue[static_cast<size_t>(v)]) continue;
      h.inputs.push_back(newId[static_cast<size_t>(v)]);
      if (c.valueMb[static_cast<size_t>(v)] == from_)
        for (int j : fill)
          h.inputs.push_back(cloneId.at({j, v}));
    }
    for (ValueId v : g.outputs)
      h.outputs.push_back(newId[static_cast<size_t>(v)]);
    h.reindex();

    std::map<ValueId, Lineage> lineage;
    auto keep = [&](ValueId to, Lineage moved, size_t u, int j) {
      if (fold && j != kStepWide) place(c, c.valueKey[u], j, pos.at(j), m, moved);
      const Lineage& lin = moved;  // placing moves its box, not its tensor or its number of dims
      // A lineage on a scaled logical dimension that does not advance with the micro-batch (a step-wide
      // value of the batch) has no place in the folded batch.
      const ValueId lv = lineageValue(plan_.logical, lin);
      if (fold && lv != kNone)
        for (size_t i = 0; i < lin.box.ranges.size(); ++i) {
          const bool scaled =
              plan_.logical.values[lv].type.shape.at(i) != p.logical.values[lv].type.shape.at(i);
          if (scaled && (j == kStepWide || !c.boxStep.count({c.valueKey[u], i}))) {
            why = where(d) + "'" + valueName(u) + "' covers the batch of '" + lin.tensor +
                  "' without advancing with the micro-batch";
            return false;
          }
        }
      if (t && j != kStepWide) {
        const int key = c.valueKey[u];
        auto step = c.boxStep.lower_bound({key, 0});
        if (c.partStep.count(key) || (step != c.boxStep.end() && step->first.first == key))
          t->varying.insert({d, to});
      }
      lineage.emplace(to, std::move(moved));
      return true;
    };
    auto keepAll = [&](auto& source) {  // the handed-over device's lineage, or the plan's (const)
      for (auto& [v, lin] : source) {
        const size_t u = static_cast<size_t>(v);
        if (keepValue[u] &&
            !keep(newId[u], movable(c.valueMb[u]) ? Lineage(std::move(lin)) : Lineage(lin), u, c.valueMb[u]))
          return false;
        if (c.valueMb[u] == from_)
          for (int j : fill)
            if (!keep(cloneId.at({j, v}), translated(c, c.valueKey[u], lin, j - from_), u, j)) return false;
      }
      return true;
    };
    if (!(own ? keepAll(own->lineage) : keepAll(src.lineage))) return false;
    if (carry && carried) {
      auto moveOps = [&](const std::set<std::pair<size_t, OpId>>& from,
                         std::set<std::pair<size_t, OpId>>& to) {
        for (const auto& [dev, o] : onDevice(from, d)) {
          if (auto it = newOp.find(o); it != newOp.end()) to.insert({d, it->second});
          for (int j : fill)
            if (auto it = cloneOp.find({j, o}); it != cloneOp.end()) to.insert({d, it->second});
        }
      };
      moveOps(carry->sums, carried->sums);
      moveOps(carry->averages, carried->averages);
      for (const auto& [dev, v] : onDevice(carry->varying, d)) {
        if (newId[static_cast<size_t>(v)] != kNone)
          carried->varying.insert({d, newId[static_cast<size_t>(v)]});
        for (int j : fill)
          if (auto it = cloneId.find({j, v}); it != cloneId.end()) carried->varying.insert({d, it->second});
      }
    }
    p.devices[d].graph = std::move(h);
    p.devices[d].lineage = std::move(lineage);
    return true;
  }

  // Rewrites the devices of `p` to hold exactly the copies `kept`: copies not kept are dropped, kept ones
  // not stated are written as translates of the template copy (each op right after its template op), and
  // every accumulation chain sums the kept copies (its last add, which yields the total, stays). With
  // `fold`, kept copy j moves to its position among the kept ones in a batch of |kept| micro-batches.
  // `t` (when folding) receives what scales with the copy count: each chain's total, the copies' own values.
  // `carry`, a fold's parameter in `plan_`'s terms, is moved to the rewritten graphs in `carried`.
  bool withCopies(Plan& p, const std::set<int>& kept, bool fold, std::string& why, FoldParameter* t = nullptr,
                  const FoldParameter* carry = nullptr, FoldParameter* carried = nullptr) const {
    std::map<int, int64_t> pos;
    for (int k : kept)
      pos.emplace(k, static_cast<int64_t>(pos.size()));
    std::vector<int> fill;
    for (int k : kept)
      if (!stated_.count(k)) fill.push_back(k);
    const CopyLayout layout{kept, std::move(pos), std::move(fill), std::vector<int>(kept.begin(), kept.end()),
                            fold};
    // Devices are independent: two halves, each with its own parameters, merged in device order.
    struct Half {
      FoldParameter t, carried;
      std::string why;
    };
    Half halves[2];
    const size_t n = p.devices.size();
    inTwoHalves(n, largePlan(plan_), [&](size_t begin, size_t end) {
      Half& h = halves[begin == 0 ? 0 : 1];
      for (size_t d = begin; d < end; ++d)
        if (!copyDevice(p, d, layout, t ? &h.t : nullptr, carry, carried ? &h.carried : nullptr, h.why))
          return;
    });
    for (Half& h : halves) {
      if (!h.why.empty()) {
        why = h.why;
        return false;
      }
      if (t) t->merge(h.t);
      if (carried) carried->merge(h.carried);
    }
    if (carry && carried) {  // devices without copies keep their graphs
      carried->logicalAxes = carry->logicalAxes;
      for (const auto* part : {&carry->sums, &carry->averages})
        for (const auto& e : *part)
          if (copies_[e.first].ops.empty())
            (part == &carry->sums ? carried->sums : carried->averages).insert(e);
      for (const auto& e : carry->varying)
        if (copies_[e.first].ops.empty()) carried->varying.insert(e);
    }
    return true;
  }

  // The plan without its micro-batch statement, and without the device graphs and lineage withCopies
  // rebuilds (copying those would be wasted: they are most of the plan).
  Plan shell(std::optional<Graph> logical = std::nullopt) const {
    Plan p;
    p.name = plan_.name;
    p.mesh = plan_.mesh;
    p.replicas = plan_.replicas;
    p.logical = logical ? std::move(*logical) : plan_.logical;
    p.state = plan_.state;
    p.metadata = plan_.metadata;
    p.devices.reserve(plan_.devices.size());
    for (size_t d = 0; d < plan_.devices.size(); ++d) {
      const Device& src = plan_.devices[d];
      if (!copies_[d].ops.empty()) {
        p.devices.push_back(Device{src.rank, src.coord, {}, {}});
        continue;
      }
      p.devices.push_back(given_ ? Device(std::move(given_->devices[d])) : Device(src));
    }
    return p;
  }

  // The folded plan: on every device the kept copies at their positions, the logical batch scaled.
  bool build(FoldedPlan& out, const std::set<int>& kept, Graph logical, std::string& why) {
    Plan p = shell(std::move(logical));
    FoldParameter t;
    if (!withCopies(p, kept, true, why, &t, carry_, &out.carried)) return false;
    t.logicalAxes.insert(out.scaled.begin(), out.scaled.end());
    out.parameter = std::move(t);
    // With compact replicas still to be folded the plan is not whole yet (the verifier folds those first).
    out.validated = !p.replicas;
    std::vector<Diagnostic> errs = out.validated ? validatePlan(p) : std::vector<Diagnostic>{};
    if (!errs.empty()) {
      why = "the folded plan is invalid: " + errs.front().where + ": " + errs.front().message;
      return false;
    }
    size_t deviants = 0;
    for (const Copies& c : copies_)
      deviants += c.deviants.size();
    std::ostringstream os;
    os << "micro-batch fold: " << n_ << " micro-batches checked as " << kept.size() << " (micro-batches";
    for (int k : kept)
      os << " " << k;
    os << (compact_ ? ", of which " + std::to_string(stated_.size()) + " stated" : std::string()) << "; "
       << deviants << " cop" << (deviants == 1 ? "y" : "ies")
       << " deviating from the translate of the others, kept as written); the logical batch scaled by "
       << n_ / static_cast<int64_t>(kept.size());
    out.notes.push_back(os.str());
    out.plan = std::move(p);
    out.folded = true;
    return true;
  }

  const Plan& plan_;
  Plan* given_;  // plan_ when handed over (its device graphs and lineage are moved out), else null
  bool compact_;
  int from_;                     // the template pair of a compact plan: copies from_ and from_ + 1
  int point_;                    // the size point: 0 folds to the smallest count, 1 to the next
  const FoldParameter* carry_;   // the replica fold's parameter, moved to the folded graphs
  int n_ = 0;                    // micro-batches per device (0: none)
  std::set<int> stated_;         // the micro-batches every device states (all of them in an explicit plan)
  std::vector<int> order_;       // stated_ in order
  bool lineageDeviant_ = false;  // a compact plan states a copy that is not the translate in its values
  std::vector<Copies> copies_;
  std::set<std::pair<ValueId, int>> seeds_;  // the logical (value, dim) the copies advance along
};

}  // namespace

FoldedPlan foldMicroBatches(const Plan& plan, int point, const FoldParameter* carry) {
  return MicroBatchFolder(plan, point, carry).run();
}

FoldedPlan foldMicroBatches(Plan&& plan, int point, const FoldParameter* carry) {
  return MicroBatchFolder(plan, point, carry, &plan).run();
}

Plan expandMicroBatches(const Plan& plan) {
  if (!plan.microbatches) return plan;
  return MicroBatchFolder(plan, 0).expand();
}

}  // namespace paraproof::stage

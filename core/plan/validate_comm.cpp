// Collective and send/recv matching across devices: every call has its partners, with the same meaning.
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/plan/validate_checks.h"

namespace paraproof::validation {

namespace {

struct Call {
  size_t device = 0;
  OpId op = kNone;
};

std::string groupString(const std::vector<int>& g) {
  std::string s = "[";
  for (size_t k = 0; k < g.size(); ++k)
    s += (k ? "," : "") + std::to_string(g[k]);
  return s + "]";
}

std::string typesString(const Graph& g, const std::vector<ValueId>& vs) {
  std::string s;
  for (size_t k = 0; k < vs.size(); ++k) {
    const TensorType& t = g.values[vs[k]].type;
    s += (k ? ", " : "") + shapeString(t.shape) + " " + dtypeName(t.dtype);
  }
  return s.empty() ? "no tensors" : s;
}

std::vector<TensorType> types(const Graph& g, const std::vector<ValueId>& vs) {
  std::vector<TensorType> out;
  for (ValueId v : vs)
    out.push_back(g.values[v].type);
  return out;
}

class CommChecker {
 public:
  CommChecker(const Plan& plan, Report& r) : plan_(plan), r_(r) {
    for (size_t i = 0; i < plan.devices.size(); ++i)
      deviceOfRank_.emplace(plan.devices[i].rank, i);
  }

  bool run() {
    size_t before = r_.count();
    for (size_t i = 0; i < plan_.devices.size(); ++i) {
      const Graph& g = plan_.devices[i].graph;
      for (OpId j = 0; j < static_cast<OpId>(g.ops.size()); ++j) {
        const Op& op = g.ops[j];
        if (isCollectiveOp(op))
          readCollective({i, j});
        else if (isP2P(op.kind))
          readP2P({i, j});
      }
    }
    for (const auto& [instance, calls] : collectives_)
      matchCollective(instance, calls);
    matchP2P();
    return r_.count() == before;
  }

 private:
  const Device& dev(const Call& c) const { return plan_.devices[c.device]; }
  const Op& op(const Call& c) const { return dev(c).graph.ops[c.op]; }
  std::string at(const Call& c) const { return opPtr(c.device, c.op); }
  std::string name(const Call& c) const { return op(c).kind + " '" + op(c).id + "'"; }
  bool isRank(int rank) const { return deviceOfRank_.count(rank) > 0; }

  bool needInstance(const Call& c) {
    if (!commInstance(op(c)).empty()) return true;
    r_.add(at(c) + "/attrs", who(dev(c)) + name(c) + " needs attr 'instance' (a non-empty string)");
    return false;
  }

  void readCollective(const Call& c) {
    const Op& o = op(c);
    std::vector<int> group = commGroup(o);
    bool ok = needInstance(c);
    if (group.empty()) {
      r_.add(at(c) + "/attrs", who(dev(c)) + name(c) + " needs attr 'group' (a non-empty list of ranks)");
      return;
    }
    std::unordered_set<int> seen;
    bool self = false;
    for (int rank : group) {
      if (!isRank(rank)) {
        r_.add(at(c) + "/attrs/group", who(dev(c)) + name(c) + " group " + groupString(group) +
                                           " names rank " + std::to_string(rank) +
                                           ", which is not a device of the plan");
        ok = false;
      }
      if (!seen.insert(rank).second) {
        r_.add(at(c) + "/attrs/group", who(dev(c)) + name(c) + " group " + groupString(group) +
                                           " lists rank " + std::to_string(rank) + " twice");
        ok = false;
      }
      self = self || rank == dev(c).rank;
    }
    if (!self) {
      r_.add(at(c) + "/attrs/group", who(dev(c)) + name(c) + " has group " + groupString(group) +
                                         ", which does not contain the issuing rank " +
                                         std::to_string(dev(c).rank));
      ok = false;
    }
    if (ok) collectives_[commInstance(o)].push_back(c);
  }

  void matchCollective(const std::string& instance, const std::vector<Call>& calls) {
    const std::string what = "collective instance '" + instance + "': ";
    // Exporters that name each call after its op reuse one id across disjoint groups.
    const std::string planWide =
        " (instance ids are plan-wide: distinct calls need distinct ids, even in disjoint groups)";
    const Call& ref = calls.front();
    const Op& refOp = op(ref);
    std::vector<int> refGroup = commGroup(refOp);
    std::vector<TensorType> refIn = types(dev(ref).graph, refOp.inputs);
    std::unordered_map<int, const Call*> byRank;
    for (const Call& c : calls) {
      const Op& o = op(c);
      auto [prev, fresh] = byRank.emplace(dev(c).rank, &c);
      if (!fresh) {
        r_.add(at(c), what + "rank " + std::to_string(dev(c).rank) + " issues it twice (ops '" +
                          op(*prev->second).id + "' and '" + o.id + "')" + planWide);
        continue;
      }
      if (&c == &ref) continue;
      const std::string pair = "rank " + std::to_string(dev(ref).rank) + " ('" + refOp.id + "') ";
      const std::string other = "rank " + std::to_string(dev(c).rank) + " ('" + o.id + "') ";
      if (o.kind != refOp.kind) {
        r_.add(at(c), what + "kind mismatch: " + pair + "issues " + refOp.kind + " but " + other + "issues " +
                          o.kind + planWide);
        continue;
      }
      std::vector<int> group = commGroup(o);
      if (group != refGroup) {
        r_.add(at(c) + "/attrs/group", what + "group mismatch: " + pair + "uses group " +
                                           groupString(refGroup) + " but " + other + "uses " +
                                           groupString(group) + planWide);
        continue;
      }
      if (types(dev(c).graph, o.inputs) != refIn)
        r_.add(at(c), what + "shape mismatch: " + pair + "contributes " +
                          typesString(dev(ref).graph, refOp.inputs) + " but " + other + "contributes " +
                          typesString(dev(c).graph, o.inputs));
      for (const std::string& key : differingAttrs(refOp.attrs, o.attrs))
        r_.add(at(c) + "/attrs", what + "attribute mismatch: " + pair + "has " + key + " = " +
                                     attrText(refOp.attrs, key) + " but " + other + "has " + key + " = " +
                                     attrText(o.attrs, key));
    }
    for (int rank : refGroup)
      if (!byRank.count(rank))
        r_.add(at(ref), what + "group member rank " + std::to_string(rank) + " never issues it (" +
                            name(ref) + " on rank " + std::to_string(dev(ref).rank) + " has group " +
                            groupString(refGroup) + "): membership mismatch, the collective would hang");
  }

  static std::vector<std::string> differingAttrs(const Json& a, const Json& b) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : a.items())
      if (!b.contains(k) || b[k] != v) keys.push_back(k);
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) keys.push_back(k);
    return keys;
  }
  static std::string attrText(const Json& attrs, const std::string& key) {
    return attrs.contains(key) ? attrs[key].dump() : "(absent)";
  }

  // Send/recv, keyed by (source rank, destination rank, instance).
  using Key = std::tuple<int, int, std::string>;

  void readP2P(const Call& c) {
    const Op& o = op(c);
    int peer = commPeer(o);
    bool ok = needInstance(c);
    if (peer == kNone) {
      r_.add(at(c) + "/attrs", who(dev(c)) + name(c) + " needs attr 'peer' (a rank)");
      return;
    }
    if (!isRank(peer)) {
      r_.add(at(c) + "/attrs/peer", who(dev(c)) + name(c) + " names peer rank " + std::to_string(peer) +
                                        ", which is not a device of the plan");
      return;
    }
    if (!ok) return;
    bool send = o.kind == "send";
    Key key{send ? dev(c).rank : peer, send ? peer : dev(c).rank, commInstance(o)};
    (send ? sends_ : recvs_)[key].push_back(c);
  }

  void matchP2P() {
    auto describe = [](const Key& k) {
      return "instance '" + std::get<2>(k) + "' from rank " + std::to_string(std::get<0>(k)) + " to rank " +
             std::to_string(std::get<1>(k));
    };
    auto duplicates = [&](const std::map<Key, std::vector<Call>>& calls, const char* verb) {
      for (const auto& [k, cs] : calls)
        for (size_t n = 1; n < cs.size(); ++n)
          r_.add(at(cs[n]), "send/recv " + describe(k) + " is " + verb + " twice (ops '" + op(cs[0]).id +
                                "' and '" + op(cs[n]).id + "')");
    };
    duplicates(sends_, "sent");
    duplicates(recvs_, "received");
    for (const auto& [k, cs] : sends_) {
      auto it = recvs_.find(k);
      const Call& s = cs.front();
      if (it == recvs_.end()) {
        r_.add(at(s), who(dev(s)) + "unpaired send: " + name(s) + " to rank " +
                          std::to_string(std::get<1>(k)) + " (instance '" + std::get<2>(k) +
                          "') has no matching recv on rank " + std::to_string(std::get<1>(k)));
        continue;
      }
      const Call& rv = it->second.front();
      const Op& so = op(s);
      const Op& ro = op(rv);
      if (types(dev(s).graph, so.inputs) != types(dev(rv).graph, ro.outputs))
        r_.add(at(rv), "send/recv " + describe(k) + ": shape mismatch: send '" + so.id + "' has " +
                           typesString(dev(s).graph, so.inputs) + " but recv '" + ro.id + "' expects " +
                           typesString(dev(rv).graph, ro.outputs));
    }
    for (const auto& [k, cs] : recvs_)
      if (!sends_.count(k)) {
        const Call& rv = cs.front();
        r_.add(at(rv), who(dev(rv)) + "unpaired recv: " + name(rv) + " from rank " +
                           std::to_string(std::get<0>(k)) + " (instance '" + std::get<2>(k) +
                           "') has no matching send on rank " + std::to_string(std::get<0>(k)));
      }
  }

  const Plan& plan_;
  Report& r_;
  std::unordered_map<int, size_t> deviceOfRank_;
  std::map<std::string, std::vector<Call>> collectives_;
  std::map<Key, std::vector<Call>> sends_, recvs_;
};

}  // namespace

bool checkCommunication(const Plan& plan, Report& r) {
  return CommChecker(plan, r).run();
}

}  // namespace paraproof::validation

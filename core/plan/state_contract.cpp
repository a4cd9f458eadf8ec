#include "core/plan/state_contract.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/plan/coverage_grid.h"
#include "core/plan/validate_checks.h"

namespace paraproof {

namespace {

using validation::boxString;

// The parts of `held` not covered by `boxes` (all boxes of the same tensor), in the tensor's coordinates.
std::vector<Box> uncovered(const Box& held, const std::vector<Box>& boxes) {
  std::set<Box> local;  // clipped to `held`, relative to its start
  for (const Box& b : boxes) {
    if (b == held) return {};
    Box c;
    bool empty = false;
    for (size_t k = 0; k < held.ranges.size(); ++k) {
      const int64_t lo = std::max(held.ranges[k].first, b.ranges[k].first);
      const int64_t hi = std::min(held.ranges[k].second, b.ranges[k].second);
      empty |= lo >= hi;
      c.ranges.emplace_back(lo - held.ranges[k].first, hi - held.ranges[k].first);
    }
    if (!empty) local.insert(std::move(c));
  }
  validation::CoverageGrid grid(held.extent(), local);
  if (grid.cellCount() > validation::kMaxCells) return {held};  // never silently accept
  std::vector<Box> cells = grid.missing(16).first;
  for (Box& c : cells)
    for (size_t k = 0; k < c.ranges.size(); ++k) {
      c.ranges[k].first += held.ranges[k].first;
      c.ranges[k].second += held.ranges[k].first;
    }
  return cells;
}

bool intersects(const Box& a, const Box& b) {
  for (size_t k = 0; k < a.ranges.size(); ++k)
    if (std::max(a.ranges[k].first, b.ranges[k].first) >= std::min(a.ranges[k].second, b.ranges[k].second))
      return false;
  return true;
}

std::string pieceString(const Lineage& l) {
  std::string s = l.box.ranges.empty() ? "the scalar" : boxString(l.box);
  if (l.parts > 1) s = "part " + std::to_string(l.part) + " of " + std::to_string(l.parts) + " of " + s;
  return s;
}

std::string describe(const StateViolation& v) {
  std::string m = "rank " + std::to_string(v.rank) + ": ";
  if (!v.held.empty()) {
    m += "holds " + pieceString(v.piece) + " of state '" + v.state + "' (device input '" + v.held +
         "') but outputs ";
    if (v.missing.size() == 1 && v.missing.front() == v.piece.box) {
      m += "no such piece of its successor '" + v.successor + "'";
    } else {
      m += "only some of that piece of its successor '" + v.successor + "' (missing ";
      for (size_t k = 0; k < v.missing.size() && k < 3; ++k)
        m += (k ? ", " : "") + boxString(v.missing[k]);
      m += v.missing.size() > 3 ? ", ...)" : ")";
    }
  } else {
    m += "outputs state '" + v.state + "' itself instead of its successor '" + v.successor + "'";
  }
  if (!v.stale.empty()) {
    m += v.held.empty() ? ":" : ";";
    m += " output";
    m += v.stale.size() > 1 ? "s " : " ";
    for (size_t k = 0; k < v.stale.size(); ++k)
      m += (k ? ", '" : "'") + v.stale[k] + "'";
    m += " carr" + std::string(v.stale.size() > 1 ? "y" : "ies") + " the lineage of the state input '" +
         v.state + "', not of its successor (the update was dropped)";
  }
  return m + ": after the step this device's state is stale and the copies diverge";
}

}  // namespace

std::vector<StateViolation> checkStateContract(const Plan& plan) {
  std::vector<StateViolation> out;
  if (plan.state.empty()) return out;
  std::map<std::string, const StatePair*> byInput;
  for (const StatePair& s : plan.state)
    byInput.emplace(s.input, &s);
  for (const Device& d : plan.devices) {
    const Graph& g = d.graph;
    // This device's outputs by the logical tensor their lineage names.
    std::map<std::string, std::vector<std::pair<ValueId, const Lineage*>>> outputs;
    for (ValueId v : g.outputs)
      if (auto it = d.lineage.find(v); it != d.lineage.end())
        outputs[it->second.tensor].push_back({v, &it->second});
    auto note = [&](StateViolation& viol, const Op& op) {
      if (std::find(viol.ops.begin(), viol.ops.end(), op.id) == viol.ops.end()) viol.ops.push_back(op.id);
      if (!op.scope.empty() &&
          std::find(viol.scopes.begin(), viol.scopes.end(), op.scope) == viol.scopes.end())
        viol.scopes.push_back(op.scope);
    };
    auto noteUsers = [&](StateViolation& viol, ValueId v) {
      for (const Op& op : g.ops)
        if (std::find(op.inputs.begin(), op.inputs.end(), v) != op.inputs.end()) note(viol, op);
    };
    std::map<std::string, size_t> violationOf;  // state input -> index in `out` (for stale outputs)
    std::set<std::tuple<std::string, Box, int, int>> checked;
    for (ValueId v : g.inputs) {
      auto lin = d.lineage.find(v);
      if (lin == d.lineage.end()) continue;
      const Lineage& piece = lin->second;
      auto st = byInput.find(piece.tensor);
      if (st == byInput.end()) continue;  // x -> x (state the step keeps): the holder outputs x itself
      if (!checked.insert({piece.tensor, piece.box, piece.part, piece.parts}).second) continue;
      std::vector<Box> boxes;
      if (auto succ = outputs.find(st->second->output); succ != outputs.end())
        for (const auto& [ov, ol] : succ->second)
          if (ol->part == piece.part && ol->parts == piece.parts) boxes.push_back(ol->box);
      std::vector<Box> missing = uncovered(piece.box, boxes);
      if (missing.empty()) continue;
      StateViolation viol;
      viol.rank = d.rank;
      viol.state = st->second->input;
      viol.successor = st->second->output;
      viol.held = g.values[v].name;
      viol.piece = piece;
      viol.missing = std::move(missing);
      noteUsers(viol, v);
      // Ops computing the successor's piece that the device then does not output (a dropped update).
      for (const Op& op : g.ops)
        for (ValueId o : op.outputs)
          if (auto ol = d.lineage.find(o); ol != d.lineage.end() && ol->second.tensor == viol.successor &&
                                           ol->second.part == piece.part && ol->second.parts == piece.parts &&
                                           intersects(ol->second.box, piece.box))
            note(viol, op);
      violationOf.emplace(viol.state, out.size());
      out.push_back(std::move(viol));
    }
    // Outputs naming a state input: the old value presented as the step's result.
    for (const auto& [tensor, outs] : outputs) {
      auto st = byInput.find(tensor);
      if (st == byInput.end() || st->second->input == st->second->output) continue;
      auto at = violationOf.find(tensor);
      if (at == violationOf.end()) {
        StateViolation viol;
        viol.rank = d.rank;
        viol.state = st->second->input;
        viol.successor = st->second->output;
        at = violationOf.emplace(tensor, out.size()).first;
        out.push_back(std::move(viol));
      }
      StateViolation& viol = out[at->second];
      for (const auto& [ov, ol] : outs) {
        viol.stale.push_back(g.values[ov].name);
        OpId p = g.values[ov].producer;
        if (p != kNone)
          note(viol, g.ops[p]);
        else
          noteUsers(viol, ov);
      }
    }
  }
  for (StateViolation& v : out)
    v.message = describe(v);
  return out;
}

}  // namespace paraproof

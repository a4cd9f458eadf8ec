// Would the plan hang? Every device runs its ops in order: a collective completes once all members reached
// it, a recv once the matching send ran (sends never block). Stuck devices mean the order is inconsistent.
#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/plan/validate_checks.h"

namespace paraproof::validation {

namespace {

using P2PKey = std::tuple<int, int, std::string>;  // (source rank, destination rank, instance)

class OrderSimulation {
 public:
  explicit OrderSimulation(const Plan& plan) : plan_(plan), pc_(plan.devices.size(), 0) {
    for (size_t i = 0; i < plan.devices.size(); ++i)
      deviceOfRank_.emplace(plan.devices[i].rank, i);
  }

  // Returns the devices that never finish.
  std::vector<size_t> run() {
    for (size_t i = 0; i < plan_.devices.size(); ++i)
      ready_.push_back(i);
    while (!ready_.empty()) {
      size_t d = ready_.front();
      ready_.pop_front();
      advance(d);
    }
    std::vector<size_t> stuck;
    for (size_t i = 0; i < plan_.devices.size(); ++i)
      if (pc_[i] < plan_.devices[i].graph.ops.size()) stuck.push_back(i);
    return stuck;
  }

  size_t pc(size_t d) const { return pc_[d]; }

 private:
  const Op& current(size_t d) const { return plan_.devices[d].graph.ops[pc_[d]]; }

  // Runs device d until it finishes or blocks. Each device is queued once per unblocking, so every op is
  // visited a constant number of times.
  void advance(size_t d) {
    const Graph& g = plan_.devices[d].graph;
    const int rank = plan_.devices[d].rank;
    while (pc_[d] < g.ops.size()) {
      const Op& op = current(d);
      if (isCollectiveOp(op)) {
        std::vector<int> group = commGroup(op);
        if (++arrived_[commInstance(op)] < group.size()) return;  // wait for the other members
        for (int member : group) {
          size_t m = deviceOfRank_.at(member);
          ++pc_[m];
          if (m != d) ready_.push_back(m);
        }
        continue;
      }
      if (op.kind == "send") {
        P2PKey key{rank, commPeer(op), commInstance(op)};
        sent_.insert(key);
        if (auto it = waitingRecv_.find(key); it != waitingRecv_.end()) {
          ready_.push_back(it->second);
          waitingRecv_.erase(it);
        }
      } else if (op.kind == "recv") {
        P2PKey key{commPeer(op), rank, commInstance(op)};
        if (!sent_.count(key)) {
          waitingRecv_[key] = d;
          return;
        }
      }
      ++pc_[d];
    }
  }

  const Plan& plan_;
  std::vector<size_t> pc_;
  std::unordered_map<int, size_t> deviceOfRank_;
  std::deque<size_t> ready_;
  std::unordered_map<std::string, size_t> arrived_;
  std::set<P2PKey> sent_;
  std::map<P2PKey, size_t> waitingRecv_;
};

}  // namespace

void checkCommunicationOrder(const Plan& plan, Report& r) {
  OrderSimulation sim(plan);
  std::vector<size_t> stuck = sim.run();
  if (stuck.empty()) return;
  bool collective = false;
  std::vector<std::string> waits;
  for (size_t d : stuck) {
    const Device& dev = plan.devices[d];
    const Op& op = dev.graph.ops[sim.pc(d)];
    std::string w = "rank " + std::to_string(dev.rank) + " waits in " + op.kind + " '" + op.id + "'";
    if (op.kind == "recv") w += " from rank " + std::to_string(commPeer(op));
    if (commInstance(op) != op.id) w += " (instance '" + commInstance(op) + "')";
    collective = collective || isCollectiveOp(op);
    waits.push_back(std::move(w));
  }
  constexpr size_t kShown = 4;
  std::string text;
  for (size_t k = 0; k < waits.size() && k < kShown; ++k) {
    if (k > 0) text += waits.size() == 2 ? " while " : (k + 1 == waits.size() ? " and " : ", ");
    text += waits[k];
  }
  if (waits.size() > kShown) text += ", and " + std::to_string(waits.size() - kShown) + " more ranks wait";
  r.add(opPtr(stuck.front(), static_cast<OpId>(sim.pc(stuck.front()))),
        std::string(collective ? "collective" : "send/recv") + " order would hang: " + text);
}

}  // namespace paraproof::validation

#include "core/stage/signature.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "core/stage/digest.h"

namespace paraproof::stage {

namespace {

// Encodes what lowering reads (core/stage/lower.cpp), in a fixed traversal, with names renamed by first
// appearance. Anything lowering could read but this does not rename is mixed verbatim: that only makes
// fewer stages equal, never two different stages equal.
class Signer {
 public:
  Signer(const Plan& plan, const Stage& stage, const IntDomains& domains,
         const std::vector<const FoldIndex*>& folds = {})
      : plan_(plan), stage_(stage), domains_(domains), folds_(folds) {
    std::vector<int> devs;
    for (const DeviceOp& d : stage.deviceOps)
      devs.push_back(d.device);
    for (const DeviceValue& c : stage.checked)
      devs.push_back(c.device);
    std::sort(devs.begin(), devs.end());
    devs.erase(std::unique(devs.begin(), devs.end()), devs.end());
    // Order-preserving: lowering visits devices in plan order, and so does the renamed stage.
    for (size_t i = 0; i < devs.size(); ++i) {
      localDevice_[devs[i]] = static_cast<int>(i);
      localRank_[plan.devices[devs[i]].rank] = static_cast<int>(i);
    }
    for (const DeviceOp& d : stage.deviceOps)
      inStage_.insert(d);
  }

  // The signature, then each fold parameter's marks on the values and ops it visited, in their local order
  // (after the traversal, so that every logical value has its final local number).
  MarkedSignature marked() {
    MarkedSignature out{run(), {}};
    std::vector<ValueId> logical(logical_.size());
    for (const auto& [v, local] : logical_)
      logical[static_cast<size_t>(local)] = v;
    std::vector<std::pair<int, ValueId>> device(deviceValues_.size());
    for (const auto& [dv, local] : deviceValues_)
      device[static_cast<size_t>(local)] = dv;
    for (const FoldIndex* fold : folds_) {
      Digest m;
      for (ValueId v : logical)  // which axes scale with the count
        for (size_t a = 0; a < plan_.logical.values[v].type.shape.size(); ++a)
          m.mix(uint64_t{fold->logicalAxis(v, static_cast<int>(a))});
      for (const auto& [d, v] : device) {  // which values are a member's own, and of which logical tensor
        const bool varying = fold->varying(static_cast<size_t>(d), v);
        m.mix(uint64_t{varying});
        if (varying) m.mix(lineageMark(d, v));
      }
      for (const DeviceOp& dop : stage_.deviceOps) {  // which ops sum or average over the members
        const size_t d = static_cast<size_t>(dop.device);
        m.mix(uint64_t{fold->sums(d, dop.op)} | uint64_t{fold->averages(d, dop.op)} << 1);
      }
      out.marks.push_back(m.hex());
    }
    return out;
  }

  std::string run() {
    d_.mix(static_cast<uint64_t>(stage_.communication));
    d_.mix(stage_.logicalOps.size());
    for (OpId o : stage_.logicalOps) {
      const Op& op = plan_.logical.ops[o];
      d_.mix(op.kind);
      d_.mix(op.attrs.dump());
      d_.mix(op.inputs.size());
      for (ValueId v : op.inputs)
        logicalRef(v);
      d_.mix(op.outputs.size());
      for (ValueId v : op.outputs) {
        type(plan_.logical.values[v].type);
        logical_.emplace(v, static_cast<int>(logical_.size()));
      }
    }
    d_.mix(stage_.deviceOps.size());
    for (const DeviceOp& dop : stage_.deviceOps) {
      const Device& dev = plan_.devices[dop.device];
      const Op& op = dev.graph.ops[dop.op];
      d_.mix(static_cast<uint64_t>(localDevice_.at(dop.device)));
      d_.mix(op.kind);
      attrs(op.attrs);
      d_.mix(op.inputs.size());
      for (ValueId v : op.inputs)
        deviceRef(dop.device, v);
      d_.mix(op.outputs.size());
      for (ValueId v : op.outputs) {
        type(dev.graph.values[v].type);
        deviceValues_.emplace(std::make_pair(dop.device, v), static_cast<int>(deviceValues_.size()));
      }
    }
    d_.mix(stage_.checked.size());
    for (const DeviceValue& c : stage_.checked) {
      d_.mix(static_cast<uint64_t>(localDevice_.at(c.device)));
      deviceRef(c.device, c.value);
      const Device& dev = plan_.devices[c.device];
      auto lin = dev.lineage.find(c.value);
      if (lin == dev.lineage.end())
        d_.mix(uint64_t{0xdead});
      else
        lineage(lin->second);
    }
    return d_.hex();
  }

 private:
  void type(const TensorType& t) {
    d_.mix(static_cast<uint64_t>(t.dtype));
    d_.mix(t.shape.size());
    for (int64_t e : t.shape)
      d_.mix(static_cast<uint64_t>(e));
  }

  // A logical value: computed earlier in the stage (its local id), or a free input (first use: its type and
  // the integer domain its variables range over).
  void logicalRef(ValueId v) {
    auto it = logical_.find(v);
    if (it != logical_.end()) {
      d_.mix(static_cast<uint64_t>(it->second));
      return;
    }
    d_.mix(uint64_t{0xf4ee});
    type(plan_.logical.values[v].type);
    const ops::IntRange& r = domains_.logical.at(v);
    d_.mix(static_cast<uint64_t>(r.bounded));
    d_.mix(static_cast<uint64_t>(r.lo));
    d_.mix(static_cast<uint64_t>(r.hi));
    logical_.emplace(v, static_cast<int>(logical_.size()));
  }

  void lineage(const Lineage& lin) {
    ValueId v = lineageValue(plan_.logical, lin);
    if (v == kNone) {
      d_.mix(uint64_t{0xbad});
      d_.mix(lin.tensor);  // lowering rejects it; keep such stages apart
    } else {
      logicalRef(v);
    }
    d_.mix(lin.box.ranges.size());
    for (const auto& [lo, hi] : lin.box.ranges) {
      d_.mix(static_cast<uint64_t>(lo));
      d_.mix(static_cast<uint64_t>(hi));
    }
    d_.mix(static_cast<uint64_t>(lin.part));
    d_.mix(static_cast<uint64_t>(lin.parts));
  }

  // The mark of a device value's lineage tensor, as condition D reads it: it sums a varying operand's
  // tensor over the members, which matters only where the stage reads that tensor (then it has a local
  // number); 0: no lineage, 1: a tensor the stage does not read.
  uint64_t lineageMark(int device, ValueId v) const {
    const Device& dev = plan_.devices[static_cast<size_t>(device)];
    const auto lin = dev.lineage.find(v);
    if (lin == dev.lineage.end()) return 0;
    const ValueId lv = lineageValue(plan_.logical, lin->second);
    const auto local = lv == kNone ? logical_.end() : logical_.find(lv);
    return local == logical_.end() ? 1 : 2 + static_cast<uint64_t>(local->second);
  }

  // A device value: produced earlier in the stage, or a stage input fixed by its lineage.
  void deviceRef(int device, ValueId v) {
    auto it = deviceValues_.find({device, v});
    if (it != deviceValues_.end()) {
      d_.mix(static_cast<uint64_t>(it->second));
      return;
    }
    const Device& dev = plan_.devices[device];
    OpId p = dev.graph.values[v].producer;
    // Produced in the stage but not yet seen: an op out of program order (lowering rejects the stage).
    d_.mix(p != kNone && inStage_.count({device, p}) ? uint64_t{0x0bad} : uint64_t{0x1ee});
    type(dev.graph.values[v].type);
    auto lin = dev.lineage.find(v);
    if (lin == dev.lineage.end())
      d_.mix(uint64_t{0xdead});
    else
      lineage(lin->second);
    deviceValues_.emplace(std::make_pair(device, v), static_cast<int>(deviceValues_.size()));
  }

  // Ranks (group members, peers, broadcast sources) become stage-local device indices and collective
  // instances their order of appearance; every other attribute is kept as written.
  void attrs(const Json& a) {
    const bool renamed =
        a.contains("group") || a.contains("peer") || a.contains("src") || a.contains("instance");
    if (!renamed) {
      d_.mix(a.dump());
      return;
    }
    Json c = a;
    auto rank = [&](Json& r) {
      if (!r.is_number_integer()) return;
      auto it = localRank_.find(r.get<int64_t>());
      // A rank outside the stage stays as written (lowering cannot run such a collective anyway).
      r = it == localRank_.end() ? Json::array({"rank", r}) : Json(it->second);
    };
    if (c.contains("group") && c["group"].is_array())
      for (Json& r : c["group"])
        rank(r);
    if (c.contains("peer")) rank(c["peer"]);
    if (c.contains("src")) rank(c["src"]);
    if (c.contains("instance")) {
      const std::string key = c["instance"].dump();
      auto it = instances_.emplace(key, static_cast<int>(instances_.size())).first;
      c["instance"] = it->second;
    }
    d_.mix(c.dump());
  }

  const Plan& plan_;
  const Stage& stage_;
  const IntDomains& domains_;
  const std::vector<const FoldIndex*> folds_;
  Digest d_;
  std::map<int, int> localDevice_;
  std::map<int64_t, int> localRank_;
  std::set<DeviceOp> inStage_;
  std::unordered_map<ValueId, int> logical_;
  std::map<std::pair<int, ValueId>, int> deviceValues_;
  std::map<std::string, int> instances_;
};

}  // namespace

std::string stageSignature(const Plan& plan, const Stage& stage, const IntDomains& domains) {
  return Signer(plan, stage, domains).run();
}

MarkedSignature markedSignature(const Plan& plan, const Stage& stage, const IntDomains& domains,
                                const std::vector<const FoldIndex*>& folds) {
  return Signer(plan, stage, domains, folds).marked();
}

}  // namespace paraproof::stage

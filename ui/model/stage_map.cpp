#include "ui/model/stage_map.h"

#include <algorithm>

namespace paraproof::ui {
namespace {

std::vector<StageState> statesOf(const std::vector<std::vector<int>>& members, size_t elementCount,
                                 const std::vector<StageState>& stageStates) {
  std::vector<StageState> out(elementCount, StageState::None);
  for (size_t s = 0; s < members.size() && s < stageStates.size(); ++s)
    for (int e : members[s])
      out[e] = combine(out[e], stageStates[s]);
  return out;
}

std::vector<int> stagesOf(const std::vector<std::vector<int>>& members, int element) {
  std::vector<int> out;
  for (size_t s = 0; s < members.size(); ++s)
    if (std::find(members[s].begin(), members[s].end(), element) != members[s].end())
      out.push_back(static_cast<int>(s));
  return out;
}

}  // namespace

StageMap::StageMap(const std::vector<verify::StageInfo>& stages, const GraphModel& logical,
                   const GraphModel& parallel)
    : logicalCount_(logical.elements().size()), parallelCount_(parallel.elements().size()) {
  const Plan& plan = *logical.plan();
  for (const verify::StageInfo& st : stages) {
    std::vector<int> le, pe;
    for (const std::string& op : st.logicalOps)
      if (int e = logical.elementOfOp(kNone, op); e >= 0) le.push_back(e);
    // A communication stage has no logical op of its own: it is about the logical tensors whose lineage it
    // checks, so a failure there marks their producers (or the graph inputs), never leaves the side green.
    if (st.logicalOps.empty())
      for (const std::string& tensor : st.outputs) {
        const ValueId v = plan.logical.findValue(tensor);
        if (v == kNone) continue;
        const OpId producer = plan.logical.values[static_cast<size_t>(v)].producer;
        const int e =
            producer == kNone ? logical.elementOfInput(kNone, v) : logical.elementOfOp(kNone, producer);
        if (e >= 0) le.push_back(e);
      }
    std::sort(le.begin(), le.end());
    le.erase(std::unique(le.begin(), le.end()), le.end());
    for (const verify::ParallelOpRef& ref : st.parallelOps)
      if (int di = plan.deviceIndex(ref.rank); di != kNone)
        if (int e = parallel.elementOfOp(di, ref.op); e >= 0) pe.push_back(e);
    std::sort(pe.begin(), pe.end());
    pe.erase(std::unique(pe.begin(), pe.end()), pe.end());
    logical_.push_back(std::move(le));
    parallel_.push_back(std::move(pe));
  }
}

std::vector<StageState> StageMap::logicalStates(const std::vector<StageState>& stageStates) const {
  return statesOf(logical_, logicalCount_, stageStates);
}

std::vector<StageState> StageMap::parallelStates(const std::vector<StageState>& stageStates) const {
  return statesOf(parallel_, parallelCount_, stageStates);
}

std::vector<int> StageMap::stagesOfLogical(int element) const {
  return stagesOf(logical_, element);
}
std::vector<int> StageMap::stagesOfParallel(int element) const {
  return stagesOf(parallel_, element);
}

}  // namespace paraproof::ui

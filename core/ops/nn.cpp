#include "core/ops/families.h"
#include "core/ops/nn_families.h"

namespace paraproof::ops {

void registerNN(std::vector<OpDef>& reg) {
  registerNorms(reg);
  registerActivationBackward(reg);
  registerAttention(reg);
  registerTokenOps(reg);
  registerRouting(reg);
  registerMoe(reg);
  registerTraining(reg);
}

}  // namespace paraproof::ops

#include "core/ops/families.h"

namespace paraproof::ops {

void registerLinalg(std::vector<OpDef>& /*reg*/) {}  // placeholder: being implemented

}  // namespace paraproof::ops

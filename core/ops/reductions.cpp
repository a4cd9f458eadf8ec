#include "core/ops/families.h"

namespace paraproof::ops {

void registerReductions(std::vector<OpDef>& /*reg*/) {}  // placeholder: being implemented

}  // namespace paraproof::ops

#include "core/ops/families.h"

namespace paraproof::ops {

void registerCommunication(std::vector<OpDef>& /*reg*/) {}  // placeholder: being implemented

}  // namespace paraproof::ops

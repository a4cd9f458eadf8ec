// Each op family registers its definitions; registry.cpp collects them once.
#pragma once

#include <vector>

#include "core/ops/registry.h"

namespace paraproof::ops {

void registerElementwise(std::vector<OpDef>& reg);    // elementwise.cpp
void registerSelection(std::vector<OpDef>& reg);      // selection.cpp
void registerShapeOps(std::vector<OpDef>& reg);       // shape_ops.cpp
void registerLinalg(std::vector<OpDef>& reg);         // linalg.cpp
void registerReductions(std::vector<OpDef>& reg);     // reductions.cpp
void registerNN(std::vector<OpDef>& reg);             // nn.cpp
void registerCommunication(std::vector<OpDef>& reg);  // communication.cpp

}  // namespace paraproof::ops

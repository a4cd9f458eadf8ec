// The neural-network op groups registered by registerNN (nn.cpp), one file each.
#pragma once

#include <vector>

#include "core/ops/registry.h"

namespace paraproof::ops {

void registerNorms(std::vector<OpDef>& reg);               // nn_norms.cpp: rmsnorm, layernorm (+ backward)
void registerActivationBackward(std::vector<OpDef>& reg);  // nn_activations.cpp: silu/gelu/relu/sigmoid/tanh
void registerAttention(std::vector<OpDef>& reg);           // nn_attention.cpp: rope, causal_mask, attention
void registerTokenOps(std::vector<OpDef>& reg);            // nn_tokens.cpp: embedding, one_hot, cross_entropy
void registerRouting(std::vector<OpDef>& reg);             // nn_routing.cpp: topk, topk_mask
void registerMoe(std::vector<OpDef>& reg);                 // moe_ops.cpp: topk_indicator
void registerTraining(std::vector<OpDef>& reg);  // nn_training.cpp: global_norm_sq, clip_coef, adamw

}  // namespace paraproof::ops

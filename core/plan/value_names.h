// The value names of generated plans, in one place (docs/models.md, "Value names"). The generator builds
// names with these rules and every reader that looks inside a name (the micro-batch fold, the bug injector,
// the mutation operators, the inspector) parses them here:
//   base#m       the copy of a per-micro-batch value for micro-batch m, when the step has more than one;
//   base...~cK   then the sequence chunk K a context-parallel rank holds, when it holds more than one;
//   input/TAG    a collective's output, named after its (first) input: /ar all-reduce, /ag all-gather,
//                /rs reduce-scatter, /a2a all-to-all;
//   param.grad_sq  the sum of the squares of a parameter's gradient (a piece's, on a device: a value part),
//                the gradient norm's per-tensor term.
// A name without "#m" is step-wide (parameters, accumulated gradients, the optimizer).
#pragma once

#include <string>
#include <string_view>

namespace paraproof {

namespace names {

inline constexpr std::string_view kGradSquares = ".grad_sq";
inline constexpr std::string_view kAllReduce = "ar", kAllGather = "ag", kReduceScatter = "rs",
                                  kAllToAll = "a2a";

// "#m", or empty when the step has one micro-batch (count <= 1) or m < 0.
std::string microBatchSuffix(int m, int count);
// "~cK", or empty when a rank holds one chunk (count <= 1) or k < 0.
std::string chunkSuffix(int k, int count);
// The output of a collective reading `input`: "input/TAG".
std::string collectiveOutput(const std::string& input, std::string_view tag);

// The micro-batch marker of a name ("#3" of "x#3~c1"), empty for a step-wide name.
std::string copyMarker(const std::string& name);
// `name` without its micro-batch marker ("layers.0.mlp.w2.out#1/ar" -> "layers.0.mlp.w2.out/ar");
// `microBatch` receives m (-1 for a step-wide name).
std::string withoutCopyMarker(const std::string& name, int* microBatch = nullptr);
// `name` with ".tag" inserted before its micro-batch marker ("loss#0" -> "loss.tag#0"), so a new value
// belongs to the same copy.
std::string taggedBeforeCopyMarker(const std::string& name, const std::string& tag);

}  // namespace names

// A copy's micro-batch and the key every copy of the value shares: the name with "#m" replaced by "#*". mb is
// -1 for a step-wide name. A marker is "#" and 1-6 digits without a leading zero, not followed by a digit.
struct CopyTag {
  int mb = -1;
  std::string key;
};
CopyTag copyTagOf(const std::string& name);

}  // namespace paraproof

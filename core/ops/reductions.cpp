// Reductions (sum, mean, max over dims) and softmax / log_softmax with their backward ops.
#include <algorithm>

#include "core/ops/families.h"
#include "core/ops/op_util.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops {

namespace {
using namespace util;

// `dims` normalized, sorted and unique; absent means every dim.
std::vector<int> reduceDims(const Json& a, size_t rank) {
  std::vector<int> dims;
  if (!hasAttr(a, "dims")) {
    for (size_t i = 0; i < rank; ++i)
      dims.push_back(static_cast<int>(i));
    return dims;
  }
  for (int64_t d : intListAttr(a, "dims"))
    dims.push_back(normDim(d, rank, "dims entry"));
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end())
    throw AttrError("dims", "attribute `dims` " + a["dims"].dump() + " repeats a dim");
  return dims;
}

enum class Kind { Sum, Mean, Max };

OpDef reduction(std::string name, Kind kind) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = 1;
  d.summary = std::string(kind == Kind::Sum    ? "sum"
                          : kind == Kind::Mean ? "mean"
                                               : "max") +
              " over `dims` (default all), `keepdim` (default false)";
  d.infer = [kind](const Types& in, const Json& a) {
    if (kind == Kind::Mean) requireFloat(in[0], "x");
    std::vector<int> dims = reduceDims(a, in[0].shape.size());
    bool keep = boolAttr(a, "keepdim", false);
    Shape out;
    for (size_t i = 0; i < in[0].shape.size(); ++i) {
      bool r = std::binary_search(dims.begin(), dims.end(), static_cast<int>(i));
      if (r && in[0].shape[i] == 0 && kind == Kind::Max)
        throw ShapeError("max over an empty dim " + std::to_string(i) + " of " + typeString(in[0]));
      if (!r)
        out.push_back(in[0].shape[i]);
      else if (keep)
        out.push_back(1);
    }
    return Types{{out, in[0].dtype}};
  };
  d.axes = [kind](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    if (kind == Kind::Max) tieValues(info, 0, 1);  // a max of ids is one of them; a sum is not an id
    std::vector<int> dims = reduceDims(a, in[0].shape.size());
    bool keep = boolAttr(a, "keepdim", false);
    int j = 0;
    std::vector<AxisRef> averaged;
    for (int i = 0; i < static_cast<int>(in[0].shape.size()); ++i) {
      if (std::binary_search(dims.begin(), dims.end(), i)) {
        markReduced(info, 0, i, in[0].shape);
        averaged.push_back({0, i});
        if (keep) ++j;
      } else {
        tie(info, 0, i, 1, j++);
      }
    }
    if (kind == Kind::Mean && !averaged.empty()) info.counts.push_back(averaged);  // the divisor
    return info;
  };
  if (kind == Kind::Max) d.valueRange = movedRange;
  d.lower = [kind](ExprPool& p, const Tensors& in, const Json& a) {
    std::vector<int> dims = reduceDims(a, in[0].shape().size());
    bool keep = boolAttr(a, "keepdim", false);
    switch (kind) {
      case Kind::Sum:
        return Tensors{st::sum(p, in[0], dims, keep)};
      case Kind::Mean:
        return Tensors{st::mean(p, in[0], dims, keep)};
      case Kind::Max:
        break;
    }
    return Tensors{st::max(p, in[0], dims, keep)};
  };
  return d;
}

using SoftmaxFn = SymTensor (*)(ExprPool&, const SymTensor&, int);
using SoftmaxBackwardFn = SymTensor (*)(ExprPool&, const SymTensor&, const SymTensor&, int);

OpDef softmaxLike(std::string name, std::string summary, SoftmaxFn fn) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = 1;
  d.summary = std::move(summary);
  d.infer = [](const Types& in, const Json& a) {
    requireFloat(in[0], "x");
    int dim = dimAttr(a, "dim", in[0].shape.size());
    if (in[0].shape[dim] == 0)
      throw ShapeError("dim " + std::to_string(dim) + " of " + typeString(in[0]) + " is empty");
    return Types{in[0]};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    tieAll(info, 0, 1, in[0].shape.size());
    markReduced(info, 0, dimAttr(a, "dim", in[0].shape.size()), in[0].shape);
    return info;
  };
  d.lower = [fn](ExprPool& p, const Tensors& in, const Json& a) {
    return Tensors{fn(p, in[0], dimAttr(a, "dim", in[0].shape().size()))};
  };
  return d;
}

OpDef softmaxBackwardLike(std::string name, std::string summary, SoftmaxBackwardFn fn) {
  OpDef d;
  d.name = std::move(name);
  d.minInputs = d.maxInputs = 2;
  d.summary = std::move(summary);
  d.infer = [](const Types& in, const Json& a) {
    requireFloat(in[0], "y");
    requireFloat(in[1], "dy");
    if (in[1].shape != in[0].shape)
      throw ShapeError("dy " + typeString(in[1]) + " must have the shape of y " + typeString(in[0]));
    dimAttr(a, "dim", in[0].shape.size());
    return Types{in[0]};
  };
  d.axes = [](const Types& in, const Types&, const Json& a) {
    AxisInfo info;
    tieAll(info, 0, 2, in[0].shape.size());
    tieAll(info, 1, 2, in[0].shape.size());
    markReduced(info, 0, dimAttr(a, "dim", in[0].shape.size()), in[0].shape);
    return info;
  };
  d.lower = [fn](ExprPool& p, const Tensors& in, const Json& a) {
    return Tensors{fn(p, in[0], in[1], dimAttr(a, "dim", in[0].shape().size()))};
  };
  return d;
}
}  // namespace

void registerReductions(std::vector<OpDef>& reg) {
  reg.push_back(reduction("sum", Kind::Sum));
  reg.push_back(reduction("mean", Kind::Mean));
  reg.push_back(reduction("max", Kind::Max));
  reg.push_back(softmaxLike("softmax", "exp(x - max) / sum(exp(x - max)) along `dim`", st::softmax));
  reg.push_back(softmaxLike("log_softmax", "(x - max) - log(sum(exp(x - max))) along `dim`", st::logSoftmax));
  reg.push_back(softmaxBackwardLike("softmax_backward", "inputs (y, dy): y * (dy - sum(dy * y)) along `dim`",
                                    st::softmaxBackward));
  reg.push_back(softmaxBackwardLike(
      "log_softmax_backward", "inputs (y, dy): dy - exp(y) * sum(dy) along `dim`", st::logSoftmaxBackward));
}

}  // namespace paraproof::ops

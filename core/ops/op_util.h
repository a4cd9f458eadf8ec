// Helpers shared by the op definitions: attribute parsing and type checks that fail with ShapeError
// messages naming the attribute or operand, and AxisInfo builders.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "core/ops/registry.h"
#include "core/ops/sym_tensor.h"

namespace paraproof::ops::util {

// The vocabulary every op definition file speaks.
using sym::ExprId;
using sym::ExprPool;
using Types = std::vector<TensorType>;
using Tensors = std::vector<SymTensor>;

// "f32[4,8]"
std::string typeString(const TensorType& t);

bool hasAttr(const Json& attrs, const char* key);
int64_t intAttr(const Json& attrs, const char* key);
int64_t intAttr(const Json& attrs, const char* key, int64_t dflt);
double numAttr(const Json& attrs, const char* key);
double numAttr(const Json& attrs, const char* key, double dflt);
bool boolAttr(const Json& attrs, const char* key, bool dflt);
std::vector<int64_t> intListAttr(const Json& attrs, const char* key);
// A string attribute that must be one of `allowed`; the first entry is the default when absent.
std::string choiceAttr(const Json& attrs, const char* key, std::initializer_list<const char*> allowed);
DType dtypeAttr(const Json& attrs, const char* key, DType dflt);
// An axis attribute for a tensor of rank `rank`; negative values count from the end.
int dimAttr(const Json& attrs, const char* key, size_t rank);
int normDim(int64_t dim, size_t rank, const std::string& what);
// A shape attribute: non-negative extents.
Shape shapeAttr(const Json& attrs, const char* key);

void requireFloat(const TensorType& t, const std::string& what);
void requireInteger(const TensorType& t, const std::string& what);
// Operands of one arithmetic or comparison: both float or both integer (no bool).
void requireSameKind(const TensorType& a, const TensorType& b, const char* aName, const char* bName);
void requireRank(const TensorType& t, size_t rank, const std::string& what);
void requireMinRank(const TensorType& t, size_t rank, const std::string& what);
void requireShape(const TensorType& t, const Shape& s, const std::string& what);

// Axis-structure builders. Ports: inputs 0..n-1, then outputs.
void tie(AxisInfo& info, int portA, int axisA, int portB, int axisB);
// Ties axis i of portA with axis i of portB for every i < rank.
void tieAll(AxisInfo& info, int portA, int portB, size_t rank);
// Ties the right-aligned axes of a broadcast operand to the output; broadcast (size 1) axes stay free.
void tieBroadcast(AxisInfo& info, int inPort, const Shape& in, int outPort, const Shape& out);
// Marks an axis reduced when it has more than one element (a size-1 axis cannot keep 2).
void markReduced(AxisInfo& info, int port, int axis, const Shape& shape);
void markFixed(AxisInfo& info, int port, int axis);
// Integer values (AxisRef with axis kValues): `idPort`'s values index axis `axis` of `port`.
void indexes(AxisInfo& info, int idPort, int port, int axis);
// The values of ports a and b are the same kind of index (moved, compared with each other).
void tieValues(AxisInfo& info, int portA, int portB);
// Data movement: the values of every port 0..ports-1 are the same kind (only integer ports matter).
void tieAllValues(AxisInfo& info, int ports);

// Value ranges (OpDef::valueRange). Data movement: every integer output holds values of the integer
// inputs, so the hull of their ranges.
IntRange hull(const IntRange& a, const IntRange& b);
std::vector<IntRange> movedRange(const std::vector<IntRange>& in, const Types& inT, const Types& outT,
                                 const Json& attrs);

// Divides a full-size index value by the axis scale factor (the shape reducer guarantees divisibility).
int64_t scaled(int64_t value, const AxisFactor& factor, int port, int axis);

}  // namespace paraproof::ops::util

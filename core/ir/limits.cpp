#include "core/ir/limits.h"

#include <algorithm>

namespace paraproof::limits {

std::string shapeLimitError(const Shape& s) {
  if (static_cast<int64_t>(s.size()) > kMaxRank)
    return "shape " + shapeString(s) + " has rank " + std::to_string(s.size()) + ", above the limit of " +
           std::to_string(kMaxRank);
  int64_t n = 1;
  for (int64_t d : s) {
    if (d > kMaxExtent)
      return "shape " + shapeString(s) + " has an extent of " + std::to_string(d) + ", above the limit of " +
             std::to_string(kMaxExtent);
    if (n >= 0) n = cappedProduct(n, d, kMaxTensorElements);
  }
  // A zero extent anywhere makes the tensor empty, whatever the other extents.
  if (n < 0 && std::find(s.begin(), s.end(), 0) == s.end())
    return "shape " + shapeString(s) + " has more than " + std::to_string(kMaxTensorElements) +
           " elements (the limit)";
  return "";
}

}  // namespace paraproof::limits

// Canonical form of a stage's verification condition: the expression DAG and obligations with variable
// names dropped. Equal hashes mean identical problems (e.g. the same transformer layer at another depth),
// so one check serves them all.
#pragma once

#include <string>

#include "core/sym/problem.h"

namespace paraproof::stage {

std::string canonicalHash(const sym::Problem& problem);

}  // namespace paraproof::stage

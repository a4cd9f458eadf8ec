// Reader-facing additions to a report that need the plan: which collective (kind, instance, group, reduce) or
// send/recv each stage contains, and pattern hints for a counterexample (actual = k x expected, a shifted
// slice, zeros). Pure functions of the plan and the report; the verdict never depends on them.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/verify/report.h"

namespace paraproof::verify {

// Fills StageInfo::communication for every stage.
void annotateCommunication(Report& report, const Plan& plan);

// For every failed stage with a counterexample: the device op that produces the first differing value (the
// earliest in its device's op order) and its scope, put first in StageInfo::scopes; the other scopes follow
// in the order their ops run (device ops, then logical ones), so the first line is where to look.
void annotateFirstDifference(Report& report, const Plan& plan);

// Patterns the differing elements fit, in words; empty when none fits.
std::vector<std::string> counterexampleHints(const CounterexampleReport& c,
                                             const std::vector<CommunicationRef>& communication);

// "[[1, 2, 3], [4, 5, 6]]" for small tensors, else the first values row-major with the shape.
std::string shapedValues(const Shape& shape, const std::vector<double>& values, size_t limit = 32);

}  // namespace paraproof::verify

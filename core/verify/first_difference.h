// Where a failing stage goes wrong, judged on its counterexample's concrete values: the first device op, in
// the order the ops run, that reads only values which still agree with the model and writes one that does
// not, and whose wrong value reaches a checked output without being set right on the way. The reader's
// pointer to the line to fix; never part of the verdict (docs/report-format.md, "first difference").
#pragma once

#include <optional>
#include <string>

#include "core/plan/plan.h"
#include "core/verify/report.h"

namespace paraproof::verify {

struct WrongOp {
  int rank = 0;
  OpId op = kNone;
  ValueId value = kNone;  // the output that stops agreeing
  std::string why;        // in words, for the report
  // Where the fix goes when it is not the op's own line: the statement after the last write of a partial
  // value whose collective is missing, as an importer recorded it (plan metadata "statement_after"); else
  // empty.
  std::string site;
};

// A device value agrees with the model when it equals a box of a logical value of the stage (on a regular
// grid: replicated or sharded), or when that tensor's values on a group of ranks of the stage combine by sum,
// mean, max or min into one (a partial value before its collective). Values built from constants alone are
// not judged (a scale or a mask has no logical counterpart of its own). Empty when no op fits, or when the
// counterexample carries no values inside the stage (a reused result, a stage too large to keep them).
// An op that reads a value the model never forms, whose sum over a group of ranks would make the op's output
// the model's (re-evaluated on the counterexample's values), reads a part whose collective is missing.
std::optional<WrongOp> firstWrongOp(const StageInfo& stage, const CounterexampleReport& cex,
                                    const Plan& plan);

}  // namespace paraproof::verify

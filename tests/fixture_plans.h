// The valid plans among the textual fixtures (tests/fixtures/plans and soundness), for tests that check a
// property of every plan the verifier is shown.
#pragma once

#include <filesystem>
#include <string>

#include "core/plan/json_io.h"
#include "core/plan/validate.h"

namespace paraproof::testing {

// Calls `f(plan)` for every fixture that loads and validates; the invalid ones are skipped.
template <class F>
void forEachValidFixturePlan(F&& f) {
  for (const char* dir : {"plans", "soundness"})
    for (const auto& e : std::filesystem::directory_iterator(std::string(PARAPROOF_FIXTURES) + "/" + dir)) {
      if (e.path().extension() != ".json") continue;
      Plan plan;
      try {
        plan = loadPlan(e.path().string());
        if (!validatePlan(plan).empty()) continue;
      } catch (const std::exception&) {
        continue;  // the invalid fixtures of these folders
      }
      f(plan);
    }
}

}  // namespace paraproof::testing

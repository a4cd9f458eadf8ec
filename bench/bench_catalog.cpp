// Where each catalog bug is detected: injects every entry into its own plan (and the 14 TrainVerify cases
// into llama3-8b dp2 tp2 pp2 mb2 at 4 layers), verifies, and prints the injected place next to the failing
// stages' scopes and devices, with stage counts and the median verify time of 3 runs; "1st diff" says whether
// the first failing stage's first difference (core/verify/first_difference.h) is an op the injection changed
// ("at"), else names it; the last line counts the rows where it is.
//   bench_catalog [--layers N] [ID-substring]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "core/models/zoo.h"
#include "core/parallel/bugs.h"
#include "core/parallel/generate.h"
#include "core/verify/report_annotate.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

struct Row {
  std::string id, model, parallel;
  int layers = 2;
};

std::string join(const std::vector<std::string>& xs, size_t limit) {
  std::string s;
  for (size_t i = 0; i < xs.size() && i < limit; ++i)
    s += (i ? " " : "") + xs[i];
  if (xs.size() > limit) s += " ...";
  return s;
}

int gAt = 0, gRows = 0;

// "at" when the first failing stage's first difference is an op the injection changed, else that op.
std::string firstDifferenceText(const verify::Report& r, const Json& injected) {
  for (size_t i = 0; i < r.results.size(); ++i) {
    if (r.results[i].status != solver::Status::Failed || !r.stages[i].firstDifference) continue;
    const auto& d = *r.stages[i].firstDifference;
    for (const Json& c : injected.at("ops"))
      if (c.at("op").get<std::string>() == d.op) return "at";
    return d.op;
  }
  return "-";
}

void runRow(const Row& row) {
  parallel::GenerateOptions g;
  g.layers = row.layers;
  g.inject = row.id;
  Plan plan = parallel::generatePlan(*models::findModel(row.model), parallel::parseParallel(row.parallel), g);
  const Json& inj = plan.metadata.at("injected");
  verify::Options o;
  o.jobs = 2;
  o.timeoutSeconds = 120;
  std::vector<double> secs;
  verify::Report r;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    r = verify::verifyPlan(plan, o);
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(secs.begin(), secs.end());
  verify::annotateCommunication(r, plan);
  verify::annotateFirstDifference(r, plan);
  const std::string first = firstDifferenceText(r, inj);
  gAt += first == "at";
  ++gRows;
  std::set<std::string> scopes;
  std::set<int> devices;
  int failed = 0;
  for (size_t i = 0; i < r.results.size(); ++i)
    if (r.results[i].status == solver::Status::Failed) {
      ++failed;
      for (const std::string& s : r.stages[i].scopes)
        scopes.insert(s);
      for (int d : r.stages[i].devices)
        devices.insert(d);
    }
  std::vector<std::string> devs;
  for (int d : devices)
    devs.push_back(std::to_string(d));
  std::printf("%-32s %-10s %-26s L%-3d r%-3d mb%-2d %-15s %6zu %4d  %-24s %-40s %-28s %6.2f\n",
              row.id.c_str(), row.model.c_str(), row.parallel.c_str(), inj.at("layer").get<int>(),
              inj.at("rank").get<int>(), inj.at("mb").get<int>(), verify::verdictName(r.verdict),
              r.stages.size(), failed, join(devs, 6).c_str(), join({scopes.begin(), scopes.end()}, 3).c_str(),
              first.c_str(), secs[1]);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int layers = 2;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--layers" && i + 1 < argc)
      layers = std::stoi(argv[++i]);
    else
      only = a;
  }
  std::vector<Row> rows;
  for (const parallel::BugEntry& b : parallel::bugCatalog())
    rows.push_back({b.id, b.model, b.parallel, layers});
  for (const parallel::BugEntry& b : parallel::bugCatalog())
    if (b.id.rfind("tv", 0) == 0 && b.model == "llama3-8b")
      rows.push_back({b.id, "llama3-8b", b.parallel, 4});
  std::printf("%-32s %-10s %-26s %-15s %-15s %6s %4s  %-24s %-40s %-28s %6s\n", "bug", "model", "parallel",
              "injected at", "verdict", "stages", "fail", "failing devices", "failing scopes", "1st diff",
              "s");
  for (const Row& r : rows)
    if (only.empty() || r.id.find(only) != std::string::npos) runRow(r);
  std::printf("first difference at an injected op: %d of %d rows\n", gAt, gRows);
}

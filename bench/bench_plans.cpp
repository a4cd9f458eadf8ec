// End-to-end figures for generated reference plans: generation time, verification time (median of 3),
// stage count and how many stages were reused by canonical hash, and the process's peak RSS so far.
//   bench_plans [--jobs N] [--runs N] [MODEL PARALLEL [LAYERS]]
// Without a plan argument it runs the table below (full depth unless a layer count is given).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

struct Row {
  std::string model, parallel;
  int layers = 0;  // 0: the model's own depth
};

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

long peakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

void runRow(const Row& row, int jobs, int runs) {
  const models::ModelConfig* model = models::findModel(row.model);
  if (!model) {
    std::printf("%-12s unknown model\n", row.model.c_str());
    return;
  }
  parallel::GenerateOptions g;
  g.layers = row.layers;
  auto t0 = std::chrono::steady_clock::now();
  Plan plan = parallel::generatePlan(*model, parallel::parseParallel(row.parallel), g);
  const double generate = seconds(t0);
  size_t ops = 0;
  for (const Device& d : plan.devices)
    ops += d.graph.ops.size();
  verify::Options o;
  o.jobs = jobs;
  std::vector<double> times;
  verify::Report r;
  for (int i = 0; i < runs; ++i) {
    t0 = std::chrono::steady_clock::now();
    r = verify::verifyPlan(plan, o);
    times.push_back(seconds(t0));
  }
  std::sort(times.begin(), times.end());
  size_t reused = 0;
  for (const verify::StageResult& s : r.results)
    reused += s.reusedFrom != kNone;
  std::printf("%-12s %-28s %6d %7zu %9zu %8.2f %8.2f %8zu %8zu %-15s %7ld\n", row.model.c_str(),
              row.parallel.c_str(), row.layers > 0 ? row.layers : model->layers, plan.devices.size(), ops,
              generate, times[times.size() / 2], r.stages.size(), reused, verify::verdictName(r.verdict),
              peakRssMb());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 2, runs = 3;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--jobs" && i + 1 < argc)
      jobs = std::stoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::stoi(argv[++i]));
    else
      rest.push_back(a);
  }
  std::vector<Row> rows;
  if (rest.size() >= 2) {
    rows.push_back({rest[0], rest[1], rest.size() > 2 ? std::stoi(rest[2]) : 0});
  } else {
    rows = {{"llama3-8b", "dp=2,tp=2,pp=2,mb=2"},        {"llama3-8b", "dp=2,tp=2,pp=2,mb=2,zero=1"},
            {"llama3-8b", "dp=2,tp=2,pp=2,mb=2,sp"},     {"llama3-8b", "dp=2,tp=2,pp=2,mb=2,cp=2"},
            {"dsv3-16b", "dp=2,tp=2,pp=2,mb=2"},         {"dsv3-16b", "dp=2,tp=2,pp=2,mb=2,ep=2"},
            {"dsv3-671b", "dp=2,tp=2,pp=2,mb=2,ep=2", 8}};
  }
  std::printf("%-12s %-28s %6s %7s %9s %8s %8s %8s %8s %-15s %7s\n", "model", "parallel", "layers", "devices",
              "ops", "gen s", "verify s", "stages", "reused", "verdict", "rss MB");
  for (const Row& r : rows)
    runRow(r, jobs, runs);
}

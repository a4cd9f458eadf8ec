// The TrainVerify benchmark plans (docs/models.md) end to end: generate in memory (compact form) and verify,
// each row in a child process so that its peak RSS is its own; medians of --runs runs.
//   bench_scale [--runs N] [--jobs N] [--timeout S] [ROW...]
// Rows: L1 L2 L3 D1 D2 D3 D3ep, the far-rank injections L3far and D3far (a rank on the pipeline stage that
// holds the layer, dp coordinate 39 or 19; expected not equivalent, localised:
// the row prints the failing stage's ranks and scopes), and the flatness pairs dp8/dp512 and mb2/mb16.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

struct Row {
  std::string id, model, parallel;
  double trainVerify = 0;  // seconds, TrainVerify (SOSP'25) on >= 32 cores; 0: not reported
  std::string inject;      // a catalog bug at a site (GenerateOptions::inject); empty: the correct plan
};

const std::vector<Row> kRows = {
    {"L1", "llama3-8b", "dp=512", 684.7, ""},
    {"L2", "llama3-70b", "dp=16,tp=8,pp=4,mb=32", 8531.7, ""},
    {"L3", "llama3-405b", "dp=64,tp=8,pp=16,mb=16", 28786, ""},
    {"D1", "dsv3-16b", "dp=16,tp=4,pp=2,mb=16", 1350.8, ""},
    {"D2", "dsv3-236b", "dp=16,tp=8,pp=4,mb=16", 8484, ""},
    {"D3", "dsv3-671b", "dp=32,tp=8,pp=8,mb=16", 32371, ""},
    {"D3ep", "dsv3-671b", "dp=32,tp=8,pp=8,mb=16,ep=8", 0, ""},
    {"L3far", "llama3-405b", "dp=64,tp=8,pp=16,mb=16", 0, "tv07-eps@layer=100,rank=6461,mb=13"},
    {"D3far", "dsv3-671b", "dp=32,tp=8,pp=8,mb=16", 0, "tv07-eps@layer=50,rank=1691,mb=11"},
    {"dp8", "llama3-8b", "dp=8", 0, ""},
    {"dp512", "llama3-8b", "dp=512", 0, ""},
    {"mb2", "llama3-8b", "dp=8,pp=2,mb=2", 0, ""},
    {"mb16", "llama3-8b", "dp=8,pp=2,mb=16", 0, ""},
};

struct Result {
  bool ok = false;
  char error[160] = {};
  double total = 0;
  static constexpr int kPhases = 24;
  double phases[kPhases] = {};
  char phaseNames[kPhases][24] = {};
  int nPhases = 0;
  long devices = 0, stated = 0, opsStored = 0, stages = 0, distinct = 0;
  char verdict[24] = {};
  char where[200] = {};  // the first failing stage: its ranks and scopes
};

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Result runOnce(const Row& row, int jobs) {
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    parallel::GenerateOptions o;
    o.compact = true;
    o.inject = row.inject;
    const Plan plan =
        parallel::generatePlan(*models::findModel(row.model), parallel::parseParallel(row.parallel), o);
    const double gen = since(t0);
    verify::Options vo;
    vo.jobs = jobs;
    const verify::Report rep = verify::verifyPlan(plan, vo);
    r.total = since(t0);
    std::snprintf(r.phaseNames[0], sizeof r.phaseNames[0], "generate");
    r.phases[0] = gen;
    r.nPhases = 1;
    for (const auto& [name, secs] : rep.phases) {
      if (r.nPhases >= Result::kPhases) break;
      // "(the second reduction) cut" -> "2nd-cut": one word per phase in the table.
      const std::string second = "(the second reduction) ";
      const std::string shown = name.starts_with(second) ? "2nd-" + name.substr(second.size()) : name;
      std::snprintf(r.phaseNames[r.nPhases], sizeof r.phaseNames[0], "%s", shown.c_str());
      r.phases[r.nPhases++] = secs;
    }
    r.devices = 1;
    for (int64_t n : plan.mesh.shape)
      r.devices *= n;
    r.stated = static_cast<long>(plan.devices.size());
    for (const Device& d : plan.devices)
      r.opsStored += static_cast<long>(d.graph.ops.size());
    r.stages = static_cast<long>(rep.stages.size());
    r.distinct = static_cast<long>(rep.distinctStages);
    std::snprintf(r.verdict, sizeof r.verdict, "%s", verify::verdictName(rep.verdict));
    for (size_t i = 0; i < rep.results.size(); ++i) {
      if (rep.results[i].status != solver::Status::Failed) continue;
      std::string where = "stage " + std::to_string(i) + " ranks";
      for (size_t k = 0; k < rep.stages[i].devices.size() && k < 4; ++k)
        where += " " + std::to_string(rep.stages[i].devices[k]);
      for (size_t k = 0; k < rep.stages[i].scopes.size() && k < 2; ++k)
        where += (k ? "," : " scopes ") + rep.stages[i].scopes[k];
      std::snprintf(r.where, sizeof r.where, "%s", where.c_str());
      break;
    }
    r.ok = true;
  } catch (const std::exception& e) {
    std::snprintf(r.error, sizeof r.error, "%s", e.what());
  }
  return r;
}

// Runs one row in a child; returns its result and its peak RSS in MB (0 with `timedOut` past the limit).
Result inChild(const Row& row, int jobs, int timeout, long& rssMb, bool& timedOut) {
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    alarm(static_cast<unsigned>(timeout));
    Result r = runOnce(row, jobs);
    ssize_t w = write(fd[1], &r, sizeof r);
    (void)w;
    _exit(0);
  }
  close(fd[1]);
  Result r;
  const ssize_t got = read(fd[0], &r, sizeof r);
  close(fd[0]);
  int status = 0;
  rusage u{};
  wait4(pid, &status, 0, &u);
  rssMb = u.ru_maxrss / 1024;
  timedOut = got != static_cast<ssize_t>(sizeof r);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3, jobs = 2, timeout = 600;
  std::vector<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::atoi(argv[++i]);
    else if (a == "--jobs" && i + 1 < argc)
      jobs = std::atoi(argv[++i]);
    else if (a == "--timeout" && i + 1 < argc)
      timeout = std::atoi(argv[++i]);
    else
      wanted.push_back(a);
  }
  // An argument that is no row (a typo, --help) gets the usage, not an empty table.
  for (const std::string& w : wanted)
    if (std::none_of(kRows.begin(), kRows.end(), [&](const Row& r) { return r.id == w; })) {
      FILE* out = w == "--help" ? stdout : stderr;
      std::fprintf(out, "usage: bench_scale [--runs N] [--jobs N] [--timeout S] [ROW...]\nrows:");
      for (const Row& r : kRows)
        std::fprintf(out, " %s", r.id.c_str());
      std::fprintf(out, "\n");
      return w == "--help" ? 0 : 2;
    }
  std::printf("%-6s %-12s %-28s %7s %7s %9s %7s %6s %8s %8s %7s %8s  %s\n", "row", "model", "parallel",
              "devices", "stated", "ops", "stages", "dist", "total s", "RSS MB", "TV s", "TV/ours",
              "phases (median s)");
  for (const Row& row : kRows) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), row.id) == wanted.end()) continue;
    std::vector<double> totals;
    std::map<std::string, std::vector<double>> phases;
    std::vector<std::string> order;
    long rss = 0;
    Result last;
    bool failed = false;
    for (int k = 0; k < runs; ++k) {
      long r = 0;
      bool timedOut = false;
      last = inChild(row, jobs, timeout, r, timedOut);
      rss = std::max(rss, r);
      if (timedOut || !last.ok) {
        std::printf("%-6s %-12s %-28s %s\n", row.id.c_str(), row.model.c_str(), row.parallel.c_str(),
                    timedOut ? ("not finished within " + std::to_string(timeout) + " s (peak " +
                                std::to_string(r) + " MB)")
                                   .c_str()
                             : last.error);
        failed = true;
        break;
      }
      totals.push_back(last.total);
      for (int p = 0; p < last.nPhases; ++p) {
        if (!phases.count(last.phaseNames[p])) order.push_back(last.phaseNames[p]);
        phases[last.phaseNames[p]].push_back(last.phases[p]);
      }
    }
    if (failed) continue;
    const double t = median(totals);
    std::string ph;
    char buf[64];
    for (const std::string& n : order) {
      std::snprintf(buf, sizeof buf, "%s %.2f ", n.c_str(), median(phases[n]));
      ph += buf;
    }
    char ratio[16] = "-";
    if (row.trainVerify > 0) std::snprintf(ratio, sizeof ratio, "%.0fx", row.trainVerify / t);
    std::printf("%-6s %-12s %-28s %7ld %7ld %9ld %7ld %6ld %8.2f %8ld %7.0f %8s  %s[%s%s%s]\n",
                row.id.c_str(), row.model.c_str(), row.parallel.c_str(), last.devices, last.stated,
                last.opsStored, last.stages, last.distinct, t, rss, row.trainVerify, ratio, ph.c_str(),
                last.verdict, last.where[0] ? ": " : "", last.where);
    std::fflush(stdout);
  }
  return 0;
}

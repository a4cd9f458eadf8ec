// Memory per stored op (issue 27, "Memory per op"; docs/scale.md): builds a plan in memory (a benchmark row,
// generated in compact form, or a plan file, loaded) in a child process and prints what it stores and what
// that costs on the heap.
//   bench_memory [--runs N] [--verify] [ROW | PLAN-FILE ...]      rows: L3 D3 (default: both)
// Heap bytes are the allocator's own count of live bytes ("stats.allocated" after an "epoch" refresh under
// jemalloc, the allocator of every executable here; mallinfo2's uordblks under glibc): the plan's bytes are
// the live bytes with the plan built minus the live bytes once it is destroyed, so caches the generator keeps
// (the model zoo) are not counted, plus the name pool's growth during the build (core/ir/name.h: the pool
// keeps the plan's names after it; "names" is how many distinct ones it added). Counted per stored op
// (logical and device graphs); the breakdown deep-copies each part of every op and value (its inline bytes
// and its heap), so it says what each part would cost unshared. Peak RSS is the child's ru_maxrss: the build
// and the breakdown's copies, and with --verify verification.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#ifdef PARAPROOF_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

#include "core/models/zoo.h"
#include "core/parallel/generate.h"
#include "core/plan/json_io.h"
#include "core/verify/verify.h"

using namespace paraproof;

namespace {

struct Row {
  std::string id, model, parallel;
};

const std::vector<Row> kRows = {
    {"L3", "llama3-405b", "dp=64,tp=8,pp=16,mb=16"},
    {"D3", "dsv3-671b", "dp=32,tp=8,pp=8,mb=16"},
};

size_t liveHeapBytes() {
#ifdef PARAPROOF_JEMALLOC
  uint64_t epoch = 1;
  size_t size = sizeof epoch;
  mallctl("epoch", &epoch, &size, &epoch, size);
  size_t allocated = 0;
  size = sizeof allocated;
  mallctl("stats.allocated", &allocated, &size, nullptr, 0);
  return allocated;
#else
  return mallinfo2().uordblks;
#endif
}

// The parts of the breakdown, each deep-copied out of the plan.
enum Part { kAttrs, kOpStrings, kOpEdges, kValueNames, kShapes, kNameIndexes, kLineage, kParts };
const char* const kPartNames[kParts] = {
    "attrs", "id/kind/scope/origin", "op inputs/outputs", "value names", "shapes", "name indexes", "lineage"};

struct Result {
  bool ok = false;
  char error[160] = {};
  double buildSeconds = 0, verifySeconds = 0;
  long ops = 0, values = 0, devices = 0, distinctAttrs = 0, names = 0;
  double planBytes = 0;
  double partBytes[kParts] = {};
  char verdict[24] = {};
};

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class F>
double heapOf(F&& build) {
  const size_t before = liveHeapBytes();
  auto held = build();
  const size_t with = liveHeapBytes();
  (void)held;
  return static_cast<double>(with) - static_cast<double>(before);
}

void breakdown(const Plan& plan, Result& r) {
  std::vector<const Graph*> graphs = {&plan.logical};
  for (const Device& d : plan.devices)
    graphs.push_back(&d.graph);
  r.partBytes[kAttrs] = heapOf([&] {
    std::vector<Json> v;
    v.reserve(static_cast<size_t>(r.ops));
    for (const Graph* g : graphs)
      for (const Op& op : g->ops)
        v.push_back(Json(static_cast<const Json&>(op.attrs)));
    return v;
  });
  r.partBytes[kOpStrings] = heapOf([&] {
    std::vector<std::string> v;
    v.reserve(static_cast<size_t>(r.ops) * 4);
    for (const Graph* g : graphs)
      for (const Op& op : g->ops) {
        v.push_back(std::string(op.id));
        v.push_back(std::string(op.kind));
        v.push_back(std::string(op.scope));
        v.push_back(std::string(op.origin));
      }
    return v;
  });
  r.partBytes[kOpEdges] = heapOf([&] {
    std::vector<std::vector<ValueId>> v;
    v.reserve(static_cast<size_t>(r.ops) * 2);
    for (const Graph* g : graphs)
      for (const Op& op : g->ops) {
        v.push_back(op.inputs);
        v.push_back(op.outputs);
      }
    return v;
  });
  r.partBytes[kValueNames] = heapOf([&] {
    std::vector<std::string> v;
    v.reserve(static_cast<size_t>(r.values));
    for (const Graph* g : graphs)
      for (const Value& x : g->values)
        v.push_back(std::string(x.name));
    return v;
  });
  r.partBytes[kShapes] = heapOf([&] {
    std::vector<Shape> v;
    v.reserve(static_cast<size_t>(r.values));
    for (const Graph* g : graphs)
      for (const Value& x : g->values)
        v.push_back(Shape(x.type.shape));
    return v;
  });
  // Graph's name indexes (value names and op ids to dense ids), rebuilt alike.
  r.partBytes[kNameIndexes] = heapOf([&] {
    std::vector<std::unordered_map<std::string, int32_t>> v;
    v.reserve(graphs.size() * 2);
    for (const Graph* g : graphs) {
      auto& values = v.emplace_back();
      for (size_t i = 0; i < g->values.size(); ++i)
        values.emplace(g->values[i].name, static_cast<int32_t>(i));
      auto& ops = v.emplace_back();
      for (size_t i = 0; i < g->ops.size(); ++i)
        ops.emplace(g->ops[i].id, static_cast<int32_t>(i));
    }
    return v;
  });
  r.partBytes[kLineage] = heapOf([&] {
    std::vector<std::map<ValueId, Lineage>> v;
    v.reserve(plan.devices.size());
    for (const Device& d : plan.devices)
      v.push_back(d.lineage);
    return v;
  });
  std::unordered_set<Json> distinct;
  for (const Graph* g : graphs)
    for (const Op& op : g->ops)
      distinct.insert(static_cast<const Json&>(op.attrs));
  r.distinctAttrs = static_cast<long>(distinct.size());
}

Result runOnce(const std::string& what, bool withVerify) {
  Result r;
  try {
    const auto row = std::find_if(kRows.begin(), kRows.end(), [&](const Row& x) { return x.id == what; });
    const size_t base = liveHeapBytes();
    const size_t namesBefore = Name::pooled(), nameBytesBefore = Name::pooledBytes();
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = std::make_unique<Plan>();
    if (row != kRows.end()) {
      parallel::GenerateOptions o;
      o.compact = true;
      *plan =
          parallel::generatePlan(*models::findModel(row->model), parallel::parseParallel(row->parallel), o);
    } else {
      *plan = loadPlan(what);
    }
    r.buildSeconds = since(t0);
    const size_t with = liveHeapBytes();
    // The names the plan brought into the pool stay there when it is destroyed: counted as the plan's.
    r.names = static_cast<long>(Name::pooled() - namesBefore);
    const size_t nameBytes = Name::pooledBytes() - nameBytesBefore;
    r.devices = static_cast<long>(plan->devices.size());
    r.ops = static_cast<long>(plan->logical.ops.size());
    r.values = static_cast<long>(plan->logical.values.size());
    for (const Device& d : plan->devices) {
      r.ops += static_cast<long>(d.graph.ops.size());
      r.values += static_cast<long>(d.graph.values.size());
    }
    breakdown(*plan, r);
    if (withVerify) {
      const auto t1 = std::chrono::steady_clock::now();
      verify::Options vo;
      vo.jobs = 2;
      const verify::Report rep = verify::verifyPlan(*plan, vo);
      r.verifySeconds = since(t1);
      std::snprintf(r.verdict, sizeof r.verdict, "%s", verify::verdictName(rep.verdict));
    }
    plan.reset();
    const size_t after = liveHeapBytes();
    // Live bytes the plan held: what went when it was destroyed (a cache kept by the generator stays).
    r.planBytes = static_cast<double>(with) - static_cast<double>(std::max(after, base)) +
                  static_cast<double>(nameBytes);
    r.ok = true;
  } catch (const std::exception& e) {
    std::snprintf(r.error, sizeof r.error, "%s", e.what());
  }
  return r;
}

Result inChild(const std::string& what, bool withVerify, long& rssMb) {
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    Result r = runOnce(what, withVerify);
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
  if (got != static_cast<ssize_t>(sizeof r)) std::snprintf(r.error, sizeof r.error, "the child died");
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  bool withVerify = false;
  std::vector<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--verify") {
      withVerify = true;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(a == "--help" ? stdout : stderr,
                   "usage: bench_memory [--runs N] [--verify] [ROW | PLAN-FILE ...]\nrows: L3 D3\n");
      return a == "--help" ? 0 : 2;
    } else {
      wanted.push_back(a);
    }
  }
  if (wanted.empty())
    for (const Row& r : kRows)
      wanted.push_back(r.id);
  std::printf("%-10s %8s %9s %10s %9s %9s %8s %8s %9s  %s\n", "plan", "devices", "ops", "values", "plan MB",
              "B/op", "build s", "RSS MB", "verify s",
              "distinct attrs; names; unshared B/op: parts (median of runs)");
  for (const std::string& what : wanted) {
    std::vector<double> bytes, build, verifyS, rss, parts[kParts];
    Result last;
    bool failed = false;
    for (int k = 0; k < runs; ++k) {
      long rssMb = 0;
      last = inChild(what, withVerify, rssMb);
      if (!last.ok) {
        std::printf("%-10s %s\n", what.c_str(), last.error);
        failed = true;
        break;
      }
      bytes.push_back(last.planBytes);
      build.push_back(last.buildSeconds);
      verifyS.push_back(last.verifySeconds);
      rss.push_back(static_cast<double>(rssMb));
      for (int p = 0; p < kParts; ++p)
        parts[p].push_back(last.partBytes[p]);
    }
    if (failed) continue;
    std::printf(
        "%-10s %8ld %9ld %10ld %9.0f %9.0f %8.2f %8.0f %9s ", what.c_str(), last.devices, last.ops,
        last.values, median(bytes) / 1e6, median(bytes) / static_cast<double>(last.ops), median(build),
        median(rss),
        withVerify ? (std::to_string(median(verifyS)).substr(0, 6) + " " + last.verdict).c_str() : "-");
    std::printf(" %ld; %ld;", last.distinctAttrs, last.names);
    for (int p = 0; p < kParts; ++p)
      std::printf(" %s %.0f%s", kPartNames[p], median(parts[p]) / static_cast<double>(last.ops),
                  p + 1 < kParts ? "," : "\n");
  }
  return 0;
}

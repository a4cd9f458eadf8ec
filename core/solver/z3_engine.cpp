// The Z3 engine: runs a Z3Proof on a helper thread with a fresh context, and keeps the promise that
// cancellation and timeouts return within a second. Z3 4.8.12 does not poll its cancel flag everywhere
// (polynomial expansion in nonlinear arithmetic can run for minutes after Z3_interrupt), so a proof that
// does not stop within a grace period is abandoned: it keeps its own copy of the problem and its own context,
// and frees them when Z3 eventually returns.
#include "core/solver/z3_engine.h"

#include <z3++.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/solver/z3_proof.h"

namespace paraproof::solver {

namespace {

using Clock = std::chrono::steady_clock;

// Everything a proof touches, owned jointly by the engine and the helper thread.
struct ProofJob {
  ProofJob(const Problem& p, const Z3Options& o, Clock::time_point d) : problem(p), options(o), deadline(d) {}

  void run() {
    Result r;
    try {
      ProblemScope scope = scopeOf(problem);
      Budget budget{0, &stop};
      r = Z3Proof(ctx, options).decide({problem, scope, budget, deadline, &interruptAt});
    } catch (const z3::exception& e) {
      r.reason = std::string("z3 error: ") + e.msg();
    } catch (const std::bad_alloc&) {
      r.reason = "out of memory in z3";
    }
    std::lock_guard lock(mutex);
    result = std::move(r);
    finished = true;
    done.notify_all();
  }
  bool waitFor(std::chrono::milliseconds t) {
    std::unique_lock lock(mutex);
    return done.wait_for(lock, t, [this] { return finished; });
  }

  const Problem problem;  // a copy: an abandoned proof may outlive the caller's problem
  const Z3Options options;
  const Clock::time_point deadline;
  std::atomic<bool> stop{false};
  std::atomic<Clock::rep> interruptAt{Clock::time_point::max().time_since_epoch().count()};
  z3::context ctx;  // never shared: used by the helper thread, only interrupt() comes from outside
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  Result result;
};

class Z3Engine final : public Engine {
 public:
  explicit Z3Engine(const Z3Options& o) : options_(o) {}
  std::string name() const override { return "z3"; }
  Result check(const Problem& problem, const Budget& budget) override;

 private:
  Z3Options options_;
};

Result Z3Engine::check(const Problem& problem, const Budget& budget) {
  const auto start = Clock::now();
  const auto deadline = budget.timeoutSeconds > 0
                            ? start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(budget.timeoutSeconds))
                            : Clock::time_point::max();
  auto finish = [&](Result r) {
    r.engine = name();
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  };
  bool trivial = true;
  for (const Obligation& ob : problem.obligations)
    trivial = trivial && ob.expected == ob.actual;
  if (trivial) {
    Result r;
    r.status = Status::Verified;
    r.reason = "every obligation is the same term on both sides";
    return finish(r);
  }

  auto job = std::make_shared<ProofJob>(problem, options_, deadline);
  std::thread([job] { job->run(); }).detach();
  // Poll the caller's flag (20 ms keeps cancellation far below the 1 s promise); the solver's own timeout
  // usually fires first, the interrupt is the backstop.
  constexpr auto kPoll = std::chrono::milliseconds(20);
  constexpr auto kGrace = std::chrono::milliseconds(300);
  while (!job->waitFor(kPoll)) {
    const auto now = Clock::now();
    if (now.time_since_epoch().count() >= job->interruptAt.load()) {
      job->ctx.interrupt();  // the proof's own sub-budget (minimisation); it finishes with what it has
      job->interruptAt = Clock::time_point::max().time_since_epoch().count();
    }
    if (!budget.cancelled() && now < deadline) continue;
    job->stop = true;
    job->ctx.interrupt();
    if (!job->waitFor(kGrace)) {
      job->ctx.interrupt();  // again, in case the first one came before Z3 installed its handler
      Result r;
      r.reason =
          budget.cancelled() ? "cancelled" : "timeout after " + std::to_string(budget.timeoutSeconds) + " s";
      return finish(r);  // the job finishes (and frees itself) in the background
    }
    break;
  }
  std::lock_guard lock(job->mutex);
  Result r = job->result;
  if (r.status == Status::Inconclusive && (job->stop || Clock::now() >= deadline))
    r.reason =
        budget.cancelled() ? "cancelled" : "timeout after " + std::to_string(budget.timeoutSeconds) + " s";
  return finish(r);
}

}  // namespace

std::unique_ptr<Engine> makeZ3Engine(const Z3Options& options) {
  return std::make_unique<Z3Engine>(options);
}
std::unique_ptr<Engine> makeZ3Engine() {
  return makeZ3Engine(Z3Options{});
}

}  // namespace paraproof::solver

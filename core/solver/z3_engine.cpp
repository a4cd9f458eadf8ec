// The Z3 engine: runs a Z3Proof on a helper thread with a fresh context, and keeps the promise that
// cancellation and timeouts return within a second. Z3 4.8.12 does not poll its cancel flag everywhere
// (polynomial expansion in nonlinear arithmetic can run for minutes after Z3_interrupt), so a proof that
// does not stop within a grace period is abandoned: it keeps its own copy of the problem and its own context,
// and frees them when Z3 eventually returns. Helper threads are never detached: they are counted, bounded
// and joined (stopZ3Helpers, or at static destruction).
#include "core/solver/z3_engine.h"

#include <z3++.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/solver/z3_proof.h"

namespace paraproof::solver {

namespace {

using Clock = std::chrono::steady_clock;

std::string memoryLimit(const Z3Options& o) {
  return "memory limit: z3 exceeded " + std::to_string(o.maxMemoryMb) + " MB";
}

// Everything a proof touches, owned jointly by the engine and the helper thread.
struct ProofJob {
  enum class Task { Decide, Premises };
  ProofJob(const Problem& p, const Z3Options& o, Clock::time_point d, Task t)
      : problem(p), options(o), deadline(d), task(t) {}

  void run() noexcept {
    Result r;
    try {
      ProblemScope scope = task == Task::Decide ? scopeOf(problem) : guardScopeOf(problem);
      Budget budget{0, &stop};
      Z3Proof proof(ctx, options);
      const Z3Proof::Run run{problem, scope, budget, deadline, &interruptAt};
      r = task == Task::Decide ? proof.decide(run) : proof.premises(run);
      if (r.status == Status::Inconclusive && r.reason.find("memory") != std::string::npos)
        r.reason = memoryLimit(options);
    } catch (const z3::exception& e) {
      const std::string msg = e.msg();
      r = Result{};
      r.reason = msg.find("memory") != std::string::npos ? memoryLimit(options) : "z3 error: " + msg;
    } catch (const std::bad_alloc&) {
      r = Result{};
      r.reason = "memory limit: out of memory in z3";
    } catch (const std::exception& e) {
      r = Result{};
      r.reason = std::string("z3 error: ") + e.what();
    } catch (...) {
      r = Result{};
      r.reason = "z3 error: unknown exception";
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
  bool isFinished() {
    std::lock_guard lock(mutex);
    return finished;
  }

  const Problem problem;  // a copy: an abandoned proof may outlive the caller's problem
  const Z3Options options;
  const Clock::time_point deadline;
  const Task task;
  std::atomic<bool> stop{false};
  std::atomic<Clock::rep> interruptAt{Clock::time_point::max().time_since_epoch().count()};
  z3::context ctx;  // never shared: used by the helper thread, only interrupt() comes from outside
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  Result result;
};

// Every helper thread, joined (never detached): finished ones when the next proof starts, the rest by
// stopZ3Helpers() or, as a backstop, at static destruction. Abandoned proofs are counted and bounded.
class Helpers {
 public:
  static Helpers& instance() {
    static Helpers h;
    return h;
  }
  ~Helpers() { stop(std::chrono::hours(24)); }

  // Waits (polling `giveUp`) until fewer than kMaxAbandonedProofs abandoned proofs run. False if gave up.
  bool admit(const std::function<bool()>& giveUp) {
    std::unique_lock lock(mu_);
    for (;;) {
      reapLocked(lock);
      if (abandoned() < kMaxAbandonedProofs) return true;
      if (giveUp()) return false;
      changed_.wait_for(lock, std::chrono::milliseconds(20));
    }
  }
  void start(std::shared_ptr<ProofJob> job) {
    std::lock_guard lock(mu_);
    Entry e{job, {}, false};
    e.thread = std::thread([job, this] {
      job->run();
      std::lock_guard l(mu_);
      changed_.notify_all();
    });
    entries_.push_back(std::move(e));
  }
  void abandon(const std::shared_ptr<ProofJob>& job) {
    std::lock_guard lock(mu_);
    for (auto& e : entries_)
      if (e.job == job) e.abandoned = true;
  }
  int stop(std::chrono::milliseconds grace) {
    std::unique_lock lock(mu_);
    for (auto& e : entries_) {
      e.job->stop = true;
      e.job->ctx.interrupt();
    }
    const auto until = Clock::now() + grace;
    for (;;) {
      reapLocked(lock);
      if (entries_.empty() || Clock::now() >= until) break;
      changed_.wait_for(lock, std::chrono::milliseconds(20));
    }
    return static_cast<int>(entries_.size());
  }

 private:
  struct Entry {
    std::shared_ptr<ProofJob> job;
    std::thread thread;
    bool abandoned;
  };
  int abandoned() const {
    int n = 0;
    for (const auto& e : entries_)
      n += e.abandoned;
    return n;
  }
  // Joins the threads whose proof has finished, outside the lock (their last step takes it).
  void reapLocked(std::unique_lock<std::mutex>& lock) {
    std::vector<std::thread> ended;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (!it->job->isFinished()) {
        ++it;
        continue;
      }
      ended.push_back(std::move(it->thread));
      it = entries_.erase(it);
    }
    if (ended.empty()) return;
    lock.unlock();
    for (auto& t : ended)
      t.join();
    lock.lock();
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::list<Entry> entries_;
};

// Runs `task` on a helper thread within `budget`, keeping the promise that cancellation returns within a
// second.
Result runJob(const Problem& problem, const Budget& budget, Clock::time_point start, const Z3Options& options,
              ProofJob::Task task) {
  const auto deadline = budget.timeoutSeconds > 0
                            ? start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(budget.timeoutSeconds))
                            : Clock::time_point::max();
  auto stopReason = [&] {
    return budget.cancelled() ? std::string("cancelled")
                              : "timeout after " + std::to_string(budget.timeoutSeconds) + " s";
  };
  Helpers& helpers = Helpers::instance();
  if (!helpers.admit([&] { return budget.cancelled() || Clock::now() >= deadline; })) {
    Result r;
    r.reason = stopReason() + " (waiting for " + std::to_string(kMaxAbandonedProofs) +
               " abandoned z3 proofs to stop)";
    return r;
  }
  auto job = std::make_shared<ProofJob>(problem, options, deadline, task);
  helpers.start(job);
  // Poll the caller's flag (20 ms keeps cancellation far below the 1 s promise); the interrupt is the
  // backstop.
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
      helpers.abandon(job);  // it finishes in the background; the next proofs reap it
      Result r;
      r.reason = stopReason();
      return r;
    }
    break;
  }
  std::lock_guard lock(job->mutex);
  Result r = job->result;
  if (r.status == Status::Inconclusive && (job->stop || Clock::now() >= deadline)) r.reason = stopReason();
  return r;
}

// The engine boundary: no Z3 exception escapes.
template <class F>
Result guarded(const std::string& engine, F&& f) {
  const auto start = Clock::now();
  Result r;
  try {
    r = f(start);
  } catch (const z3::exception& e) {
    r = Result{};
    r.reason = std::string("z3 error: ") + e.msg();
  } catch (const std::system_error& e) {
    r = Result{};
    r.reason = std::string("cannot start a z3 helper thread: ") + e.what();
  }
  r.engine = engine;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

class Z3Engine final : public Engine {
 public:
  explicit Z3Engine(const Z3Options& o) : options_(o) {}
  std::string name() const override { return "z3"; }
  Result check(const Problem& problem, const Budget& budget) override {
    return guarded(name(), [&](Clock::time_point start) {
      bool trivial = true;
      for (const Obligation& ob : problem.obligations)
        trivial = trivial && ob.expected == ob.actual;
      if (!trivial) return runJob(problem, budget, start, options_, ProofJob::Task::Decide);
      Result r;
      r.status = Status::Verified;
      r.reason = "every obligation is the same term on both sides";
      return r;
    });
  }

 private:
  Z3Options options_;
};

}  // namespace

Result checkPremises(const Problem& problem, const Budget& budget, const Z3Options& options) {
  return guarded("premises", [&](Clock::time_point start) {
    // Integer inputs range over independent intervals, each nonempty (VarInfo: lo < hi, or lo == hi for every
    // integer), so the premises alone always hold; only the definedness guards need Z3.
    if (guardScopeOf(problem).open.empty() || guardsHoldSomewhere(problem)) {
      Result r;
      r.status = Status::Verified;
      r.reason = "premises and definedness guards hold (no division by a variable, or a random witness)";
      return r;
    }
    return runJob(problem, budget, start, options, ProofJob::Task::Premises);
  });
}

int stopZ3Helpers(double graceSeconds) {
  return Helpers::instance().stop(std::chrono::milliseconds(static_cast<int64_t>(graceSeconds * 1000)));
}

std::unique_ptr<Engine> makeZ3Engine(const Z3Options& options) {
  return std::make_unique<Z3Engine>(options);
}
std::unique_ptr<Engine> makeZ3Engine() {
  return makeZ3Engine(Z3Options{});
}

}  // namespace paraproof::solver

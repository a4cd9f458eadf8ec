#include "core/plan/torch_import.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/plan/json_io.h"

extern char** environ;

namespace paraproof {

namespace fs = std::filesystem;

namespace {

bool hasPackage(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::exists(dir / "paraproof_torch" / "__init__.py", ec);
}

// The directory to put on PYTHONPATH: an override, then next to the binary (the build tree copies the
// package to <build>/app/python), then an install's share/paraproof/python, then the source tree.
std::string packageDir() {
  if (const char* env = std::getenv("PARAPROOF_TORCH_PATH"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& p :
         {exe.parent_path() / "python", exe.parent_path().parent_path() / "share" / "paraproof" / "python"})
      if (hasPackage(p)) return p.string();
  }
#ifdef PARAPROOF_SOURCE_PYTHON
  if (hasPackage(PARAPROOF_SOURCE_PYTHON)) return PARAPROOF_SOURCE_PYTHON;
#endif
  return {};
}

std::string python() {
  const char* env = std::getenv("PARAPROOF_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

// "error: FILE:LINE: MESSAGE" -> {FILE:LINE, MESSAGE}; other lines (a traceback) are kept in stderrText.
std::vector<Diagnostic> parseErrors(const std::string& text) {
  std::vector<Diagnostic> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("error: ", 0) != 0) continue;
    line = line.substr(7);
    // The place ends at the first ": " after a ":LINE" (paths may hold ':' only in odd cases).
    size_t sep = line.find(": ");
    if (sep == std::string::npos)
      out.push_back({"", line});
    else
      out.push_back({line.substr(0, sep), line.substr(sep + 2)});
  }
  return out;
}

std::string temporaryPlanPath() {
  std::string templ = (fs::temp_directory_path() / "paraproof-import-XXXXXX.json").string();
  const int fd = mkstemps(templ.data(), 5);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for the imported plan");
  close(fd);
  return templ;
}

// Removes the temporary plan however the load ends.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

}  // namespace

Plan loadTorchPlan(const std::string& script, bool checkNumerics, std::string* stderrText) {
  const RemoveOnExit tmp{temporaryPlanPath()};
  TorchImport imported = importTorch(script, tmp.path, checkNumerics, /*quiet=*/true);
  if (stderrText) *stderrText = std::move(imported.stderrText);
  if (imported.exitCode != 0) throw PlanError(std::move(imported.errors));
  Plan plan = loadPlan(tmp.path);
  plan.name = script;
  return plan;
}

bool isTorchScript(const std::string& path) {
  return fs::path(path).extension() == ".py";
}

TorchImport importTorch(const std::string& script, const std::string& out, bool checkNumerics, bool quiet) {
  TorchImport r;
  const std::string pkg = packageDir();
  if (pkg.empty()) {
    r.errors.push_back({script,
                        "cannot find the paraproof_torch package (set PARAPROOF_TORCH_PATH to the "
                        "directory holding it, e.g. resources/python of the source tree)"});
    return r;
  }
  const std::string py = python();
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env.emplace_back(*e);
  const char* oldPath = std::getenv("PYTHONPATH");
  env.push_back("PYTHONPATH=" + pkg + (oldPath && *oldPath ? std::string(":") + oldPath : ""));
  env.push_back("PYTHONDONTWRITEBYTECODE=1");  // an installed package directory may be read-only
  std::vector<std::string> argv = {py, "-m", "paraproof_torch", script, "-o", out};
  if (checkNumerics) argv.push_back("--check-numerics");
  if (quiet) argv.push_back("--quiet");
  std::vector<char*> cargv, cenv;
  for (auto& a : argv)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env)
    cenv.push_back(e.data());
  cenv.push_back(nullptr);

  int errPipe[2];
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    r.errors.push_back({script, std::string("cannot create a pipe: ") + std::strerror(errno)});
    return r;
  }
  // posix_spawn rather than fork: safe in a multi-threaded process (the inspector), and an exec failure
  // comes back as its return value.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, errPipe[1], STDERR_FILENO);
  pid_t pid = -1;
  const int spawnError = posix_spawn(&pid, py.c_str(), &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  close(errPipe[1]);
  if (spawnError != 0) {
    close(errPipe[0]);
    r.errors.push_back({script, "cannot run " + py + ": " + std::strerror(spawnError) +
                                    " (install python3-torch, or set PARAPROOF_PYTHON)"});
    r.stderrText = "error: " + r.errors.back().str() + "\n";
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(errPipe[0], buf, sizeof buf);
    if (n > 0) {
      r.stderrText.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  close(errPipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.errors = parseErrors(r.stderrText);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    r.exitCode = 0;
    return r;
  }
  r.exitCode = 2;
  if (r.errors.empty())
    r.errors.push_back(
        {script, WIFEXITED(status)
                     ? "the importer failed with exit code " + std::to_string(WEXITSTATUS(status))
                     : "the importer was killed by signal " + std::to_string(WTERMSIG(status))});
  return r;
}

}  // namespace paraproof

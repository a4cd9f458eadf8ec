// paraproof import-torch SCRIPT.py -o PLAN.json: trace a PyTorch training step and its distributed version.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/torch_import.h"

extern char** environ;

namespace paraproof::cli {

namespace fs = std::filesystem;

namespace {

const char* kHelp =
    "usage: paraproof import-torch SCRIPT.py -o PLAN.json [--check-numerics]\n"
    "\n"
    "Traces SCRIPT.py's `logical` step once and its `parallel` step on every rank of MESH (make_fx, forward\n"
    "and backward to aten ops; torch.distributed calls become collectives) and writes the plan. SCRIPT.py\n"
    "defines MESH, INPUTS, logical, parallel and PLACEMENTS (docs/import-torch.md). `paraproof verify\n"
    "SCRIPT.py` imports and verifies in one step.\n"
    "\n"
    "  --check-numerics   also run logical and every rank (simulated in one process) on random inputs and\n"
    "                     say whether they agree: a differential test beside the proof\n"
    "\n"
    "environment:\n"
    "  PARAPROOF_PYTHON          the interpreter with PyTorch (default /usr/bin/python3)\n"
    "  PARAPROOF_TORCH_PATH      the directory holding the paraproof_torch package (default: found next to\n"
    "                            the executable, in ../share/paraproof/python, or in the source tree)\n"
    "\n"
    "exit codes: 0 written, 2 an error naming the op or tensor and the SCRIPT.py line\n";

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

}  // namespace

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
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    r.errors.push_back({script, std::string("cannot fork: ") + std::strerror(errno)});
    close(errPipe[0]);
    close(errPipe[1]);
    return r;
  }
  if (pid == 0) {
    dup2(errPipe[1], STDERR_FILENO);
    execve(py.c_str(), cargv.data(), cenv.data());
    const std::string msg = "error: " + script + ": cannot run " + py + ": " + std::strerror(errno) +
                            " (install python3-torch, or set PARAPROOF_PYTHON)\n";
    ssize_t ignored = write(STDERR_FILENO, msg.data(), msg.size());
    (void)ignored;
    _exit(2);
  }
  close(errPipe[1]);
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

int runImportTorch(const std::vector<std::string>& argv) {
  Args args(argv, {"o", "output"}, {"help", "check-numerics"});
  if (args.has("help")) {
    std::cout << kHelp;
    return 0;
  }
  if (args.positional().size() != 1) throw UsageError("expected exactly one SCRIPT.py");
  auto out = args.get("o");
  if (!out) out = args.get("output");
  if (!out) throw UsageError("missing -o PLAN.json");
  const TorchImport r = importTorch(args.positional()[0], *out, args.has("check-numerics"));
  // The importer's own lines pass through; a setup error found here is printed in the same form.
  std::cerr << r.stderrText;
  if (r.stderrText.empty())
    for (const auto& d : r.errors)
      std::cerr << "error: " << d.str() << "\n";
  return r.exitCode;
}

}  // namespace paraproof::cli

// `cuswap run`: starts a program under cuswap (docs/pytorch.md,
// docs/tensorflow.md).
//
// Note [What cuswap run sets]
// - LD_PRELOAD: libcuswap.so (the build tree's or the installed one, or
//   CUSWAP_LIBRARY) in front of what is there already, unless it is there;
//   a sanitizer's runtime stays first.
// - CUSWAP_CONF: what the user's CUSWAP_CONF holds, then the pairs the
//   options make (budget, plan, record, stats, --conf). Of repeated keys the
//   last one wins (docs/configuration.md), so the options win over the
//   environment.
// - The frameworks' switches that make their allocations tensor-sized,
//   each unless the user set it (to anything, even empty): a framework that
//   asks the driver for one large pool and carves tensors out of it gives
//   cuswap a single buffer to move, or none.
//   - TF_GPU_ALLOCATOR=cuda_malloc_async: TensorFlow asks for each tensor
//     from a stream-ordered pool (cuMemAllocFromPoolAsync), which cuswap
//     serves itself.
//   - PYTORCH_NO_CUDA_MEMORY_CACHING=1: PyTorch's caching allocator calls
//     cudaMalloc/cudaFree for every tensor. It costs a driver call per
//     allocation; cuswap caches freed memory itself. Not set with
//     --torch-pluggable: a script that calls cuswap.torch.enable() gives
//     PyTorch cuswap's allocator, which does not cache through PyTorch.
//   - XLA_PYTHON_CLIENT_ALLOCATOR=platform: JAX and other XLA clients
//     allocate each buffer from the driver instead of a preallocated arena.
// Then the command is executed in place of cuswap, so its exit status is
// the one the caller sees; a command that cannot be started is 127 (not
// found) or 126 (not executable), as for env(1).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/locate.h"
#include "common/config.h"
#include "policy/plan.h"

namespace cuswap::cli {

namespace {

constexpr int kExitCannotRun = 126;
constexpr int kExitNotFound = 127;

struct RunOptions {
  std::string budget, plan, record, conf;
  bool stats = false;
  bool torch_pluggable = false;
  bool dry_run = false;
  std::vector<std::string> command;
};

using Environment = std::vector<std::pair<std::string, std::string>>;

std::string getenv_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

// A path the shim can be given in CUSWAP_CONF, absolute (the program may
// change its directory). A comma would end the pair.
Status conf_path(const char* option, const std::string& path, std::string& out) {
  std::error_code ec;
  out = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) return failure(kExitBadInput, fmt::format("run: {} {}: {}", option, path, ec.message()));
  if (out.find(',') != std::string::npos)
    return failure(
        kExitBadInput,
        fmt::format("run: {} {}: a path with a comma cannot go into CUSWAP_CONF", option, path));
  return {};
}

// LD_PRELOAD with `shim` in front, after any sanitizer runtime (which must
// come first); "" where it is there already.
std::string preloaded(const std::string& shim) {
  const std::string preload = getenv_or("LD_PRELOAD", "");
  std::vector<std::string> words;
  for (size_t at = 0; at < preload.size();) {
    const size_t end = std::min(preload.find_first_of(": ", at), preload.size());
    if (end > at) words.push_back(preload.substr(at, end - at));
    at = end + 1;
  }
  if (std::find(words.begin(), words.end(), shim) != words.end()) return "";
  const auto sanitizer = [](const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    return name.starts_with("libasan") || name.starts_with("libtsan") ||
           name.starts_with("libubsan") ||
           (name.starts_with("libclang_rt.") && name.find("san") != std::string::npos);
  };
  const auto at = std::find_if_not(words.begin(), words.end(), sanitizer);
  words.insert(at, shim);
  std::string out;
  for (const std::string& w : words)
    out += (out.empty() ? "" : ":") + w;
  return out;
}

// The environment the command gets (Note [What cuswap run sets]), or why not.
Status environment(const RunOptions& o, Environment& env) {
  const std::string shim = find_shim("CUSWAP_LIBRARY");
  if (shim.empty())
    return failure(kExitBadInput,
                   fmt::format("run: libcuswap.so not found (neither {}/hooks/libcuswap.so of a "
                               "build tree nor an installed one; set CUSWAP_LIBRARY)",
                               build_dir()));
  if (!exists(shim))
    return failure(kExitBadInput, fmt::format("run: CUSWAP_LIBRARY={}: no such file", shim));
  std::vector<std::string> pairs;
  if (!o.budget.empty()) {
    if (!conf::parse_per_device_size(o.budget))
      return failure(kExitBadInput,
                     fmt::format("run: --budget {}: not a size (12GiB, 1.5G, 800MiB, or per "
                                 "device: [0:12GiB,1:10GiB])",
                                 o.budget));
    pairs.push_back("budget:" + o.budget);
  }
  if (!o.plan.empty()) {
    policy::Plan plan;
    std::string error;
    if (!policy::read_plan_file(o.plan, plan, error))
      return failure(kExitBadInput, "run: --plan: " + error);
    std::string path;
    if (Status s = conf_path("--plan", o.plan, path); s.exit_code != kExitOk) return s;
    pairs.push_back("plan:" + path);
  }
  if (!o.record.empty()) {
    std::string path;
    if (Status s = conf_path("--record", o.record, path); s.exit_code != kExitOk) return s;
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!std::filesystem::is_directory(parent))
      return failure(kExitBadInput, fmt::format("run: --record {}: {} is not a directory", o.record,
                                                parent.string()));
    pairs.push_back("record:" + path);
  }
  if (o.stats) pairs.push_back("stats:true");
  if (!o.conf.empty()) pairs.push_back(o.conf);

  if (std::string preload = preloaded(shim); !preload.empty())
    env.emplace_back("LD_PRELOAD", preload);
  if (!pairs.empty()) {
    std::string conf = getenv_or("CUSWAP_CONF", "");
    for (const std::string& pair : pairs)
      conf += (conf.empty() ? "" : ",") + pair;
    env.emplace_back("CUSWAP_CONF", conf);
  }
  const auto unless_set = [&](const char* name, const char* value) {
    if (std::getenv(name) == nullptr) env.emplace_back(name, value);
  };
  unless_set("TF_GPU_ALLOCATOR", "cuda_malloc_async");
  if (!o.torch_pluggable) unless_set("PYTORCH_NO_CUDA_MEMORY_CACHING", "1");
  unless_set("XLA_PYTHON_CLIENT_ALLOCATOR", "platform");
  return {};
}

Status run(const RunOptions& o) {
  if (o.command.empty())
    return failure(kExitBadInput, "run: no command (cuswap run [OPTIONS] -- COMMAND [ARGS...])");
  if (o.command.front().starts_with('-'))
    return failure(kExitBadInput, fmt::format("run: unknown option {} (cuswap run --help lists "
                                              "its options; the command goes after --)",
                                              o.command.front()));
  Environment env;
  if (Status s = environment(o, env); s.exit_code != kExitOk) return s;
  if (o.dry_run) {
    std::string text;
    for (const auto& [name, value] : env)
      text += fmt::format("{}={}\n", name, value);
    return write_result(stdout, text);
  }
  for (const auto& [name, value] : env)
    if (setenv(name.c_str(), value.c_str(), 1) != 0)
      return failure(kExitFailed,
                     fmt::format("run: cannot set {}: {}", name, std::strerror(errno)));
  std::vector<char*> argv;
  for (const std::string& a : o.command)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(argv[0], argv.data());
  const int error = errno;
  return failure(error == ENOENT ? kExitNotFound : kExitCannotRun,
                 fmt::format("run: cannot run {}: {}", o.command[0], std::strerror(error)));
}

}  // namespace

Command add_run(CLI::App& app, std::vector<std::string> after_dashes) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run a program (a training script) under cuswap.");
  sub->add_option("--budget", o->budget,
                  "Device memory the program may use; beyond it cuswap swaps to host memory "
                  "(12GiB, or per device: [0:12GiB,1:10GiB]). Without --plan, cuswap plans "
                  "online from the second iteration");
  sub->add_option("--plan", o->plan, "Follow this plan (a file written by `cuswap plan`)");
  sub->add_option("--record", o->record, "Write a .cst trace of the run to this file");
  sub->add_flag("--stats", o->stats, "Print cuswap's counters when the program exits");
  sub->add_option("--conf", o->conf,
                  "More CUSWAP_CONF pairs (docs/configuration.md), e.g. online:false,link:pcie4");
  sub->add_flag("--torch-pluggable", o->torch_pluggable,
                "The script calls cuswap.torch.enable(): leave PyTorch's caching switch alone");
  sub->add_flag("--dry-run", o->dry_run,
                "Print the environment the command would get, one NAME=value a line, and stop");
  // Everything from the first word that is not one of these options (or
  // after --) is the command, its own options included.
  sub->prefix_command();
  sub->allow_extras();
  sub->footer(
      "Sets LD_PRELOAD (libcuswap.so: the build tree's, the installed one, or CUSWAP_LIBRARY), "
      "CUSWAP_CONF (the environment's, then the options'), and, unless already set, "
      "TF_GPU_ALLOCATOR=cuda_malloc_async, PYTORCH_NO_CUDA_MEMORY_CACHING=1 and "
      "XLA_PYTHON_CLIENT_ALLOCATOR=platform; then runs the command in its place. Exit codes: "
      "the command's; 2 bad usage or input; 126 or 127 when the command cannot be run.");
  return {sub, [sub, o, after_dashes] {
            // `--` belongs to cuswap only where no word of the command came before it.
            o->command = sub->remaining();
            if (!o->command.empty() && !after_dashes.empty()) o->command.emplace_back("--");
            o->command.insert(o->command.end(), after_dashes.begin(), after_dashes.end());
            return run(*o);
          }};
}

}  // namespace cuswap::cli

// `cuswap replay`: runs the replay benchmark (bench/replay, docs/replay.md)
// with the pieces of this build found for it: cuswap-replay, libcuswap.so
// and simcuda's libcuda.so.1, beside this executable in the build tree, or
// named by CUSWAP_REPLAY, CUSWAP_REPLAY_SHIM and CUSWAP_REPLAY_SIMCUDA.
// An install has libcuswap.so (PREFIX/lib beside PREFIX/bin/cuswap) but
// neither cuswap-replay nor simcuda: they are built with the tests, and a
// libcuda.so.1 that is not the driver has no place in a library directory.
// cuswap-replay itself sets LD_LIBRARY_PATH, LD_PRELOAD and CUSWAP_CONF for
// each run it makes (one per policy, and the infinite-memory run), so this
// only finds the paths and hands over every argument.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/locate.h"

namespace cuswap::cli {

namespace {

Status run_replay(const std::vector<std::string>& args) {
  const std::string replay = find("CUSWAP_REPLAY", {build_dir() + "/bench/replay/cuswap-replay"});
  if (replay.empty())
    return failure(kExitBadInput,
                   fmt::format("replay: cuswap-replay not found beside this cuswap "
                               "({}/bench/replay; a build tree with the tests has it, an install "
                               "does not; set CUSWAP_REPLAY)",
                               build_dir()));
  const std::string shim = find_shim("CUSWAP_REPLAY_SHIM");
  const std::string simcuda = find("CUSWAP_REPLAY_SIMCUDA", {build_dir() + "/tests/simcuda"});
  if (!shim.empty()) setenv("CUSWAP_REPLAY_SHIM", shim.c_str(), 1);
  if (!simcuda.empty()) setenv("CUSWAP_REPLAY_SIMCUDA", simcuda.c_str(), 1);
  std::vector<char*> argv = {const_cast<char*>(replay.c_str())};
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(replay.c_str(), argv.data());
  return failure(kExitFailed,
                 fmt::format("replay: cannot run {}: {}", replay, std::strerror(errno)));
}

}  // namespace

Command add_replay(CLI::App& app) {
  auto args = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Drive a trace through the CUDA driver API on simcuda or a GPU, with or without cuswap.");
  sub->footer(
      "Every argument goes to cuswap-replay (`cuswap replay --help-replay` lists them; "
      "docs/replay.md): TRACE [--policy none|reactive|online|plan:FILE|PLANNER] "
      "[--device-memory SIZE] [--budget SIZE|PCT%] [--link L] [--time-scale F] "
      "[--batch-scale F] [--iterations N] [--alloc-path stream|sync|pluggable] [--host-op-us US] "
      "[--workspaces] [--max-batch] [--json]. Exit codes: 0 the replay "
      "completed with no integrity error or hazard, 1 it did not, 2 bad usage or input.");
  sub->prefix_command();
  sub->set_help_flag();
  sub->allow_extras();
  return {sub, [sub, args] {
            std::vector<std::string> rest = sub->remaining();
            for (std::string& a : rest)
              if (a == "--help-replay") a = "--help";
            if (rest.empty()) rest.push_back("--help");
            return run_replay(rest);
          }};
}

}  // namespace cuswap::cli

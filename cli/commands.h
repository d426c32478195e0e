// The `cuswap` subcommands. Each one registers its options on the app and
// returns the action main() runs when it was chosen; main() is the one
// place errors are caught (cli/main.cpp).
//
// Exit codes (docs: DESIGN.md, cli/): 0 ok, 1 failed, 2 bad usage or input
// (an unreadable, truncated or corrupt file included).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace cuswap::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_inspect(CLI::App& app);
Command add_plan(CLI::App& app);      // cli/plan.cpp
Command add_simulate(CLI::App& app);  // cli/simulate.cpp
Command add_compare(CLI::App& app);   // cli/compare.cpp
Command add_export(CLI::App& app);    // cli/export.cpp
Command add_replay(CLI::App& app);    // cli/replay.cpp

}  // namespace cuswap::cli

// The `cuswap` subcommands. Each one registers its options on the app and
// returns the action main() runs when it was chosen. An action writes its
// result and hands back a Status (cli/status.h); main() is the one place
// that prints an error, be it the command's, a usage error or an unexpected
// exception (cli/main.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/status.h"

namespace cuswap::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<Status()> run;
};

Command add_inspect(CLI::App& app);   // cli/inspect.cpp
Command add_plan(CLI::App& app);      // cli/plan.cpp
Command add_simulate(CLI::App& app);  // cli/simulate.cpp
Command add_compare(CLI::App& app);   // cli/compare.cpp
Command add_export(CLI::App& app);    // cli/export.cpp
Command add_report(CLI::App& app);    // cli/report.cpp
Command add_replay(CLI::App& app);    // cli/replay.cpp
// `cuswap run`; `after_dashes`: the words after the first `--` of the
// command line, which main() keeps from CLI11 (it would hand a leading `--`
// of a subcommand back to the top level).
Command add_run(CLI::App& app, std::vector<std::string> after_dashes);  // cli/run.cpp
// How a user is told how to use cuswap (cli/usage.cpp). `cuswap help
// [COMMAND]`: the commands, one line each, or one command's help.
Command add_help(CLI::App& app);
// The one line of a usage error (an unknown command, option or value), for
// `app` that failed to parse `args` (argv without the program's name).
std::string usage_error(const CLI::App& app, const CLI::ParseError& e,
                        const std::vector<std::string>& args);
// The one line when no command was given.
std::string missing_command(const CLI::App& app);

}  // namespace cuswap::cli

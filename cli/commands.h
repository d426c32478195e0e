// The `cuswap` subcommands. Each one registers its options on the app and
// returns the action main() runs when it was chosen. An action writes its
// result and hands back a Status; main() is the one place that prints an
// error, be it the command's, a usage error or an unexpected exception
// (cli/main.cpp).
//
// Exit codes (docs: DESIGN.md, cli/): 0 ok, 1 failed (the output cannot be
// written, the budget cannot be met), 2 bad usage or input (an unreadable,
// truncated or corrupt file included).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace cuswap::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

// What a command hands back to main(): its exit code and, when it failed,
// one line that main() prints on stderr as "cuswap: error: LINE". A failure
// without a line is one the command's own output already explains (the
// report of a plan that does not fit).
struct [[nodiscard]] Status {
  int exit_code = kExitOk;
  std::string error;
};

inline Status failure(int exit_code, std::string error) {
  return {exit_code, std::move(error)};
}

// Writes a command's result to `out`; a failure says why.
inline Status write_result(std::FILE* out, std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0)
    return {};
  return failure(kExitFailed, std::string("cannot write the output: ") + std::strerror(errno));
}

struct Command {
  CLI::App* app = nullptr;
  std::function<Status()> run;
};

Command add_inspect(CLI::App& app);   // cli/inspect.cpp
Command add_plan(CLI::App& app);      // cli/plan.cpp
Command add_simulate(CLI::App& app);  // cli/simulate.cpp
Command add_compare(CLI::App& app);   // cli/compare.cpp
Command add_export(CLI::App& app);    // cli/export.cpp
Command add_replay(CLI::App& app);    // cli/replay.cpp
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

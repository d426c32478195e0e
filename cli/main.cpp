// cuswap: the command line. Subcommands register themselves (commands.h)
// and hand back a Status; usage errors, the commands' errors and anything
// unexpected are printed here, once, as "cuswap: error: LINE".
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "policy/plan.h"
#include "tracer/cst_format.h"

#ifndef CUSWAP_VERSION
#error "CUSWAP_VERSION must be defined by the build"
#endif

namespace {

cuswap::cli::Status run(int argc, char** argv) {
  using namespace cuswap::cli;
  // `cuswap run [OPTIONS] -- COMMAND...`: what follows the `--` is the
  // command's, and CLI11 does not see it.
  std::vector<std::string> after_dashes;
  if (argc > 2 && std::string_view(argv[1]) == "run")
    for (int i = 2; i < argc; ++i)
      if (std::string_view(argv[i]) == "--") {
        after_dashes.assign(argv + i + 1, argv + argc);
        argc = i;
        break;
      }
  CLI::App app{"cuswap: use host memory as an extension of GPU memory.", "cuswap"};
  app.require_subcommand(0, 1);
  app.set_version_flag(
      "--version", fmt::format("cuswap {} (trace format {}.{}, plan format {})", CUSWAP_VERSION,
                               cuswap::trace::cst::kFormatMajor, cuswap::trace::cst::kFormatMinor,
                               cuswap::policy::kPlanVersion));
  const std::vector<Command> commands = {
      add_inspect(app), add_plan(app),   add_simulate(app), add_compare(app),
      add_export(app),  add_report(app), add_replay(app),   add_run(app, after_dashes),
      add_help(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return {app.exit(e), {}};  // --help, --version
    return failure(kExitBadInput, usage_error(app, e, {argv + 1, argv + argc}));
  }
  for (const Command& command : commands)
    if (command.app->parsed()) return command.run();
  return failure(kExitBadInput, missing_command(app));
}

}  // namespace

int main(int argc, char** argv) {
  cuswap::cli::Status status;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {
    status = cuswap::cli::failure(cuswap::cli::kExitFailed, e.what());
  }
  if (!status.error.empty()) fmt::print(stderr, "cuswap: error: {}\n", status.error);
  return status.exit_code;
}

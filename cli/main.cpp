// cuswap: the command line. Subcommands register themselves (commands.h);
// usage errors and anything unexpected are caught here, once.
#include <cstdio>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace cuswap::cli;
  CLI::App app{"cuswap: use host memory as an extension of GPU memory.", "cuswap"};
  app.require_subcommand(1);
  app.set_version_flag("--version", CUSWAP_VERSION);
  const std::vector<Command> commands = {add_inspect(app), add_plan(app), add_simulate(app),
                                         add_compare(app), add_export(app),
                                         add_replay(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;  // --help and --version exit 0
  }
  try {
    for (const Command& command : commands)
      if (command.app->parsed()) return command.run();
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cuswap: error: {}\n", e.what());
    return kExitFailed;
  }
}

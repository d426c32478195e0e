// How a user is told how to use cuswap: `cuswap help`, and the one line of
// a usage error. Every command's description is one line, so the list of
// commands is one line per command (the details are in each footer).
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"

namespace cuswap::cli {

namespace {

std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands(nullptr))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

std::string not_a_command(const CLI::App& app, std::string_view word) {
  return fmt::format("\"{}\" is not a cuswap command (the commands: {})", word, command_names(app));
}

std::string command_list(const CLI::App& app) {
  size_t width = 0;
  for (const CLI::App* sub : app.get_subcommands(nullptr))
    width = std::max(width, sub->get_name().size());
  std::string out =
      fmt::format("{}\n\nUsage: cuswap COMMAND [ARGS...]\n\nCommands:\n", app.get_description());
  for (const CLI::App* sub : app.get_subcommands(nullptr))
    out += fmt::format("  {:<{}}  {}\n", sub->get_name(), width, sub->get_description());
  out +=
      "\n`cuswap help COMMAND` or `cuswap COMMAND --help` shows a command's options; "
      "`cuswap --version` the version and the file formats it reads and writes.\n";
  return out;
}

// CLI11 writes "The following argument was not expected": the project's
// lines start in lower case, after the name of what they are about.
std::string lower_first(std::string text) {
  if (text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
      std::islower(static_cast<unsigned char>(text[1])))
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text;
}

}  // namespace

std::string usage_error(const CLI::App& app, const CLI::ParseError& e,
                        const std::vector<std::string>& args) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  if (!chosen.empty()) {
    const std::string& name = chosen.front()->get_name();
    return fmt::format("{}: {} (cuswap {} --help lists its options)", name, lower_first(e.what()),
                       name);
  }
  // cuswap's own options take no values, so the first word that is not an
  // option is the command the user meant.
  for (const std::string& arg : args)
    if (!arg.empty() && arg[0] != '-') return not_a_command(app, arg);
  return fmt::format("{} (cuswap help lists the commands)", lower_first(e.what()));
}

std::string missing_command(const CLI::App& app) {
  return fmt::format("expected a command (the commands: {})", command_names(app));
}

Command add_help(CLI::App& app) {
  auto command = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("help", "List the commands, or show one command's options.");
  sub->add_option("command", *command, "The command whose options to show");
  const CLI::App* root = &app;
  return {sub, [root, command]() -> Status {
            if (command->empty()) return write_result(stdout, command_list(*root));
            const CLI::App* chosen = nullptr;
            for (const CLI::App* s : root->get_subcommands(nullptr))
              if (s->get_name() == *command) chosen = s;
            if (chosen == nullptr) return failure(kExitBadInput, not_a_command(*root, *command));
            // What `cuswap COMMAND --help` prints.
            return write_result(stdout, chosen->help(root->get_name()));
          }};
}

}  // namespace cuswap::cli

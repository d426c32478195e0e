// Runs a test program in a child process with a chosen environment and
// collects its exit code, stdout and stderr.
#pragma once

#include <map>
#include <string>
#include <vector>

struct ProgramResult {
  int exit_code = -1;  // -signal when killed by a signal
  std::string out, err;
};

// `env` is added to (or replaces entries of) the test's own environment; an
// empty value removes the variable.
ProgramResult run_program(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env);

// A fresh path in the test's temporary directory.
std::string temp_path(const std::string& name);

// Helpers for tests that run programs: a temporary directory that removes
// itself, and running a program with a chosen environment, collecting its
// exit code, stdout and stderr.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cuswap::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

struct ProgramResult {
  int exit_code = -1;  // -signal when killed by a signal
  std::string out, err;
};

// Runs `argv` (argv[0] is the program's path). `env` adds to or replaces
// entries of the test's own environment; an empty value removes one.
ProgramResult run_program(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {});

}  // namespace cuswap::testing

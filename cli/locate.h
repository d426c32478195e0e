// Where the pieces of this build or install are, for the commands that start
// other programs (`cuswap replay`, `cuswap run`). In a build tree this
// executable is BUILD/cli/cuswap, beside BUILD/hooks/libcuswap.so; installed
// it is PREFIX/bin/cuswap, with the library in PREFIX/lib (by GNUInstallDirs).
#pragma once

#include <initializer_list>
#include <string>

namespace cuswap::cli {

bool exists(const std::string& path);
// This executable's directory: BUILD/cli, or PREFIX/bin.
std::string exe_dir();
// The directory above it: BUILD, or PREFIX.
std::string build_dir();
// The environment variable `env` where it is set and not empty, else the
// first of `places` that exists, else "".
std::string find(const char* env, std::initializer_list<std::string> places);
// libcuswap.so: `env`, the build tree's, or the installed one; "" if none.
std::string find_shim(const char* env);

}  // namespace cuswap::cli

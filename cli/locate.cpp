// Where the pieces of this build or install are (cli/locate.h).
#include "cli/locate.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#ifndef CUSWAP_LIBDIR_FROM_BINDIR
#error "CUSWAP_LIBDIR_FROM_BINDIR must name the installed library directory, from the bin one"
#endif

namespace cuswap::cli {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

std::string exe_dir() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "./cli";
  const std::string path(exe, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string build_dir() {
  const std::string dir = exe_dir();
  return dir.substr(0, dir.rfind('/'));
}

std::string find(const char* env, std::initializer_list<std::string> places) {
  if (const char* value = std::getenv(env); value && *value) return value;
  for (const std::string& place : places)
    if (exists(place)) return place;
  return "";
}

std::string find_shim(const char* env) {
  return find(env, {build_dir() + "/hooks/libcuswap.so",
                    exe_dir() + "/" CUSWAP_LIBDIR_FROM_BINDIR "/libcuswap.so"});
}

}  // namespace cuswap::cli

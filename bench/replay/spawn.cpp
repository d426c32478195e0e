// Child replays (bench/replay/spawn.h).
#include "bench/replay/spawn.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace cuswap::bench {

std::string self_path() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

namespace {

void set_child_env(const ChildEnv& env) {
  if (!env.simcuda_dir.empty()) {
    const char* old = std::getenv("LD_LIBRARY_PATH");
    std::string path = env.simcuda_dir;
    if (old && *old) path.append(":").append(old);
    setenv("LD_LIBRARY_PATH", path.c_str(), 1);
    std::string conf = fmt::format(
        "memory:{},h2d_gbps:{},d2h_gbps:{},copy_latency_us:{},host_vmm:{}", env.device_memory_bytes,
        env.link.bandwidth_bytes_per_s / 1e9, env.link.bandwidth_bytes_per_s / 1e9,
        static_cast<double>(env.link.latency_ns) / 1000.0, env.host_vmm ? "true" : "false");
    if (!env.simcuda_conf.empty()) conf += "," + env.simcuda_conf;
    setenv("SIMCUDA_CONF", conf.c_str(), 1);
  }
  if (env.shim.empty()) {
    unsetenv("LD_PRELOAD");
    unsetenv("CUSWAP_CONF");
  } else {
    setenv("LD_PRELOAD", env.shim.c_str(), 1);
    setenv("CUSWAP_CONF", env.cuswap_conf.c_str(), 1);
  }
}

}  // namespace

RunResult run_child(const std::string& self, const std::vector<std::string>& args,
                    const ChildEnv& env) {
  RunResult result;
  int fds[2];
  if (pipe(fds) != 0) {
    result.error = fmt::format("pipe: {}", std::strerror(errno));
    return result;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = fmt::format("fork: {}", std::strerror(errno));
    return result;
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    set_child_env(env);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(self.c_str()));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(self.c_str(), argv.data());
    std::fprintf(stderr, "cuswap-replay: cannot run %s: %s\n", self.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!parse_result(out, result)) {
    result.completed = false;
    if (WIFSIGNALED(status))
      result.error = fmt::format("the replay died of signal {} ({})", WTERMSIG(status),
                                 strsignal(WTERMSIG(status)));
    else
      result.error = fmt::format("the replay exited with status {} and no result",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else if (WIFSIGNALED(status) && result.completed) {
    result.completed = false;
    result.error = fmt::format("the replay died of signal {} at exit", WTERMSIG(status));
  }
  return result;
}

}  // namespace cuswap::bench

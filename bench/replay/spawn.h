// Running one replay in a child process with its own environment: the
// driver (simcuda's libcuda.so.1 through LD_LIBRARY_PATH, or the system's),
// its configuration (SIMCUDA_CONF) and cuswap (LD_PRELOAD, CUSWAP_CONF).
// The child is this same executable with --child; it prints its result as
// `key value` lines (bench/replay/run.h) on stdout.
//
// Note [Replay eviction mode]
// By default simcuda offers host-located virtual memory, as drivers from
// CUDA 12.2 do, and cuswap evicts by remapping a buffer's range onto host
// memory; simcuda times those device-to-device copies over the link, on
// the copy engines, as the simulator does. --stash turns host-located
// memory off, so that cuswap evicts to its pinned host stash instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/replay/run.h"
#include "policy/link.h"

namespace cuswap::bench {

struct ChildEnv {
  std::string simcuda_dir;  // "": the system's driver
  uint64_t device_memory_bytes = 0;
  policy::Link link;
  // Note [Replay eviction mode]
  bool host_vmm = true;
  std::string simcuda_conf;  // more SIMCUDA_CONF pairs, last (so they win)
  std::string shim;          // "": no cuswap
  std::string cuswap_conf;   // with shim
};

// Runs `self` with `args` under `env`; the child's stderr passes through.
// A child that dies or prints no result comes back not completed, saying why.
RunResult run_child(const std::string& self, const std::vector<std::string>& args,
                    const ChildEnv& env);

// This executable's path (/proc/self/exe) and its directory.
std::string self_path();
std::string dir_of(const std::string& path);

}  // namespace cuswap::bench

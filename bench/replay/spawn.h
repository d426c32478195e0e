// Running one replay in a child process with its own environment: the
// driver (simcuda's libcuda.so.1 through LD_LIBRARY_PATH, or the system's),
// its configuration (SIMCUDA_CONF) and cuswap (LD_PRELOAD, CUSWAP_CONF).
// The child is this same executable with --child; it prints its result as
// `key value` lines (bench/replay/run.h) on stdout.
//
// Note [Replay eviction mode]
// simcuda counts a copy between a device range and host-located memory
// mapped at a device range (cuswap's eviction with host-located virtual
// memory) as device-to-device: on the compute engine at d2d_gbps, not in
// h2d_bytes/d2h_bytes. So by default the replay gives simcuda
// host_vmm:false, and cuswap evicts to its pinned host stash with copies
// that simcuda times on the copy engines at the link's bandwidth, as the
// simulator does. --host-vmm keeps simcuda's host-located memory.
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
  bool host_vmm = false;
  std::string shim;         // "": no cuswap
  std::string cuswap_conf;  // with shim
};

// Runs `self` with `args` under `env`; the child's stderr passes through.
// A child that dies or prints no result comes back not completed, saying why.
RunResult run_child(const std::string& self, const std::vector<std::string>& args,
                    const ChildEnv& env);

// This executable's path (/proc/self/exe) and its directory.
std::string self_path();
std::string dir_of(const std::string& path);

}  // namespace cuswap::bench

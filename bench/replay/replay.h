// The replay benchmark's parent side: a trace made into a workload and a
// schedule, a policy made into a child's environment (and, for plans, a
// plan file in the shim's runtime identities), and the report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/replay/run.h"
#include "bench/replay/schedule.h"
#include "bench/replay/spawn.h"
#include "cli/policy_common.h"

namespace cuswap::bench {

struct ReplayOptions {
  std::string trace;  // the first of `traces`, which name the run
  // With two or more (Note [Replay at a fitted batch]): the workload at
  // `batch`, fitted from traces of one model at several batch sizes.
  std::vector<std::string> traces;
  uint32_t batch = 0;
  std::string device_memory;  // SIZE; "": the workload's peak x 1.25, MiB up
  std::string policy = "none";
  double batch_scale = 1.0;
  uint32_t iterations = 6;
  bool json = false;
  bool max_batch = false;
  std::string shim;          // libcuswap.so; "": next to the build tree, or $CUSWAP_REPLAY_SHIM
  std::string simcuda_dir;   // simcuda's libcuda.so.1; "": the build tree or $CUSWAP_REPLAY_SIMCUDA
  bool real_driver = false;  // the system's libcuda.so.1, not simcuda
  bool host_vmm = true;      // Note [Replay eviction mode]
  std::string extra_conf;    // added to CUSWAP_CONF (--cuswap-conf)
  std::string simcuda_conf;  // added to SIMCUDA_CONF (--simcuda-conf)
  AllocPath alloc_path = AllocPath::stream;  // Note [Replay allocation paths]
  double host_op_us = 0;                     // Note [Replay host time]
  bool workspaces = false;                   // Note [Replay workspaces]
  cli::PolicyArgs policy_args;  // --budget, --link, --time-scale, --device, --iteration
};

// A trace ready to replay at one batch scale.
struct Prepared {
  cli::Loaded loaded;  // workload (batch-scaled) and request (budget, link, time scale)
  Schedule schedule;
  uint64_t peak_bytes = 0;
  uint64_t device_memory_bytes = 0;
  uint64_t budget_bytes = 0;
  double batch_scale = 1.0;
  std::string shim, simcuda_dir;
  bool host_vmm = true;
  std::string extra_conf, simcuda_conf;
  uint32_t workspaces_added = 0;  // Note [Replay workspaces]
};

// Loads, scales and adds workspaces where asked: what the parent and the
// child both do to a trace; false with one line in `error`.
[[nodiscard]] bool load_workload(const ReplayOptions& o, double batch_scale, cli::Loaded& out,
                                 uint32_t& workspaces_added, std::string& error);

// Loads and scales; false with one line (naming the file or option) in `error`.
[[nodiscard]] bool prepare(const ReplayOptions& o, double batch_scale, Prepared& out,
                           std::string& error);

struct PolicyRun {
  ChildEnv env;
  std::optional<int64_t> predicted_ns;
  std::string plan_file;  // a temporary file to remove after the run
};

// The environment of one policy: none, reactive, online, plan:FILE or a
// planner's name. false with one line in `error` (bad input).
[[nodiscard]] bool prepare_policy(const Prepared& p, const std::string& policy, PolicyRun& out,
                                  std::string& error);

// The child's arguments for the prepared trace.
std::vector<std::string> child_args(const ReplayOptions& o, double batch_scale);

// Runs one policy and the infinite-memory run.
RunResult run_policy(const ReplayOptions& o, const Prepared& p, const PolicyRun& run);
RunResult run_infinite(const ReplayOptions& o, const Prepared& p);

std::optional<int64_t> median_steady_ns(const RunResult& r);

int run_max_batch(const ReplayOptions& o);  // bench/replay/max_batch.cpp

}  // namespace cuswap::bench

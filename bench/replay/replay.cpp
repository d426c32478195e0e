// The replay benchmark's parent side (bench/replay/replay.h).
#include "bench/replay/replay.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "bench/replay/translate.h"
#include "common/config.h"
#include "policy/planner.h"

namespace cuswap::bench {

namespace {

// The shim's default swap_min (common/config.h): the replay does not
// change it.
constexpr uint64_t kSwapMinBytes = uint64_t{1} << 20;

constexpr uint64_t kMiB = 1ull << 20;

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// An option, else an environment variable, else the build tree's layout
// (bench/replay/cuswap-replay beside hooks/ and tests/simcuda/).
std::string locate(const std::string& given, const char* env, const std::string& relative) {
  if (!given.empty()) return given;
  if (const char* value = std::getenv(env); value && *value) return value;
  const std::string guess = dir_of(self_path()) + "/../../" + relative;
  return exists(guess) ? guess : "";
}

uint64_t charged_bytes(uint64_t size) {
  const uint64_t unit = size < kMiB ? 512 : 2 * kMiB;
  return (size + unit - 1) / unit * unit;
}

}  // namespace

bool load_workload(const ReplayOptions& o, double batch_scale, cli::Loaded& loaded,
                   uint32_t& workspaces_added, std::string& error) {
  cli::PolicyArgs args = o.policy_args;
  args.budget.clear();  // a percentage is of the scaled workload's peak: parsed below
  // Note [Replay at a fitted batch]: the workload `cuswap plan --max-batch`
  // searches, at one batch.
  if (o.traces.size() > 1 || o.batch != 0) {
    if (!cli::load_at_batch(o.traces, o.batch, args, loaded, error)) return false;
  } else if (!cli::load(o.trace, args, loaded, error)) {
    return false;
  }
  if (!(batch_scale > 0)) {
    error = fmt::format("--batch-scale: expected a number above 0, got {}", batch_scale);
    return false;
  }
  if (batch_scale != 1.0) {
    scale_batch(loaded.workload, batch_scale);
    loaded.workload.index();
  }
  workspaces_added = o.workspaces ? add_workspaces(loaded.workload) : 0;
  return true;
}

bool prepare(const ReplayOptions& o, double batch_scale, Prepared& p, std::string& error) {
  if (!load_workload(o, batch_scale, p.loaded, p.workspaces_added, error)) return false;
  p.batch_scale = batch_scale;
  p.schedule = build_schedule(p.loaded.workload, p.loaded.request.time_scale);
  const std::vector<uint64_t> live = policy::live_bytes_per_op(p.loaded.workload);
  p.peak_bytes = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  if (o.device_memory.empty()) {
    const auto wanted = static_cast<uint64_t>(std::ceil(static_cast<double>(p.peak_bytes) * 1.25));
    p.device_memory_bytes = std::max<uint64_t>(kMiB, (wanted + kMiB - 1) / kMiB * kMiB);
  } else {
    const std::optional<uint64_t> size = conf::parse_size(o.device_memory);
    if (!size || *size == 0) {
      error = fmt::format("--device-memory: expected a size such as 512MiB, got \"{}\"",
                          o.device_memory);
      return false;
    }
    p.device_memory_bytes = *size;
  }
  p.budget_bytes = p.device_memory_bytes;
  if (!o.policy_args.budget.empty()) {
    cli::PolicyArgs budget_only = o.policy_args;
    bool given = false;
    policy::PlanRequest request;
    if (!cli::parse_request(budget_only, p.loaded.workload, request, given, error)) return false;
    p.budget_bytes = request.budget_bytes;
  }
  p.loaded.request.budget_bytes = p.budget_bytes;
  if (!o.real_driver) {
    p.simcuda_dir = locate(o.simcuda_dir, "CUSWAP_REPLAY_SIMCUDA", "tests/simcuda");
    if (!p.simcuda_dir.empty() && !exists(p.simcuda_dir + "/libcuda.so.1")) {
      error = fmt::format("{}: no libcuda.so.1 there (--simcuda)", p.simcuda_dir);
      return false;
    }
  }
  p.host_vmm = o.host_vmm;
  p.extra_conf = o.extra_conf;
  p.simcuda_conf = o.simcuda_conf;
  p.shim = locate(o.shim, "CUSWAP_REPLAY_SHIM", "hooks/libcuswap.so");
  return true;
}

bool prepare_policy(const Prepared& p, const std::string& policy, PolicyRun& out,
                    std::string& error) {
  out = {};
  out.env.simcuda_dir = p.simcuda_dir;
  out.env.device_memory_bytes = p.device_memory_bytes;
  out.env.link = p.loaded.request.link;
  out.env.host_vmm = p.host_vmm;
  out.env.simcuda_conf = p.simcuda_conf;
  if (policy == "none") return true;
  if (p.shim.empty() || !exists(p.shim)) {
    error = fmt::format("--policy {}: libcuswap.so not found{} (give --shim or CUSWAP_REPLAY_SHIM)",
                        policy, p.shim.empty() ? "" : " at " + p.shim);
    return false;
  }
  out.env.shim = p.shim;
  // The link is for online planning; what --cuswap-conf adds comes last.
  const std::string budget =
      fmt::format("budget:{},link:{}{}{}", p.budget_bytes, p.loaded.request.link.name,
                  p.extra_conf.empty() ? "" : ",", p.extra_conf);
  if (policy == "reactive") {
    out.env.cuswap_conf = budget + ",online:false";
    return true;
  }
  if (policy == "online") {
    out.env.cuswap_conf = budget;
    return true;
  }
  const policy::Workload& w = p.loaded.workload;
  policy::Plan plan;
  std::vector<policy::ResolvedEntry> entries;
  // The shim keeps buffers below swap_min in slabs that never move (Note
  // [Pinned small tensors] in policy/simulator.cpp): plans and predictions
  // are made knowing it.
  policy::PlanRequest request = p.loaded.request;
  request.swap_min_bytes = kSwapMinBytes;
  const policy::SimOptions sim = policy::sim_options(request);
  if (policy.rfind("plan:", 0) == 0) {
    const std::string file = policy.substr(5);
    if (!policy::read_plan_file(file, plan, error)) return false;
    if (!policy::resolve(plan, w, entries, error)) {
      error = fmt::format("{}: {}", file, error);
      return false;
    }
    out.predicted_ns = policy::simulate(w, plan.mode, entries, sim).iteration_ns;
  } else if (const policy::Planner* planner = policy::find_planner(policy)) {
    // Planned at the sizes the allocator charges (Note [Charged sizes]);
    // the translated plan names the sizes asked for.
    const policy::Workload charged = policy::with_charged_sizes(w, kSwapMinBytes);
    policy::PlanOutcome made = policy::plan_and_simulate(*planner, charged, request);
    plan = std::move(made.plan);
    if (!policy::resolve(plan, charged, entries, error)) return false;
    out.predicted_ns = made.result.iteration_ns;
  } else {
    error = fmt::format(
        "--policy: expected none, reactive, online, plan:FILE or a planner ({}), got \"{}\"",
        policy::planner_names(), policy);
    return false;
  }
  const policy::Plan runtime = translate_plan(w, p.schedule, plan, entries, 0, p.budget_bytes);
  const char* tmp = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/cuswap-replay-plan-XXXXXX.json", tmp && *tmp ? tmp : "/tmp");
  const int fd = mkstemps(path.data(), 5);
  if (fd < 0) {
    error = fmt::format("{}: cannot create the translated plan", path);
    return false;
  }
  const std::string json = policy::write_plan_json(runtime);
  const bool written = write(fd, json.data(), json.size()) == static_cast<ssize_t>(json.size());
  close(fd);
  if (!written) {
    error = fmt::format("{}: cannot write the translated plan", path);
    return false;
  }
  out.plan_file = path;
  out.env.cuswap_conf = budget + ",plan:" + path;
  return true;
}

std::vector<std::string> child_args(const ReplayOptions& o, double batch_scale) {
  std::vector<std::string> args = {"--child",       o.traces.front(),
                                   "--iterations",  std::to_string(o.iterations),
                                   "--batch-scale", fmt::format("{}", batch_scale),
                                   "--time-scale",  fmt::format("{}", o.policy_args.time_scale),
                                   "--device",      std::to_string(o.policy_args.device),
                                   "--iteration",   std::to_string(o.policy_args.iteration)};
  if (o.policy_args.partial) args.push_back("--partial");
  if (o.traces.size() > 1) {
    args.insert(args.end(), o.traces.begin() + 1, o.traces.end());
    args.insert(args.end(), {"--batch", std::to_string(o.batch)});
  }
  args.insert(args.end(), {"--alloc-path", alloc_path_name(o.alloc_path), "--host-op-us",
                           fmt::format("{}", o.host_op_us)});
  if (o.workspaces) args.push_back("--workspaces");
  return args;
}

RunResult run_policy(const ReplayOptions& o, const Prepared& p, const PolicyRun& run) {
  RunResult r = run_child(self_path(), child_args(o, p.batch_scale), run.env);
  if (!run.plan_file.empty() && !std::getenv("CUSWAP_REPLAY_KEEP_PLAN"))
    unlink(run.plan_file.c_str());
  return r;
}

RunResult run_infinite(const ReplayOptions& o, const Prepared& p) {
  ChildEnv env;
  env.simcuda_dir = p.simcuda_dir;
  env.link = p.loaded.request.link;
  env.host_vmm = p.host_vmm;
  env.simcuda_conf = p.simcuda_conf;
  uint64_t all = 64 * kMiB;
  for (const policy::WorkTensor& t : p.loaded.workload.tensors)
    all += charged_bytes(t.size_bytes);
  env.device_memory_bytes = all;
  // Stock speed: the driver's stream-ordered pool (Note [Replay allocation
  // paths]), whatever path the run it is compared with takes.
  ReplayOptions stock = o;
  stock.alloc_path = AllocPath::stream;
  return run_child(self_path(), child_args(stock, p.batch_scale), env);
}

std::optional<int64_t> median_steady_ns(const RunResult& r) {
  if (!r.completed || r.iteration_ns.empty()) return std::nullopt;
  std::vector<int64_t> steady(
      r.iteration_ns.begin() + steady_from(static_cast<uint32_t>(r.iteration_ns.size())),
      r.iteration_ns.end());
  std::sort(steady.begin(), steady.end());
  return steady[steady.size() / 2];
}

}  // namespace cuswap::bench

// cuswap-replay: a trace driven through the CUDA driver API for a number of
// iterations, on simcuda or a GPU, with or without cuswap (docs/replay.md).
// The parent process never calls the driver: each replay runs in a child
// (this executable with --child) whose environment picks the driver and
// the policy, so one run can compare several.
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "bench/replay/replay.h"
#include "cli/commands.h"
#include "policy/bounds.h"

namespace cuswap::bench {

namespace {

std::string opt_json(const std::optional<int64_t>& v) {
  return v ? fmt::format("{}", *v) : "null";
}

int child_main(const ReplayOptions& o) {
  cli::Loaded loaded;
  std::string error;
  uint32_t workspaces = 0;
  RunResult r;
  if (!load_workload(o, o.batch_scale, loaded, workspaces, error)) {
    r.error = error;
  } else {
    const Schedule schedule = build_schedule(loaded.workload, loaded.request.time_scale);
    r = run_replay(loaded.workload, schedule, {o.iterations, 0, o.alloc_path, o.host_op_us});
  }
  std::fputs(format_result(r).c_str(), stdout);
  return r.completed ? cli::kExitOk : cli::kExitFailed;
}

int parent_main(const ReplayOptions& o) {
  Prepared p;
  std::string error;
  if (!prepare(o, o.batch_scale, p, error)) {
    fmt::print(stderr, "cuswap-replay: error: {}\n", error);
    return cli::kExitBadInput;
  }
  if (o.policy == "none" && o.alloc_path == AllocPath::pluggable) {
    fmt::print(stderr,
               "cuswap-replay: error: --alloc-path pluggable calls cuswap's allocator functions: "
               "give a policy other than none\n");
    return cli::kExitBadInput;
  }
  PolicyRun run;
  if (!prepare_policy(p, o.policy, run, error)) {
    fmt::print(stderr, "cuswap-replay: error: {}\n", error);
    return cli::kExitBadInput;
  }
  const RunResult r = run_policy(o, p, run);
  const RunResult inf = run_infinite(o, p);
  policy::SimOptions sim = policy::sim_options(p.loaded.request);
  const policy::Bounds bounds = policy::lower_bounds(p.loaded.workload, sim);
  const std::optional<int64_t> ns = median_steady_ns(r), inf_ns = median_steady_ns(inf);
  const bool ok = r.completed && r.integrity_errors == 0 && r.hazards == 0;
  const std::string each = fmt::format("{}", fmt::join(r.iteration_ns, ", "));
  const std::string vmm_each = fmt::format("{}", fmt::join(r.vmm_calls_each, ", "));
  if (o.json) {
    fmt::print(
        "{{\n  \"trace\": {},\n  \"policy\": {},\n  \"completed\": {},\n  \"error\": {},\n"
        "  \"iterations\": {},\n  \"iteration_ns\": {},\n  \"iteration_ns_each\": [{}],\n"
        "  \"virtual_time\": {},\n  \"infinite_memory_ns\": {},\n  \"lower_bound_ns\": {},\n"
        "  \"predicted_ns\": {},\n  \"h2d_bytes\": {},\n  \"d2h_bytes\": {},\n"
        "  \"stall_ns\": {},\n  \"host_wait_ns\": {},\n  \"vmm_calls\": {},\n"
        "  \"vmm_calls_each\": [{}],\n  \"host_syncs\": {},\n"
        "  \"cuswap_vmm_calls\": {},\n  \"cuswap_host_waits\": {},\n"
        "  \"alloc_path\": {},\n  \"host_op_us\": {},\n  \"workspaces_added\": {},\n"
        "  \"scratch_tensors\": {},\n"
        "  \"integrity_errors\": {},\n  \"hazards\": {},\n  \"peak_device_bytes\": {},\n"
        "  \"prefetches_on_demand\": {},\n  \"cuswap_stats\": {},\n  \"device_memory_bytes\": {},\n"
        "  \"budget_bytes\": {},\n  \"workload_peak_bytes\": {},\n  \"link\": {},\n"
        "  \"time_scale\": {},\n  \"batch_scale\": {},\n  \"driver\": {}\n}}\n",
        cli::json_string(o.trace), cli::json_string(o.policy), r.completed ? "true" : "false",
        r.error.empty() ? "null" : cli::json_string(r.error), o.iterations, opt_json(ns), each,
        r.virtual_time ? "true" : "false", opt_json(inf_ns), bounds.problem_ns,
        opt_json(run.predicted_ns), r.h2d_bytes, r.d2h_bytes, r.stall_ns, r.host_wait_ns,
        r.vmm_calls, vmm_each, r.host_syncs,
        r.cuswap_stats ? fmt::format("{}", r.cuswap_vmm_calls) : "null",
        r.cuswap_stats ? fmt::format("{}", r.cuswap_host_waits) : "null",
        cli::json_string(alloc_path_name(o.alloc_path)), o.host_op_us, p.workspaces_added,
        scratch_tensors(p.loaded.workload), r.integrity_errors, r.hazards, r.peak_device_bytes,
        r.cuswap_stats ? fmt::format("{}", r.prefetches_on_demand) : "null",
        r.cuswap_stats ? "true" : "false", p.device_memory_bytes, p.budget_bytes, p.peak_bytes,
        cli::json_string(p.loaded.request.link.name), p.loaded.request.time_scale, p.batch_scale,
        cli::json_string(p.simcuda_dir.empty() ? "system" : "simcuda"));
  } else {
    fmt::print("{}: {} ops, {} tensors, peak {} (batch scale {})\n", o.trace,
               p.loaded.workload.ops.size(), p.loaded.workload.tensors.size(),
               cli::human_bytes(p.peak_bytes), p.batch_scale);
    fmt::print("device memory {}, budget {}, link {}, policy {}, {} iterations on {}\n",
               cli::human_bytes(p.device_memory_bytes), cli::human_bytes(p.budget_bytes),
               p.loaded.request.link.name, o.policy, o.iterations,
               p.simcuda_dir.empty() ? "the system's driver" : "simcuda");
    fmt::print("allocations: {} path, {} scratch allocations in the trace, {} workspaces added\n",
               alloc_path_name(o.alloc_path), scratch_tensors(p.loaded.workload),
               p.workspaces_added);
    if (r.completed)
      fmt::print("completed: iteration {} (steady-state median; each: {})\n",
                 ns ? cli::human_ns(*ns) : "-", each);
    else
      fmt::print("failed: {}\n", r.error);
    fmt::print("infinite memory {}, lower bound {}{}\n", inf_ns ? cli::human_ns(*inf_ns) : "-",
               cli::human_ns(bounds.problem_ns),
               run.predicted_ns ? ", predicted " + cli::human_ns(*run.predicted_ns) : "");
    fmt::print("per iteration: {} to the device, {} to the host, {} prefetches on demand\n",
               cli::human_bytes(r.h2d_bytes), cli::human_bytes(r.d2h_bytes),
               r.cuswap_stats ? fmt::format("{}", r.prefetches_on_demand) : "unknown");
    fmt::print(
        "host: {} VMM calls (each iteration: {}) and {} waits for the device (1 is the "
        "iteration's end){}\n",
        r.vmm_calls, vmm_each, r.host_syncs,
        r.cuswap_stats ? fmt::format("; cuswap made {} VMM calls and {} host waits",
                                     r.cuswap_vmm_calls, r.cuswap_host_waits)
                       : "");
    fmt::print("integrity errors {}, hazards {}, peak device {}\n", r.integrity_errors, r.hazards,
               cli::human_bytes(r.peak_device_bytes));
  }
  return ok ? cli::kExitOk : cli::kExitFailed;
}

}  // namespace

}  // namespace cuswap::bench

int main(int argc, char** argv) {
  using namespace cuswap;
  bench::ReplayOptions o;
  bool child = false;
  CLI::App app{"cuswap-replay: drive a trace through the CUDA driver API (docs/replay.md)",
               "cuswap-replay"};
  app.add_option("trace", o.traces,
                 "The trace (any format `cuswap simulate` reads); with --batch, traces of one "
                 "model at two or more batch sizes (named …-b32…)")
      ->required();
  app.add_option("--batch", o.batch,
                 "With two or more traces: replay the workload fitted from them at this batch "
                 "size (as cuswap plan --max-batch searches it)");
  app.add_option("--device-memory", o.device_memory,
                 "simcuda's device memory (default: the workload's peak x 1.25)");
  app.add_option("--policy", o.policy,
                 "none, reactive, online, plan:FILE or a planner: " + policy::planner_names())
      ->capture_default_str();
  app.add_option("--batch-scale", o.batch_scale,
                 "Scale the tensors that live within the iteration and the op durations")
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "Iterations to run")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  app.add_flag("--json", o.json, "Print one JSON object");
  app.add_flag("--max-batch", o.max_batch,
               "The largest batch scale each policy completes at this device memory");
  app.add_option("--shim", o.shim, "libcuswap.so (default: $CUSWAP_REPLAY_SHIM, the build tree)");
  app.add_option("--simcuda", o.simcuda_dir,
                 "The folder of simcuda's libcuda.so.1 (default: $CUSWAP_REPLAY_SIMCUDA, the "
                 "build tree)");
  app.add_flag("--real-driver", o.real_driver, "Use the system's libcuda.so.1 (a real GPU)");
  app.add_option("--cuswap-conf", o.extra_conf,
                 "More CUSWAP_CONF pairs for the runs with cuswap, e.g. stats:true,record:run.cst");
  app.add_option("--simcuda-conf", o.simcuda_conf,
                 "More SIMCUDA_CONF pairs for every run on simcuda, e.g. host_costs:false");
  std::string alloc_path = "stream";
  app.add_option("--alloc-path", alloc_path,
                 "How buffers are allocated and freed: stream (cuMemAllocAsync, cuMemFreeAsync), "
                 "sync (cuMemAlloc, cuMemFree) or pluggable (cuswap_torch_alloc/free, as PyTorch's "
                 "pluggable allocator calls them)")
      ->capture_default_str()
      ->check([&o](const std::string& text) {
        return parse_alloc_path(text, o.alloc_path)
                   ? std::string()
                   : "expected stream, sync or pluggable, got \"" + text + "\"";
      });
  app.add_option("--host-op-us", o.host_op_us,
                 "Host time the framework spends on each op besides its driver calls, in us "
                 "(PyTorch on an H200: about 10)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--workspaces", o.workspaces,
               "Add a cuDNN-like workspace to every convolution, of a size that differs from one "
               "to the next");
  app.add_flag_callback(
      "--stash", [&o] { o.host_vmm = false; },
      "simcuda without host-located virtual memory: cuswap evicts to its pinned host "
      "stash (Note [Replay eviction mode])");
  app.add_flag("--child", child, "(internal) run one replay in this process")->group("");
  cli::add_policy_options(&app, o.policy_args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? cli::kExitOk : cli::kExitBadInput;
  }
  o.trace = o.traces.front();
  try {
    if (child) return bench::child_main(o);
    if (o.max_batch) return bench::run_max_batch(o);
    return bench::parent_main(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cuswap-replay: error: {}\n", e.what());
    return cli::kExitFailed;
  }
}

// Online planning: recording one iteration, planning it in the background.
#include "runtime/online_plan.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "common/log.h"
#include "policy/link.h"
#include "policy/planner.h"

namespace cuswap::hooks {

struct OnlinePlanning::Recording {
  struct Op {
    std::string name;
    uint32_t ordinal = 0;
    CUevent start = nullptr, end = nullptr;
  };
  struct Tensor {
    uint64_t id = 0;
    uint64_t size_bytes = 0;
    bool resident_at_start = false;
    uint32_t ordinal = 0;
    uint32_t alloc_op = 0;
    uint32_t free_op = UINT32_MAX;  // live at the end
    std::vector<uint32_t> uses;
  };
  uint64_t iteration = 0;
  CUcontext context = nullptr;
  std::vector<Op> ops;
  std::vector<Tensor> tensors;
  std::unordered_map<uint64_t, uint32_t> tensor_of;  // live buffer id -> tensor
  std::unordered_map<std::string, uint32_t> ordinals;
  uint32_t allocations = 0;
  bool timing_failed = false;
};

OnlinePlanning::OnlinePlanning(const Driver& driver, const conf::Options& options, Adopt adopt)
    : driver_(driver),
      options_(options),
      adopt_(std::move(adopt)),
      alive_(std::make_shared<std::atomic<bool>>(true)) {}

OnlinePlanning::~OnlinePlanning() {
  *alive_ = false;
}

void OnlinePlanning::begin_iteration(uint64_t iteration,
                                     std::span<const policy::PlanFollower::LiveBuffer> live) {
  if (planning_ || gave_up_) return;
  if (recording_) {
    hand_to_planner();
    return;
  }
  if (iteration < 2) return;  // the first iteration holds start-up work
  auto rec = std::make_unique<Recording>();
  rec->iteration = iteration;
  if (driver_.cuCtxGetCurrent) (void)driver_.cuCtxGetCurrent(&rec->context);
  for (uint32_t rank = 0; rank < live.size(); ++rank) {
    Recording::Tensor t;
    t.id = live[rank].id;
    t.size_bytes = live[rank].size_bytes;
    t.resident_at_start = true;
    t.ordinal = rank;
    rec->tensor_of[t.id] = static_cast<uint32_t>(rec->tensors.size());
    rec->tensors.push_back(std::move(t));
  }
  recording_ = std::move(rec);
}

void OnlinePlanning::on_alloc(uint64_t id, uint64_t size_bytes) {
  if (!recording_) return;
  Recording& rec = *recording_;
  Recording::Tensor t;
  t.id = id;
  t.size_bytes = size_bytes;
  t.ordinal = rec.allocations++;
  t.alloc_op = static_cast<uint32_t>(rec.ops.size());  // the next launch makes it
  rec.tensor_of[id] = static_cast<uint32_t>(rec.tensors.size());
  rec.tensors.push_back(std::move(t));
}

void OnlinePlanning::on_free(uint64_t id) {
  if (!recording_) return;
  Recording& rec = *recording_;
  auto it = rec.tensor_of.find(id);
  if (it == rec.tensor_of.end()) return;
  Recording::Tensor& t = rec.tensors[it->second];
  const uint32_t last = rec.ops.empty() ? 0 : static_cast<uint32_t>(rec.ops.size() - 1);
  t.free_op = std::max(last, t.resident_at_start ? 0u : t.alloc_op);
  rec.tensor_of.erase(it);
}

void OnlinePlanning::on_launch(std::string_view kernel, const TouchedBuffers& touched) {
  if (!recording_) return;
  Recording& rec = *recording_;
  const auto op = static_cast<uint32_t>(rec.ops.size());
  Recording::Op o;
  o.name = std::string(kernel);
  o.ordinal = rec.ordinals[o.name]++;
  rec.ops.push_back(std::move(o));
  for (size_t i = 0; i < touched.count; ++i) {
    auto it = rec.tensor_of.find(touched.ids[i]);
    if (it != rec.tensor_of.end()) rec.tensors[it->second].uses.push_back(op);
  }
}

void OnlinePlanning::launch_started(CUstream stream) {
  if (!recording_ || recording_->ops.empty() || recording_->timing_failed) return;
  Recording::Op& op = recording_->ops.back();
  if (driver_.cuEventCreate(&op.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      driver_.cuEventRecord(op.start, stream) != CUDA_SUCCESS)
    recording_->timing_failed = true;
}

void OnlinePlanning::launch_ended(CUstream stream, CUresult result) {
  if (!recording_ || recording_->ops.empty() || recording_->timing_failed) return;
  Recording::Op& op = recording_->ops.back();
  if (result != CUDA_SUCCESS || !op.start ||
      driver_.cuEventCreate(&op.end, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      driver_.cuEventRecord(op.end, stream) != CUDA_SUCCESS)
    recording_->timing_failed = true;
}

void OnlinePlanning::planning_done(bool gave_up) {
  planning_ = false;
  gave_up_ = gave_up;
}

namespace {

// Builds the workload of a recorded iteration; its identities are the
// runtime's, so the plan made from it is followed as it is.
bool build(const OnlinePlanning::Recording& rec, const Driver& driver, uint64_t swap_min_bytes,
           policy::Workload& w, std::string& error) {
  if (rec.ops.empty()) {
    error = "the recorded iteration launched nothing";
    return false;
  }
  if (rec.timing_failed) {
    error = "the recorded iteration's launches could not be timed";
    return false;
  }
  if (rec.context && driver.cuCtxSetCurrent) (void)driver.cuCtxSetCurrent(rec.context);
  w.source = fmt::format("iteration {} as recorded by cuswap", rec.iteration);
  w.device = 0;
  const auto n = static_cast<uint32_t>(rec.ops.size());
  for (uint32_t i = 0; i < n; ++i) {
    const auto& op = rec.ops[i];
    if (!op.end || driver.cuEventSynchronize(op.end) != CUDA_SUCCESS) {
      error = fmt::format("launch {} ({}) was not timed", i, op.name);
      return false;
    }
    float ms = 0;
    if (driver.cuEventElapsedTime(&ms, op.start, op.end) != CUDA_SUCCESS) ms = 0;
    policy::WorkOp wo;
    wo.trace_index = i;
    wo.name = op.name;
    wo.ordinal = op.ordinal;
    wo.duration_ns = static_cast<int64_t>(static_cast<double>(ms) * 1e6);
    w.ops.push_back(std::move(wo));
  }
  for (const auto& t : rec.tensors) {
    policy::WorkTensor wt;
    wt.name = fmt::format("buffer {}", t.id);
    wt.size_bytes = policy::charged_bytes(t.size_bytes, swap_min_bytes);  // Note [Charged sizes]
    wt.slab = t.size_bytes < swap_min_bytes;
    wt.ordinal = t.ordinal;
    wt.alloc_op = t.resident_at_start ? policy::kResidentAtStart : std::min(t.alloc_op, n - 1);
    const uint32_t floor = t.resident_at_start ? 0 : wt.alloc_op;
    wt.free_op = t.free_op == UINT32_MAX ? n : std::max(std::min(t.free_op, n - 1), floor);
    wt.uses = t.uses;
    if (!t.resident_at_start) wt.uses.push_back(wt.alloc_op);
    std::erase_if(wt.uses, [&](uint32_t u) { return u < floor || u > wt.free_op; });
    std::sort(wt.uses.begin(), wt.uses.end());
    wt.uses.erase(std::unique(wt.uses.begin(), wt.uses.end()), wt.uses.end());
    if (!t.resident_at_start && wt.uses.empty()) wt.uses.push_back(wt.alloc_op);
    w.tensors.push_back(std::move(wt));
  }
  w.index();
  return true;
}

void destroy_events(const OnlinePlanning::Recording& rec, const Driver& driver) {
  for (const auto& op : rec.ops) {
    if (op.start) (void)driver.cuEventDestroy_v2(op.start);
    if (op.end) (void)driver.cuEventDestroy_v2(op.end);
  }
}

}  // namespace

void OnlinePlanning::hand_to_planner() {
  std::shared_ptr<Recording> rec(recording_.release());
  planning_ = true;
  const policy::Planner* planner = policy::find_planner(
      options_.planner.empty() ? policy::kDefaultPlanner : options_.planner.view());
  std::optional<policy::Link> link =
      policy::find_link(options_.link.empty() ? policy::kDefaultLink : options_.link.view());
  if (!planner || !link) {
    log::warn("online planning is off: unknown {} '{}'", planner ? "link" : "planner",
              planner ? options_.link.view() : options_.planner.view());
    destroy_events(*rec, driver_);
    planning_done(true);
    return;
  }
  uint64_t budget = options_.budget_bytes.get(0, 0);
  if (budget == 0) {
    CUdevice device = 0;
    size_t total = 0;
    if (driver_.cuCtxGetDevice(&device) == CUDA_SUCCESS &&
        driver_.cuDeviceTotalMem_v2(&total, device) == CUDA_SUCCESS)
      budget = total;
  }
  const Driver* driver = &driver_;
  Adopt adopt = adopt_;
  std::shared_ptr<std::atomic<bool>> alive = alive_;
  const uint64_t swap_min = options_.swap_min_bytes;
  auto work = [=]() {
    std::unique_ptr<policy::PlanFollower> follower;
    std::string summary;
    bool gave_up = false;
    try {
      policy::Workload workload;
      std::string error;
      if (!build(*rec, *driver, swap_min, workload, error)) {
        summary = fmt::format("online planning of iteration {} failed: {}", rec->iteration, error);
        gave_up = true;
      } else {
        policy::PlanRequest request;
        request.budget_bytes = budget;
        request.link = *link;
        request.swap_min_bytes = swap_min;  // Note [Pinned small tensors]
        policy::PlanOutcome outcome = policy::plan_and_simulate(*planner, workload, request);
        // The runtime matches the sizes asked for, not the pages charged.
        for (policy::PlanEntry& e : outcome.plan.entries) {
          const auto& t = rec->tensors;
          auto it = std::find_if(t.begin(), t.end(), [&](const Recording::Tensor& r) {
            return r.resident_at_start == e.tensor.resident_at_start &&
                   r.ordinal == e.tensor.ordinal;
          });
          if (it != t.end()) e.tensor.size_bytes = it->size_bytes;
        }
        const policy::SimResult& r = outcome.result;
        summary = fmt::format(
            "the {} plan of iteration {} takes over: {} copies, predicted iteration {:.3f} ms "
            "({:.2f}x the {:.3f} ms it would take with unlimited memory){}",
            planner->name(), rec->iteration, outcome.plan.entries.size(),
            static_cast<double>(r.iteration_ns) / 1e6,
            r.infinite_memory_ns > 0
                ? static_cast<double>(r.iteration_ns) / static_cast<double>(r.infinite_memory_ns)
                : 1.0,
            static_cast<double>(r.infinite_memory_ns) / 1e6,
            r.fits ? "" : "; it does not fit the budget");
        follower = std::make_unique<policy::PlanFollower>(outcome.plan);
      }
    } catch (...) {
      summary = "online planning ran out of memory";
      gave_up = true;
    }
    destroy_events(*rec, *driver);
    if (*alive) adopt(std::move(follower), std::move(summary), gave_up);
  };
  try {
    // The planner's thread takes no signals meant for the program.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread(work).detach();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  } catch (...) {
    log::warn("cannot start the planning thread; staying reactive");
    destroy_events(*rec, driver_);
    planning_done(true);
  }
}

}  // namespace cuswap::hooks

// Following a plan (Note [Following a plan] in runtime/plan_follow.h).
#include "runtime/plan_follow.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/log.h"
#include "policy/plan.h"
#include "runtime/online_plan.h"

namespace cuswap::hooks {
namespace {

// The evictions one launch starts when it has been queued, between
// before_launch() and after_launch() on the same thread.
thread_local std::vector<uintptr_t> tl_evict_after;

uint64_t budget_of(const conf::Options& options, int device) {
  return options.budget_bytes.get(device, 0);
}

}  // namespace

PlanFollow::PlanFollow(const Driver& driver, Allocator& allocator, const conf::Options& options)
    : driver_(driver), allocator_(allocator), options_(options) {
  if (options_.plan_path.empty() && options_.online)
    online_ = std::make_unique<OnlinePlanning>(
        driver_, options_,
        [this](std::unique_ptr<policy::PlanFollower> follower, std::string summary, bool gave_up) {
          adopt(std::move(follower), std::move(summary), gave_up);
        });
}

PlanFollow::~PlanFollow() = default;

bool PlanFollow::load_plan(const char* path, std::string& error) noexcept {
  try {
    policy::Plan plan;
    if (!policy::read_plan_file(path, plan, error)) return false;
    if (plan.mode != policy::PlanMode::scheduled) {
      error = fmt::format("{}: a {} plan has no copies to follow; the budget is kept reactively",
                          path, policy::mode_name(plan.mode));
      return false;
    }
    int devices = 0;
    if (driver_.cuDeviceGetCount && driver_.cuDeviceGetCount(&devices) == CUDA_SUCCESS &&
        plan.device >= devices) {
      error = fmt::format("{}: key device: the plan is for device {}, this process has {}", path,
                          plan.device, devices);
      return false;
    }
    if (plan.device < 0) {
      error = fmt::format("{}: key device: the plan was made from host memory (device {})", path,
                          plan.device);
      return false;
    }
    const uint64_t budget = budget_of(options_, plan.device);
    if (budget > 0 && plan.budget_bytes > budget) {
      error =
          fmt::format("{}: key budget_bytes: the plan needs a budget of {} bytes, device {} has {}",
                      path, plan.budget_bytes, plan.device, budget);
      return false;
    }
    auto follower = std::make_unique<policy::PlanFollower>(plan);
    std::lock_guard lock(mu_);
    log::info("following {}: {} entries from planner {}{}", path, follower->entries(), plan.planner,
              plan.predicted ? fmt::format(", predicted iteration {:.3f} ms",
                                           static_cast<double>(plan.predicted->iteration_ns) / 1e6)
                             : std::string());
    pending_ = std::move(follower);
    return true;
  } catch (...) {
    error = fmt::format("{}: out of memory reading the plan", path);
    return false;
  }
}

void PlanFollow::adopt(std::unique_ptr<policy::PlanFollower> follower, std::string summary,
                       bool gave_up) noexcept {
  std::lock_guard lock(mu_);
  if (online_) online_->planning_done(gave_up || !follower);
  if (!follower) {
    log::warn("{}; staying reactive", summary);
    return;
  }
  pending_ = std::move(follower);
  pending_summary_ = std::move(summary);
}

CUevent PlanFollow::take_event() noexcept {
  if (!event_pool_.empty()) {
    CUevent e = event_pool_.back();
    event_pool_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  if (driver_.cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
  return e;
}

void PlanFollow::give_event(CUevent event) noexcept {
  if (!event) return;
  try {
    event_pool_.push_back(event);
  } catch (...) {
    (void)driver_.cuEventDestroy_v2(event);
  }
}

// Late prefetches, from the timing events that are done (Note [Following
// a plan]); `all` waits for the rest (at exit only).
void PlanFollow::resolve_timings_locked(bool all) noexcept {
  for (size_t i = 0; i < timed_.size();) {
    Timed& t = timed_[i];
    if (!all && (driver_.cuEventQuery(t.ready) != CUDA_SUCCESS ||
                 driver_.cuEventQuery(t.done) != CUDA_SUCCESS)) {
      ++i;
      continue;
    }
    float ms = 0;
    if (driver_.cuEventElapsedTime(&ms, t.ready, t.done) == CUDA_SUCCESS && ms > 0) {
      const auto late_ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
      if (follower_) follower_->report_late(t.entry, late_ns);
      ++current_.late_prefetches;
      current_.late_ns += late_ns;
    }
    give_event(t.ready);
    give_event(t.done);
    timed_[i] = timed_.back();
    timed_.pop_back();
  }
}

void PlanFollow::set_recorder(trace::Recorder* recorder) noexcept {
  std::lock_guard lock(mu_);
  recorder_ = recorder;
}

void PlanFollow::begin_iteration_locked() noexcept {
  try {
    resolve_timings_locked(false);
    for (auto& [entry, event] : done_)
      give_event(event);
    done_.clear();
    const SwapStats now = allocator_.stats();
    if (in_iteration_) {
      current_.prefetches_planned = now.prefetches_planned - at_iteration_start_.prefetches_planned;
      current_.prefetches_on_demand =
          now.prefetches_on_demand - at_iteration_start_.prefetches_on_demand;
      current_.evictions = now.evictions - at_iteration_start_.evictions;
      current_.bytes_to_device = now.bytes_to_device - at_iteration_start_.bytes_to_device;
      current_.bytes_to_host = now.bytes_to_host - at_iteration_start_.bytes_to_host;
      current_.followed = follower_ && follower_->following();
      last_ = current_;
      if (recorder_) recorder_->record_iteration_stats(last_);
      if (options_.stats)
        log::report(
            "stats: iteration {}: {} planned prefetches, {} on demand, {} late ({} ns waited), "
            "{} evictions, {} bytes to host, {} to device{}",
            last_.iteration, last_.prefetches_planned, last_.prefetches_on_demand,
            last_.late_prefetches, last_.late_ns, last_.evictions, last_.bytes_to_host,
            last_.bytes_to_device, last_.followed ? ", plan followed" : "");
    }
    at_iteration_start_ = now;
    current_ = {};
    current_.iteration = ++iteration_;
    in_iteration_ = true;
    if (pending_) {
      follower_ = std::move(pending_);
      if (!pending_summary_.empty()) log::write_report_line(pending_summary_);
      pending_summary_.clear();
    }
    // The live buffers, for whoever follows or plans (reactive: nobody).
    std::vector<policy::PlanFollower::LiveBuffer> live;
    if (follower_ || online_) {
      live.reserve(live_.size());
      for (const auto& [id, buffer] : live_)
        live.push_back({id, buffer.size_bytes});
    }
    if (follower_) {
      if (last_.iteration == iteration_ - 1)
        follower_->report_on_demand(last_.prefetches_on_demand);
      follower_->begin_iteration(live);
      const std::string& why = follower_->last_mismatch();
      if (!why.empty() && why != last_mismatch_logged_) {
        last_mismatch_logged_ = why;
        log::warn("iteration {}: the plan no longer matches ({}); reactive for that iteration",
                  iteration_ - 1, why);
      }
      if (!follower_->mismatch().empty() && follower_->mismatch() != last_mismatch_logged_) {
        last_mismatch_logged_ = follower_->mismatch();
        log::warn("iteration {}: the plan does not match ({}); reactive for that iteration",
                  iteration_, last_mismatch_logged_);
      }
      if (follower_->stale() && online_) {
        log::report("the plan went stale after {} mismatched iterations; planning again",
                    policy::kReplanAfter);
        follower_.reset();
      }
    }
    if (online_ && !follower_) online_->begin_iteration(iteration_, live);
    recording_.store(online_ && online_->recording(), std::memory_order_release);
  } catch (...) {
    give_up_locked();
  }
}

void PlanFollow::iteration_mark() noexcept {
  std::lock_guard lock(mu_);
  marked_ = true;
  begin_iteration_locked();
}

// Out of memory inside the cursor or the recording: stop following and
// planning, and keep the budget reactively; the program goes on.
void PlanFollow::give_up_locked() noexcept {
  follower_.reset();
  pending_.reset();
  online_.reset();
  recording_.store(false, std::memory_order_release);
  static log::Limited limit(1);
  if (limit.allow())
    log::warn("out of memory following a plan; evicting only when memory runs out");
}

void PlanFollow::on_alloc(uint64_t id, uintptr_t base, uint64_t size_bytes) noexcept {
  std::lock_guard lock(mu_);
  try {
    live_.emplace(id, Live{base, size_bytes});
    if (follower_) follower_->on_alloc(id, size_bytes);
    if (online_) online_->on_alloc(id, size_bytes);
  } catch (...) {
    give_up_locked();
  }
}

void PlanFollow::on_free(uint64_t id) noexcept {
  std::lock_guard lock(mu_);
  try {
    live_.erase(id);
    if (follower_) follower_->on_free(id);
    if (online_) online_->on_free(id);
  } catch (...) {
    give_up_locked();
  }
}

void PlanFollow::before_launch(const KernelInfo* kernel, CUstream stream,
                               const TouchedBuffers& touched) noexcept {
  tl_evict_after.clear();
  std::lock_guard lock(mu_);
  try {
    const std::string_view name =
        kernel && !kernel->name.empty() ? std::string_view(kernel->name) : "(unnamed kernel)";
    if (!marked_ && detector_.on_launch(reinterpret_cast<uintptr_t>(kernel)))
      begin_iteration_locked();
    if (online_) online_->on_launch(name, touched);
    if (!follower_) return;
    follower_->on_launch(name, actions_);
    for (const auto& copy : actions_.prefetch) {
      auto it = live_.find(copy.buffer_id);
      if (it == live_.end()) continue;
      CUevent done = done_.count(copy.entry) ? nullptr : take_event();
      CUresult r = allocator_.start_prefetch(it->second.base, stream, done);
      if (r == CUDA_SUCCESS && done)
        done_.emplace(copy.entry, done);
      else
        give_event(done);
    }
    for (const auto& use : actions_.uses) {
      auto it = done_.find(use.entry);
      if (it == done_.end()) continue;
      CUevent ready = take_event();
      if (!ready) continue;
      if (driver_.cuEventRecord(ready, stream) != CUDA_SUCCESS) {
        give_event(ready);
        continue;
      }
      timed_.push_back({use.entry, ready, it->second});
      done_.erase(it);
    }
    for (const auto& copy : actions_.evict) {
      auto it = live_.find(copy.buffer_id);
      if (it != live_.end()) tl_evict_after.push_back(it->second.base);
    }
  } catch (...) {
    tl_evict_after.clear();
    give_up_locked();
  }
}

// Outside a recorded iteration (reactive, or following a plan) a launch
// takes mu_ once, in before_launch: these two take it only to time the
// launches of the iteration being recorded.
void PlanFollow::launch_prepared(CUstream stream) noexcept {
  if (!recording_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mu_);
  if (online_) online_->launch_started(stream);
}

void PlanFollow::after_launch(CUstream stream, CUresult result) noexcept {
  if (recording_.load(std::memory_order_acquire)) {
    std::lock_guard lock(mu_);
    if (online_) online_->launch_ended(stream, result);
  }
  if (tl_evict_after.empty()) return;
  if (result == CUDA_SUCCESS) {
    std::lock_guard lock(mu_);
    for (uintptr_t base : tl_evict_after)
      (void)allocator_.start_eviction(base);
  }
  tl_evict_after.clear();
}

std::string PlanFollow::stats_json() {
  std::lock_guard lock(mu_);
  const SwapStats s = allocator_.stats();
  std::string out = "{";
#define CUSWAP_SWAP_STAT_JSON(name, description) \
  fmt::format_to(std::back_inserter(out), "\"{}\": {}, ", #name, s.name);
  CUSWAP_SWAP_STATS(CUSWAP_SWAP_STAT_JSON)
#undef CUSWAP_SWAP_STAT_JSON
  const policy::FollowStats f = follower_ ? follower_->stats() : policy::FollowStats{};
  fmt::format_to(std::back_inserter(out),
                 "\"iterations\": {}, \"following\": {}, \"plan_entries\": {}, "
                 "\"followed_iterations\": {}, \"mismatched_iterations\": {}, "
                 "\"late_prefetches\": {}, \"late_ns\": {}, \"triggers_moved\": {}, "
                 "\"triggers_moved_back\": {}, \"iteration_period_launches\": {}, ",
                 iteration_, follower_ ? "true" : "false", follower_ ? follower_->entries() : 0,
                 f.followed_iterations, f.mismatched_iterations, f.late_prefetches, f.late_ns,
                 f.triggers_moved, f.triggers_moved_back, detector_.period());
  fmt::format_to(std::back_inserter(out),
                 "\"last_iteration\": {{\"iteration\": {}, \"followed\": {}, "
                 "\"prefetches_planned\": {}, \"prefetches_on_demand\": {}, "
                 "\"late_prefetches\": {}, \"late_ns\": {}, \"evictions\": {}, "
                 "\"bytes_to_host\": {}, \"bytes_to_device\": {}}}}}",
                 last_.iteration, last_.followed ? "true" : "false", last_.prefetches_planned,
                 last_.prefetches_on_demand, last_.late_prefetches, last_.late_ns, last_.evictions,
                 last_.bytes_to_host, last_.bytes_to_device);
  return out;
}

}  // namespace cuswap::hooks

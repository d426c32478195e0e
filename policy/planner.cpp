// The planner registry and what every planner's caller does around it.
#include "policy/planner.h"

#include <array>

#include "policy/planners/planners.h"

namespace cuswap::policy {

namespace {

const std::array<const Planner*, 6>& registry() {
  static const std::array<const Planner*, 6> planners = {
      &planners::cuswap_planner(),   &planners::seed_planner(), &planners::vdnn_planner(),
      &planners::capuchin_planner(), &planners::lru_planner(),  &planners::ondemand_planner()};
  return planners;
}

}  // namespace

const Planner* find_planner(std::string_view name) {
  for (const Planner* p : registry())
    if (p->name() == name) return p;
  return nullptr;
}

std::span<const Planner* const> all_planners() {
  return registry();
}

std::string planner_names() {
  std::string out;
  for (const Planner* p : registry()) {
    if (!out.empty()) out += ", ";
    out += p->name();
  }
  return out;
}

Plan new_plan(const Workload& workload, const PlanRequest& request, std::string_view planner,
              PlanMode mode) {
  Plan plan;
  plan.planner = planner;
  plan.mode = mode;
  plan.source = workload.source;
  plan.iteration = workload.iteration;
  plan.device = workload.device;
  plan.budget_bytes = request.budget_bytes;
  plan.link = request.link.name;
  plan.time_scale = request.time_scale;
  return plan;
}

SimOptions sim_options(const PlanRequest& request) {
  SimOptions options;
  options.budget_bytes = request.budget_bytes;
  options.link = request.link;
  options.time_scale = request.time_scale;
  options.swap_min_bytes = request.swap_min_bytes;
  return options;
}

SimResult simulate_plan(const Workload& workload, const Plan& plan, const PlanRequest& request,
                        bool record_timeline, bool bounds) {
  std::vector<ResolvedEntry> entries;
  std::string error;
  if (!resolve(plan, workload, entries, error)) entries.clear();  // planners' plans resolve
  SimOptions options = sim_options(request);
  options.record_timeline = record_timeline;
  options.bounds = bounds;
  return simulate(workload, plan.mode, entries, options);
}

PlanOutcome plan_and_simulate(const Planner& planner, const Workload& workload,
                              const PlanRequest& request, bool record_timeline) {
  PlanOutcome out;
  out.plan = planner.plan(workload, request);
  out.result = simulate_plan(workload, out.plan, request, record_timeline, true);
  out.plan.predicted =
      PlanPrediction{out.result.peak_bytes, out.result.iteration_ns, out.result.infinite_memory_ns};
  return out;
}

}  // namespace cuswap::policy

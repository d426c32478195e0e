// Planners: a Workload and a budget in, a Plan out. One file per planner
// under planners/, found by name through the registry below.
//
// Every planner returns a plan even when the budget is infeasible (the
// simulator and check_budget() say so); a planner never throws.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "policy/link.h"
#include "policy/plan.h"
#include "policy/simulator.h"
#include "policy/workload.h"

namespace cuswap::policy {

struct PlanRequest {
  uint64_t budget_bytes = UINT64_MAX;
  Link link;
  double time_scale = 1.0;
  // Tensors below this size stay on the device (Note [Pinned small tensors]
  // in policy/simulator.cpp); 0: every tensor may move.
  uint64_t swap_min_bytes = 0;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;  // one line, for --help
  virtual Plan plan(const Workload& workload, const PlanRequest& request) const = 0;
};

inline constexpr std::string_view kDefaultPlanner = "cuswap";

// nullptr for an unknown name.
const Planner* find_planner(std::string_view name);
// All planners, the default first.
std::span<const Planner* const> all_planners();
// "cuswap, seed, …" for messages.
std::string planner_names();

// A plan with the header fields filled from the workload and request.
Plan new_plan(const Workload& workload, const PlanRequest& request, std::string_view planner,
              PlanMode mode = PlanMode::scheduled);

SimOptions sim_options(const PlanRequest& request);

// Resolves and simulates a plan the planner itself made (so it resolves);
// `bounds` adds the lower bounds (policy/bounds.h) to the result.
SimResult simulate_plan(const Workload& workload, const Plan& plan, const PlanRequest& request,
                        bool record_timeline = false, bool bounds = false);

// Plans with `planner`, simulates (bounds included), and records the
// prediction in the plan.
struct PlanOutcome {
  Plan plan;
  SimResult result;
};
PlanOutcome plan_and_simulate(const Planner& planner, const Workload& workload,
                              const PlanRequest& request, bool record_timeline = false);

}  // namespace cuswap::policy

// `cuswap report`: one self-contained HTML page (inline SVG, CSS and a
// little script; nothing fetched) of a trace's iteration under a budget:
// device memory over time with and without the plan, the compute and copy
// lanes, every planner side by side, batch size against iteration time, and
// for a .cst recording what cuswap itself moved (docs/report.md).
//
// cli/report.cpp gathers a ReportInput (the simulations, the planners, the
// recording); render_report draws it (cli/report_html.cpp, with the parts
// that cli/report_draw.h lists). Every name from the trace goes through
// html_text (cli/html.h). The page stays small at any trace size: memory
// is drawn as a fixed number of columns, the largest tensors by name and
// the rest as two groups, and copies or ops narrower than a pixel are
// drawn merged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/policy_common.h"

namespace cuswap::cli {

// One point of batch size against iteration time for one planner.
struct BatchPoint {
  uint32_t batch = 0;
  int64_t iteration_ns = 0;
  int64_t infinite_memory_ns = 0;
  uint64_t peak_bytes = 0;
  bool fits = false;
};
struct BatchSeries {
  std::string planner;  // "" for no swapping
  uint32_t max_batch = 0;
  bool capped = false;
  std::string limit;  // what fails one batch above
  std::vector<BatchPoint> points;
};

// What cuswap moved while the program ran, read from a .cst recording: the
// chosen iteration's window on the recorder's clock.
struct RecordedMove {
  enum Kind : uint8_t { launch, eviction, prefetch, wait } kind = launch;
  int64_t start_ns = 0, end_ns = 0;  // end == start: the length is unknown
  uint64_t buffer = 0;
  uint64_t bytes = 0;
  std::string what;  // kernel name, or why the copy was made
};
struct Recording {
  std::string configuration;  // CUSWAP_CONF as recorded
  int64_t start_ns = 0, end_ns = 0;
  std::vector<RecordedMove> moves;
  uint64_t evicted_bytes = 0, prefetched_bytes = 0;
  uint32_t evictions = 0, prefetches = 0, on_demand = 0, waits = 0, launches = 0;
};

struct ReportInput {
  const Loaded* loaded = nullptr;
  std::string command;  // the command line, for the page's footer
  policy::Plan plan;    // planner "" when there is none
  bool has_plan = false;
  std::string plan_from;                      // the plan file, or "" when a planner made it
  policy::SimResult unlimited;                // no plan, no budget, with the timeline
  policy::SimResult planned;                  // the plan under the budget, with the timeline
  std::vector<policy::PlanOutcome> planners;  // every planner at the budget
  std::vector<uint32_t> traced_batches;       // with --max-batch
  uint64_t batch_budget_bytes = 0;
  double max_overhead = 0;
  std::vector<BatchSeries> batches;
  std::optional<Recording> recording;
};

std::string render_report(const ReportInput& in);

}  // namespace cuswap::cli

// The parts of the `cuswap report` page (cli/report.h) and what they draw
// with. One file per part of the page: report_draw.cpp (names, scales and
// axes), report_memory.cpp (device memory over time), report_lanes.cpp
// (compute and copy lanes, and what a recording shows cuswap did),
// report_planners.cpp (every planner, batch size), and report_html.cpp,
// which puts the page together. Each returns markup in which every name
// from the trace has gone through h() (cli/html.h).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli/html.h"
#include "cli/report.h"

namespace cuswap::cli::report {

using policy::SimResult;
using policy::Workload;

// The drawing area of every chart, in SVG units (1 unit = 1 CSS pixel).
inline constexpr int kWidth = 1100;
inline constexpr int kLeft = 80;  // room for the y axis's labels
inline constexpr int kRight = 16;
inline constexpr int kPlot = kWidth - kLeft - kRight;  // one memory column per unit

inline std::string h(std::string_view s) {
  return html_text(s);
}

// The run the page draws: the plan's, or without a plan the one with
// memory to spare.
inline const SimResult& shown_run(const ReportInput& in) {
  return in.has_plan ? in.planned : in.unlimited;
}

// ---- names, scales and axes (report_draw.cpp)

std::string tensor_name(const Workload& w, uint32_t t);
std::string op_name(const Workload& w, uint32_t k);
double ratio(int64_t a, int64_t b);
// A step of 1, 2 or 5 times a power of ten giving about `target` ticks over `range`.
double nice_step(double range, int target);
std::string short_ns(double ns);
// Horizontal axis of time from 0 to t_max over the plot, at y.
std::string time_axis(double t_max, int y);
// Vertical axis of bytes from 0 to y_max between top and top + height.
std::string bytes_axis(double y_max, int top, int height);

// ---- memory over time (report_memory.cpp)

// Which band each tensor is drawn in: the largest tensors by name, the
// rest as "resident at start" and "allocated in the iteration".
struct Bands {
  std::vector<uint32_t> named;  // tensor indices, largest first
  std::vector<uint32_t> of;     // per tensor: its band
  size_t count() const { return named.size() + 2; }
  size_t resident() const { return named.size(); }
  size_t allocated() const { return named.size() + 1; }
};

// Named bands for the tensors that cover the most of the run with memory
// to spare; the table lists them first.
Bands choose_bands(const Workload& w, const SimResult& unlimited);

// The memory charts with and without the plan, on one time scale (t_max,
// which the lanes share) and one byte scale, and their legend, which links
// the tensors in `listed` to their rows of the table.
std::string memory_section(const ReportInput& in, const Bands& b, const std::set<uint32_t>& listed,
                           double t_max);

// ---- lanes (report_lanes.cpp)

// The simulated compute and copy lanes of shown_run(in) over [0, t_max).
std::string lanes_section(const ReportInput& in, const std::set<uint32_t>& listed, double t_max);
// What cuswap itself moved in a .cst recording's iteration, on the
// recorder's clock (its own time axis, apart from the simulated lanes).
std::string recording_section(const Recording& rec);

// ---- planners and batches (report_planners.cpp)

// Every planner at the page's budget: iteration time and bytes moved
// drawn, then tabled.
std::string planners_section(const ReportInput& in);
// With --max-batch: iteration time against batch size for each policy, and
// the largest batch each allows.
std::string batches_section(const ReportInput& in);

}  // namespace cuswap::cli::report

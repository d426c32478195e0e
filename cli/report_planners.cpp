// Every planner at the page's budget, and batch size against iteration
// time, for `cuswap report` (cli/report_draw.h): each a chart and the
// table of its figures.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "cli/report_draw.h"

namespace cuswap::cli::report {

namespace {

constexpr const char* kSeriesColors[] = {"#333333", "#4e79a7", "#f28e2b", "#e15759",
                                         "#59a14f", "#b07aa1", "#9c755f", "#76b7b2"};

std::string planners_chart(const ReportInput& in) {
  const std::vector<policy::PlanOutcome>& ps = in.planners;
  const SimResult& first = ps.front().result;
  int64_t t_max = std::max({int64_t{1}, first.lower_bound_ns, first.infinite_memory_ns});
  uint64_t b_max = 1;
  for (const policy::PlanOutcome& p : ps) {
    t_max = std::max(t_max, p.result.iteration_ns);
    b_max = std::max({b_max, p.result.h2d_bytes, p.result.d2h_bytes});
  }
  constexpr int kRow = 26, kLabel = 90, kTimeW = 560, kGap = 70, kBytesW = 300;
  const int height = 40 + static_cast<int>(ps.size()) * kRow + 44;
  std::string out = fmt::format(
      "<svg class=\"planners\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">"
      "<text class=\"ct\" x=\"{}\" y=\"16\">iteration time (stall in red)</text><text class=\"ct\" "
      "x=\"{}\" y=\"16\">bytes moved per iteration: out (D2H), in (H2D)</text>",
      kWidth, height, kWidth, height, kLabel, kLabel + kTimeW + kGap);
  const auto tx = [&](double t) { return kLabel + t / double(t_max) / 1.05 * kTimeW; };
  const auto bx = [&](double b) {
    return kLabel + kTimeW + kGap + b / double(b_max) / 1.05 * kBytesW;
  };
  for (size_t i = 0; i < ps.size(); ++i) {
    const SimResult& r = ps[i].result;
    const std::string& name = ps[i].plan.planner;
    const int top = 30 + static_cast<int>(i) * kRow;
    const bool chosen = in.has_plan && in.plan_from.empty() && name == in.plan.planner;
    out += fmt::format("<text class=\"yl{}\" x=\"{}\" y=\"{}\">{}</text>", chosen ? " chosen" : "",
                       kLabel - 6, top + 15, h(name));
    const double busy = static_cast<double>(r.iteration_ns - r.stall_ns);
    out += fmt::format(
        "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"16\"><title>{}: {} "
        "({:.2f}x memory to spare), {}</title></rect>",
        r.fits ? "bar" : "bar nofit", kLabel, top + 4, tx(std::max(0.0, busy)) - kLabel, h(name),
        human_ns(r.iteration_ns), ratio(r.iteration_ns, r.infinite_memory_ns),
        r.fits ? "fits" : "does not fit");
    if (r.stall_ns > 0)
      out += fmt::format(
          "<rect class=\"stall\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"16\"><title>{} "
          "stalled {}</title></rect>",
          tx(std::max(0.0, busy)), top + 4, tx(static_cast<double>(r.stall_ns)) - kLabel, h(name),
          human_ns(r.stall_ns));
    out += fmt::format("<text class=\"vl\" x=\"{:.1f}\" y=\"{}\">{:.2f}x{}</text>",
                       tx(static_cast<double>(r.iteration_ns)) + 4, top + 16,
                       ratio(r.iteration_ns, r.infinite_memory_ns), r.fits ? "" : ", does not fit");
    out += fmt::format(
        "<rect class=\"evict\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"8\"><title>{} out: "
        "{}</title></rect><rect class=\"prefetch\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" "
        "height=\"8\"><title>{} in: {}</title></rect><text class=\"vl\" x=\"{:.1f}\" "
        "y=\"{}\">{} / {}</text>",
        kLabel + kTimeW + kGap, top + 4, bx(double(r.d2h_bytes)) - (kLabel + kTimeW + kGap),
        h(name), human_bytes(r.d2h_bytes), kLabel + kTimeW + kGap, top + 12,
        bx(double(r.h2d_bytes)) - (kLabel + kTimeW + kGap), h(name), human_bytes(r.h2d_bytes),
        bx(double(std::max(r.d2h_bytes, r.h2d_bytes))) + 4, top + 16, human_bytes(r.d2h_bytes),
        human_bytes(r.h2d_bytes));
  }
  const int bottom = 30 + static_cast<int>(ps.size()) * kRow;
  // Labels on two lines, so the two markers' never overlap.
  const auto marker = [&](int64_t t, const char* cls, const char* label, int line) {
    out += fmt::format(
        "<line class=\"{}\" x1=\"{:.1f}\" y1=\"26\" x2=\"{:.1f}\" y2=\"{}\"/><text class=\"tl\" "
        "x=\"{:.1f}\" y=\"{}\">{} {}</text>",
        cls, tx(double(t)), tx(double(t)), bottom + 14 * line - 10, tx(double(t)),
        bottom + 14 * line, label, human_ns(t));
  };
  marker(first.infinite_memory_ns, "unlimited", "memory to spare", 1);
  if (first.lower_bound_ns > first.infinite_memory_ns)
    marker(first.lower_bound_ns, "bound", "lower bound", 2);
  return out + "</svg>\n";
}

std::string planners_table(const ReportInput& in) {
  std::string out =
      "<table class=\"num\"><thead><tr><th>planner</th><th>peak</th><th>iteration</th>"
      "<th>x memory to spare</th><th>stall</th><th>out (D2H)</th><th>in (H2D)</th>"
      "<th>fits</th></tr></thead><tbody>";
  for (const policy::PlanOutcome& p : in.planners) {
    const SimResult& r = p.result;
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>",
        h(p.plan.planner), human_bytes(r.peak_bytes), human_ns(r.iteration_ns),
        ratio(r.iteration_ns, r.infinite_memory_ns), human_ns(r.stall_ns), human_bytes(r.d2h_bytes),
        human_bytes(r.h2d_bytes), r.fits ? "yes" : "no");
  }
  const SimResult& first = in.planners.front().result;
  out += fmt::format(
      "</tbody></table><p class=\"small\">Lower bound for any plan at this budget and link: {} "
      "({:.3f}x); memory to spare: {}.</p>\n",
      human_ns(first.lower_bound_ns), ratio(first.lower_bound_ns, first.infinite_memory_ns),
      human_ns(first.infinite_memory_ns));
  return out;
}

std::string batch_chart(const ReportInput& in) {
  uint32_t b_max = 1;
  int64_t t_max = 1;
  for (const BatchSeries& s : in.batches)
    for (const BatchPoint& p : s.points) {
      b_max = std::max(b_max, p.batch);
      if (p.fits) t_max = std::max(t_max, p.iteration_ns);
    }
  constexpr int kTop = 26, kHeight = 260;
  const auto x = [&](double b) { return kLeft + b / b_max * kPlot; };
  const auto y = [&](double t) { return kTop + kHeight - t / (double(t_max) * 1.05) * kHeight; };
  std::string out = fmt::format(
      "<svg class=\"batches\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\"><text "
      "class=\"ct\" x=\"{}\" y=\"16\">iteration time against batch size at {} (points that fit "
      "the budget)</text>",
      kWidth, kTop + kHeight + 50, kWidth, kTop + kHeight + 50, kLeft,
      human_bytes(in.batch_budget_bytes));
  const double tstep = nice_step(double(t_max) * 1.05, 5);
  for (double t = 0; t <= double(t_max) * 1.05; t += tstep)
    out += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/><text class=\"yl\" "
        "x=\"{}\" y=\"{:.1f}\">{}</text>",
        kLeft, y(t), kLeft + kPlot, y(t), kLeft - 6, y(t) + 4, short_ns(t));
  const double bstep = std::max(1.0, nice_step(b_max, 10));
  out += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", kLeft,
                     kTop + kHeight, kLeft + kPlot, kTop + kHeight);
  for (double b = 0; b <= b_max; b += bstep)
    out += fmt::format("<text class=\"tl\" x=\"{:.1f}\" y=\"{}\">{:g}</text>", x(b),
                       kTop + kHeight + 16, b);
  out += fmt::format("<text class=\"tl\" x=\"{}\" y=\"{}\">batch size</text>", kLeft + kPlot / 2,
                     kTop + kHeight + 34);
  for (size_t i = 0; i < in.batches.size(); ++i) {
    const BatchSeries& s = in.batches[i];
    const char* color = kSeriesColors[i % std::size(kSeriesColors)];
    const std::string name = s.planner.empty() ? "no swapping" : s.planner;
    std::string points;
    for (const BatchPoint& p : s.points) {
      if (!p.fits) continue;
      points += fmt::format("{:.1f},{:.1f} ", x(p.batch), y(double(p.iteration_ns)));
    }
    if (!points.empty()) points.pop_back();
    out += fmt::format("<polyline class=\"series\" stroke=\"{}\" points=\"{}\"/>", color, points);
    for (const BatchPoint& p : s.points)
      if (p.fits)
        out += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{} at batch {}: {} "
            "({:.2f}x memory to spare), peak {}</title></circle>",
            x(p.batch), y(double(p.iteration_ns)), color, h(name), p.batch,
            human_ns(p.iteration_ns), ratio(p.iteration_ns, p.infinite_memory_ns),
            human_bytes(p.peak_bytes));
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text class=\"lg\" "
        "x=\"{}\" y=\"{}\">{} (max {}{})</text>",
        kLeft + 8 + static_cast<int>(i % 4) * 240, kTop + 6 + static_cast<int>(i / 4) * 16, color,
        kLeft + 22 + static_cast<int>(i % 4) * 240, kTop + 15 + static_cast<int>(i / 4) * 16,
        h(name), s.max_batch, s.capped ? "+" : "");
  }
  return out + "</svg>\n";
}

std::string batch_table(const ReportInput& in) {
  std::string out =
      "<table class=\"num\"><thead><tr><th>policy</th><th>max batch</th><th>limit one batch "
      "above</th></tr></thead><tbody>";
  for (const BatchSeries& s : in.batches)
    out += fmt::format("<tr><td>{}</td><td>{}{}</td><td>{}</td></tr>",
                       h(s.planner.empty() ? "no swapping" : s.planner), s.max_batch,
                       s.capped ? "+" : "", h(s.limit));
  std::string traced;
  for (uint32_t b : in.traced_batches)
    traced += fmt::format("{}{}", traced.empty() ? "" : ", ", b);
  return out + fmt::format(
                   "</tbody></table><p class=\"small\">Fitted from traces at batch {}; "
                   "iteration time at most {:.0f}% over memory to spare.</p>\n",
                   traced, 100 * in.max_overhead);
}

}  // namespace

std::string planners_section(const ReportInput& in) {
  std::string out = "<section id=\"planners\"><h2>Every planner at this budget</h2>\n";
  out += planners_chart(in) + planners_table(in) + "</section>\n";
  return out;
}

std::string batches_section(const ReportInput& in) {
  std::string out = "<section id=\"batches\"><h2>Batch size</h2>\n";
  out += batch_chart(in) + batch_table(in) + "</section>\n";
  return out;
}

}  // namespace cuswap::cli::report

// Device memory over one iteration, for `cuswap report` (cli/report_draw.h):
// each run drawn as kPlot columns, whatever the trace's length, with the
// tensors that cover most of the picture as named bands and the rest as
// two groups, so the page stays small at any trace size.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cli/report_draw.h"

namespace cuswap::cli::report {

namespace {

constexpr size_t kNamedTensors = 10;

constexpr const char* kPalette[kNamedTensors] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                 "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                 "#9c755f", "#86bcb6"};
constexpr const char* kResidentColor = "#c5d0dd";
constexpr const char* kAllocatedColor = "#dedede";

}  // namespace

// The named tensors are those that cover the most of the picture with
// memory to spare: bytes times the time they hold them.
Bands choose_bands(const Workload& w, const SimResult& unlimited) {
  Bands b;
  std::vector<double> area(w.tensors.size(), 0);
  for (const policy::TensorSpan& s : unlimited.residency)
    area[s.tensor] += static_cast<double>(w.tensors[s.tensor].size_bytes) *
                      static_cast<double>(s.end_ns - s.start_ns);
  std::vector<uint32_t> order;
  for (uint32_t t = 0; t < w.tensors.size(); ++t)
    if (area[t] > 0) order.push_back(t);
  const size_t n = std::min(kNamedTensors, order.size());
  std::partial_sort(
      order.begin(), order.begin() + static_cast<ptrdiff_t>(n), order.end(),
      [&](uint32_t a, uint32_t c) { return area[a] != area[c] ? area[a] > area[c] : a < c; });
  b.named.assign(order.begin(), order.begin() + static_cast<ptrdiff_t>(n));
  b.of.resize(w.tensors.size());
  for (uint32_t t = 0; t < w.tensors.size(); ++t)
    b.of[t] =
        static_cast<uint32_t>(w.tensors[t].resident_at_start() ? b.resident() : b.allocated());
  for (size_t i = 0; i < b.named.size(); ++i)
    b.of[b.named[i]] = static_cast<uint32_t>(i);
  return b;
}

namespace {

// Device memory of one run as columns: for each column, the instant in it
// at which the bytes in use (after all changes at that instant) are
// highest, and each band's bytes then. Columns cover [0, t_max).
struct Columns {
  double dt = 1;                             // ns per column
  size_t used = 0;                           // columns that hold data
  std::vector<std::vector<uint64_t>> bands;  // [band][column]
  std::vector<uint64_t> total;
};

Columns columns_of(const Workload& w, const SimResult& r, const Bands& b, double t_max) {
  Columns c;
  c.dt = t_max / kPlot;
  c.bands.assign(b.count(), std::vector<uint64_t>(kPlot, 0));
  c.total.assign(kPlot, 0);
  struct Change {
    int64_t time;
    uint32_t tensor;
    bool arrives;
  };
  std::vector<Change> changes;
  changes.reserve(2 * r.residency.size());
  for (const policy::TensorSpan& s : r.residency) {
    if (s.end_ns <= s.start_ns) continue;
    changes.push_back({s.start_ns, s.tensor, true});
    changes.push_back({s.end_ns, s.tensor, false});
  }
  std::sort(changes.begin(), changes.end(),
            [](const Change& a, const Change& d) { return a.time < d.time; });
  const auto size = [&](const Change& ch) { return w.tensors[ch.tensor].size_bytes; };
  // First sweep: each column's instant of the highest total.
  std::vector<int64_t> instant(kPlot, 0);
  size_t i = 0;
  uint64_t total = 0;
  const auto apply_through = [&](int64_t t) {
    while (i < changes.size() && changes[i].time <= t) {
      total = changes[i].arrives ? total + size(changes[i]) : total - size(changes[i]);
      ++i;
    }
  };
  c.used = std::min<size_t>(
      kPlot, static_cast<size_t>(std::ceil(static_cast<double>(r.iteration_ns) / c.dt)));
  for (size_t col = 0; col < c.used; ++col) {
    const auto start = static_cast<int64_t>(std::floor(static_cast<double>(col) * c.dt));
    const auto end = static_cast<int64_t>(std::floor(static_cast<double>(col + 1) * c.dt));
    apply_through(start);
    uint64_t best = total;
    instant[col] = start;
    while (i < changes.size() && changes[i].time < end) {
      const int64_t t = changes[i].time;
      apply_through(t);
      if (total > best) best = total, instant[col] = t;
    }
    c.total[col] = best;
  }
  // Second sweep: the bands at those instants (spans with start <= t < end).
  std::vector<uint64_t> band(b.count(), 0);
  i = 0;
  for (size_t col = 0; col < c.used; ++col) {
    while (i < changes.size() && changes[i].time <= instant[col]) {
      uint64_t& v = band[b.of[changes[i].tensor]];
      v = changes[i].arrives ? v + size(changes[i]) : v - size(changes[i]);
      ++i;
    }
    for (size_t k = 0; k < b.count(); ++k)
      c.bands[k][col] = band[k];
  }
  return c;
}

std::string band_title(const Workload& w, const Bands& b, size_t band) {
  if (band < b.named.size()) {
    const uint32_t t = b.named[band];
    const policy::WorkTensor& x = w.tensors[t];
    const uint32_t last = x.uses.empty() ? x.free_op : x.uses.back();
    return fmt::format(
        "{}: {}; {}; last used by {}; {}", tensor_name(w, t), human_bytes(x.size_bytes),
        x.resident_at_start()
            ? std::string("resident at start")
            : fmt::format("made by {}",
                          op_name(w, x.producer != trace::kNoOp ? x.producer : x.alloc_op)),
        x.uses.empty() ? std::string("none") : op_name(w, last),
        x.free_op >= w.ops.size() ? std::string("live at the end")
                                  : fmt::format("freed after {}", op_name(w, x.free_op)));
  }
  const bool resident = band == b.resident();
  size_t count = 0;
  uint64_t bytes = 0;
  for (uint32_t t = 0; t < w.tensors.size(); ++t)
    if (b.of[t] == band) ++count, bytes += w.tensors[t].size_bytes;
  return fmt::format("{} other tensors {}, {} in all", count,
                     resident ? "resident at start (weights, optimizer state, earlier iterations)"
                              : "allocated in the iteration",
                     human_bytes(bytes));
}

std::string band_color(const Bands& b, size_t band) {
  if (band < b.named.size()) return kPalette[band];
  return band == b.resident() ? kResidentColor : kAllocatedColor;
}

constexpr int kMemHeight = 230;
constexpr int kMemTop = 26;

// One run's memory chart.
std::string memory_chart(const ReportInput& in, const SimResult& r, const Bands& b,
                         std::string_view title, double t_max, double y_max,
                         uint64_t budget_bytes) {
  const Workload& w = in.loaded->workload;
  const Columns c = columns_of(w, r, b, t_max);
  const auto y = [&](double v) { return kMemTop + kMemHeight - v / y_max * kMemHeight; };
  const auto x = [&](double t) { return kLeft + t / t_max * kPlot; };
  std::string mib;
  for (size_t col = 0; col < c.used; ++col)
    mib += fmt::format("{}{:.1f}", col ? "," : "",
                       static_cast<double>(c.total[col]) / double(uint64_t{1} << 20));
  std::string out = fmt::format(
      "<svg class=\"memory\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" data-x0=\"{}\" "
      "data-dt=\"{:.3f}\" data-mib=\"{}\" role=\"img\"><text class=\"ct\" x=\"{}\" "
      "y=\"16\">{}</text>",
      kWidth, kMemTop + kMemHeight + 30, kWidth, kMemTop + kMemHeight + 30, kLeft, c.dt, mib, kLeft,
      h(title));
  out += bytes_axis(y_max, kMemTop, kMemHeight);
  // Bands bottom up: resident at start, then the named ones, then the rest.
  std::vector<size_t> order = {b.resident()};
  for (size_t k = 0; k < b.named.size(); ++k)
    order.push_back(k);
  order.push_back(b.allocated());
  std::vector<uint64_t> base(c.used, 0);
  for (size_t band : order) {
    const std::vector<uint64_t>& v = c.bands[band];
    if (std::all_of(v.begin(), v.begin() + static_cast<ptrdiff_t>(c.used),
                    [](uint64_t a) { return a == 0; })) {
      continue;
    }
    std::vector<uint64_t> top(c.used);
    for (size_t col = 0; col < c.used; ++col)
      top[col] = base[col] + v[col];
    // A step outline: along the top left to right, back along the bottom.
    std::string d = fmt::format("M{} {:.1f}", kLeft, y(static_cast<double>(top[0])));
    for (size_t col = 0; col < c.used; ++col) {
      if (col > 0 && top[col] != top[col - 1])
        d += fmt::format("V{:.1f}", y(static_cast<double>(top[col])));
      d += fmt::format("H{}", kLeft + col + 1);
    }
    d += fmt::format("V{:.1f}", y(static_cast<double>(base[c.used - 1])));
    for (size_t col = c.used; col-- > 0;) {
      if (col + 1 < c.used && base[col] != base[col + 1])
        d += fmt::format("V{:.1f}", y(static_cast<double>(base[col])));
      d += fmt::format("H{}", kLeft + col);
    }
    d += "Z";
    out += fmt::format("<path class=\"band\" fill=\"{}\" d=\"{}\"><title>{}</title></path>",
                       band_color(b, band), d, h(band_title(w, b, band)));
    base = std::move(top);
  }
  if (budget_bytes != UINT64_MAX) {
    out += fmt::format(
        "<line class=\"budget\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/><text "
        "class=\"ml budget-label\" x=\"{}\" y=\"{:.1f}\">budget {}</text>",
        kLeft, y(double(budget_bytes)), kLeft + kPlot, y(double(budget_bytes)), kLeft + kPlot - 4,
        y(double(budget_bytes)) - 4, human_bytes(budget_bytes));
  }
  // The loss point and the peak.
  const uint32_t loss = policy::loss_point(w);
  if (loss < r.ops.size()) {
    const double lx = x(static_cast<double>(r.ops[loss].start_ns));
    out += fmt::format(
        "<line class=\"loss\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\"><title>the loss "
        "point: {}, where the forward pass ends</title></line><text class=\"ll\" x=\"{:.1f}\" "
        "y=\"{}\">loss</text>",
        lx, kMemTop, lx, kMemTop + kMemHeight, h(op_name(w, loss)), lx + 3,
        kMemTop + kMemHeight - 4);
  }
  int64_t peak_ns = 0;
  for (const policy::MemorySample& m : r.memory)
    if (m.bytes == r.peak_bytes) {
      peak_ns = m.time_ns;
      break;
    }
  const double px = x(static_cast<double>(peak_ns)), py = y(static_cast<double>(r.peak_bytes));
  out += fmt::format(
      "<circle class=\"peak\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"><title>peak {} at {}</title>"
      "</circle><text class=\"pl\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">peak {} at "
      "{}</text>",
      px, py, human_bytes(r.peak_bytes), human_ns(peak_ns), px + (px > kLeft + kPlot / 2 ? -8 : 8),
      std::max(py - 6, double(kMemTop) + 10), px > kLeft + kPlot / 2 ? "end" : "start",
      human_bytes(r.peak_bytes), human_ns(peak_ns));
  if (r.iteration_ns < t_max) {
    const double ex = x(static_cast<double>(r.iteration_ns));
    out += fmt::format(
        "<line class=\"end\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\"/><text class=\"ll\" "
        "x=\"{:.1f}\" y=\"{}\">end</text>",
        ex, kMemTop, ex, kMemTop + kMemHeight, ex + 3, kMemTop + kMemHeight - 4);
  }
  out += time_axis(t_max, kMemTop + kMemHeight);
  out += fmt::format(
      "<line class=\"rule\" x1=\"0\" y1=\"{}\" x2=\"0\" y2=\"{}\" visibility=\"hidden\"/><text "
      "class=\"readout\" x=\"{}\" y=\"16\"></text></svg>\n",
      kMemTop, kMemTop + kMemHeight, kLeft + kPlot);
  return out;
}

std::string legend(const Workload& w, const Bands& b, const std::set<uint32_t>& listed) {
  std::string out = "<ul class=\"legend\">";
  const auto item = [&](const std::string& color, const std::string& label,
                        const std::string& anchor) {
    out += fmt::format("<li><span class=\"sw\" style=\"background:{}\"></span>", color);
    out += anchor.empty() ? h(label) : fmt::format("<a href=\"#{}\">{}</a>", anchor, h(label));
    out += "</li>";
  };
  for (size_t k = 0; k < b.named.size(); ++k) {
    const uint32_t t = b.named[k];
    item(kPalette[k],
         fmt::format("{} ({})", tensor_name(w, t), human_bytes(w.tensors[t].size_bytes)),
         listed.count(t) ? fmt::format("tensor-{}", t) : "");
  }
  item(kResidentColor, "other tensors resident at start", "");
  item(kAllocatedColor, "other tensors allocated in the iteration", "");
  return out + "</ul>\n";
}

}  // namespace

std::string memory_section(const ReportInput& in, const Bands& b, const std::set<uint32_t>& listed,
                           double t_max) {
  const Loaded& l = *in.loaded;
  const SimResult& un = in.unlimited;
  const SimResult& pl = shown_run(in);
  double y_max = static_cast<double>(std::max(un.peak_bytes, pl.peak_bytes));
  if (l.budget_given && l.request.budget_bytes != UINT64_MAX)
    y_max = std::max(y_max, static_cast<double>(l.request.budget_bytes));
  y_max = std::max(1.0, y_max * 1.08);
  const uint64_t budget = l.budget_given ? l.request.budget_bytes : UINT64_MAX;
  std::string out = "<section id=\"memory\"><h2>Device memory over one iteration</h2>\n";
  out += memory_chart(in, un, b, "with memory to spare (nothing moves)", t_max, y_max, budget);
  if (in.has_plan)
    out += memory_chart(in, in.planned, b,
                        fmt::format("with {}'s plan under the budget", in.plan.planner), t_max,
                        y_max, budget);
  out += legend(l.workload, b, listed);
  out +=
      "<p class=\"small\">Each column shows the moment of highest use within it; hover a band "
      "for its tensor.</p></section>\n";
  return out;
}

}  // namespace cuswap::cli::report

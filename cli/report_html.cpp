// Drawing `cuswap report` (cli/report.h): the page is well-formed XML as
// well as HTML (every element closed, the script in CDATA), so a strict
// parser can check it; it needs nothing but itself to open.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/html.h"
#include "cli/report.h"

namespace cuswap::cli {

namespace {

using policy::SimResult;
using policy::Workload;

// The drawing area of every chart, in SVG units (1 unit = 1 CSS pixel).
constexpr int kWidth = 1100;
constexpr int kLeft = 80;  // room for the y axis's labels
constexpr int kRight = 16;
constexpr int kPlot = kWidth - kLeft - kRight;  // one memory column per unit
constexpr size_t kNamedTensors = 10;
constexpr size_t kTableTensors = 200;

constexpr const char* kPalette[kNamedTensors] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                 "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                 "#9c755f", "#86bcb6"};
constexpr const char* kResidentColor = "#c5d0dd";
constexpr const char* kAllocatedColor = "#dedede";
constexpr const char* kSeriesColors[] = {"#333333", "#4e79a7", "#f28e2b", "#e15759",
                                         "#59a14f", "#b07aa1", "#9c755f", "#76b7b2"};

std::string h(std::string_view s) {
  return html_text(s);
}

std::string tensor_name(const Workload& w, uint32_t t) {
  const std::string& name = w.tensors[t].name;
  return name.empty() ? fmt::format("tensor #{}", t) : name;
}

std::string op_name(const Workload& w, uint32_t k) {
  if (k >= w.ops.size()) return "the end";
  return fmt::format("{} (op {})", w.ops[k].name, k);
}

double ratio(int64_t a, int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

// A step of 1, 2 or 5 times a power of ten giving about `target` ticks over `range`.
double nice_step(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string short_ns(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:g} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:g} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:g} us", ns / 1e3);
  return fmt::format("{:g} ns", ns);
}

struct ByteUnit {
  double scale;
  const char* name;
};
ByteUnit byte_unit(double bytes) {
  if (bytes >= double(uint64_t{1} << 30)) return {double(uint64_t{1} << 30), "GiB"};
  if (bytes >= double(uint64_t{1} << 20)) return {double(uint64_t{1} << 20), "MiB"};
  if (bytes >= 1024) return {1024, "KiB"};
  return {1, "B"};
}

// Horizontal axis of time from 0 to t_max over the plot, at y.
std::string time_axis(double t_max, int y) {
  std::string out = fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                                kLeft, y, kLeft + kPlot, y);
  const double step = nice_step(t_max, 10);
  for (double t = 0; t <= t_max * 1.0001; t += step) {
    const double x = kLeft + t / t_max * kPlot;
    out += fmt::format(
        "<line class=\"tick\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\"/><text "
        "class=\"tl\" x=\"{:.1f}\" y=\"{}\">{}</text>",
        x, y, x, y + 4, x, y + 16, short_ns(t));
  }
  return out;
}

// Vertical axis of bytes from 0 to y_max between top and top + height.
std::string bytes_axis(double y_max, int top, int height) {
  const ByteUnit u = byte_unit(y_max);
  const double step = nice_step(y_max / u.scale, 5) * u.scale;
  std::string out;
  for (double v = 0; v <= y_max * 1.0001; v += step) {
    const double y = top + height - v / y_max * height;
    out += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/><text "
        "class=\"yl\" x=\"{}\" y=\"{:.1f}\">{:g} {}</text>",
        kLeft, y, kLeft + kPlot, y, kLeft - 6, y + 4, v / u.scale, u.name);
  }
  return out;
}

// ---- memory over time

// Which band each tensor is drawn in: the largest tensors by name, the
// rest as "resident at start" and "allocated in the iteration".
struct Bands {
  std::vector<uint32_t> named;  // tensor indices, largest first
  std::vector<uint32_t> of;     // per tensor: its band
  size_t count() const { return named.size() + 2; }
  size_t resident() const { return named.size(); }
  size_t allocated() const { return named.size() + 1; }
};

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

// ---- lanes

struct LaneItem {
  int64_t start_ns = 0, end_ns = 0;
  const char* style = "op";  // a CSS class
  int priority = 0;          // the merged drawing keeps the highest's style
  std::string title;
  int64_t link = -1;  // a tensor of the table
  uint64_t bytes = 0;
};
struct Lane {
  std::string name;
  std::vector<LaneItem> items;
  const char* unit = "ops";  // what a merged run counts
};

constexpr int kLaneHeight = 26;

// Items at least 2 units wide are drawn alone; narrower ones within a unit
// of each other are merged into one run, so a lane draws at most about one
// element per unit of width.
std::string lanes_chart(const std::vector<Lane>& lanes, double t0, double t_max,
                        std::string_view title, const std::set<uint32_t>& linked) {
  const int height = 24 + static_cast<int>(lanes.size()) * kLaneHeight + 24;
  std::string out = fmt::format(
      "<svg class=\"lanes\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\"><text "
      "class=\"ct\" x=\"{}\" y=\"16\">{}</text>",
      kWidth, height, kWidth, height, kLeft, h(title));
  const auto x = [&](double t) { return kLeft + (t - t0) / t_max * kPlot; };
  for (size_t l = 0; l < lanes.size(); ++l) {
    const int top = 24 + static_cast<int>(l) * kLaneHeight;
    out += fmt::format(
        "<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/><text class=\"yl\" "
        "x=\"{}\" y=\"{}\">{}</text>",
        kLeft, top + 2, kPlot, kLaneHeight - 4, kLeft - 6, top + kLaneHeight / 2 + 4,
        h(lanes[l].name));
    std::vector<const LaneItem*> items;
    for (const LaneItem& item : lanes[l].items)
      items.push_back(&item);
    std::stable_sort(items.begin(), items.end(), [](const LaneItem* a, const LaneItem* b) {
      return a->start_ns < b->start_ns;
    });
    struct Run {
      double x0 = 0, x1 = 0;
      const LaneItem* first = nullptr;
      const LaneItem* top = nullptr;
      size_t count = 0;
      uint64_t bytes = 0;
      int64_t end_ns = 0;
    };
    std::optional<Run> run;
    const auto draw = [&](const Run& r) {
      const double width = std::max(1.0, r.x1 - r.x0);
      std::string rect = fmt::format(
          "<rect class=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\"><title>",
          r.top->style, r.x0, top + 4, width, kLaneHeight - 8);
      if (r.count == 1) {
        rect += h(r.first->title);
      } else {
        rect += h(fmt::format("{} {} from {} to {}{}; the first: {}", r.count, lanes[l].unit,
                              human_ns(r.first->start_ns), human_ns(r.end_ns),
                              r.bytes ? fmt::format(", {} in all", human_bytes(r.bytes)) : "",
                              r.first->title));
      }
      rect += "</title></rect>";
      const int64_t link = r.count == 1 ? r.first->link : -1;
      if (link >= 0 && linked.count(static_cast<uint32_t>(link)))
        out += fmt::format("<a href=\"#tensor-{}\">{}</a>", link, rect);
      else
        out += rect;
    };
    for (const LaneItem* item : items) {
      const double x0 = x(static_cast<double>(item->start_ns));
      const double x1 = x(static_cast<double>(item->end_ns));
      const bool wide = x1 - x0 >= 2;
      if (run && (wide || x0 - run->x1 >= 1)) {
        draw(*run);
        run.reset();
      }
      if (!run) {
        run = Run{x0, x1, item, item, 1, item->bytes, item->end_ns};
      } else {
        run->x1 = std::max(run->x1, x1);
        ++run->count;
        run->bytes += item->bytes;
        run->end_ns = std::max(run->end_ns, item->end_ns);
        if (item->priority > run->top->priority) run->top = item;
      }
      if (wide) {
        draw(*run);
        run.reset();
      }
    }
    if (run) draw(*run);
  }
  out += time_axis(t_max, 24 + static_cast<int>(lanes.size()) * kLaneHeight);
  return out + "</svg>\n";
}

std::string copy_title(const Workload& w, const policy::CopySpan& c) {
  std::string what = c.to_device ? (c.on_demand ? "fetch on demand" : "prefetch") : "evict";
  std::string tensors = tensor_name(w, c.tensor);
  if (c.tensors > 1) tensors += fmt::format(" and {} more", c.tensors - 1);
  return fmt::format("{} {}: {}, {} to {} ({})", what, tensors, human_bytes(c.bytes),
                     human_ns(c.start_ns), human_ns(c.end_ns), human_ns(c.end_ns - c.start_ns));
}

std::vector<Lane> simulated_lanes(const Workload& w, const SimResult& r, double time_scale) {
  Lane compute{"compute", {}, "ops"};
  Lane stalls{"stalls", {}, "waits"};
  int64_t free_at = 0;
  for (const policy::OpSpan& s : r.ops) {
    const policy::WorkOp& op = w.ops[s.op];
    const int64_t ready = free_at + policy::scaled_ns(op.idle_ns, time_scale);
    if (s.start_ns > ready && free_at > 0) {
      stalls.items.push_back({ready, s.start_ns, "stall", 2,
                              fmt::format("{} waited {} for its tensors", op_name(w, s.op),
                                          human_ns(s.start_ns - ready)),
                              -1, 0});
    }
    compute.items.push_back({s.start_ns, s.end_ns, "op", 0,
                             fmt::format("{} [{}]: {} to {}", op_name(w, s.op), op.type,
                                         human_ns(s.start_ns), human_ns(s.end_ns)),
                             -1, 0});
    free_at = s.end_ns;
  }
  Lane h2d{"H2D", {}, "copies"}, d2h{"D2H", {}, "copies"};
  for (const policy::CopySpan& c : r.copies) {
    LaneItem item{c.start_ns,
                  c.end_ns,
                  c.to_device ? (c.on_demand ? "demand" : "prefetch") : "evict",
                  c.on_demand ? 2 : 1,
                  copy_title(w, c),
                  c.tensor,
                  c.bytes};
    (c.to_device ? h2d : d2h).items.push_back(std::move(item));
  }
  return {std::move(compute), std::move(stalls), std::move(h2d), std::move(d2h)};
}

// ---- planners and batches

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

// ---- the recording

std::string recording_section(const Recording& rec) {
  Lane compute{"kernels", {}, "launches"}, waits{"waits", {}, "waits"};
  Lane h2d{"H2D", {}, "prefetches"}, d2h{"D2H", {}, "evictions"};
  for (const RecordedMove& m : rec.moves) {
    const int64_t end = std::max(m.end_ns, m.start_ns + 1);
    const int64_t s = m.start_ns - rec.start_ns, e = end - rec.start_ns;
    switch (m.kind) {
      case RecordedMove::launch:
        compute.items.push_back({s, e, "op", 0, m.what, -1, 0});
        break;
      case RecordedMove::wait:
        waits.items.push_back({s, e, "stall", 2,
                               fmt::format("a use waited for buffer {}'s prefetch", m.buffer), -1,
                               0});
        break;
      case RecordedMove::prefetch:
        h2d.items.push_back(
            {s, e, m.what == "on_demand" ? "demand" : "prefetch", m.what == "on_demand" ? 2 : 1,
             fmt::format("prefetch ({}) of buffer {}: {}", m.what, m.buffer, human_bytes(m.bytes)),
             -1, m.bytes});
        break;
      case RecordedMove::eviction:
        d2h.items.push_back({s, e, "evict", 1,
                             fmt::format("eviction ({}) of buffer {}: {}, {}", m.what, m.buffer,
                                         human_bytes(m.bytes), human_ns(m.end_ns - m.start_ns)),
                             -1, m.bytes});
        break;
    }
  }
  std::string out = fmt::format(
      "<section id=\"recorded\"><h2>What cuswap did</h2><p>In the recorded iteration ({} on the "
      "recorder's clock, {} launches) cuswap evicted {} buffers ({}) and brought {} back ({}), {} "
      "of them on demand; a use waited for a prefetch {} times. Recorded with "
      "<code>CUSWAP_CONF={}</code>.</p>\n",
      human_ns(rec.end_ns - rec.start_ns), rec.launches, rec.evictions,
      human_bytes(rec.evicted_bytes), rec.prefetches, human_bytes(rec.prefetched_bytes),
      rec.on_demand, rec.waits,
      h(rec.configuration.empty() ? std::string("(none)") : rec.configuration));
  out += lanes_chart({compute, waits, h2d, d2h}, 0,
                     static_cast<double>(std::max<int64_t>(1, rec.end_ns - rec.start_ns)),
                     "as recorded: kernels, waits, prefetches and evictions", {});
  return out + "</section>\n";
}

// ---- tensors

// A table cell for a name that may be long (C++ kernel signatures): the
// first 72 characters, all of it on hover.
std::string name_cell(const std::string& name) {
  if (name.size() <= 72) return fmt::format("<td class=\"name\">{}</td>", h(name));
  size_t cut = 72;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xc0) == 0x80)
    --cut;  // not inside a UTF-8 sequence
  return fmt::format("<td class=\"name\" title=\"{}\">{}…</td>", h(name), h(name.substr(0, cut)));
}
std::string op_cell(const Workload& w, uint32_t k) {
  if (k >= w.ops.size()) return "<td class=\"name\">the end</td>";
  const std::string cell = name_cell(w.ops[k].name);
  return cell.substr(0, cell.size() - 5) + fmt::format(" (op {})</td>", k);
}

std::string tensor_table(const Workload& w, const std::vector<uint32_t>& rows,
                         const std::map<uint32_t, std::pair<uint32_t, uint32_t>>& moves,
                         size_t more) {
  std::string out =
      "<table class=\"num\"><thead><tr><th>#</th><th>tensor</th><th>size</th><th>made by</th>"
      "<th>last use</th><th>freed</th><th>out</th><th>in</th></tr></thead><tbody>";
  for (uint32_t t : rows) {
    const policy::WorkTensor& x = w.tensors[t];
    const auto m = moves.find(t);
    out += fmt::format(
        "<tr id=\"tensor-{}\"><td>{}</td>{}<td>{}</td>{}{}{}<td>{}</td><td>{}</td></tr>", t, t,
        name_cell(tensor_name(w, t)), human_bytes(x.size_bytes),
        x.resident_at_start() ? name_cell("resident at start")
                              : op_cell(w, x.producer != trace::kNoOp ? x.producer : x.alloc_op),
        x.uses.empty() ? name_cell("none") : op_cell(w, x.uses.back()),
        x.free_op >= w.ops.size() ? name_cell("live at the end") : op_cell(w, x.free_op),
        m == moves.end() ? 0 : m->second.first, m == moves.end() ? 0 : m->second.second);
  }
  out += "</tbody></table>";
  if (more) out += fmt::format("<p class=\"small\">and {} more tensors moved.</p>", more);
  return out + "\n";
}

constexpr std::string_view kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1120px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd}
p.lead{font-size:15px}.small{color:#555;font-size:12px}code{font-size:12px}
svg{display:block;margin:8px 0;overflow:visible}
svg text{font:11px system-ui,sans-serif;fill:#333}
.ct{font-weight:600;font-size:12px}.yl{text-anchor:end}.yl.chosen{font-weight:700}.tl{text-anchor:middle}
.ml{text-anchor:end}.lg{font-size:11px}.vl{font-size:11px}
.axis{stroke:#444}.tick{stroke:#444}.grid{stroke:#eee}
.band{stroke:none}.band:hover{opacity:.75}
.budget{stroke:#c00;stroke-width:1.5;stroke-dasharray:6 3}.budget-label{fill:#c00}
.loss,.end{stroke:#555;stroke-dasharray:2 3}.ll{font-size:10px;fill:#555}
.peak{fill:#c00}.pl{fill:#c00;font-weight:600}
.rule{stroke:#000;stroke-width:.5}.readout{text-anchor:end;font-weight:600}
.lane{fill:#f6f6f6}.op{fill:#7a9cc6}.stall{fill:#d62728}.prefetch{fill:#4e79a7}
.demand{fill:#ff7f0e}.evict{fill:#59a14f}.bar{fill:#9aaec8}.bar.nofit{fill:#bbb}
.unlimited{stroke:#000;stroke-width:1}.bound{stroke:#000;stroke-dasharray:4 3}
.series{fill:none;stroke-width:2}
ul.legend{list-style:none;padding:0;margin:4px 0 0 80px;columns:3;font-size:12px}
ul.legend li{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.sw{display:inline-block;width:10px;height:10px;margin-right:5px;vertical-align:-1px}
table.num{border-collapse:collapse;font-size:12px;margin:6px 0}
table.num td,table.num th{border-bottom:1px solid #eee;padding:2px 8px;text-align:right}
table.num td.name,table.num th:nth-child(2){text-align:left;max-width:360px;overflow-wrap:anywhere}
tr:target{background:#fff3c4}
details{font-size:12px;color:#555}
)";

// Reads the memory charts' columns under the pointer; marks the page ready.
constexpr std::string_view kScript = R"(//<![CDATA[
(function () {
  function time(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
    return Math.round(ns) + ' ns';
  }
  function bytes(mib) {
    return mib >= 1024 ? (mib / 1024).toFixed(2) + ' GiB' : mib.toFixed(1) + ' MiB';
  }
  document.querySelectorAll('svg.memory').forEach(function (svg) {
    var mib = svg.dataset.mib ? svg.dataset.mib.split(',').map(Number) : [];
    var dt = Number(svg.dataset.dt), x0 = Number(svg.dataset.x0);
    var rule = svg.querySelector('.rule'), readout = svg.querySelector('.readout');
    svg.addEventListener('mousemove', function (ev) {
      var box = svg.getBoundingClientRect();
      var x = (ev.clientX - box.left) * svg.viewBox.baseVal.width / box.width;
      var c = Math.floor(x - x0);
      if (c < 0 || c >= mib.length) {
        rule.setAttribute('visibility', 'hidden');
        readout.textContent = '';
        return;
      }
      rule.setAttribute('x1', x0 + c + 0.5);
      rule.setAttribute('x2', x0 + c + 0.5);
      rule.setAttribute('visibility', 'visible');
      readout.textContent = time(c * dt) + ': ' + bytes(mib[c]) + ' on the device';
    });
    svg.addEventListener('mouseleave', function () {
      rule.setAttribute('visibility', 'hidden');
      readout.textContent = '';
    });
  });
  document.documentElement.setAttribute('data-ready', '1');
})();
//]]>)";

}  // namespace

std::string render_report(const ReportInput& in) {
  const Loaded& l = *in.loaded;
  const Workload& w = l.workload;
  const SimResult& un = in.unlimited;
  const SimResult& pl = in.has_plan ? in.planned : in.unlimited;
  const std::string file = l.trace.source.substr(l.trace.source.find_last_of('/') + 1);
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>cuswap report: "
      "{}</title><style>{}</style><script>//<![CDATA[\nwindow.addEventListener('error', function "
      "(e) {{ document.documentElement.setAttribute('data-error', String(e.message)); }});\n//]]>"
      "</script></head>\n<body>\n<h1>cuswap report: {}</h1>\n",
      h(file), kStyle, h(file));

  // The header, in words.
  uint64_t device_bytes = 0;
  for (const policy::WorkTensor& t : w.tensors)
    device_bytes += t.size_bytes;
  out += fmt::format(
      "<p class=\"lead\"><code>{}</code>: a {} trace, device {}{}, {}: {} ops and {} tensors ({} "
      "in all). With memory to spare the iteration peaks at <b>{}</b> and takes <b>{}</b>.</p>\n",
      h(l.trace.source), h(trace::format_name(l.trace.format)), w.device,
      w.host_as_device ? " (captured on a CPU: host tensors stand in for device ones)" : "",
      w.iteration == trace::kNoIteration ? std::string("the whole trace as one iteration")
                                         : fmt::format("iteration {}", w.iteration),
      w.ops.size(), w.tensors.size(), human_bytes(device_bytes),
      human_bytes(un.infinite_memory_peak_bytes), human_ns(un.infinite_memory_ns));
  if (!l.budget_given) {
    out +=
        "<p class=\"lead\">No budget was given, so nothing moves: give <code>--budget SIZE</code> "
        "or <code>--budget PERCENT%</code> to see a plan, its copies and every planner.</p>\n";
  } else {
    const uint64_t budget = l.request.budget_bytes;
    out += fmt::format(
        "<p class=\"lead\">Budget <b>{}</b> ({:.0f}% of the peak), link {}, time scale {:g}. ",
        human_bytes(budget),
        100.0 * static_cast<double>(budget) /
            static_cast<double>(std::max<uint64_t>(1, un.infinite_memory_peak_bytes)),
        h(describe_link(l.request.link)), l.request.time_scale);
    const std::string source =
        in.plan_from.empty()
            ? fmt::format("the {} planner's plan", h(in.plan.planner))
            : fmt::format("the plan in <code>{}</code> ({})", h(in.plan_from), h(in.plan.planner));
    if (pl.fits) {
      out += fmt::format(
          "With {} it <b>fits at {:.2f}x</b> the time with memory to spare ({}), moving {} out "
          "and {} in per iteration; the compute engine waits {} in all.",
          source, ratio(pl.iteration_ns, pl.infinite_memory_ns), human_ns(pl.iteration_ns),
          human_bytes(pl.d2h_bytes), human_bytes(pl.h2d_bytes), human_ns(pl.stall_ns));
      if (pl.lower_bound_ns > 0)
        out += fmt::format(" No plan can do better than {:.2f}x at this budget and link.",
                           ratio(pl.lower_bound_ns, pl.infinite_memory_ns));
    } else if (pl.shortfall) {
      out += fmt::format("With {} it <b>does not fit</b>: {}.", source,
                         h(shortfall_text(*pl.shortfall, w)));
    } else {
      out += fmt::format("With {} it <b>does not fit</b>: the peak is {}, over the budget by {}.",
                         source, human_bytes(pl.peak_bytes),
                         human_bytes(pl.peak_bytes - std::min(pl.peak_bytes, budget)));
    }
    out += "</p>\n";
  }
  std::vector<std::string> notes = w.notes;
  notes.insert(notes.end(), l.trace.notes.begin(), l.trace.notes.end());
  if (!notes.empty()) {
    out += "<details><summary>How the trace was read</summary><ul>";
    for (const std::string& n : notes)
      out += fmt::format("<li>{}</li>", h(n));
    out += "</ul></details>\n";
  }

  // Tensors listed in the table: the named bands' and those moved most.
  const Bands bands = choose_bands(w, un);
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> moves;  // tensor -> (out, in)
  std::map<uint32_t, uint64_t> moved_bytes;
  if (in.has_plan)
    for (const policy::CopySpan& c : pl.copies) {
      auto& m = moves[c.tensor];
      (c.to_device ? m.second : m.first) += 1;
      moved_bytes[c.tensor] += c.bytes;
    }
  std::vector<uint32_t> rows(bands.named.begin(), bands.named.end());
  std::vector<std::pair<uint64_t, uint32_t>> by_bytes;
  for (const auto& [t, b] : moved_bytes)
    if (std::find(rows.begin(), rows.end(), t) == rows.end()) by_bytes.push_back({b, t});
  std::sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  size_t more = 0;
  for (const auto& [b, t] : by_bytes) {
    if (rows.size() < kTableTensors)
      rows.push_back(t);
    else
      ++more;
  }
  const std::set<uint32_t> listed(rows.begin(), rows.end());

  // Memory over time, on one time scale and one byte scale.
  const double t_max = static_cast<double>(
      std::max<int64_t>(1, std::max(un.iteration_ns, in.has_plan ? in.planned.iteration_ns : 0)));
  double y_max = static_cast<double>(std::max(un.peak_bytes, pl.peak_bytes));
  if (l.budget_given && l.request.budget_bytes != UINT64_MAX)
    y_max = std::max(y_max, static_cast<double>(l.request.budget_bytes));
  y_max = std::max(1.0, y_max * 1.08);
  const uint64_t budget = l.budget_given ? l.request.budget_bytes : UINT64_MAX;
  out += "<section id=\"memory\"><h2>Device memory over one iteration</h2>\n";
  out += memory_chart(in, un, bands, "with memory to spare (nothing moves)", t_max, y_max, budget);
  if (in.has_plan)
    out += memory_chart(in, in.planned, bands,
                        fmt::format("with {}'s plan under the budget", in.plan.planner), t_max,
                        y_max, budget);
  out += legend(w, bands, listed);
  out +=
      "<p class=\"small\">Each column shows the moment of highest use within it; hover a band "
      "for its tensor.</p></section>\n";

  // The lanes.
  out += "<section id=\"lanes\"><h2>Compute and copy lanes</h2>\n";
  out += lanes_chart(simulated_lanes(w, pl, l.request.time_scale), 0, t_max,
                     in.has_plan ? "simulated with the plan: ops, stalls, prefetches (on demand in "
                                   "orange) and evictions"
                                 : "simulated: ops",
                     listed);
  out += "</section>\n";

  if (!in.planners.empty()) {
    out += "<section id=\"planners\"><h2>Every planner at this budget</h2>\n";
    out += planners_chart(in) + planners_table(in) + "</section>\n";
  }
  if (!in.batches.empty()) {
    out += "<section id=\"batches\"><h2>Batch size</h2>\n";
    out += batch_chart(in) + batch_table(in) + "</section>\n";
  }
  if (in.recording) out += recording_section(*in.recording);
  out += "<section id=\"tensors\"><h2>Tensors</h2>\n";
  out += tensor_table(w, rows, moves, more) + "</section>\n";
  out += fmt::format(
      "<p class=\"small\">Made by <code>{}</code>. Times are simulated (docs/simulator.md) unless "
      "marked as recorded.</p>\n<script>{}</script>\n</body></html>\n",
      h(in.command), kScript);
  return out;
}

}  // namespace cuswap::cli

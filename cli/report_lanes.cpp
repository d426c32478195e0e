// The compute and copy lanes of `cuswap report` (cli/report_draw.h): the
// simulated ops, stalls and copies of the run the page shows, and, from a
// .cst recording, the kernels, waits and copies cuswap itself made. Items
// narrower than a pixel are drawn merged, so a lane holds about one
// element per unit of width at any trace size.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "cli/report_draw.h"

namespace cuswap::cli::report {

namespace {

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

}  // namespace

std::string lanes_section(const ReportInput& in, const std::set<uint32_t>& listed, double t_max) {
  const Loaded& l = *in.loaded;
  std::string out = "<section id=\"lanes\"><h2>Compute and copy lanes</h2>\n";
  out += lanes_chart(simulated_lanes(l.workload, shown_run(in), l.request.time_scale), 0, t_max,
                     in.has_plan ? "simulated with the plan: ops, stalls, prefetches (on demand in "
                                   "orange) and evictions"
                                 : "simulated: ops",
                     listed);
  out += "</section>\n";
  return out;
}

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

}  // namespace cuswap::cli::report

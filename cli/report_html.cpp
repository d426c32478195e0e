// Putting the `cuswap report` page together (cli/report.h): its head and
// style, the paragraphs that say in words what the charts show, the
// sections (cli/report_draw.h names the files that draw them), the table
// of tensors and the script. The page is well-formed XML as well as HTML
// (every element closed, the script in CDATA), so a strict parser can
// check it; it needs nothing but itself to open.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/report_draw.h"

namespace cuswap::cli {

namespace report {

namespace {

constexpr size_t kTableTensors = 200;

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

std::string head(const std::string& file) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>cuswap report: "
      "{}</title><style>{}</style><script>//<![CDATA[\nwindow.addEventListener('error', function "
      "(e) {{ document.documentElement.setAttribute('data-error', String(e.message)); }});\n//]]>"
      "</script></head>\n<body>\n<h1>cuswap report: {}</h1>\n",
      h(file), kStyle, h(file));
}

// The trace in words: what it holds, and its iteration with memory to spare.
std::string trace_paragraph(const ReportInput& in) {
  const Loaded& l = *in.loaded;
  const Workload& w = l.workload;
  const SimResult& un = in.unlimited;
  uint64_t device_bytes = 0;
  for (const policy::WorkTensor& t : w.tensors)
    device_bytes += t.size_bytes;
  return fmt::format(
      "<p class=\"lead\"><code>{}</code>: a {} trace, device {}{}, {}: {} ops and {} tensors ({} "
      "in all). With memory to spare the iteration peaks at <b>{}</b> and takes <b>{}</b>.</p>\n",
      h(l.trace.source), h(trace::format_name(l.trace.format)), w.device,
      w.host_as_device ? " (captured on a CPU: host tensors stand in for device ones)" : "",
      w.iteration == trace::kNoIteration ? std::string("the whole trace as one iteration")
                                         : fmt::format("iteration {}", w.iteration),
      w.ops.size(), w.tensors.size(), human_bytes(device_bytes),
      human_bytes(un.infinite_memory_peak_bytes), human_ns(un.infinite_memory_ns));
}

// The budget in words: whether the plan fits it and at what cost, or by how
// much it does not; without a budget, how to give one.
std::string budget_paragraph(const ReportInput& in) {
  const Loaded& l = *in.loaded;
  const SimResult& un = in.unlimited;
  const SimResult& pl = shown_run(in);
  if (!l.budget_given)
    return "<p class=\"lead\">No budget was given, so nothing moves: give <code>--budget "
           "SIZE</code> or <code>--budget PERCENT%</code> to see a plan, its copies and every "
           "planner.</p>\n";
  const uint64_t budget = l.request.budget_bytes;
  std::string out = fmt::format(
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
                       h(shortfall_text(*pl.shortfall, l.workload)));
  } else {
    out += fmt::format("With {} it <b>does not fit</b>: the peak is {}, over the budget by {}.",
                       source, human_bytes(pl.peak_bytes),
                       human_bytes(pl.peak_bytes - std::min(pl.peak_bytes, budget)));
  }
  return out + "</p>\n";
}

// What reading the trace noted (the importer's and the workload's notes).
std::string notes_details(const ReportInput& in) {
  const Loaded& l = *in.loaded;
  std::vector<std::string> notes = l.workload.notes;
  notes.insert(notes.end(), l.trace.notes.begin(), l.trace.notes.end());
  if (notes.empty()) return "";
  std::string out = "<details><summary>How the trace was read</summary><ul>";
  for (const std::string& n : notes)
    out += fmt::format("<li>{}</li>", h(n));
  return out + "</ul></details>\n";
}

// The tensors the table lists: the named bands', then those the plan moves
// most, up to kTableTensors.
struct TensorRows {
  std::vector<uint32_t> rows;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> moves;  // tensor -> (out, in)
  size_t more = 0;                                          // moved but not listed
};

TensorRows tensor_rows(const ReportInput& in, const Bands& bands) {
  TensorRows out;
  std::map<uint32_t, uint64_t> moved_bytes;
  if (in.has_plan)
    for (const policy::CopySpan& c : in.planned.copies) {
      auto& m = out.moves[c.tensor];
      (c.to_device ? m.second : m.first) += 1;
      moved_bytes[c.tensor] += c.bytes;
    }
  std::vector<uint32_t>& rows = out.rows;
  rows.assign(bands.named.begin(), bands.named.end());
  std::vector<std::pair<uint64_t, uint32_t>> by_bytes;
  for (const auto& [t, b] : moved_bytes)
    if (std::find(rows.begin(), rows.end(), t) == rows.end()) by_bytes.push_back({b, t});
  std::sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (const auto& [b, t] : by_bytes) {
    if (rows.size() < kTableTensors)
      rows.push_back(t);
    else
      ++out.more;
  }
  return out;
}

}  // namespace

}  // namespace report

std::string render_report(const ReportInput& in) {
  using namespace report;
  const Loaded& l = *in.loaded;
  const SimResult& un = in.unlimited;
  const std::string file = l.trace.source.substr(l.trace.source.find_last_of('/') + 1);
  std::string out = head(file) + trace_paragraph(in) + budget_paragraph(in) + notes_details(in);
  const Bands bands = choose_bands(l.workload, un);
  const TensorRows tensors = tensor_rows(in, bands);
  const std::set<uint32_t> listed(tensors.rows.begin(), tensors.rows.end());
  // Memory over time and the lanes on one time scale.
  const double t_max = static_cast<double>(
      std::max<int64_t>(1, std::max(un.iteration_ns, in.has_plan ? in.planned.iteration_ns : 0)));
  out += memory_section(in, bands, listed, t_max);
  out += lanes_section(in, listed, t_max);
  if (!in.planners.empty()) out += planners_section(in);
  if (!in.batches.empty()) out += batches_section(in);
  if (in.recording) out += recording_section(*in.recording);
  out += "<section id=\"tensors\"><h2>Tensors</h2>\n";
  out += tensor_table(l.workload, tensors.rows, tensors.moves, tensors.more) + "</section>\n";
  out += fmt::format(
      "<p class=\"small\">Made by <code>{}</code>. Times are simulated (docs/simulator.md) unless "
      "marked as recorded.</p>\n<script>{}</script>\n</body></html>\n",
      h(in.command), kScript);
  return out;
}

}  // namespace cuswap::cli

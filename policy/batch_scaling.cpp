// Batch scaling (policy/batch_scaling.h).
#include "policy/batch_scaling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

namespace cuswap::policy {

namespace {

// Stable identities of a workload's tensors and ops across batch sizes.
std::vector<std::string> tensor_keys(const Workload& w) {
  std::vector<std::string> keys(w.tensors.size());
  std::map<std::string, uint32_t> rank;
  for (size_t t = 0; t < w.tensors.size(); ++t) {
    const WorkTensor& tensor = w.tensors[t];
    std::string anchor;
    if (tensor.resident_at_start()) {
      anchor = "resident/" + tensor.name;
    } else {
      const uint32_t op = tensor.producer != trace::kNoOp ? tensor.producer : tensor.alloc_op;
      anchor = fmt::format("{}#{}", w.ops[op].name, w.ops[op].ordinal);
    }
    keys[t] = fmt::format("{}/{}", anchor, rank[anchor]++);
  }
  return keys;
}

LinearFit fit(const std::vector<std::pair<double, double>>& points) {
  if (points.empty()) return {};
  if (points.size() == 1) return {points[0].second, 0};
  double mx = 0, my = 0;
  for (const auto& [x, y] : points)
    mx += x, my += y;
  mx /= static_cast<double>(points.size());
  my /= static_cast<double>(points.size());
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : points)
    sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
  if (sxx == 0) return {my, 0};
  const double slope = sxy / sxx;
  return {my - slope * mx, slope};
}

}  // namespace

bool fit_batch_model(std::vector<BatchSample> samples, BatchModel& out, std::string& error) {
  out = BatchModel{};
  std::sort(samples.begin(), samples.end(),
            [](const BatchSample& a, const BatchSample& b) { return a.batch < b.batch; });
  for (const BatchSample& s : samples) {
    if (out.batches.empty() || out.batches.back() != s.batch) out.batches.push_back(s.batch);
  }
  if (out.batches.size() < 2) {
    error = "batch scaling: expected traces at two or more different batch sizes";
    return false;
  }
  const Workload& ref = samples.back().workload;
  const std::vector<std::string> ref_keys = tensor_keys(ref);
  std::vector<std::vector<std::pair<double, double>>> size_points(ref.tensors.size());
  std::vector<std::vector<std::pair<double, double>>> op_points(ref.ops.size());
  std::map<std::pair<std::string, uint32_t>, uint32_t> ref_ops;
  for (uint32_t k = 0; k < ref.ops.size(); ++k)
    ref_ops[{ref.ops[k].name, ref.ops[k].ordinal}] = k;
  std::map<std::string, uint32_t> ref_tensors;
  for (uint32_t t = 0; t < ref.tensors.size(); ++t)
    ref_tensors[ref_keys[t]] = t;
  std::vector<size_t> seen(ref.tensors.size(), 0);
  for (const BatchSample& s : samples) {
    const auto x = static_cast<double>(s.batch);
    const std::vector<std::string> keys = tensor_keys(s.workload);
    for (size_t t = 0; t < keys.size(); ++t) {
      const auto it = ref_tensors.find(keys[t]);
      if (it == ref_tensors.end()) continue;
      size_points[it->second].push_back({x, static_cast<double>(s.workload.tensors[t].size_bytes)});
      ++seen[it->second];
    }
    for (const WorkOp& op : s.workload.ops) {
      const auto it = ref_ops.find({op.name, op.ordinal});
      if (it != ref_ops.end())
        op_points[it->second].push_back({x, static_cast<double>(op.duration_ns)});
    }
  }
  out.tensor_bytes.resize(ref.tensors.size());
  for (size_t t = 0; t < ref.tensors.size(); ++t) {
    out.tensor_bytes[t] = fit(size_points[t]);
    if (seen[t] == samples.size()) ++out.matched_tensors;
  }
  out.op_ns.resize(ref.ops.size());
  for (size_t k = 0; k < ref.ops.size(); ++k)
    out.op_ns[k] = fit(op_points[k]);
  out.reference = ref;
  return true;
}

Workload synthesize(const BatchModel& model, uint32_t batch) {
  Workload w = model.reference;
  for (size_t t = 0; t < w.tensors.size(); ++t)
    w.tensors[t].size_bytes =
        static_cast<uint64_t>(std::max(0.0, std::round(model.tensor_bytes[t].at(batch))));
  for (size_t k = 0; k < w.ops.size(); ++k)
    w.ops[k].duration_ns =
        static_cast<int64_t>(std::max(0.0, std::round(model.op_ns[k].at(batch))));
  w.notes.push_back(fmt::format("synthesized at batch {}", batch));
  return w;
}

namespace {

struct Check {
  bool ok = false;
  uint64_t peak_bytes = 0;
  int64_t iteration_ns = 0;
  double overhead = 0;
  std::string why;  // when not ok: what failed, for MaxBatchRow::limit
};

// Note [Batch search]
// Memory does not always grow with the batch in a fitted model: tensors
// matched at only some batches, or fixed parts fitted from two points, can
// make a small batch larger than a big one. So the search does not stop at
// the first failure: it tries every power of two up to the cap (and the
// batches that were traced), takes the largest that passes, and bisects
// between it and the next larger one tried, which failed.
MaxBatchRow search(const std::string& name, const std::function<Check(uint32_t)>& check,
                   uint32_t cap, const std::vector<uint32_t>& traced) {
  MaxBatchRow row;
  row.planner = name;
  std::vector<uint32_t> probes = traced;
  for (uint64_t b = 1; b <= cap; b *= 2)
    probes.push_back(static_cast<uint32_t>(b));
  probes.push_back(cap);
  std::sort(probes.begin(), probes.end());
  probes.erase(std::unique(probes.begin(), probes.end()), probes.end());
  std::erase_if(probes, [&](uint32_t b) { return b == 0 || b > cap; });
  uint32_t good = 0, bad = 0;
  Check best, failed;
  std::string first_failure;
  for (uint32_t b : probes) {
    Check c = check(b);
    if (c.ok) {
      good = b, best = std::move(c), bad = 0;
    } else if (bad == 0) {
      if (first_failure.empty()) first_failure = c.why;
      if (good != 0) bad = b, failed = std::move(c);
    }
  }
  if (good == 0) {
    row.limit = first_failure;
    return row;
  }
  if (good == cap) row.capped = true;
  while (bad != 0 && bad - good > 1) {
    const uint32_t mid = good + (bad - good) / 2;
    Check c = check(mid);
    if (c.ok)
      good = mid, best = std::move(c);
    else
      bad = mid, failed = std::move(c);
  }
  row.limit = bad != 0 ? failed.why : fmt::format("the search stops at batch {}", cap);
  row.max_batch = good;
  row.peak_bytes = best.peak_bytes;
  row.iteration_ns = best.iteration_ns;
  row.overhead = best.overhead;
  return row;
}

}  // namespace

std::vector<MaxBatchRow> max_batch(const BatchModel& model, const MaxBatchOptions& options,
                                   std::span<const Planner* const> planners) {
  std::vector<MaxBatchRow> rows;
  const PlanRequest& request = options.request;
  rows.push_back(search(
      "",
      [&](uint32_t batch) {
        const Workload w = synthesize(model, batch);
        const std::vector<uint64_t> live = live_bytes_per_op(w);
        Check c;
        c.peak_bytes = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
        c.iteration_ns = infinite_memory_starts(w, request.time_scale).back();
        c.ok = c.peak_bytes <= request.budget_bytes;
        if (!c.ok)
          c.why = fmt::format("batch {}: peak {} B over the budget", batch, c.peak_bytes);
        return c;
      },
      options.batch_cap, model.batches));
  for (const Planner* planner : planners) {
    rows.push_back(search(
        std::string(planner->name()),
        [&](uint32_t batch) {
          const Workload w = synthesize(model, batch);
          const PlanOutcome o = plan_and_simulate(*planner, w, request);
          Check c;
          c.peak_bytes = o.result.peak_bytes;
          c.iteration_ns = o.result.iteration_ns;
          c.overhead = o.result.overhead();
          c.ok = o.result.fits && c.overhead <= options.max_overhead;
          if (o.result.shortfall)
            c.why = fmt::format("batch {}: op \"{}\" needs {} B at once", batch,
                                w.ops[o.result.shortfall->op].name,
                                o.result.shortfall->required_bytes);
          else if (!o.result.fits)
            c.why = fmt::format("batch {}: the plan does not fit (peak {} B)", batch,
                                c.peak_bytes);
          else if (!c.ok)
            // The bound says whether any plan could do better, or the link
            // itself sets the limit (Note [Lower bounds]).
            c.why = fmt::format("batch {}: overhead {:.1f}% (any plan's at least {:.1f}%)", batch,
                                100 * c.overhead,
                                100 * (static_cast<double>(o.result.lower_bound_ns) /
                                           static_cast<double>(o.result.infinite_memory_ns) -
                                       1));
          return c;
        },
        options.batch_cap, model.batches));
  }
  return rows;
}

}  // namespace cuswap::policy

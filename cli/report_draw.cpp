// What every part of the `cuswap report` page draws with
// (cli/report_draw.h): names of tensors and ops, ratios, tick steps and the
// time and byte axes.
#include <cmath>

#include <fmt/format.h>

#include "cli/report_draw.h"

namespace cuswap::cli::report {

namespace {

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

}  // namespace

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

}  // namespace cuswap::cli::report

// Loading the fixtures' expected figures (fixtures.h).
#include "tests/tracer/import/fixtures.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <simdjson.h>

namespace cuswap::trace::import_test {
namespace {

void load_one(const std::string& root, std::vector<Expected>& out,
              std::vector<std::string>* missing) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string index = root + "/expected.json";
  if (!std::filesystem::exists(index)) {
    if (missing) missing->push_back(index + ": missing");
    return;
  }
  if (parser.load(index).get(doc) != simdjson::SUCCESS) {
    if (missing) missing->push_back(index + ": not JSON");
    return;
  }
  simdjson::dom::object files;
  if (doc.get_object().get(files) != simdjson::SUCCESS) return;
  for (auto [name, facts] : files) {
    Expected e;
    e.file = std::string(name);
    e.path = root + "/" + e.file;
    if (!std::filesystem::exists(e.path)) {
      if (missing) missing->push_back(e.path + ": listed but missing");
      continue;
    }
    std::string_view s;
    uint64_t u = 0;
    if (facts["format"].get(s) == simdjson::SUCCESS) e.format = s;
    if (facts["allocator"].get(s) == simdjson::SUCCESS) e.allocator = s;
    if (facts["ops"].get(u) == simdjson::SUCCESS) e.ops = u;
    if (facts["tensors"].get(u) == simdjson::SUCCESS) e.tensors = u;
    if (facts["reported_peak_bytes"].get(u) == simdjson::SUCCESS) e.reported_peak_bytes = u;
    if (facts["frees"].get(u) == simdjson::SUCCESS) e.frees = u;
    if (facts["deallocations"].get(u) == simdjson::SUCCESS) e.deallocations = u;
    if (facts["snapshots"].get(u) == simdjson::SUCCESS) e.snapshots = u;
    if (facts["sampled_snapshots"].get(u) == simdjson::SUCCESS) e.sampled_snapshots = u;
    simdjson::dom::object counters;
    if (facts["counter_peak_bytes"].get(counters) == simdjson::SUCCESS)
      for (auto [allocator, value] : counters)
        if (value.get(u) == simdjson::SUCCESS) e.counter_peak_bytes[std::string(allocator)] = u;
    int64_t i = 0;
    if (facts["device"].get(i) == simdjson::SUCCESS) e.device = i;
    if (facts["step_span_ns"].get(u) == simdjson::SUCCESS) e.step_span_ns = u;
    if (facts["busiest_stream_busy_ns"].get(u) == simdjson::SUCCESS) e.busiest_stream_busy_ns = u;
    if (facts["running_peak_bytes"].get(u) == simdjson::SUCCESS) e.running_peak_bytes = u;
    if (facts["device_ops"].get(u) == simdjson::SUCCESS) e.device_ops = u;
    if (facts["aggregate_events"].get(u) == simdjson::SUCCESS) e.aggregate_events = u;
    if (facts["joinable_kernels"].get(u) == simdjson::SUCCESS) e.joinable_kernels = u;
    simdjson::dom::array samples;
    if (facts["sample_ops"].get(samples) == simdjson::SUCCESS) {
      for (simdjson::dom::element sample : samples) {
        Expected::SampleOp op;
        int64_t start = 0, duration = 0;
        if (sample.at(0).get(s) != simdjson::SUCCESS || sample.at(1).get(start) != simdjson::SUCCESS ||
            sample.at(2).get(duration) != simdjson::SUCCESS)
          continue;
        op.name = s;
        op.start_ns = start;
        op.duration_ns = duration;
        e.sample_ops.push_back(std::move(op));
      }
    }
    out.push_back(std::move(e));
  }
}

}  // namespace

std::vector<Expected> load_expected(std::vector<std::string>* missing) {
  std::vector<Expected> out;
  load_one(CUSWAP_FIXTURE_DIR, out, missing);
  load_one(CUSWAP_IMPORT_DATA_DIR, out, missing);
  std::sort(out.begin(), out.end(),
            [](const Expected& a, const Expected& b) { return a.file < b.file; });
  return out;
}

std::string test_name(const std::string& file) {
  std::string name;
  for (char c : file) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace cuswap::trace::import_test

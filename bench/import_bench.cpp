// Import throughput (tracer/import/): the largest captured JSON fixture in
// tests/data, imported from memory, in decompressed bytes per second (the
// target is at least 200 MB/s), next to the same file with its gzip
// inflation included and the largest protobuf fixture for comparison.
//
// The fixture set is read at start-up: BM_ImportLargestJson names its file
// in the label. Run: build/bench/import_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tracer/import/import.h"
#include "tracer/import/importers.h"

namespace {

struct Input {
  std::string file;
  std::string raw;       // as stored (gzip or not)
  std::string inflated;  // what the importer parses
};

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The largest fixture (by inflated size) whose name contains `kind`.
Input largest(std::string_view kind) {
  Input best;
  const std::filesystem::path root(CUSWAP_FIXTURE_DIR);
  if (!std::filesystem::exists(root)) return best;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.find(kind) == std::string::npos) continue;
    Input in{entry.path().string(), read(entry.path()), {}};
    std::string error;
    if (in.raw.size() > 2 && in.raw[0] == '\x1f' && in.raw[1] == '\x8b') {
      if (!cuswap::trace::import::gunzip(in.raw, in.file, cuswap::trace::kDefaultMaxInputBytes, "", in.inflated, error)) continue;
    } else {
      in.inflated = in.raw;
    }
    if (in.inflated.size() > best.inflated.size()) best = std::move(in);
  }
  return best;
}

void run(benchmark::State& state, const Input& in, bool inflated) {
  if (in.inflated.empty()) {
    state.SkipWithError("no fixture under tests/data");
    return;
  }
  const std::string& bytes = inflated ? in.inflated : in.raw;
  for (auto _ : state) {
    cuswap::trace::Trace trace;
    std::string error;
    if (!cuswap::trace::import_trace_bytes(bytes, in.file, {}, trace, error)) {
      state.SkipWithError(error.c_str());
      return;
    }
    benchmark::DoNotOptimize(trace.tensors.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.inflated.size()));
  state.SetLabel(std::filesystem::path(in.file).filename().string());
}

const Input& json_input() {
  static const Input input = largest(".json");
  return input;
}

const Input& proto_input() {
  static const Input input = largest(".pb");
  return input;
}

void BM_ImportLargestJson(benchmark::State& state) { run(state, json_input(), true); }
void BM_ImportLargestJsonGzip(benchmark::State& state) { run(state, json_input(), false); }
void BM_ImportLargestProto(benchmark::State& state) { run(state, proto_input(), true); }

BENCHMARK(BM_ImportLargestJson)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ImportLargestJsonGzip)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ImportLargestProto)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

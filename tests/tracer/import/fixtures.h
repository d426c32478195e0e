// The captured fixtures the import tests run over: tests/data/expected.json
// (real TensorFlow and PyTorch captures, figures read by
// scripts/fixture_facts.py with the frameworks' own readers) and
// tests/tracer/import/data/expected.json (the generated PyTorch memory
// snapshot, same figures, same script).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace cuswap::trace::import_test {

struct Expected {
  std::string file;  // relative to its root, as expected.json names it
  std::string path;  // absolute
  std::string format;
  std::string allocator;
  uint64_t ops = 0;
  uint64_t tensors = 0;
  uint64_t reported_peak_bytes = 0;
  std::optional<uint64_t> frees, deallocations, snapshots, sampled_snapshots;
  std::map<std::string, uint64_t> counter_peak_bytes;
  // GPU captures only (fixture_facts.py's docstring says what each means).
  std::optional<int64_t> device;
  std::optional<uint64_t> step_span_ns, busiest_stream_busy_ns, running_peak_bytes;
  uint64_t device_ops = 0, aggregate_events = 0, joinable_kernels = 0;
  struct SampleOp {
    std::string name;
    int64_t start_ns = 0, duration_ns = 0;
  };
  std::vector<SampleOp> sample_ops;
};

// Test names show the file, not the bytes of the struct.
inline void PrintTo(const Expected& e, std::ostream* os) { *os << e.file; }

// Every fixture listed in either expected.json whose file exists, sorted by
// name; a listed file that is missing is an error line in `missing`.
std::vector<Expected> load_expected(std::vector<std::string>* missing = nullptr);

// A name gtest accepts ("tf1_lstm_l1_t32_b2_timeline_json_gz").
std::string test_name(const std::string& file);

std::string read_file(const std::string& path);

}  // namespace cuswap::trace::import_test

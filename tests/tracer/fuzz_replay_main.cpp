// Runs the fuzz target's entry point (cst_reader_fuzz.cpp) without
// libFuzzer: over every file given (or every file in a directory given),
// every prefix of each, and every single-bit flip and a few byte values at
// every offset. A crash or an abort in the target fails the test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

size_t replay(const std::vector<uint8_t>& input) {
  size_t runs = 0;
  auto run = [&](const std::vector<uint8_t>& bytes) {
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++runs;
  };
  run(input);
  for (size_t n = 0; n < input.size(); ++n)
    run({input.begin(), input.begin() + long(n)});
  std::vector<uint8_t> mutated = input;
  for (size_t at = 0; at < input.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      mutated[at] = static_cast<uint8_t>(input[at] ^ (1u << bit));
      run(mutated);
    }
    for (const uint8_t value : {0x00, 0x7f, 0x80, 0xff}) {
      mutated[at] = value;
      run(mutated);
    }
    mutated[at] = input[at];
  }
  return runs;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& entry : std::filesystem::directory_iterator(p))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else {
      files.push_back(p);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s CORPUS_FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  size_t runs = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> input{std::istreambuf_iterator<char>(in), {}};
    runs += replay(input);
  }
  std::printf("%zu inputs from %zu corpus files: no crash\n", runs, files.size());
  return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Runs a libFuzzer target over every file of the corpus directories given as
// arguments, without libFuzzer: the `fuzz` test suite uses it with any
// compiler. A property violation aborts, which fails the test.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR...\n", argv[0]);
    return 2;
  }
  size_t inputs = 0;
  for (int i = 1; i < argc; i++) {
    std::error_code ec;
    std::filesystem::directory_iterator it(argv[i], ec);
    if (ec) {
      std::fprintf(stderr, "%s: cannot read corpus directory: %s\n", argv[i], ec.message().c_str());
      return 2;
    }
    for (const auto& e : it) {
      if (!e.is_regular_file()) continue;
      std::ifstream f(e.path(), std::ios::binary);
      std::vector<uint8_t> buf((std::istreambuf_iterator<char>(f)),
                               std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(buf.data(), buf.size());
      inputs++;
    }
  }
  if (inputs == 0) {
    std::fprintf(stderr, "no corpus files found: the replay tested nothing\n");
    return 1;
  }
  std::printf("replayed %zu inputs\n", inputs);
  return 0;
}

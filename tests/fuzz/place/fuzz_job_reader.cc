// Differential fuzzing of gpushare-place's job reader: whatever the bytes,
// the fast path (JobReader: a scanner of the flat job record over a large
// buffer) must give exactly what the careful path gives (JsonLinesReader
// and job_from_json): the same jobs, the same errors with the same record
// numbers and positions. The first input byte picks how the input arrives
// (whole, or in pieces of 1 to 255 bytes, as a pipe hands it over), so
// records cut anywhere are read too. ASan and UBSan watch the scanner.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <vector>

#include "../../support/job_reader_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::size_t piece = data[0] % 2 == 0 ? 0 : data[0];
  std::string input(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> careful = gpushare::place::oracle::reference(input);
  std::vector<std::string> fast = gpushare::place::oracle::fast(input, piece);
  if (fast != careful) {
    std::size_t n = std::max(fast.size(), careful.size());
    for (std::size_t i = 0; i < n; ++i) {
      const char* a = i < careful.size() ? careful[i].c_str() : "(none)";
      const char* b = i < fast.size() ? fast[i].c_str() : "(none)";
      if (careful.size() <= i || fast.size() <= i || careful[i] != fast[i])
        std::fprintf(stderr, "record %zu:\n  careful: %s\n  fast:    %s\n", i + 1, a, b);
    }
    std::abort();
  }
  return 0;
}

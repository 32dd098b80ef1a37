#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "common/diag.h"

namespace diag = gpushare::diag;

namespace {

// Captures what diag writes, through a temporary file.
struct Capture {
  std::FILE* file = std::tmpfile();
  Capture() { diag::set_stream(file); }
  ~Capture() {
    diag::set_stream(nullptr);
    diag::set_verbosity(diag::Verbosity::kNormal);
    std::fclose(file);
  }
  std::string text() {
    std::fflush(file);
    std::rewind(file);
    std::string result;
    char buffer[512];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) result.append(buffer, n);
    return result;
  }
};

}  // namespace

TEST_CASE("messages carry the program name and severity", "[diag]") {
  Capture capture;
  diag::set_program_name("gpushare-test");
  diag::error("cluster.toml: cannot open");
  diag::warning("careful");
  diag::note("hidden at normal verbosity");
  diag::usage_hint();
  CHECK(capture.text() ==
        "gpushare-test: error: cluster.toml: cannot open\n"
        "gpushare-test: warning: careful\n"
        "Try 'gpushare-test --help' for more information.\n");
}

TEST_CASE("verbosity filters notes, debug and warnings but never errors", "[diag]") {
  Capture capture;
  diag::set_program_name("p");
  diag::set_verbosity(diag::Verbosity::kDebug);
  diag::note("n");
  diag::debug("d");
  diag::set_verbosity(diag::Verbosity::kQuiet);
  diag::warning("w");
  diag::error("e");
  CHECK(capture.text() == "p: note: n\np: debug: d\np: error: e\n");
}

TEST_CASE("file locations and excerpts", "[diag]") {
  CHECK(diag::at("c.toml", 3, 7, "unknown key 'utl'") == "c.toml:3:7: unknown key 'utl'");
  CHECK(diag::excerpt("utl = 0.5", 1) == "  utl = 0.5\n  ^");
  CHECK(diag::excerpt("\tx = 1", 6) == "  \tx = 1\n  \t    ^");
}

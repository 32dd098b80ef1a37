#include <catch2/catch.hpp>
#include <cstdio>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"

namespace {

int parse_words(std::vector<std::string> words, int usage_status) {
  CLI::App app{"test", "gpushare-test"};
  gpushare::cli::configure(app, "gpushare-test");
  int number = 0;
  app.add_option("--number", number, "A number");
  std::vector<char*> argv;
  std::string name = "gpushare-test";
  argv.push_back(name.data());
  for (std::string& word : words) argv.push_back(word.data());
  std::FILE* sink = std::tmpfile();
  gpushare::diag::set_stream(sink);
  auto status = gpushare::cli::parse(app, static_cast<int>(argv.size()), argv.data(), usage_status);
  gpushare::diag::set_stream(nullptr);
  std::fclose(sink);
  return status ? *status : -1;
}

}  // namespace

TEST_CASE("parse errors map to the program's usage status, never CLI11's", "[cli]") {
  using namespace gpushare::exit_status;
  CHECK(parse_words({"--number", "3"}, kUsage) == -1);
  CHECK(parse_words({"--nope"}, kUsage) == kUsage);
  CHECK(parse_words({"--number", "x"}, kUsage) == kUsage);
  CHECK(parse_words({"--number"}, kRunFailed) == kRunFailed);
  CHECK(parse_words({"extra"}, kUsage) == kUsage);
}

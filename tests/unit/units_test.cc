#include <catch2/catch.hpp>

#include "common/units.h"

using gpushare::format_size;
using gpushare::parse_duration;
using gpushare::parse_size;

TEST_CASE("sizes with units parse to bytes", "[units]") {
  CHECK(*parse_size("0") == 0);
  CHECK(*parse_size("1024") == 1024);
  CHECK(*parse_size("17B") == 17);
  CHECK(*parse_size("8GiB") == 8ull << 30);
  CHECK(*parse_size("512MiB") == 512ull << 20);
  CHECK(*parse_size("1.5GiB") == 1610612736ull);
  CHECK(*parse_size("4G") == 4ull << 30);  // a single letter is binary
  CHECK(*parse_size("4k") == 4096);
  CHECK(*parse_size("2KB") == 2000);
  CHECK(*parse_size("8GB") == 8000000000ull);
  CHECK(*parse_size("1TiB") == 1ull << 40);
  CHECK(*parse_size("0.5K") == 512);
  CHECK(*parse_size("+3M") == 3ull << 20);
  // Fractions round down to a whole byte.
  CHECK(*parse_size("0.3333K") == 341);
}

TEST_CASE("percentages need a capacity and stay within it", "[units]") {
  CHECK(*parse_size("50%", 16ull << 30) == 8ull << 30);
  CHECK(*parse_size("100%", 1000) == 1000);
  CHECK(*parse_size("12.5%", 800) == 100);
  CHECK(*parse_size("0%", 800) == 0);
  // Exact even where capacity * percent overflows 64 bits.
  CHECK(*parse_size("99%", ~0ull) == static_cast<std::uint64_t>(
                                         static_cast<unsigned __int128>(~0ull) * 99 / 100));
  auto no_capacity = parse_size("50%");
  REQUIRE_FALSE(no_capacity);
  CHECK_THAT(no_capacity.error().message, Catch::Contains("percentage"));
  auto too_much = parse_size("101%", 1000);
  REQUIRE_FALSE(too_much);
  CHECK_THAT(too_much.error().message, Catch::Contains("more than 100%"));
  CHECK(gpushare::is_percentage("50%"));
  CHECK_FALSE(gpushare::is_percentage("50"));
}

TEST_CASE("bad sizes are errors that name the text", "[units]") {
  struct Case {
    const char* text;
    const char* message_part;
  };
  auto [text, part] = GENERATE(values<Case>({
      {"-1", "'-1' is negative"},
      {"8XB", "unknown unit 'XB' in size '8XB'"},
      {"", "empty size"},
      {"GiB", "is not a number"},
      {".", "is not a number"},
      {"1.5", "fraction of a byte"},
      {"99999999999999999999", "is too large"},
      {"17179869184GiB", "does not fit in 64 bits"},
      {"16EiB", "unknown unit 'EiB'"},
      {"8 GiB", "unknown unit ' GiB'"},
      {"8gib", "unknown unit 'gib'"},
  }));
  INFO("text: '" << text << "'");
  auto result = parse_size(text);
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message, Catch::Contains(part));
}

TEST_CASE("sizes format for people", "[units]") {
  CHECK(format_size(0) == "0B");
  CHECK(format_size(17) == "17B");
  CHECK(format_size(1024) == "1KiB");
  CHECK(format_size(1610612736ull) == "1.5GiB");
  CHECK(format_size(512ull << 20) == "512MiB");
  CHECK(format_size((1ull << 30) - 1) == "1023.99MiB");  // truncated, never rounded up
  // Round trip for whole units.
  for (std::uint64_t bytes : {1ull << 20, 3ull << 30, 5ull << 40}) {
    CHECK(*parse_size(format_size(bytes)) == bytes);
  }
}

TEST_CASE("durations parse to nanoseconds", "[units]") {
  using std::chrono::nanoseconds;
  CHECK(*parse_duration("250ms") == nanoseconds(250000000));
  CHECK(*parse_duration("1.5s") == nanoseconds(1500000000));
  CHECK(*parse_duration("10us") == nanoseconds(10000));
  CHECK(*parse_duration("7ns") == nanoseconds(7));
  CHECK(*parse_duration("2m") == nanoseconds(120000000000));
  CHECK(*parse_duration("0s") == nanoseconds(0));
  CHECK_FALSE(parse_duration("5"));
  CHECK_THAT(parse_duration("5").error().message, Catch::Contains("needs a unit"));
  CHECK_THAT(parse_duration("-1s").error().message, Catch::Contains("is negative"));
  CHECK_THAT(parse_duration("3d").error().message, Catch::Contains("unknown unit 'd'"));
  CHECK_THAT(parse_duration("9999999999h").error().message, Catch::Contains("too long"));
}

#include <catch2/catch.hpp>

#include "coord/server/line_buffer.h"

using gpushare::coord::server::LineBuffer;

TEST_CASE("lines come out whole however the bytes arrive", "[coord][line_buffer]") {
  std::string stream = "first\nsecond line\n\nlast";
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
    LineBuffer buffer(64);
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
      REQUIRE(buffer.append(std::string_view(stream).substr(at, piece)));
      while (auto line = buffer.next_line()) lines.push_back(*line);
    }
    CHECK(lines == std::vector<std::string>{"first", "second line", ""});
    CHECK(buffer.pending() == 4);
  }
}

TEST_CASE("a line over the bound fails before its newline arrives", "[coord][line_buffer]") {
  LineBuffer buffer(8);
  REQUIRE(buffer.append("12345678"));  // exactly the bound: still fine
  REQUIRE_FALSE(buffer.append("9"));   // one more, no newline yet: over
  CHECK(buffer.overflowed());
  CHECK_FALSE(buffer.append("\n"));
  CHECK_FALSE(buffer.next_line().has_value());
}

TEST_CASE("an overlong line among short ones is caught", "[coord][line_buffer]") {
  LineBuffer buffer(4);
  CHECK_FALSE(buffer.append("ok\ntoolong\nok\n"));
  LineBuffer exact(4);
  REQUIRE(exact.append("abcd\nefgh\n"));
  CHECK(*exact.next_line() == "abcd");
  CHECK(*exact.next_line() == "efgh");
  CHECK_FALSE(exact.next_line().has_value());
}

TEST_CASE("the buffer does not grow with consumed lines", "[coord][line_buffer]") {
  LineBuffer buffer(16);
  for (int i = 0; i < 10000; ++i) {
    REQUIRE(buffer.append("0123456789\n"));
    REQUIRE(buffer.next_line().has_value());
  }
  CHECK(buffer.pending() == 0);
}

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/jsonl.h"

using gpushare::JsonLinesReader;
using gpushare::JsonLinesWriter;

namespace {

std::vector<std::string> read_all(const std::string& input, std::vector<std::string>* errors) {
  std::istringstream in(input);
  JsonLinesReader reader(in, "stdin");
  std::vector<std::string> values;
  for (;;) {
    auto next = reader.next();
    if (!next) {
      errors->push_back(next.error().message);
      continue;
    }
    if (!*next) break;
    values.push_back((**next).dump());
  }
  return values;
}

}  // namespace

TEST_CASE("the reader accepts any whitespace-separated JSON texts", "[jsonl]") {
  std::vector<std::string> errors;
  auto values = read_all("{\"a\":1}\n{\"b\":2} {\"c\":3}\n\n  {\n \"d\":\n 4\n}\r\n[1,2]\t\"s\" 5", &errors);
  CHECK(errors.empty());
  CHECK(values == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "{\"d\":4}",
                                           "[1,2]", "\"s\"", "5"});
}

TEST_CASE("empty input is zero records", "[jsonl]") {
  std::vector<std::string> errors;
  CHECK(read_all("", &errors).empty());
  CHECK(read_all(" \n\t\n", &errors).empty());
  CHECK(errors.empty());
}

TEST_CASE("a malformed record is named and the next line still read", "[jsonl]") {
  std::vector<std::string> errors;
  auto values = read_all("{\"a\":1}\n{\"b\": nope}\n{\"c\":3}\n", &errors);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::StartsWith("stdin: record 2: "));
  CHECK_THAT(errors[0], Catch::Contains("syntax error"));
  CHECK_THAT(errors[0], !Catch::Contains("json.exception"));
  CHECK(values == std::vector<std::string>{"{\"a\":1}", "{\"c\":3}"});
}

TEST_CASE("a truncated last record is an error, not silence", "[jsonl]") {
  std::vector<std::string> errors;
  auto values = read_all("{\"a\":1}\n{\"b\":", &errors);
  CHECK(values.size() == 1);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::StartsWith("stdin: record 2: "));
}

TEST_CASE("the writer stamps kind and version first, one compact line, flushed", "[jsonl]") {
  std::ostringstream out;
  JsonLinesWriter writer(out);
  nlohmann::ordered_json fields;
  fields["job"] = "a b";
  fields["mem_bytes"] = 1024;
  fields["kind"] = "ignored";
  writer.write("placement", 1, fields);
  writer.write("placement", 1, {{"job", "c"}});
  CHECK(out.str() ==
        "{\"kind\":\"placement\",\"version\":1,\"job\":\"a b\",\"mem_bytes\":1024}\n"
        "{\"kind\":\"placement\",\"version\":1,\"job\":\"c\"}\n");
}

TEST_CASE("the writer survives invalid UTF-8", "[jsonl]") {
  nlohmann::ordered_json fields;
  fields["name"] = std::string("ok\xff\xfe-x");
  std::string line = gpushare::to_json_line("job", 1, fields);
  CHECK(line == "{\"kind\":\"job\",\"version\":1,\"name\":\"ok\xef\xbf\xbd\xef\xbf\xbd-x\"}");
  // And what it writes reads back.
  CHECK(nlohmann::json::parse(line)["name"] == "ok\xef\xbf\xbd\xef\xbf\xbd-x");
}

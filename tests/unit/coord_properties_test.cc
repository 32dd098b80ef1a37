#include <catch2/catch.hpp>

#include "coord/ctl/set_properties.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::ctl;

namespace {
std::string error_of(const std::optional<std::string>& mem, const std::vector<std::string>& props) {
  auto result = parse_set_properties("job", mem, props);
  REQUIRE_FALSE(result.ok());
  return result.error().message;
}
}  // namespace

TEST_CASE("set takes gpushare-run's property keys", "[coord][properties]") {
  auto r = parse_set_properties("7", std::nullopt, {"mem=2GiB", "qos=opportunistic", "name=x y"});
  REQUIRE(r.ok());
  CHECK(r->job == "7");
  CHECK(*r->mem_limit == "2GiB");
  CHECK(*r->qos == kQosOpportunistic);
  CHECK(*r->name == "x y");
  // A property after --mem-limit wins, as later options do.
  CHECK(*parse_set_properties("7", "1GiB", {"mem-limit=50%"})->mem_limit == "50%");
  CHECK(*parse_set_properties("7", "none", {})->mem_limit == "none");
}

TEST_CASE("bad properties are usage errors naming the property", "[coord][properties]") {
  CHECK(error_of(std::nullopt, {}) ==
        "nothing to set: give --mem-limit SIZE or KEY=VALUE properties");
  CHECK(error_of(std::nullopt, {"mem"}) == "invalid property 'mem': expected KEY=VALUE");
  CHECK(error_of(std::nullopt, {"=1"}) == "invalid property '=1': expected KEY=VALUE");
  CHECK(error_of(std::nullopt, {"sm=30%"}) ==
        "unknown property 'sm' (known: mem-limit, qos, name, compute)");
  CHECK(error_of(std::nullopt, {"gpu=1"}) == "property 'gpu' cannot change on a running job");
  CHECK(error_of(std::nullopt, {"qos=best"}) ==
        "invalid qos 'best': expected production or opportunistic");
  CHECK(error_of(std::nullopt, {"name="}) == "job name is empty");
  CHECK(error_of("0", {}) == "invalid mem-limit '0': must be above 0 (or none)");
  CHECK_THAT(error_of("12 apples", {}), Catch::Matchers::StartsWith("invalid mem-limit: "));
  CHECK_THAT(error_of("150%", {}), Catch::Matchers::StartsWith("invalid mem-limit: "));
}

TEST_CASE("the compute property takes a share of GPU time or none") {
  auto request = parse_set_properties("job", std::nullopt, {"compute=30%"});
  REQUIRE(request);
  CHECK(*request->compute == "30%");
  CHECK(parse_set_properties("job", std::nullopt, {"compute=none"}));
  for (const char* bad : {"compute=0%", "compute=101%", "compute=-5%", "compute=abc", "compute="}) {
    INFO(bad);
    auto refused = parse_set_properties("job", std::nullopt, {bad});
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Matchers::Contains("invalid compute share"));
  }
}

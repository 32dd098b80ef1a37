// The job's hand-written JSON (lib/coord/job/wire.cc) against the coordinator's
// parser: whatever the client sends, the coordinator must read back.
#include <catch2/catch.hpp>
#include <cstring>

#include "coord/contract/protocol.h"
#include "coord/job/wire.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::job;

namespace {

struct Fixture {
  unsigned char uuids[2][16];
  std::uint64_t totals[2] = {16ull << 30, 8ull << 30};
  std::uint64_t requested[2] = {4ull << 30, kNoLimit};
  std::uint64_t limits[2] = {1ull << 30, kNoLimit};
  Fixture() {
    for (int d = 0; d < 2; ++d) {
      for (int i = 0; i < 16; ++i) uuids[d][i] = static_cast<unsigned char>(16 * d + i);
    }
  }
  wire::RegisterFields fields(const char* name, int devices = 2, std::uint64_t hint = 0) {
    return {name, "opportunistic", hint, devices, uuids, totals, requested, limits};
  }
};

RegisterRequest parse(const char* message) {
  std::string_view line(message);
  REQUIRE(line.back() == '\n');
  auto request = parse_request(line.substr(0, line.size() - 1));
  INFO(message);
  REQUIRE(request.ok());
  return std::get<RegisterRequest>(*request);
}

}  // namespace

TEST_CASE("the client's register message parses on the coordinator", "[coord][wire]") {
  Fixture f;
  char buffer[4096];
  REQUIRE(wire::write_register(buffer, sizeof buffer, f.fields("train", 2, 12)) > 0);
  RegisterRequest r = parse(buffer);
  CHECK(r.name == "train");
  CHECK(r.qos == kQosOpportunistic);
  CHECK(r.id_hint == 12);
  REQUIRE(r.devices.size() == 2);
  CHECK(r.devices[0].uuid == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  CHECK(r.devices[1].uuid == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  CHECK(r.devices[0].mem_total_bytes == 16ull << 30);
  CHECK(r.devices[0].start_limit_bytes == 4ull << 30);
  CHECK(r.devices[0].mem_limit_bytes == 1ull << 30);
  CHECK(r.devices[1].start_limit_bytes == kNoLimit);
  CHECK(r.devices[1].mem_limit_bytes == kNoLimit);
  CHECK_FALSE(r.tree);
  wire::RegisterFields with_tree = f.fields("train", 2, 12);
  with_tree.tree = true;
  REQUIRE(wire::write_register(buffer, sizeof buffer, with_tree) > 0);
  CHECK(parse(buffer).tree);
}

TEST_CASE("names are escaped, cleaned of invalid UTF-8 and cut at 128 bytes", "[coord][wire]") {
  Fixture f;
  char buffer[8192];
  REQUIRE(wire::write_register(buffer, sizeof buffer, f.fields("a\"b\\c\nd\x01")) > 0);
  CHECK(parse(buffer).name == "a\"b\\c?d?");  // the coordinator replaces control characters

  REQUIRE(wire::write_register(buffer, sizeof buffer, f.fields("caf\xc3\xa9 \xff\xfe \xe2\x82")) >
          0);
  CHECK(parse(buffer).name == "caf\xc3\xa9 ?? ??");

  std::string long_name(300, 'n');
  REQUIRE(wire::write_register(buffer, sizeof buffer, f.fields(long_name.c_str())) > 0);
  CHECK(parse(buffer).name == std::string(128, 'n'));

  // A multi-byte character across the cut is not split into invalid UTF-8.
  std::string cut(127, 'x');
  cut += "\xc3\xa9";
  REQUIRE(wire::write_register(buffer, sizeof buffer, f.fields(cut.c_str())) > 0);
  CHECK(parse(buffer).name == std::string(127, 'x') + "?");
}

TEST_CASE("write_register fails cleanly when the buffer is too small", "[coord][wire]") {
  Fixture f;
  char buffer[64];
  std::memset(buffer, 'z', sizeof buffer);
  CHECK(wire::write_register(buffer, sizeof buffer, f.fields("train")) == 0);
  CHECK(std::memchr(buffer, '\0', sizeof buffer) != nullptr);  // still a terminated string
}

TEST_CASE("find_string reads a reply's fields", "[coord][wire]") {
  std::string reply = encode_error("no \"such\" job", "unknown-job");
  char out[64];
  REQUIRE(wire::find_string(reply.c_str(), "kind", out, sizeof out));
  CHECK(std::string(out) == "error");
  REQUIRE(wire::find_string(reply.c_str(), "message", out, sizeof out));
  CHECK(std::string(out) == "no \"such\" job");
  CHECK_FALSE(wire::find_string(reply.c_str(), "absent", out, sizeof out));
  char tiny[4];
  REQUIRE(wire::find_string(reply.c_str(), "reason", tiny, sizeof tiny));
  CHECK(std::string(tiny) == "unk");
  REQUIRE(wire::find_string(encode_registered(5).c_str(), "kind", out, sizeof out));
  CHECK(std::string(out) == "registered");
}

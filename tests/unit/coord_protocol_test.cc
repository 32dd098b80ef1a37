#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "coord/contract/control_block.h"
#include "coord/contract/protocol.h"
#include "common/properties.h"

using namespace gpushare;
using namespace gpushare::coord;

namespace {

const char* kRegister =
    R"({"kind":"register","version":1,"protocol":1,"layout_version":10,"name":"train",)"
    R"("qos":"opportunistic","devices":[{"uuid":"GPU-00010203-0405-0607-0809-0a0b0c0d0e0f",)"
    R"("mem_total_bytes":17179869184,"requested_limit_bytes":4294967296,"mem_limit_bytes":1073741824}]})";

std::string error_of(std::string_view line) {
  auto result = parse_request(line);
  REQUIRE_FALSE(result.ok());
  return result.error().message;
}

}  // namespace

TEST_CASE("a register message parses into its fields", "[coord][protocol]") {
  auto request = parse_request(kRegister);
  REQUIRE(request.ok());
  const auto& r = std::get<RegisterRequest>(*request);
  CHECK(r.name == "train");
  CHECK(r.qos == kQosOpportunistic);
  CHECK(r.id_hint == 0);
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0].uuid == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  CHECK(r.devices[0].mem_total_bytes == 17179869184ull);
  CHECK(r.devices[0].start_limit_bytes == 4294967296ull);
  CHECK(r.devices[0].mem_limit_bytes == 1073741824ull);
  CHECK_FALSE(r.tree);
}

TEST_CASE("a register message says whether a tree file comes with it", "[coord][protocol]") {
  auto with_tree = [](const std::string& tree) {
    return R"({"kind":"register","version":1,"name":"a","qos":"production","tree":)" + tree +
           R"(,"devices":[]})";
  };
  auto request = parse_request(with_tree("true"));
  REQUIRE(request.ok());
  CHECK(std::get<RegisterRequest>(*request).tree);
  CHECK(error_of(with_tree("1")) == "field 'tree' must be true or false");
  // It goes out as it came in.
  auto encoded = parse_request(encode_request(*request));
  REQUIRE(encoded.ok());
  CHECK(std::get<RegisterRequest>(*encoded).tree);
}

TEST_CASE("null limits mean none, and a missing current limit is the requested one",
          "[coord][protocol]") {
  auto request =
      parse_request(R"({"kind":"register","version":1,"name":"a","qos":"production","devices":[)"
                    R"({"uuid":"GPU-1","mem_total_bytes":1,"requested_limit_bytes":null},)"
                    R"({"uuid":"MIG-2","mem_total_bytes":1,"requested_limit_bytes":5}]})");
  REQUIRE(request.ok());
  const auto& r = std::get<RegisterRequest>(*request);
  CHECK(r.devices[0].start_limit_bytes == kNoLimit);
  CHECK(r.devices[0].mem_limit_bytes == kNoLimit);
  CHECK(r.devices[1].mem_limit_bytes == 5);
}

TEST_CASE("control requests parse", "[coord][protocol]") {
  CHECK(std::holds_alternative<ListRequest>(*parse_request(R"({"kind":"list","version":1})")));
  CHECK(std::holds_alternative<NodeRequest>(*parse_request(R"({"kind":"node","version":1})")));
  // A registered job's wake-up (layout 5): the job's line, as it sends it.
  CHECK(std::holds_alternative<RoomRequest>(*parse_request(R"({"kind":"room","version":1})")));
  auto show = parse_request(R"({"kind":"show","version":1,"job":"42","extra":[1,2]})");
  REQUIRE(show.ok());
  CHECK(std::get<ShowRequest>(*show).job == "42");
  auto resume = parse_request(R"({"kind":"resume","version":1,"job":"x"})");
  REQUIRE(resume.ok());
  CHECK_FALSE(std::get<PauseRequest>(*resume).pause);
  auto set =
      parse_request(R"({"kind":"set","version":1,"job":"x","mem_limit":"50%","qos":"production"})");
  REQUIRE(set.ok());
  CHECK(*std::get<SetRequest>(*set).mem_limit == "50%");
  CHECK(*std::get<SetRequest>(*set).qos == kQosProduction);
  CHECK_FALSE(std::get<SetRequest>(*set).name.has_value());
}

TEST_CASE("malformed messages are errors that say what is wrong", "[coord][protocol]") {
  CHECK_THAT(error_of("{"), Catch::Matchers::Contains("malformed JSON"));
  CHECK(error_of("[1]") == "a message must be a JSON object");
  CHECK(error_of(R"({"version":1})") == "missing field 'kind'");
  CHECK(error_of(R"({"kind":"list"})") == "missing field 'version'");
  CHECK(error_of(R"({"kind":"list","version":2})") == "unsupported version 2 of message 'list'");
  CHECK(error_of(R"({"kind":"list","version":"1"})") ==
        "unsupported version \"1\" of message 'list'");
  CHECK(error_of(R"({"kind":"frob","version":1})") == "unknown message kind 'frob'");
  CHECK(error_of(R"({"kind":"show","version":1})") == "missing field 'job'");
  CHECK(error_of(R"({"kind":"show","version":1,"job":""})") == "field 'job' must not be empty");
  CHECK(error_of(R"({"kind":"show","version":1,"job":7})") == "field 'job' must be a string");
  CHECK(error_of(R"({"kind":"set","version":1,"job":"x"})") ==
        "set changes nothing: give mem_limit, qos, name or compute");
  CHECK(error_of(R"({"kind":"set","version":1,"job":"x","qos":"best"})") ==
        "invalid qos 'best': expected production or opportunistic");
}

TEST_CASE("register messages are checked field by field", "[coord][protocol]") {
  auto with_device = [](const std::string& device) {
    return R"({"kind":"register","version":1,"name":"a","qos":"production","devices":[)" + device +
           "]}";
  };
  CHECK(error_of(with_device(R"({"uuid":"GPU-1","mem_total_bytes":-1})")) ==
        "devices[0]: field 'mem_total_bytes' must not be negative");
  CHECK(error_of(with_device(R"({"uuid":"GPU-1"})")) ==
        "devices[0]: missing field 'mem_total_bytes'");
  CHECK(error_of(with_device(R"({"uuid":"nope","mem_total_bytes":1})")) ==
        "devices[0]: invalid uuid 'nope'");
  CHECK(error_of(with_device(R"({"uuid":"GPU-1","mem_total_bytes":1.5})")) ==
        "devices[0]: field 'mem_total_bytes' must be an unsigned integer");
  CHECK(
      error_of(with_device(R"({"uuid":"GPU-1","mem_total_bytes":1,"requested_limit_bytes":0})")) ==
      "devices[0]: a memory limit must be above 0 (null for none)");
  CHECK(error_of(with_device("7")) == "devices[0]: must be an object");

  std::string many = "{\"uuid\":\"GPU-1\",\"mem_total_bytes\":1}";
  std::string devices = many;
  for (int i = 1; i <= kMaxDevices; ++i) devices += "," + many;
  CHECK(error_of(with_device(devices)) == "more than 16 devices");

  CHECK(error_of(std::string(R"({"kind":"register","version":1,"name":")") + std::string(129, 'x') +
                 R"(","qos":"production","devices":[]})") ==
        "field 'name' is longer than 128 bytes");
  CHECK(
      error_of(
          R"({"kind":"register","version":1,"protocol":2,"name":"a","qos":"production","devices":[]})") ==
      "unsupported protocol 2 (this coordinator speaks 1)");
  CHECK(
      error_of(
          R"({"kind":"register","version":1,"layout_version":99,"name":"a","qos":"production","devices":[]})") ==
      "unsupported control block layout 99 (this coordinator has " + std::to_string(kLayoutVersion) + ")");
}

TEST_CASE("control characters in names are replaced", "[coord][protocol]") {
  auto request = parse_request(
      R"({"kind":"register","version":1,"name":"a\u001b[31mb","qos":"production","devices":[]})");
  REQUIRE(request.ok());
  CHECK(std::get<RegisterRequest>(*request).name == "a?[31mb");
}

TEST_CASE("a message over the size bound is refused before parsing", "[coord][protocol]") {
  std::string line =
      R"({"kind":"list","version":1,"pad":")" + std::string(kMaxMessageBytes, ' ') + "\"}";
  CHECK(error_of(line) == "message longer than 16384 bytes");
}

TEST_CASE("every request survives encode then parse", "[coord][protocol]") {
  RegisterRequest registration;
  registration.name = "job \"quoted\"";
  registration.qos = kQosOpportunistic;
  registration.id_hint = 9;
  registration.devices.push_back({"GPU-abc", 100, kNoLimit, 50});
  SetRequest set;
  set.job = "7";
  set.mem_limit = "none";
  set.name = "renamed";
  std::vector<Request> requests = {registration,
                                   ListRequest{},
                                   NodeRequest{},
                                   RoomRequest{},
                                   ShowRequest{"x"},
                                   set,
                                   PauseRequest{"y", true},
                                   PauseRequest{"y", false},
                                   SuspendRequest{"z"}};
  for (const Request& request : requests) {
    std::string line = encode_request(request);
    REQUIRE(line.back() == '\n');
    auto parsed = parse_request(std::string_view(line).substr(0, line.size() - 1));
    REQUIRE(parsed.ok());
    CHECK(encode_request(*parsed) == line);
  }
  auto parsed = parse_request(encode_request(registration));
  const auto& r = std::get<RegisterRequest>(*parsed);
  CHECK(r.id_hint == 9);
  CHECK(r.devices[0].start_limit_bytes == kNoLimit);
  CHECK(r.devices[0].mem_limit_bytes == 50);
}

TEST_CASE("job records carry the documented fields", "[coord][protocol]") {
  JobView job;
  job.id = 3;
  job.name = "train";
  job.pid = 1234;
  job.uid = 1000;
  job.qos = kQosOpportunistic;
  job.state = "running";
  job.launches = 77;
  job.devices.push_back({"GPU-a", 1000, 300, 500, 800});
  job.devices.push_back({"GPU-b", 1000, 100, kNoLimit, kNoLimit});
  nlohmann::ordered_json record = job_record(job);
  std::vector<std::string> keys;
  for (auto it = record.begin(); it != record.end(); ++it) keys.push_back(it.key());
  const std::vector<std::string> expected = {"kind",
                                             "version",
                                             "id",
                                             "name",
                                             "pid",
                                             "uid",
                                             "pids",
                                             "qos",
                                             "device",
                                             "mem_used_bytes",
                                             "mem_limit_bytes",
                                             "launches",
                                             "state",
                                             "iterations",
                                             "speed_per_s",
                                             "speed_unit",
                                             "solo_speed_per_s",
                                             "slowdown_pct",
                                             "launch_budget_per_s",
                                             "max_queued",
                                             "gpu_share_pct",
                                             "compute_cap_pct",
                                             "gpu_share_limit_pct",
                                             "compute_phase",
                                             "hold",
                                             "window_ns",
                                             "gpu_ns_last_window",
                                             "held_ns_last_window",
                                             "launch_cost_ns",
                                             "free_gpu_ns_last_window",
                                             "free_share_ppm",
                                             "uses_wait_of_pid",
                                             "devices",
                                             "mem_device_resident_bytes",
                                             "mem_host_resident_bytes"};
  CHECK(keys == expected);
  CHECK(record["device"] == "GPU-a");
  CHECK(record["mem_used_bytes"] == 400);
  CHECK(record["mem_limit_bytes"].is_null());  // one device has no limit
  CHECK(record["devices"][0]["start_limit_bytes"] == 800);
  job.devices.pop_back();
  CHECK(job_record(job)["mem_limit_bytes"] == 500);
}

TEST_CASE("the node report totals each class per device and overall", "[coord][protocol]") {
  NodeView node;
  DeviceView a{"GPU-a", 1000, {1, 300, 400}, {2, 200, kNoLimit, 150, 50}};
  DeviceView b{"GPU-b", 500, {0, 0, 0}, {1, 100, 100, 60, 40}};
  node.devices = {a, b};
  node.paused_jobs = 1;
  // One of the opportunistic jobs uses both GPUs: the node counts it once.
  node.production_jobs = 1;
  node.opportunistic_jobs = 2;
  auto records = node_records(node);
  REQUIRE(records.size() == 3);
  CHECK(records[0]["kind"] == "device");
  CHECK(records[0]["mem_used_bytes"] == 500);
  CHECK(records[0]["mem_free_bytes"] == 500);
  CHECK(records[0]["jobs"] == 3);
  CHECK(records[0]["mem_device_resident_bytes"] == 150);
  CHECK(records[0]["mem_host_resident_bytes"] == 50);
  CHECK(records[0]["opportunistic"]["mem_limit_bytes"].is_null());
  CHECK(records[0]["opportunistic"]["mem_host_resident_bytes"] == 50);
  CHECK(records[1]["jobs"] == 1);
  CHECK(records[2]["kind"] == "node");
  CHECK(records[2]["devices"] == 2);
  CHECK(records[2]["jobs"] == 3);
  CHECK(records[2]["paused_jobs"] == 1);
  CHECK(records[2]["mem_total_bytes"] == 1500);
  CHECK(records[2]["mem_free_bytes"] == 900);
  CHECK(records[2]["mem_device_resident_bytes"] == 210);
  CHECK(records[2]["mem_host_resident_bytes"] == 90);
  CHECK(records[2]["production"]["mem_used_bytes"] == 300);
  CHECK(records[2]["production"]["jobs"] == 1);
  CHECK(records[2]["opportunistic"]["jobs"] == 2);
  CHECK(records[2]["opportunistic"]["mem_host_resident_bytes"] == 90);
}

TEST_CASE("replies decode to records or to the coordinator's error", "[coord][protocol]") {
  auto records = decode_records(encode_jobs({JobView{}}));
  REQUIRE(records.ok());
  CHECK(records->size() == 1);
  auto error = decode_records(encode_error("no job 'x'", "unknown-job"));
  REQUIRE_FALSE(error.ok());
  CHECK(error.error().message == "no job 'x'");
  CHECK_FALSE(decode_records("garbage").ok());
  CHECK_FALSE(decode_records(R"({"kind":"registered","version":1,"id":1})").ok());
}

TEST_CASE("compute shares parse in one grammar and bad ones are refused") {
  CHECK(*parse_compute_share("30%") == 300000);
  CHECK(*parse_compute_share("30") == 300000);
  CHECK(*parse_compute_share("12.5%") == 125000);
  CHECK(*parse_compute_share("100%") == 1000000);
  CHECK(*parse_compute_share("none") == kNoLimit);
  for (const char* bad :
       {"0%", "0", "101%", "-5%", "abc", "", "30%%", "% 30", "nan", "inf", "1e3"}) {
    INFO(bad);
    CHECK_FALSE(parse_compute_share(bad));
  }
  auto set = parse_request(R"({"kind":"set","version":1,"job":"x","compute":"30%"})");
  REQUIRE(set);
  CHECK(*std::get<SetRequest>(*set).compute == "30%");
  CHECK_FALSE(parse_request(R"({"kind":"set","version":1,"job":"x","compute":"0%"})"));
  auto reg = parse_request(
      R"({"kind":"register","version":1,"name":"a","qos":"production","compute_cap_ppm":250000,"devices":[]})");
  REQUIRE(reg);
  CHECK(std::get<RegisterRequest>(*reg).compute_cap_ppm == 250000);
  CHECK_FALSE(parse_request(
      R"({"kind":"register","version":1,"name":"a","qos":"production","compute_cap_ppm":0,"devices":[]})"));
}

TEST_CASE("job records show the compute controller's view") {
  JobView job;
  job.speed_per_s = 61.2345;
  job.speed_in_iterations = true;
  job.solo_speed_per_s = 62;
  job.slowdown = -0.0125;
  job.launch_budget = 10;
  job.launch_window_ns = 20'000'000;
  job.max_queued = 10;
  job.compute_cap_ppm = 300000;
  job.compute_phase = "avoid";
  nlohmann::ordered_json r = job_record(job);
  CHECK(r["speed_per_s"] == 61.235);
  CHECK(r["speed_unit"] == "iterations");
  CHECK(r["slowdown_pct"] == -1.25);
  CHECK(r["launch_budget_per_s"] == 500);
  CHECK(r["max_queued"] == 10);
  CHECK(r["gpu_share_pct"].is_null());
  CHECK(r["compute_cap_pct"] == 30);
  CHECK(r["compute_phase"] == "avoid");
}

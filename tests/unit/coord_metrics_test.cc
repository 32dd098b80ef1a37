#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "coord/contract/protocol.h"
#include "coord/server/metrics_http.h"
#include "coord/contract/metrics_text.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

JobView a_job() {
  JobView job;
  job.id = 7;
  job.name = "train";
  job.pid = 4242;
  job.uid = 1000;
  job.qos = kQosOpportunistic;
  job.state = "paused";
  job.launches = 1234;
  job.iterations = 56;
  job.speed_per_s = 12.5;
  job.speed_in_iterations = true;
  job.solo_speed_per_s = 20;
  job.slowdown = -0.25;  // faster than its solo estimate
  job.gpu_share = 0.375;
  JobDeviceView device;
  device.uuid = "GPU-aa";
  device.mem_used_bytes = 3u << 30;
  device.mem_limit_bytes = kNoLimit;
  device.host_resident_bytes = 1u << 20;
  job.devices.push_back(device);
  return job;
}

std::string text_of(const JobView& job) { return prometheus_text({job_record(job)}); }

}  // namespace

TEST_CASE("label values escape backslash, quote and line feed", "[coord][metrics]") {
  CHECK(escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(escape_label_value("plain") == "plain");
}

TEST_CASE("a job's samples carry its labels and units", "[coord][metrics]") {
  std::string text = text_of(a_job());
  const std::string labels = R"({job_id="7",job_name="train",uid="1000",gpu_uuid="GPU-aa"})";
  CHECK_THAT(text, Catch::Contains("gpushare_job_memory_used_bytes" + labels + " 3221225472\n"));
  CHECK_THAT(text,
             Catch::Contains("gpushare_job_memory_host_resident_bytes" + labels + " 1048576\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE gpushare_job_launches_total counter\n"
                                   "gpushare_job_launches_total" +
                                   labels + " 1234\n"));
  CHECK_THAT(text,
             Catch::Contains("gpushare_job_speed_iterations_per_second" + labels + " 12.5\n"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_gpu_share_ratio" + labels + " 0.375\n"));
  CHECK_THAT(text, Catch::Contains(R"(gpushare_job_state{job_id="7",job_name="train",uid="1000",)"
                                   R"(gpu_uuid="GPU-aa",state="paused"} 1)"));
  CHECK_THAT(text, Catch::Contains(R"(class="opportunistic")"));
}

TEST_CASE("a slowdown is never negative in the metrics", "[coord][metrics]") {
  CHECK_THAT(text_of(a_job()), Catch::Contains("gpushare_job_slowdown_ratio{job_id=\"7\",job_name="
                                               "\"train\",uid=\"1000\",gpu_uuid=\"GPU-aa\"} 0\n"));
}

TEST_CASE("what is not measured or not limited has no sample", "[coord][metrics]") {
  JobView job = a_job();
  job.speed_per_s = -1;
  job.solo_speed_per_s = -1;
  std::string text = text_of(job);
  CHECK_THAT(text, !Catch::Contains("gpushare_job_memory_limit_bytes{"));
  CHECK_THAT(text, !Catch::Contains("gpushare_job_speed_iterations_per_second{"));
  CHECK_THAT(text, !Catch::Contains("gpushare_job_speed_launches_per_second{"));
  // The family is still announced, so dashboards find it.
  CHECK_THAT(text, Catch::Contains("# TYPE gpushare_job_memory_limit_bytes gauge\n"));
}

TEST_CASE("a job's name is escaped in its labels", "[coord][metrics]") {
  JobView job = a_job();
  job.name = "a\"b\\c";
  CHECK_THAT(text_of(job), Catch::Contains(R"(job_name="a\"b\\c")"));
}

TEST_CASE("metrics listen addresses need a host and a numeric port", "[coord][metrics]") {
  CHECK(check_listen_address("127.0.0.1:9400").ok());
  CHECK(check_listen_address("[::1]:0").ok());
  CHECK(check_listen_address("localhost:9400").ok());
  CHECK_FALSE(check_listen_address("9400").ok());
  CHECK_FALSE(check_listen_address(":9400").ok());
  CHECK_FALSE(check_listen_address("127.0.0.1:http").ok());
  CHECK_FALSE(check_listen_address("127.0.0.1:70000").ok());
  CHECK_FALSE(check_listen_address("[::1]9400").ok());
}

TEST_CASE("a paused job's reasons are samples of gpushare_job_paused", "[coord][metrics]") {
  JobView job = a_job();
  job.pause_reasons = {"memory"};
  std::string text = text_of(job);
  const std::string labels = R"(job_id="7",job_name="train",uid="1000",gpu_uuid="GPU-aa")";
  CHECK_THAT(text, Catch::Contains("gpushare_job_paused{" + labels + R"(,reason="memory"} 1)"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_paused{" + labels + R"(,reason="operator"} 0)"));
  job.pause_reasons.clear();
  text = text_of(job);
  CHECK_THAT(text, Catch::Contains("gpushare_job_paused{" + labels + R"(,reason="memory"} 0)"));
}

TEST_CASE("why a job is held and its GPU time of the last window are metrics", "[coord][metrics]") {
  JobView job = a_job();
  job.hold = "waiting-for-gap";
  job.gpu_ns_last_window = 250'000'000;
  job.held_ns_last_window = 700'000'000;
  job.launch_cost_ns = 1'400'000;
  std::string text = text_of(job);
  const std::string labels = R"(job_id="7",job_name="train",uid="1000",gpu_uuid="GPU-aa")";
  CHECK_THAT(text, Catch::Contains("# TYPE gpushare_job_hold gauge\n"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_hold{" + labels + R"(,reason="waiting-for-gap"} 1)"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_hold{" + labels + R"(,reason="running"} 0)"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_hold{" + labels + R"(,reason="paused-memory"} 0)"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_gpu_seconds_last_window{" + labels + "} 0.25\n"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_held_seconds_last_window{" + labels + "} 0.7\n"));
  CHECK_THAT(text, Catch::Contains("gpushare_job_launch_cost_seconds{" + labels + "} 0.0014\n"));
  // Nothing learned: no sample (PromQL's "no value"), not a sentinel.
  job.launch_cost_ns = 0;
  CHECK_THAT(text_of(job), !Catch::Contains("gpushare_job_launch_cost_seconds{"));
}

using nlohmann::ordered_json;

TEST_CASE("a job on several GPUs has its ranks' steps in its record and metrics",
          "[coord][metrics][ranks]") {
  JobView job = a_job();
  ordered_json one_gpu = job_record(job);
  CHECK(one_gpu.find("ranks") == one_gpu.end());  // a one-GPU job's record is as before
  CHECK(one_gpu.find("step_ms") == one_gpu.end());
  job.ranks.push_back(RankView{101, {"GPU-aa"}, 300, 62.5});
  job.ranks.push_back(RankView{102, {"GPU-bb"}, 299, 50});
  ordered_json record = job_record(job);
  REQUIRE(record["ranks"].size() == 2);
  CHECK(record["ranks"][0]["pid"] == 101);
  CHECK(record["ranks"][1]["gpus"] == ordered_json::array({"GPU-bb"}));
  CHECK(record["ranks"][1]["iterations"] == 299);
  CHECK(record["ranks"][0]["step_ms"] == 16.0);
  CHECK(record["step_ms"] == 20.0);  // the slowest rank's
  std::string text = prometheus_text({record});
  CHECK_THAT(text, Catch::Contains(R"(gpushare_job_rank_step_seconds{job_id="7",job_name="train",)"
                                   R"(uid="1000",gpu_uuid="GPU-bb",pid="102"} 0.02)"));
  // A rank not measured yet: no sample for it, and no step for the job.
  job.ranks[1].steps_per_s = -1;
  record = job_record(job);
  CHECK(record["step_ms"].is_null());
  CHECK(record["ranks"][1]["step_ms"].is_null());
  CHECK_THAT(prometheus_text({record}), !Catch::Contains(R"(pid="102"})"));
}

TEST_CASE("a job on several GPUs names the rank the others wait for in its record and metrics",
          "[coord][metrics][ranks]") {
  JobView job = a_job();
  job.ranks.push_back(RankView{101, {"GPU-aa"}, 300, 40, 0.232, 0, true});
  job.ranks.push_back(RankView{102, {"GPU-bb"}, 300, 40, 9.755, 9.523, false});
  ordered_json record = job_record(job);
  CHECK(record["waited_for_pid"] == 101);
  CHECK(record["ranks"][0]["collective_ms"] == 0.232);
  CHECK(record["ranks"][1]["wait_ms"] == 9.523);
  std::string text = prometheus_text({record});
  CHECK_THAT(text, Catch::Contains(R"(gpushare_job_rank_waited_for{job_id="7",job_name="train",)"
                                   R"(uid="1000",gpu_uuid="GPU-aa",pid="101"} 1)"));
  CHECK_THAT(text, Catch::Contains(R"(gpushare_job_rank_waited_for{job_id="7",job_name="train",)"
                                   R"(uid="1000",gpu_uuid="GPU-bb",pid="102"} 0)"));
  CHECK_THAT(text, Catch::Contains(R"(gpushare_job_rank_collective_wait_seconds{job_id="7",)"
                                   R"(job_name="train",uid="1000",gpu_uuid="GPU-bb",pid="102"} 0.0095)"));
  // Nothing measured, or no rank waits: null, and no waited-for samples.
  for (RankView& rank : job.ranks) {
    rank.waited_for = false;
    rank.collective_ms = rank.wait_ms = -1;
  }
  record = job_record(job);
  CHECK(record["waited_for_pid"].is_null());
  CHECK(record["ranks"][1]["wait_ms"].is_null());
  text = prometheus_text({record});
  CHECK_THAT(text, !Catch::Contains("gpushare_job_rank_waited_for{"));
  CHECK_THAT(text, !Catch::Contains("gpushare_job_rank_collective_wait_seconds{"));
}

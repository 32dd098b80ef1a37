// Trace replay: traces read, and metrics on tiny traces worked out by hand.
#include <catch2/catch.hpp>
#include <string>

#include "place/cluster_toml.h"
#include "place/replay.h"
#include "place/trace.h"

using namespace gpushare::place;

namespace {

Cluster cluster_of(const std::string& toml) {
  auto cluster = parse_cluster(toml, "test.toml");
  if (!cluster) FAIL(cluster.error().message);
  return *cluster;
}

const char* const kTwoGpus = R"(
[[node]]
name = "n1"
[[node.gpu]]
index = 0
mem = "16GiB"
[[node.gpu]]
index = 1
mem = "16GiB"
)";

TraceJob job(const std::string& id, std::int64_t gpus, double submit, double duration,
             const std::string& tenant = "default") {
  return TraceJob{id, tenant, submit, duration, gpus};
}

ReplayMetrics run(const Cluster& cluster, const std::vector<TraceJob>& trace, ReplayPolicy policy) {
  ReplayOptions options;
  options.policy = policy;
  auto metrics = replay(cluster, trace, options);
  if (!metrics) FAIL(metrics.error().message);
  return *metrics;
}

}  // namespace

TEST_CASE("exclusive: a job waits until GPUs are free", "[place][replay]") {
  // A holds both GPUs for 100 s; B (1 GPU, 50 s) arrives at 10 and waits.
  ReplayMetrics m = run(cluster_of(kTwoGpus), {job("A", 2, 0, 100), job("B", 1, 10, 50)},
                        ReplayPolicy::kExclusive);
  CHECK(m.avg_jct_s == Approx(120));  // 100 and 140
  CHECK(m.p95_jct_s == Approx(140));
  CHECK(m.makespan_s == Approx(150));
  CHECK(m.avg_wait_s == Approx(45));  // 0 and 90
  CHECK(m.gpu_util == Approx(250.0 / 300.0));
  CHECK(m.ot_jobs == 0);
  CHECK(m.reservations == 0);
  CHECK(m.jobs == 2);
}

TEST_CASE("antman: a job over quota shares a production GPU at what is left", "[place][replay]") {
  // Quota 2: B goes opportunistic on GPU 0 beside A (utilisation 0.6) and
  // runs at 0.4 until A ends at 100 (36 s of work done), then alone: 114.
  ReplayMetrics m =
      run(cluster_of(kTwoGpus), {job("A", 2, 0, 100), job("B", 1, 10, 50)}, ReplayPolicy::kAntman);
  CHECK(m.avg_jct_s == Approx(102));  // 100 and 104
  CHECK(m.p95_jct_s == Approx(104));
  CHECK(m.makespan_s == Approx(114));
  CHECK(m.avg_wait_s == Approx(0));
  CHECK(m.gpu_util == Approx(214.0 / 228.0));
  CHECK(m.ot_jobs == 1);
}

TEST_CASE("antman: opportunistic jobs alone on a GPU split it", "[place][replay]") {
  // One GPU, quota 1 (share 1.0): A production; B and C over quota share
  // what A leaves, 0.2 each, until A ends at 10; then 0.5 each.
  std::string one_gpu = "[[node]]\nname = \"n\"\n[[node.gpu]]\nindex = 0\nmem = \"16GiB\"\n";
  ReplayOptions options;
  options.job_util = 0.3;  // A at 0.3 leaves room for two more below 0.8
  auto m = replay(cluster_of(one_gpu), {job("A", 1, 0, 10), job("B", 1, 0, 10), job("C", 1, 0, 10)},
                  options);
  REQUIRE(m);
  // B and C: 10 s at 0.35 each (3.5 done), then 6.5 s of work at 0.5: 23.
  CHECK(m->makespan_s == Approx(23));
  CHECK(m->ot_jobs == 2);
}

TEST_CASE("antman: a job that fits only in part reserves, then starts", "[place][replay]") {
  Cluster c = cluster_of(R"(
[policy]
multi_node = false
node_order = "spread"
[[node]]
name = "n1"
[[node.gpu]]
index = 0
mem = "16GiB"
[[node.gpu]]
index = 1
mem = "16GiB"
[[node]]
name = "n2"
[[node.gpu]]
index = 0
mem = "16GiB"
[[node.gpu]]
index = 1
mem = "16GiB"
)");
  // A and B take one GPU on each node; C needs both GPUs of one node and
  // reserves n1's free one until A ends at 100.
  ReplayMetrics m =
      run(c, {job("A", 1, 0, 100), job("B", 1, 0, 200), job("C", 2, 1, 10)}, ReplayPolicy::kAntman);
  CHECK(m.reservations == 1);
  CHECK(m.avg_wait_s == Approx(99.0 / 3));
  CHECK(m.makespan_s == Approx(200));
  CHECK(m.avg_jct_s == Approx((100.0 + 200.0 + 109.0) / 3));
  ReplayMetrics e = run(c, {job("A", 1, 0, 100), job("B", 1, 0, 200), job("C", 2, 1, 10)},
                        ReplayPolicy::kExclusive);
  CHECK(e.reservations == 0);
  CHECK(e.avg_jct_s == Approx((100.0 + 200.0 + 109.0) / 3));
}

TEST_CASE("jobs larger than the cluster are left out and counted", "[place][replay]") {
  ReplayMetrics m = run(cluster_of(kTwoGpus), {job("A", 1, 0, 10), job("huge", 3, 0, 10)},
                        ReplayPolicy::kExclusive);
  CHECK(m.jobs == 1);
  CHECK(m.skipped == 1);
  CHECK(m.makespan_s == Approx(10));
}

TEST_CASE("metrics print as the common CSV line and as JSON", "[place][replay]") {
  ReplayMetrics m;
  m.policy = "antman";
  m.avg_jct_s = 102;
  m.p95_jct_s = 104.04;
  m.makespan_s = 114;
  m.gpu_util = 214.0 / 228.0;
  m.ot_jobs = 1;
  m.jobs = 2;
  CHECK(replay_csv_header() ==
        "policy,avg_jct,p95_jct,makespan,avg_wait,gpu_util,frag_gpus,ot_jobs,reservations,jobs,"
        "skipped");
  CHECK(replay_csv(m) == "antman,102.0,104.0,114.0,0.0,0.9386,0.00,1,0,2,0");
  CHECK(replay_json(m) ==
        "{\"kind\":\"replay\",\"version\":1,\"policy\":\"antman\",\"avg_jct_s\":102.000,"
        "\"p95_jct_s\":104.040,\"makespan_s\":114.000,\"avg_wait_s\":0.000,\"gpu_util\":0.938596,"
        "\"frag_gpus\":0.0000,\"ot_jobs\":1,\"reservations\":0,\"jobs\":2,\"skipped\":0}");
}

TEST_CASE("a Tiresias trace reads, sorted by submission", "[place][replay][trace]") {
  auto trace = parse_trace(
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "0,1,30,606,vgg19,164,30\n1,8,10,133,vgg11,147,23\n",
      "t.csv");
  REQUIRE(trace);
  REQUIRE(trace->size() == 2);
  CHECK((*trace)[0].id == "1");
  CHECK((*trace)[0].gpus == 8);
  CHECK((*trace)[0].submit_s == 0);
  CHECK((*trace)[1].submit_s == 20);
  CHECK((*trace)[1].duration_s == 164);
  CHECK((*trace)[1].tenant == "default");
}

TEST_CASE("a Philly trace reads timestamps and virtual clusters", "[place][replay][trace]") {
  auto trace = parse_trace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-10-08 07:01:54,2951.0,2,5902.0,6214e9\r\n",
      "p.csv");
  REQUIRE(trace);
  REQUIRE(trace->size() == 2);
  CHECK((*trace)[0].tenant == "6214e9");
  CHECK((*trace)[0].submit_s == 0);
  CHECK((*trace)[1].submit_s == 86401);
  CHECK((*trace)[1].duration_s == 66);
  CHECK((*trace)[0].gpus == 2);
}

TEST_CASE("bad traces are errors naming the line", "[place][replay][trace]") {
  auto error_of = [](const std::string& text) {
    auto trace = parse_trace(text, "t.csv");
    return trace ? std::string() : trace.error().message;
  };
  CHECK(error_of("name,time,application,num_replicas,batch_size\ncifar10-0,53,cifar10,6,2048\n") ==
        "t.csv:1: a Pollux workload has no job durations (Pollux derives them from its models), "
        "so it cannot be replayed here");
  CHECK(error_of("a,b\n1,2\n").rfind("t.csv:1: unknown trace format", 0) == 0);
  std::string header = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";
  CHECK(error_of(header + "0,1,30,606,vgg19,164\n") == "t.csv:2: expected 7 fields, found 6");
  CHECK(error_of(header + "0,x,30,606,vgg19,164,30\n") ==
        "t.csv:2: unreadable value in '0,x,30,606,vgg19,164,30'");
  CHECK(error_of(header + "0,0,30,606,vgg19,164,30\n") ==
        "t.csv:2: the GPU count must be a whole number, at least 1");
  CHECK(error_of(header + "0,1,30,606,vgg19,-1,30\n") == "t.csv:2: times must not be negative");
  CHECK(error_of(header) == "t.csv: the trace has no jobs");
  CHECK(error_of("timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-01 00:00:00,1,1,1,a\n") ==
        "t.csv:2: unreadable value in '2017-13-01 00:00:00,1,1,1,a'");
}

TEST_CASE("a Tiresias cluster spec becomes nodes of GPUs", "[place][replay][trace]") {
  auto cluster = parse_cluster_spec(
      "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n2,3,4,40,256\n",
      "c.csv", 1024);
  REQUIRE(cluster);
  REQUIRE(cluster->nodes.size() == 6);
  CHECK(cluster->nodes[4].name == "s1n1");
  REQUIRE(cluster->nodes[4].gpus.size() == 4);
  CHECK(cluster->nodes[4].gpus[3].index == 3);
  CHECK(cluster->nodes[4].gpus[3].mem_bytes == 1024);
  auto bad = parse_cluster_spec("num_switch,num_node_p_switch,num_gpu_p_node\n1,0,4\n", "c.csv", 1);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message ==
        "c.csv:2: 'num_node_p_switch' must be a whole number from 1 to 100000");
}

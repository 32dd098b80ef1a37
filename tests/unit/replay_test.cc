// Trace replay: traces read, and each policy on tiny traces worked out by
// hand. Unless a case says otherwise every job has utilisation 0.6 and the
// model has no interference and free switches, so the figures are exact.
#include "replay/replay.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "place/cluster/cluster_toml.h"
#include "replay/trace.h"

using namespace gpushare::place;
using namespace gpushare::replay;

namespace {

Cluster cluster_of(const std::string& toml) {
  auto cluster = parse_cluster(toml, "test.toml");
  if (!cluster) FAIL(cluster.error().message);
  return *cluster;
}

std::string gpus_toml(int nodes, int gpus, bool multi_node = true) {
  std::string toml = multi_node ? "" : "[policy]\nmulti_node = false\n";
  for (int n = 0; n < nodes; ++n) {
    toml += "[[node]]\nname = \"n" + std::to_string(n + 1) + "\"\n";
    for (int g = 0; g < gpus; ++g) {
      toml += "[[node.gpu]]\nindex = " + std::to_string(g) + "\nmem = \"16GiB\"\n";
    }
  }
  return toml;
}

TraceJob job(const std::string& id, std::int64_t gpus, double submit, double duration,
             const std::string& tenant = "default") {
  return TraceJob{id, tenant, submit, duration, gpus};
}

ReplayOptions plain(ReplayPolicy policy, double util = 0.6) {
  ReplayOptions options;
  options.policy = policy;
  options.job_util = util;
  options.job_mem_share = 0.25;
  options.model.beta = 0;
  options.model.controlled_slowdown = 0;
  options.model.switch_s = 0;
  return options;
}

ReplayMetrics run(const std::string& toml, const std::vector<TraceJob>& trace,
                  const ReplayOptions& options) {
  auto metrics = replay(cluster_of(toml), trace, options);
  if (!metrics) FAIL(metrics.error().message);
  return *metrics;
}

double end_of(const ReplayMetrics& m, std::size_t job) { return m.results.at(job).end_s; }

}  // namespace

TEST_CASE("exclusive: a job waits until GPUs are free", "[place][replay]") {
  // A holds both GPUs for 100 s; B (1 GPU, 50 s) arrives at 10 and waits.
  for (ReplayPolicy policy : {ReplayPolicy::kExclusive, ReplayPolicy::kYarnCs}) {
    ReplayMetrics m =
        run(gpus_toml(1, 2), {job("A", 2, 0, 100), job("B", 1, 10, 50)}, plain(policy));
    CHECK(m.avg_jct_s == Approx(120));  // 100 and 140
    CHECK(m.p95_jct_s == Approx(140));
    CHECK(m.makespan_s == Approx(150));
    CHECK(m.avg_wait_s == Approx(45));  // 0 and 90
    CHECK(m.gpu_util == Approx(250.0 / 300.0));
    CHECK(m.gpu_compute == Approx(0.6 * 250.0 / 300.0));
    CHECK(m.ot_jobs == 0);
    CHECK(m.jobs == 2);
  }
}

TEST_CASE("exclusive backfills within its window, yarn-cs keeps each queue in order",
          "[place][replay]") {
  // One tenant: A holds 1 of 2 GPUs; B wants 2 and waits; C wants 1.
  std::vector<TraceJob> trace = {job("A", 1, 0, 100), job("B", 2, 1, 10), job("C", 1, 2, 10)};
  ReplayMetrics e = run(gpus_toml(1, 2), trace, plain(ReplayPolicy::kExclusive));
  CHECK(end_of(e, 2) == Approx(12));  // C went past B
  CHECK(end_of(e, 1) == Approx(110));
  ReplayMetrics y = run(gpus_toml(1, 2), trace, plain(ReplayPolicy::kYarnCs));
  CHECK(end_of(y, 2) == Approx(120));  // C waited behind B
  // Two tenants: yarn-cs serves the queue furthest below its capacity.
  std::vector<TraceJob> two = {job("A1", 1, 0, 100, "a"), job("A2", 1, 0, 100, "a"),
                               job("A3", 1, 1, 10, "a"), job("B1", 1, 2, 10, "b")};
  ReplayMetrics t = run(gpus_toml(1, 2), two, plain(ReplayPolicy::kYarnCs));
  CHECK(end_of(t, 3) == Approx(110));  // b (0 of 1) before a (2 of 1) at 100
  CHECK(end_of(t, 2) == Approx(110));  // the other GPU freed at 100 too
}

TEST_CASE("gandiva packs jobs whose utilisations fit on one GPU", "[place][replay]") {
  ReplayOptions options = plain(ReplayPolicy::kGandiva, 0.4);
  ReplayMetrics m = run(gpus_toml(1, 1), {job("A", 1, 0, 100), job("B", 1, 10, 50)}, options);
  CHECK(m.packed == 1);
  CHECK(end_of(m, 1) == Approx(60));  // 0.8 of the GPU: both at full speed
  CHECK(end_of(m, 0) == Approx(100));
  options.model.beta = 0.25;  // each slowed by 0.25 * 0.4 while packed
  ReplayMetrics slow = run(gpus_toml(1, 1), {job("A", 1, 0, 100), job("B", 1, 10, 50)}, options);
  CHECK(end_of(slow, 1) == Approx(10 + 50 / 0.9));
}

TEST_CASE("gandiva time-slices when packing would overload, at the switch cost",
          "[place][replay]") {
  ReplayOptions options = plain(ReplayPolicy::kGandiva, 0.6);
  ReplayMetrics m = run(gpus_toml(1, 1), {job("A", 1, 0, 100), job("B", 1, 10, 50)}, options);
  CHECK(m.packed == 0);
  CHECK(m.timesliced == 1);
  // From 10 both run at 1/2: B's 50 s take 100; A has 40 s left, alone.
  CHECK(end_of(m, 1) == Approx(110));
  CHECK(end_of(m, 0) == Approx(150));
  options.model.switch_s = 6;  // each turn of 60 s loses 6
  ReplayMetrics cost = run(gpus_toml(1, 1), {job("A", 1, 0, 100), job("B", 1, 10, 50)}, options);
  CHECK(end_of(cost, 1) == Approx(10 + 50 / 0.45));
}

TEST_CASE("gandiva migrates a job to give a job one node", "[place][replay]") {
  // 2 nodes of 2; A and B on n1, C on n2; A ends at 10, leaving one free
  // GPU per node; D wants 2 on one node at 20: B moves to n2 (30 s).
  ReplayOptions options = plain(ReplayPolicy::kGandiva);
  std::vector<TraceJob> trace = {job("A", 1, 0, 10), job("B", 1, 0, 100), job("C", 1, 0, 100),
                                 job("D", 2, 20, 10)};
  ReplayMetrics m = run(gpus_toml(2, 2, false), trace, options);
  CHECK(m.migrations == 1);
  CHECK(end_of(m, 3) == Approx(30));
  CHECK(end_of(m, 1) == Approx(130));
  CHECK(m.work_gpu_s == Approx(10 + 100 + 100 + 20 + 30));
  ReplayMetrics e = run(gpus_toml(2, 2, false), trace, plain(ReplayPolicy::kExclusive));
  CHECK(end_of(e, 3) == Approx(110));
}

TEST_CASE("antman: a job over quota runs opportunistic on what production leaves",
          "[place][replay]") {
  // Quota 2 (one tenant): B goes opportunistic beside A (0.6), gets the
  // remaining 0.4 of a GPU, so runs at 0.4 / 0.6.
  ReplayMetrics m = run(gpus_toml(1, 2), {job("A", 2, 0, 100), job("B", 1, 10, 50)},
                        plain(ReplayPolicy::kAntman));
  CHECK(m.ot_jobs == 1);
  CHECK(end_of(m, 1) == Approx(10 + 50 * 1.5));
  CHECK(end_of(m, 0) == Approx(100));  // production kept at full speed
  CHECK(m.prod_within_10ms == Approx(1.0));
}

TEST_CASE("antman: a gang is charged for its slowest rank, once however many are shared",
          "[place][replay][interference]") {
  // A (production, 2 GPUs: one rank each) runs alone for 10 s. B, over
  // quota, goes opportunistic beside one rank: that rank runs at 0.9 under
  // control, and so does the whole of A, whose steps wait for it. B gets
  // 0.4 of a GPU, so 50 s of work take 75 s: B ends at 85, A has done
  // 10 + 75 * 0.9 = 77.5 s by then and ends at 107.5.
  ReplayOptions options = plain(ReplayPolicy::kAntman);
  options.model.controlled_slowdown = 0.1;
  ReplayMetrics one = run(gpus_toml(1, 2), {job("A", 2, 0, 100), job("B", 1, 10, 50)}, options);
  CHECK(one.ot_jobs == 1);
  CHECK(end_of(one, 1) == Approx(85));
  CHECK(end_of(one, 0) == Approx(107.5));
  // Beside both ranks (B on one GPU, C on the other): the same charge, not
  // twice it, since both ranks lose the same and meet at the same step.
  ReplayMetrics both = run(gpus_toml(1, 2),
                           {job("A", 2, 0, 100), job("B", 1, 10, 50), job("C", 1, 10, 50)}, options);
  CHECK(both.ot_jobs == 2);
  CHECK(end_of(both, 1) == Approx(85));
  CHECK(end_of(both, 2) == Approx(85));
  CHECK(end_of(both, 0) == Approx(107.5));
  // Without the opportunistic job it keeps its speed: the charge is the
  // neighbour's, not the gang's size.
  ReplayMetrics alone = run(gpus_toml(1, 2), {job("A", 2, 0, 100)}, options);
  CHECK(end_of(alone, 0) == Approx(100));
}

TEST_CASE("antman: an opportunistic job is upgraded when its tenant's quota frees",
          "[place][replay]") {
  ReplayMetrics m = run(gpus_toml(1, 2), {job("A", 2, 0, 100), job("B", 1, 10, 200)},
                        plain(ReplayPolicy::kAntman));
  CHECK(m.ot_jobs == 1);
  CHECK(m.upgrades == 1);
  // 60 s of work by 100, then production: 140 s more.
  CHECK(end_of(m, 1) == Approx(240));
}

TEST_CASE("antman: a job queued too long runs opportunistic", "[place][replay]") {
  // One GPU, two tenants with quota 1 each: A owns the GPU; B, within its
  // quota, waits; after 30 s it runs opportunistic at 0.4 / 0.6.
  std::vector<TraceJob> trace = {job("A", 1, 0, 100, "a"), job("B", 1, 0, 10, "b")};
  ReplayOptions options = plain(ReplayPolicy::kAntman);
  options.quota_share = 2.0;
  ReplayMetrics wait = run(gpus_toml(1, 1), trace, options);
  CHECK(end_of(wait, 1) == Approx(110));
  CHECK(wait.conversions == 0);
  options.queue_threshold_s = 30;
  ReplayMetrics m = run(gpus_toml(1, 1), trace, options);
  CHECK(m.conversions == 1);
  CHECK(m.ot_jobs == 1);
  CHECK(end_of(m, 1) == Approx(45));
}

TEST_CASE("antman: a job that fits only in part reserves, then starts", "[place][replay]") {
  // 2 nodes of 2, jobs may not span. A and X fill n1, B takes n2's first
  // GPU. C (2 GPUs) reserves n2's free GPU, so Y, arriving later, cannot
  // take it; B ends at 50, C runs on n2 until 60, then Y. Without reservations Y takes
  // the GPU and C waits until Y ends.
  std::vector<TraceJob> trace = {job("A", 1, 0, 100), job("X", 1, 0, 300), job("B", 1, 0, 50),
                                 job("C", 2, 1, 10), job("Y", 1, 2, 100)};
  ReplayOptions options = plain(ReplayPolicy::kAntman);
  options.quota_share = 3.0;  // quota 6: everyone within it
  ReplayMetrics m = run(gpus_toml(2, 2, false), trace, options);
  CHECK(m.reservations == 1);
  CHECK(end_of(m, 3) == Approx(60));
  CHECK(end_of(m, 4) == Approx(160));  // after C, on n2
  ReplayMetrics e = run(gpus_toml(2, 2, false), trace, plain(ReplayPolicy::kExclusive));
  CHECK(e.reservations == 0);
  CHECK(end_of(e, 4) == Approx(102));
  CHECK(end_of(e, 3) == Approx(112));
}

TEST_CASE("the interference model on one pair", "[place][replay][interference]") {
  InterferenceModel model;  // the defaults: beta 0.25, controlled 0.02
  std::vector<CoRunner> pair = {{0.6, true}, {0.6, false}};
  // Plain packing: demand 1.2, so 1/1.2 each, times 1 - 0.25 * 0.6.
  CHECK(shared_rate(model, Sharing::kPacked, pair, 0) == Approx(0.85 / 1.2));
  CHECK(shared_rate(model, Sharing::kPacked, pair, 1) == Approx(0.85 / 1.2));
  // Under control: production at 0.98; the other on 0.4 of the GPU.
  CHECK(shared_rate(model, Sharing::kControlled, pair, 0) == Approx(0.98));
  CHECK(shared_rate(model, Sharing::kControlled, pair, 1) == Approx(0.4 / 0.6 * 0.85));
  // Time slicing: half each, less a second per minute.
  CHECK(shared_rate(model, Sharing::kTimesliced, pair, 1) == Approx(59.0 / 60 / 2));
  // Light jobs packed: no one waits for the GPU, only interference.
  std::vector<CoRunner> light = {{0.3, false}, {0.3, false}};
  CHECK(shared_rate(model, Sharing::kPacked, light, 0) == Approx(1 - 0.25 * 0.3));
}

TEST_CASE("an interference model file sets the parameters it names",
          "[place][replay][interference]") {
  auto model = parse_interference("# measured\nbeta = 0.1\n  quantum_s=30 # s\n\n", "m.txt");
  REQUIRE(model);
  CHECK(model->beta == 0.1);
  CHECK(model->quantum_s == 30);
  CHECK(model->controlled_slowdown == 0.02);
  auto error_of = [](const std::string& text) {
    auto m = parse_interference(text, "m.txt");
    return m ? std::string() : m.error().message;
  };
  CHECK(error_of("gamma = 1\n") == "m.txt:1: unknown key 'gamma'");
  CHECK(error_of("\nbeta = 2\n") == "m.txt:2: 'beta' must be a number from 0.000000 to 1.000000");
  CHECK(error_of("beta 1\n") == "m.txt:1: expected key = value");
  CHECK(error_of("switch_s = 70\n") == "m.txt: switch_s must be shorter than quantum_s");
}

TEST_CASE("frag_gpus counts free GPUs that cannot serve the median request", "[place][replay]") {
  // 2 nodes of 2, one job per node may not span. Requests 1,1,1,2,2: the
  // median requested GPU belongs to a 2-GPU job. A, B on n1, C on n2; D and
  // E wait. 0-10: n2's free GPU is fragmented (1); 10-100: one free per
  // node (2); then D and E run, nothing free. 190 GPU-s over 150 s.
  std::vector<TraceJob> trace = {job("A", 1, 0, 100), job("B", 1, 0, 10), job("C", 1, 0, 100),
                                 job("D", 2, 0, 50), job("E", 2, 0, 50)};
  ReplayMetrics m = run(gpus_toml(2, 2, false), trace, plain(ReplayPolicy::kExclusive));
  CHECK(m.makespan_s == Approx(150));
  CHECK(m.frag_gpus == Approx(190.0 / 150.0));
}

TEST_CASE("every job finishes once and GPU-time is conserved, under every policy",
          "[place][replay]") {
  std::mt19937_64 random(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<TraceJob> trace;
    double submit = 0;
    for (int i = 0; i < 200; ++i) {
      submit += std::uniform_real_distribution<double>(0, 20)(random);
      std::int64_t gpus = std::int64_t{1} << std::uniform_int_distribution<int>(0, 2)(random);
      double duration = std::uniform_real_distribution<double>(1, 500)(random);
      trace.push_back(job(std::to_string(i), gpus, submit, duration,
                          "t" + std::to_string(std::uniform_int_distribution<int>(0, 3)(random))));
    }
    double demand = 0;
    for (const TraceJob& t : trace) demand += t.duration_s * static_cast<double>(t.gpus);
    for (ReplayPolicy policy : all_replay_policies()) {
      ReplayOptions options;
      options.policy = policy;
      options.seed = static_cast<std::uint64_t>(round);
      options.queue_threshold_s = 100;
      options.window = 8;
      ReplayMetrics m = run(gpus_toml(3, 4, round % 2 == 0), trace, options);
      REQUIRE(m.results.size() == trace.size());
      for (std::size_t i = 0; i < trace.size(); ++i) {
        INFO(to_string(policy) << " round " << round << " job " << i);
        CHECK(m.results[i].start_s >= trace[i].submit_s);
        CHECK(m.results[i].end_s >= m.results[i].start_s + trace[i].duration_s * (1 - 1e-9));
      }
      CHECK(m.work_gpu_s == Approx(demand + m.migrations * options.model.migrate_s));
    }
  }
}

TEST_CASE("a cluster too small for a job is an error naming it", "[place][replay]") {
  auto m = replay(cluster_of(gpus_toml(1, 2)), {job("A", 1, 0, 10), job("huge", 3, 0, 10)},
                  plain(ReplayPolicy::kExclusive));
  REQUIRE_FALSE(m);
  CHECK(m.error().message == "job huge asks for 3 GPUs; this cluster gives one job at most 2");
}

TEST_CASE("policies parse by name", "[place][replay]") {
  for (ReplayPolicy policy : all_replay_policies()) {
    CHECK(parse_replay_policy(to_string(policy)) == policy);
  }
  CHECK_FALSE(parse_replay_policy("fifo"));
}

TEST_CASE("a Tiresias trace reads, sorted by submission", "[place][replay][trace]") {
  auto trace = parse_trace(
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "0,1,30,606,vgg19,164,30\n1,8,10,133,vgg11,147,23\n",
      "t.csv");
  REQUIRE(trace);
  REQUIRE(trace->jobs.size() == 2);
  CHECK(trace->jobs[0].id == "1");
  CHECK(trace->jobs[0].gpus == 8);
  CHECK(trace->jobs[0].submit_s == 0);
  CHECK(trace->jobs[1].submit_s == 20);
  CHECK(trace->jobs[1].duration_s == 164);
  CHECK(trace->jobs[1].tenant == "default");
}

TEST_CASE("a Philly trace reads timestamps and virtual clusters", "[place][replay][trace]") {
  auto trace = parse_trace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-10-08 07:01:54,2951.0,2,5902.0,6214e9\r\n",
      "p.csv");
  REQUIRE(trace);
  REQUIRE(trace->jobs.size() == 2);
  CHECK(trace->jobs[0].tenant == "6214e9");
  CHECK(trace->jobs[0].submit_s == 0);
  CHECK(trace->jobs[1].submit_s == 86401);
  CHECK(trace->jobs[1].duration_s == 66);
  CHECK(trace->jobs[0].gpus == 2);
}

TEST_CASE("a bad header is an error, a bad row is skipped and named", "[place][replay][trace]") {
  auto error_of = [](const std::string& text) {
    auto trace = parse_trace(text, "t.csv");
    return trace ? std::string() : trace.error().message;
  };
  CHECK(error_of("name,time,application,num_replicas,batch_size\ncifar10-0,53,cifar10,6,2048\n") ==
        "t.csv:1: a Pollux workload has no job durations (Pollux derives them from its models), "
        "so it cannot be replayed here");
  CHECK(error_of("a,b\n1,2\n").rfind("t.csv:1: unknown trace format", 0) == 0);
  std::string header = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";
  CHECK(error_of(header) == "t.csv: the trace has no usable jobs");
  auto skipped_of = [&](const std::string& row) {
    auto trace = parse_trace(header + row + "9,1,0,1,m,5,1\n", "t.csv");
    REQUIRE(trace);
    CHECK(trace->jobs.size() == 1);
    REQUIRE(trace->skipped.size() == 1);
    return trace->skipped[0];
  };
  CHECK(skipped_of("0,1,30,606,vgg19,164\n") == "t.csv:2: expected 7 fields, found 6");
  CHECK(skipped_of("0,x,30,606,vgg19,164,30\n") ==
        "t.csv:2: unreadable value in '0,x,30,606,vgg19,164,30'");
  CHECK(skipped_of("0,0,30,606,vgg19,164,30\n") ==
        "t.csv:2: the GPU count must be a whole number, at least 1");
  CHECK(skipped_of("0,1,30,606,vgg19,-1,30\n") == "t.csv:2: times must not be negative");
  CHECK(error_of(header + "0,1,30,606,vgg19,-1,30\n") ==
        "t.csv: the trace has no usable jobs (first problem: t.csv:2: times must not be negative)");
  auto philly = parse_trace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-01 00:00:00,1,1,1,a\n"
      "2017-12-01 00:00:00,1,1,1,a\n",
      "p.csv");
  REQUIRE(philly);
  CHECK(philly->skipped ==
        std::vector<std::string>{"p.csv:2: unreadable value in '2017-13-01 00:00:00,1,1,1,a'"});
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

TEST_CASE("fairness and tenant shares worked out by hand for two tenants", "[place][replay]") {
  // Two GPUs, quota 1 each. a holds both GPUs (A1, A2) from 0 to 100 and
  // queues A3 at 1; b queues B1 at 2 and gets nothing until 100. While
  // waiting, a received 2 GPUs against its quota of 1 (ratio 2) and b
  // none (ratio 0): Jain's index (2 + 0)^2 / (2 * (4 + 0)) = 0.5.
  std::vector<TraceJob> two = {job("A1", 1, 0, 100, "a"), job("A2", 1, 0, 100, "a"),
                               job("A3", 1, 1, 10, "a"), job("B1", 1, 2, 10, "b")};
  ReplayMetrics m = run(gpus_toml(1, 2), two, plain(ReplayPolicy::kYarnCs));
  CHECK(m.fairness == Approx(0.5));
  REQUIRE(m.tenants.size() == 2);
  CHECK(m.tenants[0].tenant == "a");
  CHECK(m.tenants[0].backlog_ratio == Approx(2));
  CHECK(m.tenants[1].backlog_ratio == Approx(0));
  // GPU-time over the run: a 210 GPU-s, b 10, against equal quotas.
  CHECK(m.tenants[0].gpu_share == Approx(210.0 / 220.0));
  CHECK(m.tenants[1].gpu_share == Approx(10.0 / 220.0));
  CHECK(m.tenants[0].quota_share == Approx(0.5));
  std::string record = replay_json(m);
  CHECK(record.find(R"("tenants":[{"tenant":"a","gpu_share":0.954545,"quota_share":0.500000,)"
                    R"("backlog_ratio":2.000000},{"tenant":"b",)") != std::string::npos);
  // A tenant that never waited has no backlog ratio and leaves the index.
  ReplayMetrics alone = run(gpus_toml(1, 2), {job("A1", 1, 0, 100, "a"), job("B1", 1, 0, 10, "b")},
                            plain(ReplayPolicy::kYarnCs));
  CHECK(alone.fairness == Approx(1));
  CHECK(alone.tenants[0].backlog_ratio == -1);
  CHECK(replay_json(alone).find(R"("backlog_ratio":null)") != std::string::npos);
}

TEST_CASE("a tenant name from the trace cannot break the JSON record", "[place][replay]") {
  ReplayMetrics m =
      run(gpus_toml(1, 1), {job("A", 1, 0, 10, "q\"\\\x01\xff")}, plain(ReplayPolicy::kYarnCs));
  CHECK(replay_json(m).find(R"("tenant":"q\"\\\u0001\ufffd")") != std::string::npos);
}

// What gpushare-place prints (JSON records, Slurm arguments, environment)
// and the state it writes, read back.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "place/cluster/cluster_toml.h"
#include "place/format.h"
#include "place/placer.h"
#include "place/cluster/state_writer.h"

using gpushare::place::Cluster;
using gpushare::Qos;
using gpushare::kQosOpportunistic;
using gpushare::kQosProduction;
using gpushare::place::placement_json;
using gpushare::place::NodeGpus;
using gpushare::place::Placement;
using gpushare::place::PlacementStatus;
using gpushare::place::Placer;

namespace {

Placement placed(Qos job_class, std::vector<NodeGpus> nodes) {
  Placement p;
  p.job = gpushare::place::JobId{"train-7", {}};
  p.status = PlacementStatus::kPlaced;
  p.job_class = job_class;
  p.tenant = "vision";
  p.nodes = std::move(nodes);
  return p;
}

Cluster example_cluster() {
  auto cluster = gpushare::place::load_cluster(std::string(GPUSHARE_SOURCE_DIR) +
                                               "/tests/data/place/cluster.toml");
  if (!cluster) FAIL(cluster.error().message);
  return *cluster;
}

std::vector<gpushare::place::Job> example_jobs() {
  std::ifstream in(std::string(GPUSHARE_SOURCE_DIR) + "/tests/data/place/jobs.jsonl");
  std::vector<gpushare::place::Job> jobs;
  std::string line;
  while (std::getline(in, line)) {
    auto job = gpushare::place::job_from_json(nlohmann::json::parse(line));
    if (!job) FAIL(job.error().message);
    jobs.push_back(*job);
  }
  return jobs;
}

}  // namespace

TEST_CASE("a placement on one node is a record with node and gpus", "[place][output]") {
  CHECK(placement_json(placed(kQosProduction, {{"n1", {2, 3}}})) ==
        R"({"kind":"placement","version":1,"job":"train-7","status":"placed",)"
        R"("class":"production","tenant":"vision","node":"n1","gpus":[2,3]})");
}

TEST_CASE("a placement over several nodes lists them", "[place][output]") {
  Placement p = placed(kQosOpportunistic, {{"n1", {0}}, {"n2", {1, 2}}});
  p.job = gpushare::place::JobId{"7", 7};
  CHECK(placement_json(p) ==
        R"({"kind":"placement","version":1,"job":7,"status":"placed","class":"opportunistic",)"
        R"("tenant":"vision","nodes":[{"node":"n1","gpus":[0]},{"node":"n2","gpus":[1,2]}]})");
}

TEST_CASE("reserved and unplaced records carry a reason", "[place][output]") {
  Placement r = placed(kQosProduction, {{"n1", {1}}});
  r.status = PlacementStatus::kReserved;
  r.reason = "only 1 of the 2 GPUs";
  CHECK(placement_json(r) ==
        R"({"kind":"placement","version":1,"job":"train-7","status":"reserved",)"
        R"("class":"production","tenant":"vision","node":"n1","gpus":[1],)"
        R"("reason":"only 1 of the 2 GPUs"})");
  Placement bad = gpushare::place::input_error(std::nullopt, "invalid: stdin: record 3: oops");
  CHECK(placement_json(bad) == R"({"kind":"placement","version":1,"job":null,"status":"unplaced",)"
                               R"("reason":"invalid: stdin: record 3: oops"})");
}

TEST_CASE("an explained record has class, choice and rejected GPUs", "[place][output]") {
  Placement p = placed(kQosProduction, {{"n1", {0}}});
  p.explanation =
      gpushare::place::Explanation{"production, as asked",
                                   "the rule",
                                   {{"n1", {1, 2}, "production", "runs production job 'x'"}},
                                   {}};
  auto record = nlohmann::json::parse(placement_json(p));
  CHECK(record["explain"]["class"] == "production, as asked");
  CHECK(record["explain"]["choice"] == "the rule");
  CHECK(record["explain"]["rejected"].dump() ==
        R"([{"detail":"runs production job 'x'","gpus":[1,2],"node":"n1","reason":"production"}])");
}

TEST_CASE("an opportunistic job beside a gang's rank says which, in explain.beside",
          "[place][output][gang]") {
  Placement p = placed(kQosOpportunistic, {{"n1", {2}}});
  p.explanation = gpushare::place::Explanation{
      "opportunistic, as asked",
      "the rule",
      {},
      {{"n1", 2, "llm", 4, {{"n1", {0, 1}}, {"n2", {0, 1}}}, "beside one of the 4 ranks"}}};
  std::string text = placement_json(p);
  CHECK(text.find(R"("rejected":[],"beside":[{"node":"n1","gpu":2,"job":"llm","ranks":4,)"
                  R"("gang":[{"node":"n1","gpus":[0,1]},{"node":"n2","gpus":[0,1]}],)"
                  R"("detail":"beside one of the 4 ranks"}]})") != std::string::npos);
  // No gang beside it: no "beside" key, so other records read as before.
  p.explanation->beside.clear();
  CHECK(placement_json(p).find("beside") == std::string::npos);
}

TEST_CASE("slurm arguments per class and status", "[place][output][slurm]") {
  CHECK(slurm_arguments(placed(kQosProduction, {{"n1", {2, 3}}})) ==
        "--job-name=train-7 --nodes=1 --nodelist=n1 --gres=gpu:2 "
        "--export=ALL,GPUSHARE_QOS=production");
  CHECK(slurm_arguments(placed(kQosOpportunistic, {{"a", {0}}, {"b", {1, 2}}})) ==
        "--job-name=train-7 --nodes=2 --nodelist=a,b --gres=shard:2 "
        "--export=ALL,GPUSHARE_QOS=opportunistic");
  // An opportunistic job's memory is its limit on the node.
  Placement limited = placed(kQosOpportunistic, {{"a", {0}}});
  limited.mem_bytes = 268435456;
  CHECK(slurm_arguments(limited) ==
        "--job-name=train-7 --nodes=1 --nodelist=a --gres=shard:1 "
        "--export=ALL,GPUSHARE_QOS=opportunistic,GPUSHARE_MEM_LIMIT=268435456");
  Placement held = placed(kQosProduction, {{"n1", {1}}});
  held.status = PlacementStatus::kReserved;
  held.job = gpushare::place::JobId{"it's mine", {}};
  CHECK(slurm_arguments(held) == "--job-name='it'\\''s mine' --hold");
}

TEST_CASE("slurm arguments of an opportunistic job beside a GPU held whole ask for no GPU",
          "[place][output][slurm]") {
  // Slurm gives a production job's GPU whole (gpu:N), and a GPU held whole
  // has no shard for a second job: shard:1 would never be scheduled there.
  Placement beside = placed(kQosOpportunistic, {{"n1", {0}}});
  beside.mem_bytes = 268435456;
  beside.beside_whole_gpu = true;
  CHECK(slurm_arguments(beside) ==
        "--job-name=train-7 --nodes=1 --nodelist=n1 "
        "--export=ALL,GPUSHARE_QOS=opportunistic,GPUSHARE_MEM_LIMIT=268435456");
}

TEST_CASE("env assignments for one placed job", "[place][output][env]") {
  auto env = env_assignments(placed(kQosProduction, {{"n1", {2, 3}}}));
  REQUIRE(env);
  CHECK(*env ==
        "export CUDA_VISIBLE_DEVICES=2,3\nexport GPUSHARE_QOS=production\n"
        "export GPUSHARE_JOB=train-7\nexport GPUSHARE_NODE=n1\n");
  Placement ot = placed(kQosOpportunistic, {{"node 1", {0}}});
  ot.mem_bytes = 4096;
  env = env_assignments(ot);
  REQUIRE(env);
  CHECK(*env ==
        "export CUDA_VISIBLE_DEVICES=0\nexport GPUSHARE_QOS=opportunistic\n"
        "export GPUSHARE_JOB=train-7\nexport GPUSHARE_MEM_LIMIT=4096\n"
        "export GPUSHARE_NODE='node 1'\n");
}

TEST_CASE("env refuses a job that is not on exactly one node", "[place][output][env]") {
  Placement spans = placed(kQosProduction, {{"a", {0}}, {"b", {0}}});
  auto env = env_assignments(spans);
  REQUIRE_FALSE(env);
  CHECK_THAT(env.error().message, Catch::StartsWith("job 'train-7' spans 2 nodes"));
  Placement none = placed(kQosProduction, {});
  none.status = PlacementStatus::kUnplaced;
  none.reason = "no room";
  env = env_assignments(none);
  REQUIRE_FALSE(env);
  CHECK(env.error().message == "job 'train-7' is unplaced: no room");
}

TEST_CASE("shell quoting leaves plain words alone", "[place][output]") {
  using gpushare::place::shell_quote;
  CHECK(shell_quote("n1.example.com") == "n1.example.com");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("$(rm -rf x)") == "'$(rm -rf x)'");
  CHECK(shell_quote("a'b") == "'a'\\''b'");
}

TEST_CASE("the state reads back as the same cluster", "[place][state]") {
  Placer placer(example_cluster());
  for (const auto& job : example_jobs()) placer.place(job);
  std::string text = gpushare::place::cluster_to_toml(placer.cluster());
  auto back = gpushare::place::parse_cluster(text, "state.toml");
  REQUIRE(back);
  CHECK(*back == placer.cluster());
}

TEST_CASE("the state keeps every field: reservations, policy, odd names, exact floats",
          "[place][state]") {
  Cluster c;
  c.policy.util_threshold = 0.1 + 0.2;  // not exactly 0.3
  c.policy.node_order = gpushare::place::Order::kSpread;
  c.policy.gpu_order = gpushare::place::Order::kBinpack;
  c.policy.multi_node = false;
  c.policy.default_tenant = "t \"quoted\"";
  c.policy.queue_threshold = std::chrono::milliseconds(1500);
  c.tenants.push_back({"t \"quoted\"", 3});
  gpushare::place::Gpu g;
  g.index = 5;
  g.model = "tab\there\\";
  g.mem_bytes = 1000;
  g.util = 1.0 / 3.0;
  g.mem_used_bytes = 7;
  g.nvlink_group = 2;
  g.numa = 1;
  g.reservation = gpushare::place::Reservation{"r", "t \"quoted\""};
  gpushare::place::Gpu h;
  h.index = 0;
  h.mem_bytes = 1;
  h.util = 1.0;
  h.jobs.push_back({"o", kQosOpportunistic, "t \"quoted\"", 0});
  c.nodes.push_back({"ñode", {g, h}});
  c.nodes.push_back({"empty", {}});
  auto back = gpushare::place::parse_cluster(gpushare::place::cluster_to_toml(c), "s.toml");
  REQUIRE(back);
  CHECK(*back == c);
}

TEST_CASE("placing from a saved state continues exactly where the run left off", "[place][state]") {
  auto jobs = example_jobs();
  Placer whole(example_cluster());
  std::vector<std::string> expected;
  for (const auto& job : jobs) expected.push_back(placement_json(whole.place(job)));

  Placer first(example_cluster());
  std::vector<std::string> got;
  for (std::size_t i = 0; i < 3; ++i) got.push_back(placement_json(first.place(jobs[i])));
  auto saved = gpushare::place::parse_cluster(gpushare::place::cluster_to_toml(first.cluster()),
                                              "state.toml");
  REQUIRE(saved);
  Placer second(std::move(*saved));
  for (std::size_t i = 3; i < jobs.size(); ++i)
    got.push_back(placement_json(second.place(jobs[i])));
  CHECK(got == expected);
  CHECK(second.cluster() == whole.cluster());
}

TEST_CASE("write_state replaces the file whole, or says why it cannot", "[place][state]") {
  char dir_template[] = "/tmp/place-state-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  std::string path = std::string(dir_template) + "/state.toml";
  {
    std::ofstream old(path);
    old << "old contents\n";
  }
  Cluster c = example_cluster();
  REQUIRE(gpushare::place::write_state(c, path));
  auto back = gpushare::place::load_cluster(path);
  REQUIRE(back);
  CHECK(*back == c);
  auto failed = gpushare::place::write_state(c, std::string(dir_template) + "/no/such/dir/s.toml");
  REQUIRE_FALSE(failed);
  CHECK_THAT(failed.error().message, Catch::EndsWith("cannot write: No such file or directory"));
  std::remove(path.c_str());
  rmdir(dir_template);
}

TEST_CASE("strings in records are escaped as any JSON reader expects", "[place][output]") {
  Placement p = placed(kQosOpportunistic, {{"n\xc3\xb1", {0}}});
  p.job = gpushare::place::JobId{"a\"b\\c\n\t\x01/", {}};
  p.tenant = "bad \xff byte";
  p.reason = "line\r\nbreak\b\f";
  p.status = PlacementStatus::kReserved;
  auto record = nlohmann::json::parse(placement_json(p));
  CHECK(record["job"] == "a\"b\\c\n\t\x01/");
  CHECK(record["node"] == "n\xc3\xb1");
  CHECK(record["tenant"] == "bad \xef\xbf\xbd byte");  // U+FFFD for the bad byte
  CHECK(record["reason"] == "line\r\nbreak\b\f");
  // The same text nlohmann itself would write.
  CHECK(placement_json(p).find(nlohmann::json("a\"b\\c\n\t\x01/").dump()) != std::string::npos);
}

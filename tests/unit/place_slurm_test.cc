// Laying Slurm's view (sinfo/squeue --json, Slurm 22.05's shapes) and the
// nodes' gpushare telemetry over a cluster file.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "place/cluster/cluster_slurm.h"
#include "place/cluster/cluster_toml.h"

using gpushare::place::apply_slurm_state;
using gpushare::place::Cluster;
using gpushare::place::expand_hostlist;
using gpushare::Qos;
using gpushare::kQosOpportunistic;
using gpushare::kQosProduction;
using gpushare::place::SlurmState;

namespace {

Cluster two_nodes() {
  auto cluster = gpushare::place::parse_cluster(R"(
[[tenant]]
name = "vision"
quota_gpus = 4

[[node]]
name = "n1"
[[node.gpu]]
index = 0
model = "A100"
mem = "80GiB"
[[node.gpu.job]]
id = "stale"
class = "production"
tenant = "vision"
mem_bytes = 1
[[node.gpu]]
index = 1
model = "A100"
mem = "80GiB"

[[node]]
name = "n2"
[[node.gpu]]
index = 0
model = "A100"
mem = "80GiB"
)",
                                                "test.toml");
  REQUIRE(cluster.ok());
  return *cluster;
}

std::string sinfo(const std::string& n2_state = "idle") {
  return std::string(R"json({"meta":{},"errors":[],"nodes":[
    {"name":"n1","state":"mixed","state_flags":[],"gres":"gpu:a100:2(S:0),shard:16"},
    {"name":"n2","state":")json") +
         n2_state + R"json(","gres":"gpu:1,shard:8"}]})json";
}

const char* const kSqueue = R"json({"meta":{},"errors":[],"jobs":[
  {"job_id":7,"job_state":"RUNNING","nodes":"n1","account":"vision","comment":"",
   "gres_detail":["gpu:1(IDX:0)"]
},
  {"job_id":8,"job_state":"RUNNING","nodes":"n1","account":"nobody","comment":"",
   "gres_detail":["shard:2(IDX:1)"]},
  {"job_id":9,"job_state":"RUNNING","nodes":"n1","comment":"gpushare:opportunistic,mem=3GiB",
   "gres_detail":["shard:1(IDX:1)"]},
  {"job_id":10,"job_state":"PENDING","nodes":"","gres_detail":[]}]
})json";

}  // namespace

TEST_CASE("a hostlist expands ranges and keeps leading zeros") {
  auto names = expand_hostlist("n[01-03,7],gpu");
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"n01", "n02", "n03", "n7", "gpu"});
  CHECK_FALSE(expand_hostlist("n[3-1]").ok());
  CHECK_FALSE(expand_hostlist("n[1-").ok());
}

TEST_CASE("running Slurm jobs replace the file's jobs on the GPUs their gres names") {
  Cluster cluster = two_nodes();
  auto notes = apply_slurm_state(&cluster, SlurmState{sinfo(), kSqueue, {}});
  REQUIRE(notes.ok());
  CHECK(notes->empty());
  REQUIRE(cluster.nodes.size() == 2);
  const auto& gpu0 = cluster.nodes[0].gpus[0];
  REQUIRE(gpu0.jobs.size() == 1);
  CHECK(gpu0.jobs[0].id == "slurm-7");
  CHECK(gpu0.jobs[0].job_class == kQosProduction);
  CHECK(gpu0.jobs[0].tenant == "vision");
  const auto& gpu1 = cluster.nodes[0].gpus[1];
  REQUIRE(gpu1.jobs.size() == 2);
  CHECK(gpu1.jobs[0].id == "slurm-8");
  CHECK(gpu1.jobs[0].job_class == kQosOpportunistic);
  CHECK(gpu1.jobs[0].tenant.empty());           // an account that is no tenant
  CHECK(gpu1.jobs[1].mem_bytes == 3ull << 30);  // from the comment
  CHECK(gpu1.mem_used_bytes == 3ull << 30);
}

TEST_CASE("telemetry raises a job's memory to what its processes use together") {
  Cluster cluster = two_nodes();
  std::string ls =
      "{\"kind\":\"job\",\"version\":1,\"name\":\"slurm-8\",\"mem_used_bytes\":1073741824}\n"
      "{\"kind\":\"job\",\"version\":1,\"name\":\"slurm-8\",\"mem_used_bytes\":1073741824}\n"
      "{\"kind\":\"job\",\"version\":1,\"name\":\"slurm-9\",\"mem_used_bytes\":1024}\n"
      "{\"kind\":\"job\",\"version\":1,\"name\":\"other\",\"mem_used_bytes\":99}\n";
  auto notes = apply_slurm_state(&cluster, SlurmState{sinfo(), kSqueue, {{"n1", ls}}});
  REQUIRE(notes.ok());
  const auto& gpu1 = cluster.nodes[0].gpus[1];
  CHECK(gpu1.jobs[0].mem_bytes == 2ull << 30);
  CHECK(gpu1.jobs[1].mem_bytes == 3ull << 30);  // never below what it asked for
  CHECK(gpu1.mem_used_bytes == 5ull << 30);
  CHECK_FALSE(apply_slurm_state(&cluster, SlurmState{sinfo(), kSqueue, {{"n1", "{oops\n"}}}).ok());
}

TEST_CASE("drained, down and unreported nodes take no jobs") {
  for (std::string state : {"down", "drained", "idle+drain", "DRAINING"}) {
    Cluster cluster = two_nodes();
    auto notes = apply_slurm_state(&cluster, SlurmState{sinfo(state), kSqueue, {}});
    REQUIRE(notes.ok());
    REQUIRE(cluster.nodes.size() == 1);
    CHECK(cluster.nodes[0].name == "n1");
    REQUIRE(notes->size() == 1);
    CHECK(notes->front().find("node n2") == 0);
  }
  Cluster cluster = two_nodes();
  std::string only_n1 =
      R"({"nodes":[{"name":"n1","state":"idle","gres":"gpu:2"},{"name":"n9","state":"idle","gres":"gpu:1"}]})";
  auto notes = apply_slurm_state(&cluster, SlurmState{only_n1, R"({"jobs":[]})", {}});
  REQUIRE(notes.ok());
  CHECK(cluster.nodes.size() == 1);
  CHECK(notes->size() == 2);  // n2 not in Slurm, n9 not in the file
}

TEST_CASE("Slurm input that contradicts the cluster file or is not JSON is refused") {
  Cluster cluster = two_nodes();
  std::string three_gpus = R"({"nodes":[{"name":"n1","state":"idle","gres":"gpu:3"}]})";
  auto result = apply_slurm_state(&cluster, SlurmState{three_gpus, R"({"jobs":[]})", {}});
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().message == "node n1: Slurm has 3 GPUs (gres), the cluster file 2");
  CHECK_FALSE(apply_slurm_state(&cluster, SlurmState{"[]", R"({"jobs":[]})", {}}).ok());
  CHECK_FALSE(apply_slurm_state(&cluster, SlurmState{sinfo(), "{\"jobs\":3}", {}}).ok());
}

TEST_CASE("what Slurm 22.05 printed on the test cluster reads as its GPUs are held") {
  // tests/data/place/slurm-22.05: one node "vm" with gpu:2,shard:16; job 1
  // on gpu:1 (IDX:0), jobs 2 and 3 on shards of GPU 1.
  auto read = [](const char* name) {
    std::ifstream in(std::string(GPUSHARE_SOURCE_DIR) + "/tests/data/place/slurm-22.05/" + name);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  auto cluster = gpushare::place::parse_cluster(R"(
[[node]]
name = "vm"
[[node.gpu]]
index = 0
mem = "4GiB"
[[node.gpu]]
index = 1
mem = "4GiB"
)",
                                                "test.toml");
  REQUIRE(cluster.ok());
  auto notes =
      apply_slurm_state(&*cluster, SlurmState{read("sinfo.json"), read("squeue.json"), {}});
  REQUIRE(notes.ok());
  CHECK(notes->empty());
  const auto& gpus = cluster->nodes.at(0).gpus;
  REQUIRE(gpus[0].jobs.size() == 1);
  CHECK(gpus[0].jobs[0].id == "slurm-1");
  CHECK(gpus[0].jobs[0].job_class == kQosProduction);
  REQUIRE(gpus[1].jobs.size() == 2);
  CHECK(gpus[1].jobs[0].id == "slurm-2");
  CHECK(gpus[1].jobs[1].id == "slurm-3");
  CHECK(gpus[1].jobs[1].job_class == kQosOpportunistic);
}

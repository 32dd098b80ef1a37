// Every placement rule and tie-break of gpushare-place, one behaviour per
// test case, on small clusters written as TOML.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "place/cluster/cluster_toml.h"
#include "place/placer.h"

using gpushare::place::Cluster;
using gpushare::place::Job;
using gpushare::Qos;
using gpushare::kQosOpportunistic;
using gpushare::kQosProduction;
using gpushare::place::Placement;
using gpushare::place::PlacementStatus;
using gpushare::place::Placer;

namespace {

const char* const kTenants = R"(
[[tenant]]
name = "a"
quota_gpus = 100

[[tenant]]
name = "b"
quota_gpus = 4

[[tenant]]
name = "zero"
quota_gpus = 0
)";

std::string node(const std::string& name) { return "\n[[node]]\nname = \"" + name + "\"\n"; }

/// A 16GiB GPU with the given extra keys.
std::string gpu(int index, const std::string& extra = "") {
  return "\n[[node.gpu]]\nindex = " + std::to_string(index) + "\nmem = \"16GiB\"\n" + extra;
}

std::string production(const std::string& id, const std::string& tenant = "a") {
  return "\n[[node.gpu.job]]\nid = \"" + id + "\"\nclass = \"production\"\ntenant = \"" + tenant +
         "\"\n";
}

std::string opportunistic(const std::string& id, const std::string& mem_bytes = "0") {
  return "\n[[node.gpu.job]]\nid = \"" + id +
         "\"\nclass = \"opportunistic\"\ntenant = \"a\"\nmem_bytes = " + mem_bytes + "\n";
}

Placer placer_of(const std::string& toml) {
  auto cluster = gpushare::place::parse_cluster(std::string(kTenants) + toml, "test.toml");
  if (!cluster) FAIL(cluster.error().message);
  return Placer(std::move(*cluster));
}

Job job_of(const std::string& json_text) {
  auto job = gpushare::place::job_from_json(nlohmann::json::parse(json_text));
  if (!job) FAIL(job.error().message);
  return *job;
}

/// "n1:0,1" or "n1:0 n2:3"; "-" for none.
std::string where(const Placement& p) {
  std::string out;
  for (const auto& n : p.nodes) {
    if (!out.empty()) out += ' ';
    out += n.node + ":";
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      out += (i ? "," : "") + std::to_string(n.gpus[i]);
    }
  }
  return out.empty() ? "-" : out;
}

/// Places the job and returns where it went, checking its status.
std::string place(Placer& placer, const std::string& json_text,
                  PlacementStatus status = PlacementStatus::kPlaced) {
  Placement p = placer.place(job_of(json_text));
  INFO(json_text << " -> " << p.reason);
  CHECK(p.status == status);
  return where(p);
}

const char* const kProd2 = R"({"id":"j","tenant":"a","gpus":2,"class":"production"})";

std::string prod(const std::string& id, int gpus, const std::string& extra = "") {
  return R"({"id":")" + id + R"(","tenant":"a","class":"production","gpus":)" +
         std::to_string(gpus) + extra + "}";
}

std::string ot(const std::string& id, int gpus = 1, const std::string& extra = "") {
  return R"({"id":")" + id + R"(","tenant":"a","class":"opportunistic","gpus":)" +
         std::to_string(gpus) + extra + "}";
}

}  // namespace

// --- production: topology -------------------------------------------------------

TEST_CASE("production goes to an NVLink group that fits, lowest group first on ties",
          "[place][production]") {
  Placer p = placer_of(node("n1") + gpu(0, "nvlink_group = 0\n") + gpu(1, "nvlink_group = 0\n") +
                       gpu(2, "nvlink_group = 1\n") + gpu(3, "nvlink_group = 1\n"));
  CHECK(place(p, prod("x", 2)) == "n1:0,1");
  CHECK(place(p, prod("y", 2)) == "n1:2,3");
}

TEST_CASE("production: binpack takes the tightest NVLink group, spread the emptiest",
          "[place][production]") {
  std::string cluster = node("n1") + gpu(0, "nvlink_group = 0\n" + production("busy")) +
                        gpu(1, "nvlink_group = 0\n") + gpu(2, "nvlink_group = 1\n") +
                        gpu(3, "nvlink_group = 1\n");
  Placer binpack = placer_of(cluster);
  CHECK(place(binpack, prod("x", 1)) == "n1:1");
  Placer spread = placer_of("[policy]\nnode_order = \"spread\"\n" + cluster);
  CHECK(place(spread, prod("x", 1)) == "n1:2");
}

TEST_CASE("production falls back to a NUMA node when no NVLink group fits", "[place][production]") {
  Placer p =
      placer_of(node("n1") + gpu(0, "numa = 0\n") + gpu(1, "numa = 0\n" + production("busy")) +
                gpu(2, "numa = 1\n") + gpu(3, "numa = 1\n"));
  CHECK(place(p, prod("x", 2)) == "n1:2,3");
}

TEST_CASE("production falls back to the whole node when no NUMA node fits", "[place][production]") {
  Placer p = placer_of(node("n1") + gpu(0, "numa = 0\n" + production("b0")) + gpu(1, "numa = 0\n") +
                       gpu(2, "numa = 1\n" + production("b2")) + gpu(3, "numa = 1\n") + node("n2") +
                       gpu(0));
  CHECK(place(p, prod("x", 2)) == "n1:1,3");
}

TEST_CASE("production: binpack takes the node with the fewest free GPUs, spread the most",
          "[place][production]") {
  std::string cluster =
      node("big") + gpu(0) + gpu(1) + gpu(2) + gpu(3) + node("small") + gpu(0) + gpu(1);
  Placer binpack = placer_of(cluster);
  CHECK(place(binpack, prod("x", 2)) == "small:0,1");
  CHECK(place(binpack, prod("y", 2)) == "big:0,1");
  Placer spread = placer_of("[policy]\nnode_order = \"spread\"\n" + cluster);
  CHECK(place(spread, prod("x", 2)) == "big:0,1");
  // Now both have 2 free: the node name decides.
  CHECK(place(spread, prod("y", 2)) == "big:2,3");
}

TEST_CASE("production: the NVLink level also prefers the fuller node under binpack",
          "[place][production]") {
  // Both nodes have a free NVLink pair; n2 has fewer free GPUs overall.
  Placer p = placer_of(node("n1") + gpu(0, "nvlink_group = 0\n") + gpu(1, "nvlink_group = 0\n") +
                       gpu(2, "nvlink_group = 1\n") + gpu(3, "nvlink_group = 1\n") + node("n2") +
                       gpu(0, "nvlink_group = 0\n") + gpu(1, "nvlink_group = 0\n") +
                       gpu(2, "nvlink_group = 1\n" + production("busy")));
  CHECK(place(p, prod("x", 2)) == "n2:0,1");
}

TEST_CASE("production spans the fewest nodes, largest first", "[place][production]") {
  std::string cluster =
      node("n1") + gpu(0) + gpu(1) + gpu(2) + node("n2") + gpu(0) + gpu(1) + node("n3") + gpu(0);
  SECTION("binpack: the rest goes to the tightest node that holds it") {
    Placer p = placer_of(cluster);
    CHECK(place(p, prod("x", 4)) == "n1:0,1,2 n3:0");
  }
  SECTION("spread: the rest goes to the next largest node") {
    Placer p = placer_of("[policy]\nnode_order = \"spread\"\n" + cluster);
    CHECK(place(p, prod("x", 4)) == "n1:0,1,2 n2:0");
  }
  SECTION("five GPUs need two nodes, six need all three") {
    Placer p = placer_of(cluster);
    CHECK(place(p, prod("x", 5)) == "n1:0,1,2 n2:0,1");
    Placer q = placer_of(cluster);
    CHECK(place(q, prod("y", 6)) == "n1:0,1,2 n2:0,1 n3:0");
  }
}

TEST_CASE("production: gpu_order picks GPUs within the domain", "[place][production]") {
  std::string cluster =
      node("n1") + gpu(0, opportunistic("o1")) + gpu(1) + gpu(2, "util = 0.5\n") + gpu(3);
  Placer spread = placer_of(cluster);
  CHECK(place(spread, prod("x", 2)) == "n1:1,3");
  Placer binpack = placer_of("[policy]\ngpu_order = \"binpack\"\n" + cluster);
  CHECK(place(binpack, prod("x", 2)) == "n1:0,2");
}

TEST_CASE("a job may override node_order and gpu_order", "[place][production]") {
  Placer p =
      placer_of(node("big") + gpu(0) + gpu(1) + gpu(2) + gpu(3) + node("small") + gpu(0) + gpu(1));
  CHECK(place(p, prod("x", 1, R"(,"node_order":"spread")")) == "big:0");
  CHECK(place(p, prod("y", 1)) == "small:0");
}

// --- production: what qualifies ------------------------------------------------------

TEST_CASE("production skips GPUs with a production job or a reservation", "[place][production]") {
  Placer p = placer_of(node("n1") + gpu(0, production("p0")) +
                       gpu(1, "reservation = { job = \"r\", tenant = \"a\" }\n") + gpu(2));
  CHECK(place(p, prod("x", 1)) == "n1:2");
  CHECK(place(p, prod("y", 1), PlacementStatus::kUnplaced) == "-");
}

TEST_CASE("production memory: opportunistic memory can spill, other memory cannot",
          "[place][production]") {
  // 12GiB of opportunistic jobs leave the whole 16GiB to a production job;
  // 4GiB held by something else leave 12GiB.
  Placer p = placer_of(node("n1") + gpu(0, "mem_used_bytes = 4294967296\n") +
                       gpu(1, opportunistic("o", "12884901888")));
  CHECK(place(p, prod("x", 1, R"(,"mem_bytes":17179869184)")) == "n1:1");
  CHECK(place(p, prod("y", 1, R"(,"mem_bytes":13958643712)"), PlacementStatus::kUnplaced) == "-");
  CHECK(place(p, prod("z", 1, R"(,"mem_bytes":12884901888)")) == "n1:0");
}

// --- reservations -------------------------------------------------------------------

TEST_CASE("a production job that fits only in part reserves what fits", "[place][reserve]") {
  Placer p =
      placer_of(node("n1") + gpu(0, production("p0")) + gpu(1) + gpu(2) + node("n2") + gpu(0));
  Placement r = p.place(job_of(prod("big", 4)));
  CHECK(r.status == PlacementStatus::kReserved);
  CHECK(where(r) == "n1:1,2 n2:0");
  CHECK_THAT(r.reason, Catch::Contains("only 3 of the 4 GPUs"));
  // Reserved GPUs take no other production job, but opportunistic ones.
  CHECK(place(p, prod("x", 1), PlacementStatus::kUnplaced) == "-");
  CHECK(place(p, ot("o")) == "n1:1");
  const auto& gpus = p.cluster().nodes[0].gpus;
  REQUIRE(gpus[1].reservation);
  CHECK(gpus[1].reservation->job == "big");
  CHECK(gpus[1].reservation->tenant == "a");
}

TEST_CASE("without multi_node a reservation stays on the node with the most free GPUs",
          "[place][reserve]") {
  Placer p = placer_of("[policy]\nmulti_node = false\n" + node("n1") + gpu(0) + gpu(1) +
                       gpu(2, production("p")) + node("n2") + gpu(0) + gpu(1) +
                       gpu(2, production("q")) + node("n3") + gpu(0) + gpu(1) + gpu(2));
  CHECK(place(p, prod("x", 2)) == "n1:0,1");
  CHECK(place(p, prod("big", 3)) == "n3:0,1,2");
  CHECK(place(p, prod("y", 3), PlacementStatus::kReserved) == "n2:0,1");
}

TEST_CASE("a job that holds a reservation gets its GPUs back first", "[place][reserve]") {
  std::string held = "reservation = { job = \"big\", tenant = \"b\" }\n";
  Placer p = placer_of(node("n1") + gpu(0, held) + gpu(1, held) + gpu(2) + gpu(3));
  // Tenant b (quota 4) holds 2 reserved GPUs; they are released before the
  // quota check, so the 4-GPU job is within quota.
  Placement r = p.place(job_of(R"({"id":"big","tenant":"b","gpus":4,"class":"auto"})"));
  CHECK(r.status == PlacementStatus::kPlaced);
  CHECK(r.job_class == kQosProduction);
  CHECK(where(r) == "n1:0,1,2,3");
  for (const auto& g : p.cluster().nodes[0].gpus) CHECK_FALSE(g.reservation);
}

TEST_CASE("reservations count against the tenant's quota", "[place][reserve][quota]") {
  Placer p = placer_of(node("n1") + gpu(0, production("p0")) + gpu(1) + gpu(2));
  CHECK(place(p, R"({"id":"r","tenant":"b","gpus":3,"class":"production"})",
              PlacementStatus::kReserved) == "n1:1,2");
  // b holds 2 of 4: a 3-GPU auto job goes opportunistic.
  Placement o = p.place(job_of(R"({"id":"o","tenant":"b","gpus":3,"class":"auto"})"));
  CHECK(o.job_class == kQosOpportunistic);
}

// --- classes and quotas -----------------------------------------------------------------

TEST_CASE("class: production within quota and refused over it but auto over quota is opportunistic",
          "[place][quota]") {
  Placer p = placer_of(node("n1") + gpu(0, production("old", "b")) + gpu(1) + gpu(2) + gpu(3) +
                       node("n2") + gpu(0) + gpu(1));
  // b: quota 4, 1 held by its running job.
  Placement a = p.place(job_of(R"({"id":"a1","tenant":"b","gpus":2,"class":"production"})"));
  CHECK(a.status == PlacementStatus::kPlaced);
  CHECK(a.job_class == kQosProduction);
  Placement over = p.place(job_of(R"({"id":"a2","tenant":"b","gpus":2,"class":"production"})"));
  CHECK(over.status == PlacementStatus::kUnplaced);
  CHECK_THAT(over.reason, Catch::Contains("over quota: tenant 'b' holds 3 of its 4 quota GPUs"));
  Placement fits = p.place(job_of(R"({"id":"a3","tenant":"b","gpus":1})"));
  CHECK(fits.job_class == kQosProduction);
  Placement spill = p.place(job_of(R"({"id":"a4","tenant":"b","gpus":1,"class":"auto"})"));
  CHECK(spill.job_class == kQosOpportunistic);
  CHECK(spill.status == PlacementStatus::kPlaced);
  Placement zero = p.place(job_of(R"({"id":"z","tenant":"zero"})"));
  CHECK(zero.job_class == kQosOpportunistic);
}

TEST_CASE("class: an auto job queued past queue_threshold is opportunistic", "[place][quota]") {
  Placer p = placer_of("[policy]\nqueue_threshold = \"10m\"\n" + node("n1") + gpu(0) + gpu(1));
  Placement young = p.place(job_of(R"({"id":"y","tenant":"a","queued_s":599.5})"));
  CHECK(young.job_class == kQosProduction);
  Placement old = p.place(job_of(R"({"id":"o","tenant":"a","queued_s":600})"));
  CHECK(old.job_class == kQosOpportunistic);
  Placement insists =
      p.place(job_of(R"({"id":"i","tenant":"a","queued_s":9999,"class":"production"})"));
  CHECK(insists.job_class == kQosProduction);
}

TEST_CASE("a job without a tenant gets the default tenant", "[place][quota]") {
  Placer p = placer_of("[policy]\ndefault_tenant = \"zero\"\n" + node("n1") + gpu(0));
  Placement d = p.place(job_of(R"({"id":"d"})"));
  CHECK(d.tenant == "zero");
  CHECK(d.job_class == kQosOpportunistic);
}

// --- opportunistic --------------------------------------------------------------------

TEST_CASE("opportunistic: utilisation at or above the threshold disqualifies", "[place][ot]") {
  Placer p = placer_of(node("n1") + gpu(0, "util = 0.8\n") + gpu(1, "util = 0.79\n"));
  CHECK(place(p, ot("x")) == "n1:1");
  Placer q = placer_of("[policy]\nutil_threshold = 0.5\n" + node("n1") + gpu(0, "util = 0.5\n") +
                       gpu(1, "util = 0.6\n"));
  Placement none = q.place(job_of(ot("x")));
  CHECK(none.status == PlacementStatus::kUnplaced);
  CHECK(none.reason == "no GPU has utilisation below 0.5 and 0B free");
}

TEST_CASE("opportunistic: free memory must hold the job", "[place][ot]") {
  Placer p = placer_of(node("n1") + gpu(0, "mem_used_bytes = 12884901888\n") +
                       gpu(1, "util = 0.5\nmem_used_bytes = 8589934592\n"));
  CHECK(place(p, ot("x", 1, R"(,"mem_bytes":6442450944)")) == "n1:1");
  CHECK(place(p, ot("y", 1, R"(,"mem_bytes":4294967296)")) == "n1:0");
  CHECK(place(p, ot("z", 1, R"(,"mem_bytes":4294967296)"), PlacementStatus::kUnplaced) == "-");
}

TEST_CASE(
    "opportunistic spread: utilisation, then jobs, then memory used, then OT jobs, then "
    "node name, then index",
    "[place][ot]") {
  SECTION("lower utilisation wins") {
    Placer p = placer_of(node("n1") + gpu(0, "util = 0.3\n") + gpu(1, "util = 0.2\n"));
    CHECK(place(p, ot("x")) == "n1:1");
  }
  SECTION("then fewer jobs") {
    Placer p = placer_of(node("n1") + gpu(0, opportunistic("o1") + opportunistic("o2")) +
                         gpu(1, production("p")));
    CHECK(place(p, ot("x")) == "n1:1");
  }
  SECTION("then less memory used") {
    Placer p =
        placer_of(node("n1") + gpu(0, "mem_used_bytes = 2\n") + gpu(1, "mem_used_bytes = 1\n"));
    CHECK(place(p, ot("x")) == "n1:1");
  }
  SECTION("then fewer opportunistic jobs") {
    Placer p = placer_of(node("n1") + gpu(0, opportunistic("o1")) + gpu(1, production("p")));
    CHECK(place(p, ot("x")) == "n1:1");
  }
  SECTION("then the node name, whatever the file order") {
    Placer p = placer_of(node("nb") + gpu(0) + node("na") + gpu(1));
    CHECK(place(p, ot("x")) == "na:1");
  }
  SECTION("then the GPU index, whatever the file order") {
    Placer p = placer_of(node("n1") + gpu(3) + gpu(2));
    CHECK(place(p, ot("x")) == "n1:2");
  }
}

TEST_CASE("opportunistic binpack: the most loaded GPU still below the threshold", "[place][ot]") {
  Placer p = placer_of("[policy]\ngpu_order = \"binpack\"\n" + node("n1") + gpu(0, "util = 0.3\n") +
                       gpu(1, "util = 0.7\n") + gpu(2, "util = 0.9\n") + gpu(3, "util = 0.7\n"));
  CHECK(place(p, ot("x")) == "n1:1");
  CHECK(place(p, ot("y")) == "n1:1");  // more jobs now: still first
  CHECK(place(p, ot("z", 1, R"(,"gpu_order":"spread")")) == "n1:0");
}

TEST_CASE("opportunistic jobs spread as each placement updates the load", "[place][ot]") {
  Placer p = placer_of(node("n1") + gpu(0) + gpu(1) + node("n2") + gpu(0));
  CHECK(place(p, ot("a")) == "n1:0");
  CHECK(place(p, ot("b")) == "n1:1");
  CHECK(place(p, ot("c")) == "n2:0");
  CHECK(place(p, ot("d")) == "n1:0");
}

TEST_CASE("a job's utilisation adds to its GPUs' and can close them to opportunistic jobs",
          "[place][ot]") {
  Placer p = placer_of(node("n1") + gpu(0, "util = 0.4\n") + gpu(1, "util = 0.5\n"));
  CHECK(place(p, ot("a", 1, R"(,"util":0.45)")) == "n1:0");
  CHECK(p.cluster().nodes[0].gpus[0].util == Approx(0.85));
  CHECK(place(p, ot("b")) == "n1:1");
  CHECK(place(p, ot("c")) == "n1:1");  // GPU 0 is now at 0.85, over M
}

TEST_CASE("opportunistic jobs of several GPUs", "[place][ot]") {
  std::string cluster = node("n1") + gpu(0) + gpu(1, "util = 0.5\n") + node("n2") +
                        gpu(0, "util = 0.1\n") + gpu(1, "util = 0.2\n") + gpu(2, "util = 0.3\n");
  SECTION("take the least loaded GPUs anywhere") {
    Placer p = placer_of(cluster);
    CHECK(place(p, ot("x", 2)) == "n1:0 n2:0");
  }
  SECTION("without multi_node, from the first node that has enough") {
    Placer p = placer_of("[policy]\nmulti_node = false\n" + cluster);
    CHECK(place(p, ot("x", 2)) == "n2:0,1");
    CHECK(place(p, ot("y", 3), PlacementStatus::kPlaced) == "n2:0,1,2");
  }
  SECTION("all or nothing") {
    Placer p = placer_of(cluster + gpu(3, "util = 0.9\n"));
    Placement none = p.place(job_of(ot("x", 6)));
    CHECK(none.status == PlacementStatus::kUnplaced);
    CHECK(none.reason == "only 5 GPUs have utilisation below 0.8 and 0B free");
    CHECK(p.cluster().nodes[0].gpus[0].jobs.empty());
  }
}

// --- state and input ----------------------------------------------------------------------

TEST_CASE("placing updates the cluster the next job sees", "[place][state]") {
  Placer p = placer_of(node("n1") + gpu(0) + gpu(1));
  Placement a = p.place(job_of(prod("a", 1, R"(,"mem_bytes":1024,"util":0.25)")));
  CHECK(where(a) == "n1:0");
  const auto& g = p.cluster().nodes[0].gpus[0];
  REQUIRE(g.jobs.size() == 1);
  CHECK(g.jobs[0].id == "a");
  CHECK(g.jobs[0].job_class == kQosProduction);
  CHECK(g.jobs[0].tenant == "a");
  CHECK(g.jobs[0].mem_bytes == 1024);
  CHECK(g.mem_used_bytes == 1024);
  CHECK(g.util == 0.25);
  CHECK(place(p, prod("b", 1)) == "n1:1");
  CHECK(place(p, prod("c", 1), PlacementStatus::kUnplaced) == "-");
}

TEST_CASE("unusable jobs are input errors and change nothing", "[place][input]") {
  Placer p = placer_of("[policy]\nmulti_node = false\n" + node("n1") + gpu(0, production("run")) +
                       gpu(1) + node("n2") + gpu(0));
  auto error_of = [&](const std::string& json_text) {
    Placement r = p.place(job_of(json_text));
    CHECK(r.input_error);
    CHECK(r.status == PlacementStatus::kUnplaced);
    return r.reason;
  };
  CHECK(error_of(R"({"id":"x","tenant":"nobody"})") ==
        "unknown tenant 'nobody' (known: a, b, zero)");
  CHECK(error_of(R"({"id":"x"})") ==
        "no tenant given, and the cluster has no [policy] default_tenant");
  CHECK(error_of(R"({"id":"x","tenant":"a","gpus":4})") ==
        "asks for 4 GPUs; the cluster has 3 GPUs");
  CHECK(error_of(R"({"id":"x","tenant":"a","gpus":3})") ==
        "asks for 3 GPUs; the largest node has 2 GPUs and [policy] multi_node is false");
  CHECK(error_of(R"({"id":"x","tenant":"a","mem_bytes":17179869185})") ==
        "needs 17179869185 bytes per GPU; the largest GPU has 16GiB");
  CHECK(error_of(R"({"id":"run","tenant":"a"})") ==
        "already running on the cluster (duplicate id)");
  CHECK(place(p, R"({"id":"ok","tenant":"a","gpus":1})") == "n1:1");
  CHECK(error_of(R"({"id":"ok","tenant":"a"})") == "already running on the cluster (duplicate id)");
}

TEST_CASE("an unplaced job's id may be used again", "[place][input]") {
  Placer p = placer_of(node("n1") + gpu(0, "util = 0.9\n"));
  CHECK(place(p, ot("x"), PlacementStatus::kUnplaced) == "-");
  CHECK(place(p, prod("x", 1)) == "n1:0");
}

TEST_CASE("with reserve = false a job that fits only in part reserves nothing",
          "[place][reserve]") {
  Placer p =
      placer_of("[policy]\nreserve = false\n" + node("n1") + gpu(0, production("p0")) + gpu(1));
  Placement r = p.place(job_of(prod("big", 2)));
  CHECK(r.status == PlacementStatus::kUnplaced);
  CHECK(r.reason ==
        "only 1 of the 2 GPUs it needs are free of production jobs and reservations, and "
        "[policy] reserve is false");
  CHECK_FALSE(p.cluster().nodes[0].gpus[1].reservation);
  CHECK(place(p, prod("small", 1)) == "n1:1");
}

TEST_CASE("removing a finished job frees its GPUs, memory, utilisation and quota",
          "[place][state]") {
  Placer p = placer_of(node("n1") + gpu(0, "util = 0.3\n") + gpu(1) + gpu(2));
  CHECK(place(p, R"({"id":"a","tenant":"b","gpus":2,"class":"production","mem_bytes":1024,)"
                 R"("util":0.5})") == "n1:1,2");
  CHECK(place(p, ot("o", 1, R"(,"mem_bytes":2048,"util":0.4)")) == "n1:0");
  const auto& g = p.cluster().nodes[0].gpus;
  CHECK(g[0].util == Approx(0.7));
  CHECK(g[1].util == 0.5);
  // b holds 2 of 4 quota GPUs: a 3-GPU job goes opportunistic.
  Placement x = p.place(job_of(R"({"id":"x","tenant":"b","gpus":3})"));
  CHECK(x.job_class == kQosOpportunistic);
  CHECK(where(x) == "n1:0,1,2");
  REQUIRE(p.remove("x"));
  REQUIRE(p.remove("a"));
  CHECK(g[1].util == 0.0);
  CHECK(g[1].jobs.empty());
  CHECK(g[1].mem_used_bytes == 0);
  CHECK(g[0].util == Approx(0.7));
  CHECK(g[0].mem_used_bytes == 2048);
  CHECK(p.free_gpus_per_node() == std::vector<std::uint32_t>{3});
  // The quota is back: 2 more GPUs for b are production again.
  Placement y = p.place(job_of(R"({"id":"y","tenant":"b","gpus":2})"));
  CHECK(y.job_class == kQosProduction);
  CHECK(where(y) == "n1:1,2");
  REQUIRE(p.remove("o"));
  CHECK(g[0].jobs.empty());
  CHECK(g[0].mem_used_bytes == 0);
  CHECK(g[0].util == Approx(0.3));
  auto missing = p.remove("o");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "no job 'o' runs on the cluster");
  // A removed job's id may be used again.
  CHECK(place(p, ot("o")) == "n1:1");
}

TEST_CASE("jobs read from the cluster file can be removed too", "[place][state]") {
  Placer p = placer_of(node("n1") + gpu(0, production("old")) + gpu(1, production("old")));
  CHECK(place(p, prod("x", 1), PlacementStatus::kUnplaced) == "-");
  REQUIRE(p.remove("old"));
  CHECK(place(p, prod("x", 2)) == "n1:0,1");
  CHECK(p.free_gpus_per_node() == std::vector<std::uint32_t>{0});
}

// --- production jobs on several GPUs (gangs) -------------------------------------

TEST_CASE("an opportunistic job beside a rank of a gang is explained as such",
          "[place][explain][gang]") {
  // llm runs one rank on each of n1's GPUs 0 and 1; solo has GPU 2; GPU 3
  // is too busy. The opportunistic jobs go to the least loaded GPUs in
  // turn: a rank of llm, its other rank, then solo's GPU.
  Placer p = placer_of(node("n1") + gpu(0, production("llm")) + gpu(1, production("llm")) +
                       gpu(2, production("solo")) + gpu(3, "util = 0.9\n"));
  Placement first = p.place(job_of(ot("o1")), true);
  REQUIRE(where(first) == "n1:0");
  REQUIRE(first.explanation);
  REQUIRE(first.explanation->beside.size() == 1);
  const auto& beside = first.explanation->beside.front();
  CHECK(beside.node == "n1");
  CHECK(beside.gpu == 0);
  CHECK(beside.job == "llm");
  CHECK(beside.ranks == 2);
  REQUIRE(beside.gang.size() == 1);
  CHECK(beside.gang.front().node == "n1");
  CHECK(beside.gang.front().gpus == std::vector<int>{0, 1});
  CHECK(beside.detail ==
        "beside one of the 2 ranks of production job 'llm' (n1 GPUs 0,1): its steps wait for "
        "its slowest rank, so what this job takes from the rank on n1 GPU 0 it takes from both");
  Placement second = p.place(job_of(ot("o2")), true);
  CHECK(where(second) == "n1:1");
  REQUIRE(second.explanation->beside.size() == 1);
  CHECK(second.explanation->beside.front().gpu == 1);
  // A one-GPU production job is no gang: nothing to say.
  Placement third = p.place(job_of(ot("o3")), true);
  CHECK(where(third) == "n1:2");
  CHECK(third.explanation->beside.empty());
  // Without --explain nothing is worked out.
  Placement quiet = p.place(job_of(ot("o4")));
  CHECK_FALSE(quiet.explanation);
}

TEST_CASE("a production job on several GPUs goes to one node, and its ranks are known",
          "[place][production][gang]") {
  // n1 has no free GPU (x on 0, 1 too busy for anyone), n2 has 4: the gang
  // of 4 takes n2 whole.
  Placer p = placer_of(node("n1") + gpu(0, production("x")) + gpu(1, "util = 0.9\n") + node("n2") +
                       gpu(0) + gpu(1) + gpu(2) + gpu(3));
  CHECK(place(p, prod("dp", 4)) == "n2:0,1,2,3");
  // Two opportunistic GPUs, the least loaded (one job each, then flat
  // order): n1's GPU 0 beside x, a one-GPU job, and n2's GPU 0, a rank of
  // dp placed in this very run.
  Placement o = p.place(job_of(ot("sweep", 2)), true);
  REQUIRE(where(o) == "n1:0 n2:0");
  REQUIRE(o.explanation);
  REQUIRE(o.explanation->beside.size() == 1);
  const auto& b = o.explanation->beside.front();
  CHECK(b.node == "n2");
  CHECK(b.gpu == 0);
  CHECK(b.job == "dp");
  CHECK(b.ranks == 4);
  REQUIRE(b.gang.size() == 1);
  CHECK(b.gang.front().gpus == std::vector<int>{0, 1, 2, 3});
}

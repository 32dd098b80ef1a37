// The cluster file: what it holds once read, and every error it can give,
// each at FILE:LINE:COL with the source line and a caret.
#include <catch2/catch.hpp>
#include <string>

#include "place/cluster/cluster_toml.h"

using gpushare::place::Cluster;
using gpushare::Qos;
using gpushare::kQosOpportunistic;
using gpushare::kQosProduction;
using gpushare::place::Order;
using gpushare::place::parse_cluster;

namespace {

const char* const kTenant = "[[tenant]]\nname = \"t\"\nquota_gpus = 2\n";

/// The first line of the error the text gives ("" if it parses).
std::string error_of(const std::string& text) {
  auto cluster = parse_cluster(text, "c.toml");
  if (cluster) return "";
  std::string message = cluster.error().message;
  return message.substr(0, message.find('\n'));
}

std::string gpu_with(const std::string& keys) {
  return std::string(kTenant) + "[[node]]\nname = \"n\"\n[[node.gpu]]\n" + keys;
}

}  // namespace

TEST_CASE("the example cluster file reads completely", "[place][toml]") {
  auto cluster = gpushare::place::load_cluster(std::string(GPUSHARE_SOURCE_DIR) +
                                               "/tests/data/place/cluster.toml");
  REQUIRE(cluster);
  CHECK(cluster->policy.util_threshold == 0.8);
  CHECK(cluster->policy.node_order == Order::kBinpack);
  CHECK(cluster->policy.gpu_order == Order::kSpread);
  CHECK(cluster->policy.multi_node);
  REQUIRE(cluster->tenants.size() == 3);
  CHECK(cluster->tenants[1].name == "nlp");
  CHECK(cluster->tenants[1].quota_gpus == 6);
  REQUIRE(cluster->nodes.size() == 3);
  const auto& n1 = cluster->nodes[0];
  CHECK(n1.name == "n1");
  REQUIRE(n1.gpus.size() == 4);
  CHECK(n1.gpus[0].model == "A100-80GB");
  CHECK(n1.gpus[0].mem_bytes == 80ull << 30);
  CHECK(n1.gpus[0].util == 0.92);
  CHECK(n1.gpus[0].nvlink_group == 0);
  CHECK(n1.gpus[0].numa == 0);
  REQUIRE(n1.gpus[0].jobs.size() == 1);
  CHECK(n1.gpus[0].jobs[0].id == "llm-pretrain");
  CHECK(n1.gpus[0].jobs[0].job_class == kQosProduction);
  CHECK(n1.gpus[0].jobs[0].tenant == "nlp");
  // Without mem_used_bytes, the jobs' memory is the memory used.
  CHECK(n1.gpus[0].mem_used_bytes == 64ull << 30);
  CHECK(n1.gpus[2].util == 0.0);
  CHECK(n1.gpus[2].mem_used_bytes == 0);
  const auto& n2 = cluster->nodes[1];
  CHECK(n2.gpus[0].mem_used_bytes == 2ull << 30);
  CHECK_FALSE(n2.gpus[0].nvlink_group);
  CHECK(n2.gpus[2].numa == 1);
  CHECK_FALSE(cluster->nodes[2].gpus[0].numa);
}

TEST_CASE("an empty file is an empty cluster with the default policy", "[place][toml]") {
  auto cluster = parse_cluster("", "c.toml");
  REQUIRE(cluster);
  CHECK(*cluster == Cluster{});
  CHECK(cluster->policy.util_threshold == 0.8);
}

TEST_CASE("every policy key reads", "[place][toml]") {
  auto cluster = parse_cluster(std::string(kTenant) +
                                   "[policy]\nutil_threshold = 1\nnode_order = \"spread\"\n"
                                   "gpu_order = \"binpack\"\nmulti_node = false\nreserve = false\n"
                                   "default_tenant = \"t\"\nqueue_threshold = \"1.5m\"\n",
                               "c.toml");
  REQUIRE(cluster);
  CHECK(cluster->policy.util_threshold == 1.0);
  CHECK(cluster->policy.node_order == Order::kSpread);
  CHECK(cluster->policy.gpu_order == Order::kBinpack);
  CHECK_FALSE(cluster->policy.multi_node);
  CHECK_FALSE(cluster->policy.reserve);
  CHECK(cluster->policy.default_tenant == "t");
  CHECK(cluster->policy.queue_threshold == std::chrono::seconds(90));
}

TEST_CASE("tenants may be defined after the jobs that name them", "[place][toml]") {
  CHECK(error_of("[[node]]\nname = \"n\"\n[[node.gpu]]\nindex = 0\nmem_bytes = 1\n"
                 "[[node.gpu.job]]\nid = \"j\"\nclass = \"opportunistic\"\ntenant = \"t\"\n" +
                 std::string(kTenant)) == "");
}

TEST_CASE("an error shows the line and a caret under the column", "[place][toml]") {
  auto cluster = parse_cluster("[policy]\n  utl = 0.5\n", "c.toml");
  REQUIRE_FALSE(cluster);
  CHECK(cluster.error().message ==
        "c.toml:2:3: unknown key 'utl' in [policy] (expected util_threshold, node_order, "
        "gpu_order, multi_node, reserve, default_tenant, queue_threshold)\n"
        "    utl = 0.5\n"
        "    ^");
}

TEST_CASE("unknown keys are errors at the key, in every table", "[place][toml]") {
  CHECK(error_of("nodes = 1\n") ==
        "c.toml:1:1: unknown key 'nodes' in the top level (expected policy, tenant, node)");
  CHECK(error_of("[[tenant]]\nname = \"t\"\nquota = 1\n") ==
        "c.toml:3:1: unknown key 'quota' in [[tenant]] (expected name, quota_gpus)");
  CHECK(error_of("[[node]]\nname = \"n\"\nswitch = 1\n") ==
        "c.toml:3:1: unknown key 'switch' in [[node]] (expected name, gpu)");
  CHECK(error_of(gpu_with("index = 0\nmem = \"1GiB\"\nmemory = 1\n")) ==
        "c.toml:9:1: unknown key 'memory' in [[node.gpu]] (expected index, model, mem, "
        "mem_bytes, util, mem_used_bytes, nvlink_group, numa, reservation, job)");
  CHECK(error_of(gpu_with("index = 0\nmem = \"1GiB\"\n[[node.gpu.job]]\nid = \"j\"\nuser = 1\n")) ==
        "c.toml:11:1: unknown key 'user' in [[node.gpu.job]] (expected id, class, tenant, "
        "mem_bytes)");
  CHECK(error_of(gpu_with("index = 0\nmem = \"1GiB\"\nreservation = { job = \"j\", who = 1 }\n")) ==
        "c.toml:9:28: unknown key 'who' in the reservation of GPU 0 of node 'n' (expected job, "
        "tenant)");
}

TEST_CASE("wrong types are errors at the value", "[place][toml]") {
  CHECK(error_of("[policy]\nutil_threshold = \"0.8\"\n") ==
        "c.toml:2:18: 'util_threshold' must be a number, not a string");
  CHECK(error_of("[policy]\nmulti_node = 1\n") ==
        "c.toml:2:14: 'multi_node' must be a boolean (true or false), not an integer");
  CHECK(error_of("[[policy]]\n") ==
        "c.toml:1:1: 'policy' must be a table ([policy]), not an array");
  CHECK(error_of("[node]\nname = \"n\"\n") ==
        "c.toml:1:1: 'node' must be an array of tables ([[node]]), not a table");
  CHECK(error_of("[[tenant]]\nname = 7\n") ==
        "c.toml:2:8: 'name' must be a string, not an integer");
  CHECK(error_of("[[tenant]]\nname = \"t\"\nquota_gpus = 1.5\n") ==
        "c.toml:3:14: 'quota_gpus' must be an integer, not a float");
  CHECK(error_of(gpu_with("index = \"0\"\n")) ==
        "c.toml:7:9: 'index' must be an integer, not a string");
  CHECK(error_of(gpu_with("index = 0\nmem = 80\n")) ==
        "c.toml:8:7: 'mem' must be a string, not an integer");
  CHECK(error_of(gpu_with("index = 0\nmem = \"1GiB\"\nreservation = 1\n")) ==
        "c.toml:9:15: 'reservation' must be a table, not an integer");
}

TEST_CASE("values out of range are errors", "[place][toml]") {
  CHECK(error_of("[policy]\nutil_threshold = 1.5\n") ==
        "c.toml:2:18: 'util_threshold' must be between 0 and 1, not 1.5");
  CHECK(error_of("[policy]\nutil_threshold = nan\n") ==
        "c.toml:2:18: 'util_threshold' must be between 0 and 1, not nan");
  CHECK(error_of("[policy]\nnode_order = \"pack\"\n") ==
        "c.toml:2:14: 'node_order' must be \"binpack\" or \"spread\", not \"pack\"");
  CHECK(error_of("[policy]\nqueue_threshold = \"10\"\n") ==
        "c.toml:2:19: duration '10' needs a unit (ns, us, ms, s, m or h)");
  CHECK(error_of("[[tenant]]\nname = \"t\"\nquota_gpus = -1\n") ==
        "c.toml:3:14: 'quota_gpus' must be at least 0, not -1");
  CHECK(error_of("[[tenant]]\nname = \"\"\nquota_gpus = 1\n") ==
        "c.toml:2:8: 'name' must not be empty");
  CHECK(error_of(gpu_with("index = -1\n")) == "c.toml:7:9: 'index' must be at least 0, not -1");
  CHECK(error_of(gpu_with("index = 0\nmem = \"80 gigs\"\n")).rfind("c.toml:8:7: ", 0) == 0);
  CHECK(error_of(gpu_with("index = 0\nmem = \"50%\"\n")).rfind("c.toml:8:7: ", 0) == 0);
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 0\n")) ==
        "c.toml:8:13: GPU 0 of node 'n' has no memory");
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 10\nutil = 2\n")) ==
        "c.toml:9:8: 'util' must be between 0 and 1, not 2");
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 10\nmem_used_bytes = 11\n")) ==
        "c.toml:9:18: GPU 0 of node 'n': mem_used_bytes 11 exceeds its memory of 10 bytes");
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 10\n[[node.gpu.job]]\nid = \"j\"\n"
                          "class = \"batch\"\n")) ==
        "c.toml:11:9: 'class' must be \"production\" or \"opportunistic\", not \"batch\"");
}

TEST_CASE("missing keys are errors at their table", "[place][toml]") {
  CHECK(error_of("[[tenant]]\nquota_gpus = 1\n") == "c.toml:1:1: [[tenant]] has no 'name'");
  CHECK(error_of("[[tenant]]\nname = \"t\"\n") == "c.toml:1:1: [[tenant]] 't' has no 'quota_gpus'");
  CHECK(error_of("[[node]]\n") == "c.toml:1:1: [[node]] has no 'name'");
  CHECK(error_of(gpu_with("mem = \"1GiB\"\n")) ==
        "c.toml:6:1: [[node.gpu]] of node 'n' has no 'index'");
  CHECK(error_of(gpu_with("index = 0\n")) ==
        "c.toml:6:1: GPU 0 of node 'n' has no 'mem' or 'mem_bytes'");
  CHECK(error_of(gpu_with("index = 0\nmem = \"1GiB\"\nmem_bytes = 1\n")) ==
        "c.toml:9:13: GPU 0 of node 'n' has both 'mem' and 'mem_bytes'");
  CHECK(
      error_of(gpu_with("index = 0\nmem = \"1GiB\"\n[[node.gpu.job]]\nclass = \"production\"\n")) ==
      "c.toml:9:1: job on GPU 0 of node 'n' has no 'id'");
  CHECK(error_of(gpu_with("index = 0\nmem = \"1GiB\"\n[[node.gpu.job]]\nid = \"j\"\n")) ==
        "c.toml:9:1: job 'j' has no 'class'");
  CHECK(error_of(gpu_with("index = 0\nmem = \"1GiB\"\nreservation = { job = \"j\" }\n")) ==
        "c.toml:9:15: the reservation of GPU 0 of node 'n' has no 'tenant'");
}

TEST_CASE("names must be unique and references must resolve", "[place][toml]") {
  CHECK(error_of(std::string(kTenant) + kTenant) == "c.toml:5:8: tenant 't' is defined twice");
  CHECK(error_of("[[node]]\nname = \"n\"\n[[node]]\nname = \"n\"\n") ==
        "c.toml:4:8: node 'n' is defined twice");
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 1\n[[node.gpu]]\nindex = 0\nmem_bytes = 1\n")) ==
        "c.toml:9:1: node 'n' has GPU index 0 twice");
  CHECK(error_of("[policy]\ndefault_tenant = \"x\"\n") ==
        "c.toml:2:18: default_tenant names tenant 'x', which no [[tenant]] defines");
  std::string job = "[[node.gpu.job]]\nid = \"j\"\nclass = \"production\"\ntenant = \"t\"\n";
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 1\n[[node.gpu.job]]\nid = \"j\"\n"
                          "class = \"production\"\ntenant = \"u\"\n")) ==
        "c.toml:12:10: job 'j' names tenant 'u', which no [[tenant]] defines");
  CHECK(error_of(
            gpu_with("index = 0\nmem_bytes = 1\n" + job +
                     "[[node.gpu.job]]\nid = \"k\"\nclass = \"production\"\ntenant = \"t\"\n")) ==
        "c.toml:14:6: GPU 0 of node 'n' already runs production job 'j'; a GPU takes at most one");
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 1\n" + job + job)) ==
        "c.toml:14:6: job 'j' appears twice on GPU 0 of node 'n'");
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 1\n" + job +
                          "[[node.gpu]]\nindex = 1\n"
                          "mem_bytes = 1\n[[node.gpu.job]]\nid = \"j\"\nclass = \"opportunistic\"\n"
                          "tenant = \"t\"\n")) ==
        "c.toml:17:6: job 'j' differs from the job of the same id on GPU 0 of node 'n' (class "
        "or tenant)");
  CHECK(error_of(gpu_with(
            "index = 0\nmem_bytes = 1\nreservation = { job = \"r\", tenant = \"t\" }\n" + job)) ==
        "c.toml:9:15: GPU 0 of node 'n' is reserved for job 'r' but production job 'j' runs there");
  CHECK(error_of(gpu_with("index = 0\nmem_bytes = 1\n" + job +
                          "[[node.gpu]]\nindex = 1\n"
                          "mem_bytes = 1\nreservation = { job = \"j\", tenant = \"t\" }\n")) ==
        "c.toml:16:15: GPU 1 of node 'n' is reserved for job 'j', which already runs");
}

TEST_CASE("TOML syntax errors keep toml++'s message and position", "[place][toml]") {
  std::string error = error_of("[policy\n");
  CHECK(error.rfind("c.toml:1:", 0) == 0);
  CHECK(error_of("[policy]\nutil_threshold = 0.5\nutil_threshold = 0.6\n").rfind("c.toml:3:", 0) ==
        0);
}

TEST_CASE("a file that cannot be opened is an error naming it", "[place][toml]") {
  auto cluster = gpushare::place::load_cluster("/nonexistent/cluster.toml");
  REQUIRE_FALSE(cluster);
  CHECK(cluster.error().message ==
        "/nonexistent/cluster.toml: cannot open: No such file or directory");
}

// The loader parses a file in parts, one per [[node]] line (toml++ is
// quadratic in arrays of tables); the parts must mean what the whole does.
TEST_CASE("a file read in parts means what it means whole", "[place][toml][parts]") {
  const std::string two_nodes =
      "[[node]]\nname = \"a\"\n[[node.gpu]]\nindex = 0\nmem = \"1GiB\"\n"
      "[[tenant]]\nname = \"t2\"\nquota_gpus = 1\n"
      "[[node]]\nname = \"b\"\n[[node.gpu]]\nindex = 0\nmem = \"1GiB\"\n"
      "[[tenant]]\nname = \"t3\"\nquota_gpus = 1\n";

  SECTION("[[tenant]] tables after and between nodes append, in order") {
    auto cluster = parse_cluster(std::string(kTenant) + two_nodes, "c.toml");
    REQUIRE(cluster);
    REQUIRE(cluster->tenants.size() == 3);
    CHECK(cluster->tenants[2].name == "t3");
    REQUIRE(cluster->nodes.size() == 2);
    CHECK(cluster->nodes[1].name == "b");
  }
  SECTION("a table defined again in a later part is an error at its line") {
    CHECK(error_of("[policy]\nreserve = true\n" + two_nodes + "[policy]\nreserve = false\n") ==
          "c.toml:19:2: 'policy' is defined twice");
    CHECK(error_of("policy.reserve = true\n" + two_nodes + "[policy]\n") ==
          "c.toml:18:2: 'policy' is defined twice");
  }
  SECTION("an inline array cannot be appended to by [[headers]] in a later part") {
    CHECK(error_of("tenant = [{ name = \"t\", quota_gpus = 1 }]\n" + two_nodes) ==
          "c.toml:7:3: 'tenant' is defined twice");
  }
  SECTION("errors in a later part name the file's lines") {
    CHECK(error_of(two_nodes + "[[node]]\nname = \"c\"\nbogus = 1\n") ==
          "c.toml:19:1: unknown key 'bogus' in [[node]] (expected name, gpu)");
    CHECK(error_of(two_nodes + "[[node]]\nname = \n").rfind("c.toml:18:", 0) == 0);
  }
  SECTION("a multi-line string may hold a [[node]] line: the file is read whole") {
    auto cluster = parse_cluster(std::string(kTenant) +
                                     "[[node]]\nname = \"a\"\n[[node.gpu]]\nindex = 0\n"
                                     "mem = \"1GiB\"\nmodel = \"\"\"x\n[[node]]\n\"\"\"\n",
                                 "c.toml");
    REQUIRE(cluster);
    REQUIRE(cluster->nodes.size() == 1);
    CHECK(cluster->nodes[0].gpus[0].model == "x\n[[node]]\n");
  }
}

#include <catch2/catch.hpp>

#include "coord/server/registry/registry.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;
constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;
constexpr gid_t kAdmins = 500;

Caller caller(uid_t uid, std::vector<gid_t> groups = {}) {
  Caller c;
  c.pid = 1;
  c.uid = uid;
  c.gid = uid;
  c.groups = std::move(groups);
  return c;
}

RegisterRequest job(const std::string& name, std::uint64_t limit = 4 * GiB,
                    std::uint32_t qos = kQosOpportunistic) {
  RegisterRequest r;
  r.name = name;
  r.qos = qos;
  r.devices.push_back({"GPU-a", 16 * GiB, limit, limit});
  return r;
}

Caller peer(pid_t pid, uid_t uid) {
  Caller c = caller(uid);
  c.pid = pid;
  return c;
}

SetRequest set_limit(const std::string& selector, const std::string& limit) {
  SetRequest s;
  s.job = selector;
  s.mem_limit = limit;
  return s;
}

// Telemetry heartbeats are written by jobs; "now" 0 keeps every job fresh.
constexpr std::uint64_t kNow = 0;

}  // namespace

TEST_CASE("jobs get increasing ids and list in id order", "[coord][registry]") {
  Registry registry({});
  REQUIRE(registry.add(job("a"), peer(100, kAlice)).ok());
  REQUIRE(registry.add(job("b"), peer(200, kBob)).ok());
  auto jobs = registry.list(kNow);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].id == 1);
  CHECK(jobs[0].name == "a");
  CHECK(jobs[0].pid == 100);
  CHECK(jobs[0].uid == kAlice);
  CHECK(jobs[0].state == "running");
  CHECK(jobs[1].id == 2);
  CHECK(jobs[1].devices[0].mem_limit_bytes == 4 * GiB);
  CHECK(registry.remove(1));
  CHECK_FALSE(registry.remove(1));
  CHECK(registry.list(kNow).size() == 1);
}

TEST_CASE("a re-registering job keeps its id when free, and its current limit",
          "[coord][registry]") {
  Registry registry({});
  RegisterRequest r = job("a");
  r.id_hint = 7;
  r.devices[0].mem_limit_bytes = 1 * GiB;
  auto added = registry.add(r, peer(100, kAlice));
  REQUIRE(added.ok());
  CHECK((*added)->job_id == 7);
  CHECK((*added)->block->mem_limit(0) == 1 * GiB);
  CHECK((*added)->devices[0].start_limit_bytes == 4 * GiB);
  // The next new job continues after the hint; a taken hint is ignored.
  CHECK((*registry.add(job("b"), peer(101, kAlice)))->job_id == 8);
  CHECK((*registry.add(r, peer(102, kAlice)))->job_id == 9);
  // An outlandish hint is ignored rather than moving every later id.
  r.id_hint = kMaxIdHint + 1;
  CHECK((*registry.add(r, peer(103, kAlice)))->job_id == 10);
}

TEST_CASE("JOB selects by id, then pid, then a unique name", "[coord][registry]") {
  Registry registry({});
  registry.add(job("train"), peer(4242, kAlice));
  registry.add(job("train"), peer(4343, kAlice));
  registry.add(job("1"), peer(4444, kAlice));
  std::string reason;
  CHECK(registry.show("2", kNow, &reason)->pid == 4343);
  CHECK(registry.show("4242", kNow, &reason)->id == 1);
  CHECK(registry.show("1", kNow, &reason)->pid == 4242);  // the id wins over the name "1"
  auto ambiguous = registry.show("train", kNow, &reason);
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(reason == kReasonAmbiguous);
  CHECK(ambiguous.error().message ==
        "job name 'train' is ambiguous (ids 1, 2): use an id or a pid");
  auto unknown = registry.show("nope", kNow, &reason);
  REQUIRE_FALSE(unknown.ok());
  CHECK(reason == kReasonUnknownJob);
  CHECK(unknown.error().message == "no job 'nope' (not the id, pid or name of a job)");
  CHECK_FALSE(registry.show("99999999999999999999", kNow, &reason).ok());
}

TEST_CASE("set changes the limit in the shared page", "[coord][registry]") {
  Registry registry({});
  Process* a = *registry.add(job("a"), peer(100, kAlice));
  std::string reason;
  auto result = registry.set(set_limit("a", "1GiB"), caller(0), kNow, &reason);
  REQUIRE(result.ok());
  CHECK(a->block->mem_limit(0) == 1 * GiB);
  CHECK(result->devices[0].mem_limit_bytes == 1 * GiB);
  REQUIRE(registry.set(set_limit("a", "25%"), caller(0), kNow, &reason).ok());
  CHECK(a->block->mem_limit(0) == 4 * GiB);
  REQUIRE(registry.set(set_limit("a", "none"), caller(0), kNow, &reason).ok());
  CHECK(a->block->mem_limit(0) == kNoLimit);
  auto bad = registry.set(set_limit("a", "0"), caller(0), kNow, &reason);
  REQUIRE_FALSE(bad.ok());
  CHECK(reason == kReasonInvalid);
  CHECK(a->block->mem_limit(0) == kNoLimit);
}

TEST_CASE("users act only on their own jobs, within their start limits", "[coord][registry]") {
  Registry registry({});
  Process* alices = *registry.add(job("alices", 4 * GiB), peer(100, kAlice));
  Process* bobs = *registry.add(job("bobs", 4 * GiB), peer(200, kBob));
  std::string reason;

  SECTION("lowering, and raising back to the start limit, is the owner's right") {
    REQUIRE(registry.set(set_limit("alices", "1GiB"), caller(kAlice), kNow, &reason).ok());
    CHECK(alices->block->mem_limit(0) == 1 * GiB);
    REQUIRE(registry.set(set_limit("alices", "4GiB"), caller(kAlice), kNow, &reason).ok());
    CHECK(alices->block->mem_limit(0) == 4 * GiB);
  }
  SECTION("raising above the start limit is refused and changes nothing") {
    SetRequest s = set_limit("alices", "8GiB");
    s.name = "renamed";
    auto result = registry.set(s, caller(kAlice), kNow, &reason);
    REQUIRE_FALSE(result.ok());
    CHECK(reason == kReasonDenied);
    CHECK(result.error().message ==
          "permission denied: only root may raise a memory limit above the one the job started "
          "with (4GiB; asked for 8GiB)");
    CHECK(alices->block->mem_limit(0) == 4 * GiB);
    CHECK(registry.find(alices->job_id)->name == "alices");
    CHECK_FALSE(registry.set(set_limit("alices", "none"), caller(kAlice), kNow, &reason).ok());
  }
  SECTION("another user's job is out of reach") {
    auto result = registry.set(set_limit("bobs", "1GiB"), caller(kAlice), kNow, &reason);
    REQUIRE_FALSE(result.ok());
    CHECK(reason == kReasonDenied);
    CHECK(result.error().message ==
          "permission denied: job 2 belongs to uid 1001, not to uid 1000");
    CHECK(bobs->block->mem_limit(0) == 4 * GiB);
    CHECK_FALSE(registry.pause({"bobs", true}, caller(kAlice), kNow, &reason).ok());
    CHECK_FALSE(bobs->block->paused());
  }
  SECTION("only root makes a job production; anyone may demote their own") {
    SetRequest up;
    up.job = "alices";
    up.qos = kQosProduction;
    auto result = registry.set(up, caller(kAlice), kNow, &reason);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message == "permission denied: only root may make a job production");
    CHECK(alices->block->qos() == kQosOpportunistic);
    REQUIRE(registry.set(up, caller(0), kNow, &reason).ok());
    CHECK(alices->block->qos() == kQosProduction);
    SetRequest down = up;
    down.qos = kQosOpportunistic;
    REQUIRE(registry.set(down, caller(kAlice), kNow, &reason).ok());
    CHECK(alices->block->qos() == kQosOpportunistic);
  }
  SECTION("root may do anything") {
    REQUIRE(registry.set(set_limit("bobs", "12GiB"), caller(0), kNow, &reason).ok());
    CHECK(bobs->block->mem_limit(0) == 12 * GiB);
  }
}

TEST_CASE("members of the admin group act like root", "[coord][registry]") {
  Registry registry({kAdmins, "gpuadmin"});
  Process* bobs = *registry.add(job("bobs", 4 * GiB), peer(200, kBob));
  std::string reason;
  REQUIRE(registry.set(set_limit("bobs", "8GiB"), caller(kAlice, {kAdmins}), kNow, &reason).ok());
  CHECK(bobs->block->mem_limit(0) == 8 * GiB);
  auto refused = registry.set(set_limit("bobs", "9GiB"), caller(kBob), kNow, &reason);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message,
             Catch::Matchers::Contains("only root or members of group 'gpuadmin' may raise"));
}

TEST_CASE("pause and resume show in the page and in the state", "[coord][registry]") {
  Registry registry({});
  Process* a = *registry.add(job("a"), peer(100, kAlice));
  std::string reason;
  auto paused = registry.pause({"a", true}, caller(kAlice), kNow, &reason);
  REQUIRE(paused.ok());
  CHECK(paused->state == "paused");
  CHECK(a->block->paused());
  CHECK(registry.node(kNow).paused_jobs == 1);
  REQUIRE(registry.pause({"a", false}, caller(kAlice), kNow, &reason).ok());
  CHECK_FALSE(a->block->paused());
}

TEST_CASE("a job whose telemetry stops is stale", "[coord][registry]") {
  Registry registry({});
  Process* a = *registry.add(job("a"), peer(100, kAlice));
  const_cast<TelemetryPage&>(a->block->telemetry()).heartbeat_ns.store(1'000'000'000);
  std::string reason;
  CHECK(registry.show("a", 2'000'000'000, &reason)->state == "running");
  CHECK(registry.show("a", 1'000'000'000 + kStaleAfterNs + 1, &reason)->state == "stale");
}

TEST_CASE("the node view sums jobs per device and class", "[coord][registry]") {
  Registry registry({});
  Process* a = *registry.add(job("a", 4 * GiB, kQosProduction), peer(100, kAlice));
  Process* b = *registry.add(job("b", 2 * GiB, kQosOpportunistic), peer(200, kBob));
  RegisterRequest other = job("c", kNoLimit);
  other.devices[0].uuid = "GPU-b";
  other.devices[0].mem_total_bytes = 8 * GiB;
  registry.add(other, peer(300, kBob));
  const_cast<TelemetryPage&>(a->block->telemetry()).devices[0].mem_used_bytes.store(3 * GiB);
  const_cast<TelemetryPage&>(b->block->telemetry()).devices[0].mem_used_bytes.store(1 * GiB);
  NodeView node = registry.node(kNow);
  REQUIRE(node.devices.size() == 2);
  CHECK(node.devices[0].uuid == "GPU-a");
  CHECK(node.devices[0].production.jobs == 1);
  CHECK(node.devices[0].production.mem_used_bytes == 3 * GiB);
  CHECK(node.devices[0].opportunistic.mem_limit_bytes == 2 * GiB);
  CHECK(node.devices[1].opportunistic.mem_limit_bytes == kNoLimit);
  // A job that leaves frees its share at once.
  registry.remove(a->key);
  CHECK(registry.node(kNow).devices[0].production.mem_used_bytes == 0);
}

TEST_CASE("the node view counts a job on two GPUs once and sums where memory lives",
          "[coord][registry]") {
  Registry registry({});
  RegisterRequest wide = job("wide", kNoLimit, kQosOpportunistic);
  wide.devices.push_back(wide.devices[0]);
  wide.devices[1].uuid = "GPU-b";
  Process* w = *registry.add(wide, peer(100, kAlice));
  registry.add(job("p", kNoLimit, kQosProduction), peer(200, kAlice));
  auto& telemetry = const_cast<TelemetryPage&>(w->block->telemetry());
  telemetry.device_resident_bytes[0].store(3 * GiB);
  telemetry.host_resident_bytes[0].store(1 * GiB);
  telemetry.device_resident_bytes[1].store(2 * GiB);
  NodeView node = registry.node(kNow);
  REQUIRE(node.devices.size() == 2);
  CHECK(node.opportunistic_jobs == 1);
  CHECK(node.production_jobs == 1);
  CHECK(node.devices[0].opportunistic.jobs == 1);
  CHECK(node.devices[1].opportunistic.jobs == 1);
  CHECK(node.devices[0].opportunistic.device_resident_bytes == 3 * GiB);
  CHECK(node.devices[0].opportunistic.host_resident_bytes == 1 * GiB);
  CHECK(node.devices[1].opportunistic.device_resident_bytes == 2 * GiB);
}

TEST_CASE("resolve_limit reads sizes, percentages of the device and none", "[coord][registry]") {
  CHECK(*resolve_limit("1GiB", 16 * GiB) == GiB);
  CHECK(*resolve_limit("50%", 16 * GiB) == 8 * GiB);
  CHECK(*resolve_limit("none", 16 * GiB) == kNoLimit);
  CHECK_FALSE(resolve_limit("0", 16 * GiB).ok());
  CHECK_FALSE(resolve_limit("lots", 16 * GiB).ok());
}

// The coordinator's own pause of an opportunistic job on host memory
// (lib/coord/server/memory/host_pause.h): the decision with its hysteresis,
// and the tick on a registry, whose pause reason stays apart from an
// operator's.
#include <catch2/catch.hpp>

#include "coord/contract/protocol.h"
#include "coord/server/memory/host_pause.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;
constexpr uid_t kAlice = 1000;
constexpr std::uint64_t kMs = 1'000'000;

HostPauseInput input(bool active, std::uint64_t device, std::uint64_t host) {
  HostPauseInput in;
  in.production_active = active;
  in.device_resident_bytes = device;
  in.host_resident_bytes = host;
  return in;
}

Caller caller(uid_t uid, pid_t pid) {
  Caller c;
  c.pid = pid;
  c.uid = uid;
  c.gid = uid;
  return c;
}

Process& add_job(Registry& registry, const std::string& name, std::uint32_t qos, pid_t pid) {
  RegisterRequest r;
  r.name = name;
  r.qos = qos;
  r.devices.push_back({"GPU-a", 80 * GiB, kNoLimit, kNoLimit});
  auto added = registry.add(r, caller(kAlice, pid));
  REQUIRE(added.ok());
  return **added;
}

TelemetryPage& telemetry_of(Process& job) {
  return const_cast<TelemetryPage&>(job.block->telemetry());
}

JobView shown(Registry& registry, const std::string& name) {
  std::string reason;
  auto view = registry.show(name, 0, &reason);
  REQUIRE(view.ok());
  return *view;
}

}  // namespace

TEST_CASE("host pause: pauses from half on the host while production is active", "[coord]") {
  CHECK(host_pause_decide(input(true, 24 * GiB, 24 * GiB), false));
  CHECK(host_pause_decide(input(true, 4 * GiB, 20 * GiB), false));
  CHECK_FALSE(host_pause_decide(input(true, 25 * GiB, 23 * GiB), false));
  CHECK_FALSE(host_pause_decide(input(true, 24 * GiB, 0), false));
  CHECK_FALSE(host_pause_decide(input(true, 0, 0), false));
  // Production idle or gone: never.
  CHECK_FALSE(host_pause_decide(input(false, 0, 24 * GiB), false));
  CHECK_FALSE(host_pause_decide(input(false, 0, 24 * GiB), true));
}

TEST_CASE("host pause: resumes only below a quarter on the host (no flapping)", "[coord]") {
  // Between a quarter and a half the decision keeps what it was.
  CHECK(host_pause_decide(input(true, 30 * GiB, 18 * GiB), true));
  CHECK_FALSE(host_pause_decide(input(true, 30 * GiB, 18 * GiB), false));
  CHECK(host_pause_decide(input(true, 36 * GiB, 12 * GiB), true));  // exactly a quarter
  CHECK_FALSE(host_pause_decide(input(true, 37 * GiB, 11 * GiB), true));
  CHECK_FALSE(host_pause_decide(input(true, 48 * GiB, 0), true));
}

TEST_CASE("host pause: sizes near 2^64 do not overflow the share", "[coord]") {
  CHECK(host_pause_decide(input(true, kNoLimit, kNoLimit), false));
  CHECK_FALSE(host_pause_decide(input(true, kNoLimit, 1), false));
  CHECK(host_pause_decide(input(true, 1, kNoLimit), false));
}

TEST_CASE("host pause: the tick pauses and resumes with production's activity", "[coord]") {
  Registry registry({});
  Process& prod = add_job(registry, "prod", kQosProduction, 100);
  Process& opp = add_job(registry, "opp", kQosOpportunistic, 101);
  telemetry_of(opp).device_resident_bytes[0] = 8 * GiB;
  telemetry_of(opp).host_resident_bytes[0] = 16 * GiB;
  HostPauser pauser(true);
  std::uint64_t now = 1000 * kMs;

  pauser.tick(registry, now);  // production has launched nothing yet
  CHECK_FALSE(opp.block->paused());

  telemetry_of(prod).launches = 10;
  pauser.tick(registry, now += 25 * kMs);
  CHECK(opp.block->pause_reasons() == kPauseHostMemory);
  CHECK(shown(registry, "opp").state == "paused");
  CHECK(shown(registry, "opp").pause_reasons == std::vector<std::string>{"memory"});
  CHECK_FALSE(prod.block->paused());

  // Production's short gaps keep it active.
  pauser.tick(registry, now += kProductionQuietNs / 2);
  CHECK(opp.block->paused());

  // Launched work it has not synchronised with keeps it active however
  // long the GPU takes.
  pauser.tick(registry, now += 10 * kProductionQuietNs);
  CHECK(opp.block->paused());
  // Unless an operator paused the production job.
  std::string reason;
  REQUIRE(registry.pause(PauseRequest{"prod", true}, caller(kAlice, 1), now, &reason).ok());
  pauser.tick(registry, now += 25 * kMs);
  CHECK_FALSE(opp.block->paused());
  REQUIRE(registry.pause(PauseRequest{"prod", false}, caller(kAlice, 1), now, &reason).ok());
  pauser.tick(registry, now += 25 * kMs);
  CHECK(opp.block->paused());

  // Synchronised and quiet for the hold: the opportunistic job runs again.
  telemetry_of(prod).kernels_completed = 10;
  pauser.tick(registry, now += kProductionQuietNs / 2);
  CHECK(opp.block->paused());
  pauser.tick(registry, now += kProductionQuietNs);
  CHECK_FALSE(opp.block->paused());
  CHECK(shown(registry, "opp").state == "running");

  // Active again; then the memory comes back.
  telemetry_of(prod).launches = 20;
  telemetry_of(prod).kernels_completed = 20;
  pauser.tick(registry, now += 25 * kMs);
  CHECK(opp.block->paused());
  telemetry_of(opp).device_resident_bytes[0] = 20 * GiB;
  telemetry_of(opp).host_resident_bytes[0] = 4 * GiB;
  pauser.tick(registry, now += 25 * kMs);
  CHECK_FALSE(opp.block->paused());
}

TEST_CASE("host pause: an operator's pause and the automatic one never undo each other",
          "[coord]") {
  Registry registry({});
  Process& prod = add_job(registry, "prod", kQosProduction, 100);
  Process& opp = add_job(registry, "opp", kQosOpportunistic, 101);
  telemetry_of(opp).host_resident_bytes[0] = 24 * GiB;
  telemetry_of(prod).launches = 1;
  HostPauser pauser(true);
  std::uint64_t now = 1000 * kMs;
  pauser.tick(registry, now);
  telemetry_of(prod).launches = 2;
  pauser.tick(registry, now += 25 * kMs);
  REQUIRE(opp.block->pause_reasons() == kPauseHostMemory);

  // An operator's resume does not lift the coordinator's pause, and says why.
  std::string reason;
  auto resumed = registry.pause(PauseRequest{"opp", false}, caller(kAlice, 1), now, &reason);
  REQUIRE(resumed.ok());
  CHECK(resumed->note.find("memory is on the host") != std::string::npos);
  CHECK(opp.block->paused());

  // The operator pauses too; the automatic resume leaves the operator's.
  REQUIRE(registry.pause(PauseRequest{"opp", true}, caller(kAlice, 1), now, &reason).ok());
  CHECK(opp.block->pause_reasons() == (kPauseOperator | kPauseHostMemory));
  CHECK(shown(registry, "opp").pause_reasons == std::vector<std::string>{"operator", "memory"});
  telemetry_of(opp).device_resident_bytes[0] = 24 * GiB;
  telemetry_of(opp).host_resident_bytes[0] = 0;
  pauser.tick(registry, now += 25 * kMs);
  CHECK(opp.block->pause_reasons() == kPauseOperator);
  CHECK(shown(registry, "opp").state == "paused");

  // And the operator's resume lets it run.
  REQUIRE(registry.pause(PauseRequest{"opp", false}, caller(kAlice, 1), now, &reason).ok());
  CHECK_FALSE(opp.block->paused());
}

TEST_CASE("host pause: disabled, it pauses nothing and lifts what it set", "[coord]") {
  Registry registry({});
  Process& prod = add_job(registry, "prod", kQosProduction, 100);
  Process& opp = add_job(registry, "opp", kQosOpportunistic, 101);
  telemetry_of(opp).host_resident_bytes[0] = 24 * GiB;
  // A production job on host memory is never paused by it.
  telemetry_of(prod).host_resident_bytes[0] = 24 * GiB;
  std::uint64_t now = 1000 * kMs;
  HostPauser off(false);
  off.tick(registry, now);
  telemetry_of(prod).launches = 5;
  off.tick(registry, now += 25 * kMs);
  CHECK_FALSE(opp.block->paused());

  HostPauser on(true);
  on.tick(registry, now);
  telemetry_of(prod).launches = 6;
  on.tick(registry, now += 25 * kMs);
  CHECK_FALSE(prod.block->paused());
  REQUIRE(opp.block->paused());
  off.tick(registry, now += 25 * kMs);
  CHECK_FALSE(opp.block->paused());
}

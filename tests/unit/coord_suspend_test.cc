// The coordinator's side of suspend and resume (lib/coord/server/memory/suspend_requests.h):
// requests, refusals, no-ops and the tick, with the job's telemetry written
// by the test as the job's interposer would.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "coord/contract/protocol.h"
#include "coord/server/memory/suspend_requests.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;
constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;
constexpr std::uint64_t kNow = 0;

Caller caller(uid_t uid, pid_t pid = 1) {
  Caller c;
  c.pid = pid;
  c.uid = uid;
  c.gid = uid;
  return c;
}

Process& add_job(Registry& registry, const std::string& name, uid_t uid, pid_t pid) {
  RegisterRequest r;
  r.name = name;
  r.qos = kQosProduction;
  r.devices.push_back({"GPU-a", 16 * GiB, kNoLimit, kNoLimit});
  auto added = registry.add(r, caller(uid, pid));
  REQUIRE(added.ok());
  return **added;
}

// What the job's interposer writes.
TelemetryPage& telemetry_of(Process& job) { return const_cast<TelemetryPage&>(job.block->telemetry()); }

}  // namespace

TEST_CASE("suspend pauses the job and asks it to move its memory", "[coord][suspend]") {
  Registry registry({});
  Process& job = add_job(registry, "train", kAlice, 100);
  std::string reason;
  auto view = registry.suspend(SuspendRequest{"train"}, caller(kAlice), kNow, &reason);
  REQUIRE(view.ok());
  CHECK(view->state == "suspending");
  CHECK(job.block->paused());
  CHECK(job.block->suspend_requested());

  // The job reports it done: suspended, with its bytes on the host.
  telemetry_of(job).suspend_state = kSuspendSuspended;
  telemetry_of(job).suspended_bytes[0] = 3 * GiB;
  auto shown = registry.show("train", kNow, &reason);
  REQUIRE(shown.ok());
  CHECK(shown->state == "suspended");
  CHECK(shown->devices[0].suspended_bytes == 3 * GiB);
  CHECK(shown->devices[0].host_resident_bytes == 3 * GiB);
  CHECK(job_record(*shown)["mem_suspended_bytes"] == 3 * GiB);

  // A second suspend is a no-op that says so.
  auto again = registry.suspend(SuspendRequest{"train"}, caller(kAlice), kNow, &reason);
  REQUIRE(again.ok());
  CHECK(again->note == "already suspended");
  CHECK(job_record(*again)["note"] == "already suspended");
}

TEST_CASE("resume withdraws the request and lets launches go once the job is back",
          "[coord][suspend]") {
  Registry registry({});
  Process& job = add_job(registry, "train", kAlice, 100);
  std::string reason;
  REQUIRE(registry.suspend(SuspendRequest{"1"}, caller(kAlice), kNow, &reason).ok());
  telemetry_of(job).suspend_state = kSuspendSuspended;
  auto resumed = registry.pause(PauseRequest{"1", false}, caller(kAlice), kNow, &reason);
  REQUIRE(resumed.ok());
  CHECK(resumed->state == "resuming");
  CHECK_FALSE(job.block->suspend_requested());
  CHECK(job.block->paused());  // held until the memory is back

  std::vector<std::string> notes;
  auto note = [&](const std::string& line) { notes.push_back(line); };
  suspend_tick(registry, note);
  CHECK(job.block->paused());  // the job has not reported yet
  telemetry_of(job).suspend_state = kSuspendRunning;
  suspend_tick(registry, note);
  CHECK_FALSE(job.block->paused());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "job 1 'train' resumed");
  CHECK((*registry.show("1", kNow, &reason)).state == "running");

  // Resuming a running job changes nothing and says so.
  auto noop = registry.pause(PauseRequest{"1", false}, caller(kAlice), kNow, &reason);
  REQUIRE(noop.ok());
  CHECK(noop->note == "not paused or suspended: nothing to resume");
}

TEST_CASE("a job holding memory that cannot move is refused and left as it was",
          "[coord][suspend]") {
  Registry registry({});
  Process& job = add_job(registry, "train", kAlice, 100);
  telemetry_of(job).suspend_blockers = kBlocksArrays | kBlocksPlain;
  std::string reason;
  auto refused = registry.suspend(SuspendRequest{"train"}, caller(kAlice), kNow, &reason);
  REQUIRE_FALSE(refused.ok());
  CHECK(reason == kReasonNotSuspendable);
  CHECK(refused.error().message ==
        "job 1 'train' cannot be suspended: it holds CUDA arrays, plain device memory not "
        "allocated suspendable (start it with gpushare-run --suspendable)");
  CHECK_FALSE(job.block->paused());
  CHECK_FALSE(job.block->suspend_requested());
}

TEST_CASE("a suspend the job itself refuses is withdrawn and unpaused by the tick",
          "[coord][suspend]") {
  Registry registry({});
  Process& job = add_job(registry, "train", kAlice, 100);
  std::string reason;
  REQUIRE(registry.suspend(SuspendRequest{"train"}, caller(kAlice), kNow, &reason).ok());
  // An IPC export between the check and the request.
  telemetry_of(job).suspend_blockers = kBlocksIpc;
  telemetry_of(job).suspend_state = kSuspendRefused;
  std::vector<std::string> notes;
  suspend_tick(registry, [&](const std::string& line) { notes.push_back(line); });
  CHECK_FALSE(job.block->paused());
  CHECK_FALSE(job.block->suspend_requested());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "suspend of job 1 'train' refused by the job: memory exported by cuIpcGetMemHandle");
  CHECK(job_record(*registry.show("train", kNow, &reason))["suspend_refused"] ==
        "memory exported by cuIpcGetMemHandle");
}

TEST_CASE("suspend of an unknown job or another user's job changes nothing", "[coord][suspend]") {
  Registry registry({});
  Process& job = add_job(registry, "train", kAlice, 100);
  std::string reason;
  auto unknown = registry.suspend(SuspendRequest{"nope"}, caller(kAlice), kNow, &reason);
  REQUIRE_FALSE(unknown.ok());
  CHECK(reason == kReasonUnknownJob);
  auto denied = registry.suspend(SuspendRequest{"1"}, caller(kBob), kNow, &reason);
  REQUIRE_FALSE(denied.ok());
  CHECK(reason == kReasonDenied);
  CHECK_FALSE(job.block->paused());
  CHECK_FALSE(job.block->suspend_requested());
}

TEST_CASE("a pause during a resume holds the job once its memory is back", "[coord][suspend]") {
  Registry registry({});
  Process& job = add_job(registry, "train", kAlice, 100);
  std::string reason;
  REQUIRE(registry.suspend(SuspendRequest{"1"}, caller(kAlice), kNow, &reason).ok());
  telemetry_of(job).suspend_state = kSuspendSuspended;
  REQUIRE(registry.pause(PauseRequest{"1", false}, caller(kAlice), kNow, &reason).ok());
  REQUIRE(registry.pause(PauseRequest{"1", true}, caller(kAlice), kNow, &reason).ok());
  telemetry_of(job).suspend_state = kSuspendRunning;
  suspend_tick(registry, [](const std::string&) {});
  CHECK(job.block->paused());
  CHECK((*registry.show("1", kNow, &reason)).state == "paused");
}

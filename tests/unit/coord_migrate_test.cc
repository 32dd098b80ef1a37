// The registry's side of the driver's process checkpoint
// (memory/checkpoint_jobs.cc) and the migrate message.
#include <catch2/catch.hpp>
#include <variant>

#include "coord/contract/protocol.h"
#include "coord/server/registry/registry.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;
constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;

Caller peer(pid_t pid, uid_t uid) {
  Caller c;
  c.pid = pid;
  c.uid = uid;
  c.gid = uid;
  return c;
}

// A job seeing two GPUs, with limits that differ per GPU.
RegisterRequest two_gpus(const std::string& name) {
  RegisterRequest r;
  r.name = name;
  r.qos = kQosProduction;
  r.devices.push_back({"GPU-a", 16 * GiB, 4 * GiB, 4 * GiB});
  r.devices.push_back({"GPU-b", 16 * GiB, 6 * GiB, 6 * GiB});
  return r;
}

const JobDeviceView& device(const JobView& view, const std::string& uuid) {
  for (const JobDeviceView& d : view.devices) {
    if (d.uuid == uuid) return d;
  }
  FAIL("no device " << uuid);
  return view.devices.front();
}

}  // namespace

TEST_CASE("a migrate request parses and encodes", "[coord][protocol][migrate]") {
  Result<Request> parsed =
      parse_request(R"({"kind":"migrate","version":1,"job":"train","to":"GPU-1234"})");
  REQUIRE(parsed.ok());
  const auto* migrate = std::get_if<MigrateRequest>(&*parsed);
  REQUIRE(migrate != nullptr);
  CHECK(migrate->job == "train");
  CHECK(migrate->to == "GPU-1234");
  CHECK(encode_request(*migrate) ==
        "{\"kind\":\"migrate\",\"version\":1,\"job\":\"train\",\"to\":\"GPU-1234\"}\n");
  CHECK_FALSE(parse_request(R"({"kind":"migrate","version":1,"job":"train"})").ok());
  CHECK_FALSE(parse_request(R"({"kind":"migrate","version":1,"job":"train","to":7})").ok());
}

TEST_CASE("a job under checkpoint work shows it, and a migration moves it and its limits",
          "[coord][registry][migrate]") {
  Registry registry({});
  auto added = registry.add(two_gpus("train"), peer(100, kAlice));
  REQUIRE(added.ok());
  Process* process = *added;
  std::uint64_t id = process->job_id;
  CHECK(process->block->mem_limit(0) == 4 * GiB);

  registry.begin_checkpoint_work(id, CheckpointWork::kMigrating);
  JobView moving = *registry.show("train", 0, nullptr);
  CHECK(moving.state == "migrating");

  SECTION("done: each ordinal now names the other GPU, the limit follows the memory") {
    registry.end_checkpoint_work(id, "GPU-a", "GPU-b", 42, "");
    JobView after = *registry.show("train", 0, nullptr);
    CHECK(after.state == "running");
    CHECK(after.migration_ms == 42);
    CHECK(after.checkpoint_error.empty());
    REQUIRE(registry.process(process->key)->devices[0].uuid == "GPU-b");
    CHECK(registry.process(process->key)->devices[1].uuid == "GPU-a");
    // Ordinal 0 held the job's memory under GPU-a's 4 GiB limit: it keeps
    // it, now under GPU-b's name.
    CHECK(device(after, "GPU-b").mem_limit_bytes == 4 * GiB);
    CHECK(device(after, "GPU-a").mem_limit_bytes == 6 * GiB);
    CHECK(process->block->mem_limit(0) == 4 * GiB);
    CHECK(process->block->mem_limit(1) == 6 * GiB);
  }
  SECTION("refused by the driver: nothing moves, the error is shown") {
    registry.end_checkpoint_work(id, "GPU-a", "GPU-b", 42, "the driver refused");
    JobView after = *registry.show("train", 0, nullptr);
    CHECK(after.state == "running");
    CHECK(after.checkpoint_error == "the driver refused");
    CHECK(after.migration_ms == -1);
    CHECK(registry.process(process->key)->devices[0].uuid == "GPU-a");
    CHECK(device(after, "GPU-a").mem_limit_bytes == 4 * GiB);
  }
}

TEST_CASE("a job suspended through the checkpoint shows suspended with all its memory away",
          "[coord][registry][migrate]") {
  Registry registry({});
  auto added = registry.add(two_gpus("train"), peer(100, kAlice));
  REQUIRE(added.ok());
  Process* process = *added;
  // The job's own page (the test writes it as the job would).
  auto& telemetry = const_cast<TelemetryPage&>(process->block->telemetry());
  telemetry.devices[0].mem_used_bytes.store(3 * GiB);
  std::uint64_t id = process->job_id;
  registry.begin_checkpoint_work(id, CheckpointWork::kSuspending);
  CHECK(registry.show("train", 0, nullptr)->state == "suspending");
  registry.end_checkpoint_work(id, "", "", 5, "");
  JobView suspended = *registry.show("train", 0, nullptr);
  CHECK(suspended.state == "suspended");
  CHECK(suspended.suspend_path == "checkpoint");
  CHECK(device(suspended, "GPU-a").suspended_bytes == 3 * GiB);
  CHECK(device(suspended, "GPU-a").host_resident_bytes == 3 * GiB);
  registry.begin_checkpoint_work(id, CheckpointWork::kResuming);
  CHECK(registry.show("train", 0, nullptr)->state == "resuming");

  SECTION("resumed") {
    registry.end_checkpoint_work(id, "", "", 5, "");
    JobView running = *registry.show("train", 0, nullptr);
    CHECK(running.state == "running");
    CHECK(device(running, "GPU-a").suspended_bytes == 0);
  }
  SECTION("a resume the driver refused leaves it suspended, saying why") {
    registry.end_checkpoint_work(id, "", "", 5, "no room");
    JobView still = *registry.show("train", 0, nullptr);
    CHECK(still.state == "suspended");
    CHECK(still.checkpoint_error == "no room");
  }
}

TEST_CASE("only its owner (or root) may have a job checkpointed", "[coord][registry][migrate]") {
  Registry registry({});
  REQUIRE(registry.add(two_gpus("train"), peer(100, kAlice)).ok());
  std::string reason;
  CHECK(registry.find_for("train", peer(1, kAlice), &reason).ok());
  Result<const Job*> bob = registry.find_for("1", peer(1, kBob), &reason);
  CHECK_FALSE(bob.ok());
  CHECK(reason == kReasonDenied);
  CHECK(registry.find_for("1", peer(1, 0), &reason).ok());
  CHECK_FALSE(registry.find_for("nosuch", peer(1, kAlice), &reason).ok());
}

// Jobs counted only on the GPUs they use (registry.h, counts_on;
// control_block.h, "The GPUs a process uses"): a process that sees two GPUs
// is counted where it holds a context or memory, by the node view, the
// compute loop and the host pause, and a migration moves the count with its
// memory.
#include <catch2/catch.hpp>

#include "coord/server/compute/compute_loop.h"
#include "coord/server/memory/host_pause.h"
#include "coord/server/registry/registry.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t GiB = 1ull << 30;

RegisterRequest two_gpus(const std::string& name, std::uint32_t qos) {
  RegisterRequest r;
  r.name = name;
  r.qos = qos;
  r.devices.push_back({"GPU-a", 16 * GiB, kNoLimit, kNoLimit});
  r.devices.push_back({"GPU-b", 16 * GiB, kNoLimit, kNoLimit});
  return r;
}

Caller peer(pid_t pid) {
  Caller c;
  c.pid = pid;
  c.uid = 1000;
  c.gid = 1000;
  return c;
}

TelemetryPage& page(const Process& process) {
  return const_cast<TelemetryPage&>(process.block->telemetry());
}

// What the interposer publishes: contexts and bytes on a device.
void hold(const Process& process, int device, std::uint64_t contexts, std::uint64_t bytes) {
  page(process).devices[device].contexts.store(contexts);
  page(process).devices[device].mem_used_bytes.store(bytes);
}

// What a job's client thread does every tick.
void publish(const Process& job, std::uint64_t now, std::uint64_t launches,
             std::uint64_t iterations) {
  page(job).launches.store(launches);
  page(job).iterations.store(iterations);
  page(job).last_iteration_ns.store(now - 5 * kMs);
  page(job).heartbeat_ns.store(now);
}

std::uint64_t device_jobs(const NodeView& node, const std::string& uuid, std::uint32_t qos) {
  for (const DeviceView& d : node.devices) {
    if (d.uuid == uuid) return qos == kQosOpportunistic ? d.opportunistic.jobs : d.production.jobs;
  }
  return ~0ull;
}

bool limited(const ComputeLimits& limits) { return limits.any(); }

}  // namespace

TEST_CASE("a process counts on the GPUs where it holds a context or memory",
          "[coord][registry][devices]") {
  Registry registry{Policy{}};
  Process* p = *registry.add(two_gpus("train", kQosProduction), peer(10));

  // Nothing held yet: held everywhere it may start.
  CHECK(counts_on(*p, 0));
  CHECK(counts_on(*p, 1));
  CHECK(first_counted(*p) == 0);

  // A context on GPU 1 (torch.cuda.set_device(1)): there only.
  hold(*p, 1, 1, 0);
  CHECK(uses_device(*p, 1));
  CHECK_FALSE(uses_device(*p, 0));
  CHECK_FALSE(counts_on(*p, 0));
  CHECK(counts_on(*p, 1));
  CHECK(first_counted(*p) == 1);
  CHECK(device_jobs(registry.node(0), "GPU-a", kQosProduction) == 0);
  CHECK(device_jobs(registry.node(0), "GPU-b", kQosProduction) == 1);
  // Its record names the GPU it uses first (ls's `device`).
  std::string reason;
  CHECK(registry.show("train", 0, &reason)->devices.at(0).uuid == "GPU-b");
  CHECK(registry.show("train", 0, &reason)->devices.size() == 2);

  // Memory alone counts too (a context the interposer could not count).
  hold(*p, 1, 0, 0);
  hold(*p, 0, 0, GiB);
  CHECK(counts_on(*p, 0));
  CHECK_FALSE(counts_on(*p, 1));

  // Both: counted on both.
  hold(*p, 1, 2, 0);
  CHECK(counts_on(*p, 0));
  CHECK(counts_on(*p, 1));

  // Out of range: never.
  CHECK_FALSE(counts_on(*p, 2));
  CHECK_FALSE(uses_device(*p, kMaxDevices));
}

TEST_CASE("an opportunistic job on another GPU than production runs free",
          "[coord][compute][devices]") {
  Registry registry{Policy{}};
  Process* prod = *registry.add(two_gpus("prod", kQosProduction), peer(10));
  Process* opp = *registry.add(two_gpus("opp", kQosOpportunistic), peer(11));
  hold(*prod, 0, 1, GiB);  // production on GPU-a

  // The loop against production on GPU-a for a second; `opp_device` is
  // where the opportunistic job runs.
  auto run = [&](int opp_device) {
    hold(*opp, 0, 0, 0);
    hold(*opp, 1, 0, 0);
    hold(*opp, opp_device, 1, GiB);
    ComputeLoop loop(ComputePolicy::kGpushare);
    std::uint64_t now = 1000 * kMs;
    for (int tick = 0; tick < 40; ++tick) {
      now += 25 * kMs;
      publish(*prod, now, 4 * (tick + 1), tick + 1);  // 40 iterations/s
      publish(*opp, now, 10 * (tick + 1), 0);
      loop.tick(registry, now);
    }
  };

  SECTION("beside production on GPU-a: held") {
    run(0);
    CHECK(limited(opp->block->compute(0)));
    CHECK(opp->compute_phase != "free");
  }
  SECTION("on GPU-b, which production sees but does not use: free") {
    run(1);
    CHECK_FALSE(limited(opp->block->compute(1)));
    CHECK(opp->compute_phase == "free");  // its view follows the GPU it uses
  }
  CHECK_FALSE(limited(prod->block->compute(0)));
}

TEST_CASE("a migration moves a process's count with its memory", "[coord][registry][devices]") {
  Registry registry{Policy{}};
  Process* opp = *registry.add(two_gpus("opp", kQosOpportunistic), peer(11));
  hold(*opp, 0, 1, GiB);  // on GPU-a, its CUdevice 0
  CHECK(device_jobs(registry.node(0), "GPU-a", kQosOpportunistic) == 1);
  CHECK(device_jobs(registry.node(0), "GPU-b", kQosOpportunistic) == 0);

  registry.begin_checkpoint_work(opp->job_id, CheckpointWork::kMigrating);
  registry.end_checkpoint_work(opp->job_id, "GPU-a", "GPU-b", 40, "");
  // The driver swapped the GPUs under its ordinals: its CUdevice 0, where
  // its context and memory are, is GPU-b now.
  REQUIRE(opp->devices[0].uuid == "GPU-b");
  CHECK(counts_on(*opp, 0));
  CHECK_FALSE(counts_on(*opp, 1));
  CHECK(device_jobs(registry.node(0), "GPU-a", kQosOpportunistic) == 0);
  CHECK(device_jobs(registry.node(0), "GPU-b", kQosOpportunistic) == 1);
  std::string reason;
  CHECK(registry.show("opp", 0, &reason)->devices.at(0).uuid == "GPU-b");
}

TEST_CASE("the host pause holds an opportunistic job only beside production's GPU",
          "[coord][memory][devices]") {
  Registry registry{Policy{}};
  Process* prod = *registry.add(two_gpus("prod", kQosProduction), peer(10));
  Process* opp = *registry.add(two_gpus("opp", kQosOpportunistic), peer(11));
  hold(*prod, 0, 1, 3 * GiB);  // production active on GPU-a
  page(*prod).launches.store(10);
  // The opportunistic job mostly on the host, on GPU `device`.
  auto spilled_on = [&](int device) {
    for (int i = 0; i < 2; ++i) {
      hold(*opp, i, 0, 0);
      page(*opp).device_resident_bytes[i].store(0);
      page(*opp).host_resident_bytes[i].store(0);
    }
    hold(*opp, device, 1, GiB);
    page(*opp).device_resident_bytes[device].store(GiB / 4);
    page(*opp).host_resident_bytes[device].store(3 * GiB / 4);
  };
  HostPauser pauser(true);
  std::uint64_t now = 1000 * kMs;
  pauser.tick(registry, now);

  spilled_on(1);  // moved to GPU-b, its restore not done yet
  page(*prod).launches.store(20);
  pauser.tick(registry, now += 25 * kMs);
  CHECK_FALSE(opp->block->paused());

  spilled_on(0);  // beside production
  page(*prod).launches.store(30);
  pauser.tick(registry, now += 25 * kMs);
  CHECK(opp->block->pause_reasons() == kPauseHostMemory);
}

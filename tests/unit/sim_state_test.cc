#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "simgpu/state.h"

using namespace gpushare::simgpu;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// A private state file in a temporary directory, removed afterwards.
struct TempState {
  char directory[64];
  SimConfig config{};
  StateFile file;

  TempState(std::uint64_t memory_bytes = 8 * kGiB, int devices = 1) {
    std::snprintf(directory, sizeof directory, "/tmp/gpushare-sim-test.XXXXXX");
    REQUIRE(mkdtemp(directory) != nullptr);
    std::snprintf(config.state_path, sizeof config.state_path, "%s/state", directory);
    config.device_count = devices;
    for (auto& device : config.devices) device = {memory_bytes, 0, 108};
    config.migrate_bytes_per_s = 1 * kGiB;
    config.link_bytes_per_s = 25'000'000'000;
    config.link_latency_ns = 5000;
    config.local_bytes_per_s = 800'000'000'000;
    config.evict = true;
    config.managed_slowdown_milli = 4000;
    config.timeslice_ns = 1000;  // 1 us slices, 100 ns switches: small numbers by hand
    config.switch_ns = 100;
  }
  ~TempState() {
    file.close();
    std::remove(config.state_path);
    rmdir(directory);
  }
  std::string open_error() {
    char error[512] = "";
    StateFile other;
    bool ok = other.open(config, error, sizeof error);
    other.close();
    return ok ? "" : error;
  }
  StateLayout* open() {
    char error[512] = "";
    INFO(error);
    REQUIRE(file.open(config, error, sizeof error));
    return file.layout();
  }
};

// A child that just waits to be killed.
pid_t spawn_sleeper() {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

bool always_alive(std::int32_t, std::uint64_t) { return true; }

}  // namespace

TEST_CASE("a new state file is initialised from the configuration and reopens", "[sim]") {
  TempState state(8 * kGiB, 2);
  StateLayout* layout = state.open();
  CHECK(layout->header.device_count == 2);
  CHECK(layout->devices[1].memory_bytes == 8 * kGiB);
  CHECK(state.open_error().empty());
  char error[128];
  CHECK(validate_layout(layout, error, sizeof error));
}

TEST_CASE("a foreign, truncated, outdated or corrupt state file is refused by name", "[sim]") {
  TempState state;
  SECTION("foreign") {
    std::ofstream(state.config.state_path) << "hello, I am somebody else's file\n";
    std::string error = state.open_error();
    CHECK(error.find(state.config.state_path) != std::string::npos);
    CHECK(error.find("is not a gpushare simulated GPU state file") != std::string::npos);
  }
  SECTION("truncated") {
    state.open();
    state.file.close();
    REQUIRE(truncate(state.config.state_path, 4096) == 0);
    CHECK(state.open_error().find("is truncated or corrupt") != std::string::npos);
  }
  SECTION("another layout version") {
    state.open()->header.layout_version = kStateLayoutVersion + 1;
    state.file.close();
    std::string want = "has state layout version " + std::to_string(kStateLayoutVersion + 1) +
                       ", but this simulator reads version " + std::to_string(kStateLayoutVersion);
    CHECK(state.open_error().find(want) != std::string::npos);
  }
  SECTION("impossible contents") {
    state.open()->header.device_count = 99;
    state.file.close();
    CHECK(state.open_error().find("corrupt state (device count out of range)") !=
          std::string::npos);
  }
  SECTION("a scheduler model indexing out of bounds") {
    state.open()->devices[0].sched.pending_count = kSchedPending + 1;
    state.file.close();
    CHECK(state.open_error().find("corrupt state (inconsistent scheduler model)") !=
          std::string::npos);
  }
  SECTION("a directory") {
    std::snprintf(state.config.state_path, sizeof state.config.state_path, "%s", state.directory);
    CHECK(state.open_error().find("cannot open") != std::string::npos);
  }
}

TEST_CASE("charges from two processes share one capacity", "[sim]") {
  TempState state(8 * kGiB);
  StateLayout* layout = state.open();
  int a = attach_process(layout, 1000001, 1, "a");
  int b = attach_process(layout, 1000002, 1, "b");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  CHECK(charge(layout, a, 0, 6 * kGiB));
  CHECK_FALSE(charge(layout, b, 0, 4 * kGiB));  // cross-process out of memory
  CHECK(device_used(layout, 0) == 6 * kGiB);
  CHECK(charge(layout, b, 0, 2 * kGiB));
  CHECK_FALSE(charge(layout, b, 0, 1));
  uncharge(layout, a, 0, 6 * kGiB);
  CHECK(charge(layout, b, 0, 4 * kGiB));
  CHECK(process_used(layout, b, 0) == 6 * kGiB);
  CHECK_FALSE(charge(layout, a, 0, 9 * kGiB));  // more than the device
  detach_process(layout, b);
  CHECK(device_used(layout, 0) == 0);
}

TEST_CASE("a SIGKILLed or zombie process's memory is reclaimed, a live one's kept", "[sim]") {
  TempState state;
  StateLayout* layout = state.open();
  pid_t reaped = spawn_sleeper();
  pid_t zombie = spawn_sleeper();
  pid_t alive = spawn_sleeper();
  int slots[3];
  pid_t pids[3] = {reaped, zombie, alive};
  for (int i = 0; i < 3; ++i) {
    slots[i] = attach_process(layout, pids[i], process_start_ticks(pids[i]), "child");
    REQUIRE(charge(layout, slots[i], 0, kGiB));
  }
  CHECK(reclaim_dead(layout, process_alive) == 0);
  kill(reaped, SIGKILL);
  waitpid(reaped, nullptr, 0);
  kill(zombie, SIGKILL);
  // Not reaped yet: a zombie, which holds no memory any more.
  siginfo_t info;
  waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT);
  CHECK(reclaim_dead(layout, process_alive) == 2);
  CHECK(device_used(layout, 0) == kGiB);
  CHECK(layout->processes[slots[2]].pid == alive);
  kill(alive, SIGKILL);
  waitpid(alive, nullptr, 0);
  waitpid(zombie, nullptr, 0);
}

TEST_CASE("a reused pid is not taken for the process that had it", "[sim]") {
  TempState state;
  StateLayout* layout = state.open();
  int slot = attach_process(layout, getpid(), process_start_ticks(getpid()) + 1, "earlier");
  REQUIRE(charge(layout, slot, 0, kGiB));
  CHECK(reclaim_dead(layout, process_alive) == 1);
  CHECK(device_used(layout, 0) == 0);
}

TEST_CASE("the lock survives its holder's death and reclaims its memory", "[sim]") {
  TempState state;
  StateLayout* layout = state.open();
  pid_t child = fork();
  if (child == 0) {
    StateFile mine;
    char error[256];
    if (!mine.open(state.config, error, sizeof error) || !mine.lock(error, sizeof error)) _exit(2);
    int slot = attach_process(mine.layout(), getpid(), process_start_ticks(getpid()), "dying");
    charge(mine.layout(), slot, 0, 3 * kGiB);
    _exit(0);  // dies holding the lock
  }
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK(device_used(layout, 0) == 3 * kGiB);
  char error[256] = "";
  REQUIRE(state.file.lock(error, sizeof error));
  CHECK(device_used(layout, 0) == 0);
  state.file.unlock();
}

TEST_CASE("the state file holds one scheduler model per device, contexts being slots", "[sim]") {
  TempState state(8 * kGiB, 2);
  StateLayout* layout = state.open();
  for (int d = 0; d < 2; ++d) {
    const SchedModel& model = layout->devices[d].sched;
    CHECK(model.policy == SchedPolicy::kTimeslice);
    CHECK(model.slice_ns == 1000);
    CHECK(model.switch_ns == 100);
  }
  CHECK(config_matches(layout, state.config));
  state.config.sched_policy = 1;  // fifo: a different device
  CHECK_FALSE(config_matches(layout, state.config));
  reconfigure(layout, state.config);
  CHECK(layout->devices[1].sched.policy == SchedPolicy::kFifo);
  CHECK(config_matches(layout, state.config));
}

TEST_CASE("a released slot's unfinished kernels are dropped and its busy time forgotten", "[sim]") {
  TempState state;
  StateLayout* layout = state.open();
  int a = attach_process(layout, 1000001, 1, "a");
  int b = attach_process(layout, 1000002, 1, "b");
  SchedModel* model = &layout->devices[0].sched;
  std::int64_t t0 = model->now_ns;
  // a: 0-1000, switch 1000-1100, b 1100-1600 (done), switch, a 1700-...
  std::uint64_t a1 = sched_launch(model, a, t0, 10'000'000'000);
  std::uint64_t b1 = sched_launch(model, b, t0, 500);
  sched_advance(model, t0 + 2000);
  CHECK(sched_end(*model, b1) == t0 + 1600);
  CHECK(sched_busy_between(*model, t0, t0 + 2000, a) == 1300);
  CHECK(sched_busy_between(*model, t0, t0 + 2000, b) == 500);
  detach_process(layout, a);  // a goes with most of its 10 s kernel left
  CHECK(model->pending_count == 0);
  CHECK(sched_finished(*model, a, a1));
  CHECK(model->busy_ns[a] == 0);
  CHECK(sched_busy_between(*model, t0, t0 + 2000, a) == 0);  // not a new owner's
  CHECK(sched_busy_between(*model, t0, t0 + 2000) == 1800);  // still the device's
  CHECK(model->busy_total_ns >= 1800);
  int again = attach_process(layout, 1000003, 1, "c");
  CHECK(again == a);
  std::int64_t at = model->now_ns;
  std::uint64_t c1 = sched_launch(model, again, at, 100);
  sched_advance(model, at + 1000);
  CHECK(sched_end(*model, c1) == at + 100);  // nothing of a's left to wait for
  detach_process(layout, b);
  detach_process(layout, again);
}

TEST_CASE("managed memory lives on the device as far as it fits, and is evicted first", "[sim]") {
  TempState state(8 * kGiB);
  StateLayout* layout = state.open();
  int a = attach_process(layout, 1000001, 1, "a");
  int b = attach_process(layout, 1000002, 1, "b");
  REQUIRE(charge(layout, a, 0, 2 * kGiB));
  int pinned = managed_add(layout, b, 0, 7, 3 * kGiB, kManagedPreferDevice, 1, true);
  int loose = managed_add(layout, b, 0, 8, 4 * kGiB, 0, 1, true);
  REQUIRE(pinned >= 0);
  REQUIRE(loose >= 0);
  CHECK(layout->managed[pinned].resident_bytes == 3 * kGiB);
  CHECK(layout->managed[loose].resident_bytes == 3 * kGiB);  // only 3 GiB were free
  CHECK(device_used(layout, 0) == 8 * kGiB);
  std::uint64_t total = 0, host = 0;
  managed_totals(layout, 1000002, 0, 1, &total, &host);
  CHECK(total == 7 * kGiB);
  CHECK(host == kGiB);

  // A plain allocation of A evicts B's memory that does not prefer the device first.
  std::uint64_t generation = layout->devices[0].managed_generation;
  REQUIRE(charge(layout, a, 0, 4 * kGiB));
  CHECK(layout->managed[loose].resident_bytes == 0);
  CHECK(layout->managed[pinned].resident_bytes == 2 * kGiB);
  CHECK(layout->devices[0].managed_generation > generation);
  CHECK_FALSE(charge(layout, a, 0, 3 * kGiB));  // even evicting everything is not enough
  CHECK(layout->managed[pinned].resident_bytes == 2 * kGiB);  // and a refusal evicts nothing

  // Prefetching back evicts only memory that does not prefer the device.
  uncharge(layout, a, 0, 4 * kGiB);
  CHECK(managed_migrate(layout, loose, 4 * kGiB, true) == 4 * kGiB);
  CHECK(managed_migrate(layout, pinned, kGiB, true) == kGiB);  // at the loose one's expense
  CHECK(layout->managed[loose].resident_bytes == 3 * kGiB);
  CHECK(managed_migrate(layout, loose, 4 * kGiB, true) == 0);  // the rest prefers the device
  CHECK(managed_migrate(layout, loose, kGiB, false) == kGiB);
  CHECK(layout->managed[loose].resident_bytes == 2 * kGiB);

  detach_process(layout, b);
  CHECK(layout->header.managed_high_water == 0);
  CHECK(device_used(layout, 0) == 2 * kGiB);
  CHECK(managed_find(layout, loose, 1000002, 8) == nullptr);
}

TEST_CASE("eviction takes memory preferring the host first and the device last", "[sim]") {
  TempState state(8 * kGiB);
  StateLayout* layout = state.open();
  int a = attach_process(layout, 1000001, 1, "a");
  int b = attach_process(layout, 1000002, 1, "b");
  int device = managed_add(layout, b, 0, 1, 2 * kGiB, kManagedPreferDevice, 1, true);
  int none = managed_add(layout, b, 0, 2, 2 * kGiB, 0, 1, true);
  int host = managed_add(layout, b, 0, 3, 2 * kGiB, kManagedPreferHost, 1, true);
  REQUIRE(device_free(layout, 0) == 2 * kGiB);
  std::uint64_t evicted = 0;
  REQUIRE(charge(layout, a, 0, 3 * kGiB, &evicted));  // 1 GiB short
  CHECK(evicted == kGiB);
  CHECK(layout->managed[host].resident_bytes == kGiB);
  REQUIRE(charge(layout, a, 0, 2 * kGiB, &evicted));
  CHECK(evicted == 2 * kGiB);
  CHECK(layout->managed[host].resident_bytes == 0);
  CHECK(layout->managed[none].resident_bytes == kGiB);
  CHECK(layout->managed[device].resident_bytes == 2 * kGiB);
  REQUIRE(charge(layout, a, 0, 2 * kGiB, &evicted));
  CHECK(evicted == 2 * kGiB);
  CHECK(layout->managed[none].resident_bytes == 0);
  CHECK(layout->managed[device].resident_bytes == kGiB);
  CHECK(device_free(layout, 0) == 0);

  // A prefetch to the device moves only what fits when the rest prefers the device.
  uncharge(layout, a, 0, kGiB);
  CHECK(managed_migrate(layout, host, 2 * kGiB, true, &evicted) == kGiB);
  CHECK(evicted == 0);
  CHECK(managed_migrate(layout, device, 2 * kGiB, true, &evicted) == kGiB);
  CHECK(evicted == kGiB);  // at the host-preferring record's expense
  CHECK(layout->managed[host].resident_bytes == 0);
}

TEST_CASE("with eviction off an allocation that does not fit fails and moves nothing", "[sim]") {
  TempState state(8 * kGiB);
  state.config.evict = false;
  StateLayout* layout = state.open();
  int a = attach_process(layout, 1000001, 1, "a");
  int b = attach_process(layout, 1000002, 1, "b");
  int loose = managed_add(layout, b, 0, 1, 6 * kGiB, 0, 1, true);
  std::uint64_t evicted = 1;
  CHECK_FALSE(charge(layout, a, 0, 4 * kGiB, &evicted));
  CHECK(evicted == 0);
  CHECK(layout->managed[loose].resident_bytes == 6 * kGiB);
  // Once its owner moves it to the host, the room is there.
  CHECK(managed_migrate(layout, loose, 2 * kGiB, false) == 2 * kGiB);
  CHECK(charge(layout, a, 0, 4 * kGiB, &evicted));
  CHECK(evicted == 0);
  // Bringing it back needs room: none is left.
  CHECK(managed_migrate(layout, loose, 2 * kGiB, true) == 0);
}

TEST_CASE("only an idle device is reconfigured", "[sim]") {
  TempState state(8 * kGiB);
  StateLayout* layout = state.open();
  SimConfig bigger = state.config;
  for (auto& device : bigger.devices) device.memory_bytes = 16 * kGiB;
  CHECK(config_matches(layout, state.config));
  CHECK_FALSE(config_matches(layout, bigger));
  reconfigure(layout, bigger);
  CHECK(layout->devices[0].memory_bytes == 16 * kGiB);
  CHECK(live_process_count(layout) == 0);
  attach_process(layout, 1000001, 1, "a");
  CHECK(live_process_count(layout) == 1);
  CHECK(reclaim_dead(layout, always_alive) == 0);
}

TEST_CASE("simulated device UUIDs are stable, distinct and version 4", "[sim]") {
  std::uint8_t a[16], b[16], again[16];
  device_uuid(0, a);
  device_uuid(1, b);
  device_uuid(0, again);
  CHECK(std::memcmp(a, again, 16) == 0);
  CHECK(std::memcmp(a, b, 16) != 0);
  CHECK((a[6] >> 4) == 4);
  CHECK((a[8] & 0xc0) == 0x80);
}

TEST_CASE("indices scribbled over in a live state file are clamped, not followed", "[sim]") {
  TempState state;
  StateLayout* layout = state.open();
  int slot = attach_process(layout, 1000001, 1, "a");
  layout->header.managed_high_water = 999999;
  layout->managed[kMaxManaged - 1] = ManagedRecord{1000001, 77, 1, 100, 50, 0, 0};
  CHECK(device_used(layout, 0) == 0);  // the record's device is out of range
  detach_process(layout, slot);
  CHECK(layout->header.managed_high_water == 0);
}

TEST_CASE("CUDA_VISIBLE_DEVICES picks and orders devices as the driver does", "[sim]") {
  int visible[kMaxDevices];
  auto parse = [&](const char* text) {
    int count = parse_visible_devices(text, 3, visible);
    std::string list;
    for (int i = 0; i < count; ++i) list += std::to_string(visible[i]) + " ";
    return list;
  };
  CHECK(parse(nullptr) == "0 1 2 ");
  CHECK(parse("") == "");
  CHECK(parse("2,0") == "2 0 ");
  CHECK(parse(" 1 , 0") == "1 0 ");
  CHECK(parse("1,5,0") == "1 ");  // the list ends at the first device that does not exist
  CHECK(parse("1,1,0") == "1 ");  // ... or repeats
  CHECK(parse("x") == "");
  char uuid[48];
  format_device_uuid(2, uuid, sizeof uuid);
  CHECK(parse(uuid) == "2 ");
  std::string prefix = std::string(uuid).substr(0, 10);
  CHECK(parse((prefix + ",0").c_str()) == "2 0 ");
  CHECK(parse("GPU-") == "");  // a prefix of every UUID names none
}

TEST_CASE("a process attaching again (after exec) starts with nothing", "[sim]") {
  TempState state;
  StateLayout* layout = state.open();
  int before = attach_process(layout, 1000001, 5, "before-exec");
  REQUIRE(charge(layout, before, 0, kGiB));
  REQUIRE(managed_add(layout, before, 0, 1, kGiB, 0, 1, true) >= 0);
  int after = attach_process(layout, 1000001, 5, "after-exec");
  CHECK(after >= 0);
  CHECK(device_used(layout, 0) == 0);
  CHECK(live_process_count(layout) == 1);
  CHECK(std::string(layout->processes[after].name) == "after-exec");
}

TEST_CASE("checkpoint requests start only in their state, and a failed process takes none",
          "[sim][checkpoint]") {
  CHECK(checkpoint_op_allowed(kCheckpointRunning, kCheckpointOpLock));
  CHECK(checkpoint_op_allowed(kCheckpointLocked, kCheckpointOpCheckpoint));
  CHECK(checkpoint_op_allowed(kCheckpointLocked, kCheckpointOpUnlock));
  CHECK(checkpoint_op_allowed(kCheckpointCheckpointed, kCheckpointOpRestore));
  for (std::uint32_t op : {kCheckpointOpLock, kCheckpointOpCheckpoint, kCheckpointOpRestore,
                           kCheckpointOpUnlock}) {
    CHECK_FALSE(checkpoint_op_allowed(kCheckpointFailed, op));
  }
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointRunning, kCheckpointOpCheckpoint));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointRunning, kCheckpointOpRestore));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointRunning, kCheckpointOpUnlock));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointLocked, kCheckpointOpLock));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointLocked, kCheckpointOpRestore));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointCheckpointed, kCheckpointOpUnlock));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointCheckpointed, kCheckpointOpCheckpoint));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointRunning, kCheckpointOpNone));
  CHECK_FALSE(checkpoint_op_allowed(kCheckpointRunning, 77));
}

namespace {

UuidPair pair_of(const StateLayout* layout, int from, int to) {
  UuidPair pair;
  std::memcpy(pair.old_uuid, layout->devices[from].uuid, 16);
  std::memcpy(pair.new_uuid, layout->devices[to].uuid, 16);
  return pair;
}

// A process attached as the driver attaches one: seeing `visible`.
int attach_seeing(StateLayout* layout, std::int32_t pid, std::initializer_list<int> visible) {
  int slot = attach_process(layout, pid, 0, "job");
  REQUIRE(slot >= 0);
  ProcessSlot& process = layout->processes[slot];
  process.ordinal_count = 0;
  for (int device : visible) {
    process.ordinal_device[process.ordinal_count++] = static_cast<std::int8_t>(device);
  }
  return slot;
}

}  // namespace

TEST_CASE("a restore's pairs map every device checkpointed once, onto devices it sees",
          "[sim][checkpoint]") {
  TempState state(8 * kGiB, 3);
  StateLayout* layout = state.open();
  int slot = attach_seeing(layout, 4242, {0, 1});
  std::int8_t map[kMaxDevices];

  SECTION("no pairs: each device onto itself") {
    REQUIRE(plan_restore(layout, slot, nullptr, 0, map) == RestorePlan::kOk);
    CHECK(map[0] == 0);
    CHECK(map[1] == 1);
    CHECK(map[2] == -1);
  }
  SECTION("a swap of its two devices") {
    UuidPair pairs[] = {pair_of(layout, 0, 1), pair_of(layout, 1, 0)};
    REQUIRE(plan_restore(layout, slot, pairs, 2, map) == RestorePlan::kOk);
    CHECK(map[0] == 1);
    CHECK(map[1] == 0);
  }
  SECTION("a device missing, named twice, not seen or unknown: invalid") {
    UuidPair one[] = {pair_of(layout, 0, 1)};
    CHECK(plan_restore(layout, slot, one, 1, map) == RestorePlan::kInvalid);
    UuidPair twice[] = {pair_of(layout, 0, 1), pair_of(layout, 1, 1)};
    CHECK(plan_restore(layout, slot, twice, 2, map) == RestorePlan::kInvalid);
    UuidPair unseen[] = {pair_of(layout, 0, 2), pair_of(layout, 1, 0)};
    CHECK(plan_restore(layout, slot, unseen, 2, map) == RestorePlan::kInvalid);
    UuidPair from_unseen[] = {pair_of(layout, 2, 0), pair_of(layout, 1, 1)};
    CHECK(plan_restore(layout, slot, from_unseen, 2, map) == RestorePlan::kInvalid);
    UuidPair bogus = pair_of(layout, 0, 1);
    bogus.new_uuid[3] ^= 0xff;
    UuidPair unknown[] = {bogus, pair_of(layout, 1, 0)};
    CHECK(plan_restore(layout, slot, unknown, 2, map) == RestorePlan::kInvalid);
  }
  SECTION("another chip type (another SM count)") {
    layout->devices[1].sms = 132;
    UuidPair pairs[] = {pair_of(layout, 0, 1), pair_of(layout, 1, 0)};
    CHECK(plan_restore(layout, slot, pairs, 2, map) == RestorePlan::kChipType);
  }
  SECTION("a process seeing one device can only be restored in place") {
    int one = attach_seeing(layout, 4343, {1});
    UuidPair moved[] = {pair_of(layout, 1, 0)};
    CHECK(plan_restore(layout, one, moved, 1, map) == RestorePlan::kInvalid);
    UuidPair same[] = {pair_of(layout, 1, 1)};
    CHECK(plan_restore(layout, one, same, 1, map) == RestorePlan::kOk);
  }
}

TEST_CASE("a checkpoint leaves nothing on the device and a restore charges the target",
          "[sim][checkpoint]") {
  TempState state(8 * kGiB, 2);
  state.config.devices[0].ctx_overhead_bytes = 512ull << 20;
  state.config.devices[1].ctx_overhead_bytes = 512ull << 20;
  StateLayout* layout = state.open();
  int slot = attach_seeing(layout, 4242, {0, 1});
  REQUIRE(charge(layout, slot, 0, 3 * kGiB + (512ull << 20)));
  layout->processes[slot].contexts[0] = 1;
  std::uint64_t data[kMaxDevices] = {};
  checkpoint_release(layout, slot, data);
  CHECK(device_used(layout, 0) == 0);
  CHECK(layout->processes[slot].contexts[0] == 0);
  CHECK(data[0] == 3 * kGiB);  // the context is released, not copied

  SECTION("no room on the target: refused, nothing charged, still restorable") {
    int other = attach_seeing(layout, 4343, {1});
    REQUIRE(charge(layout, other, 1, 5 * kGiB));
    std::int8_t swap[kMaxDevices] = {1, 0, -1, -1, -1, -1, -1, -1};
    CHECK_FALSE(checkpoint_reacquire(layout, slot, swap));
    CHECK(device_used(layout, 1) == 5 * kGiB);
    CHECK(device_used(layout, 0) == 0);
    std::int8_t same[kMaxDevices] = {0, 1, -1, -1, -1, -1, -1, -1};
    REQUIRE(checkpoint_reacquire(layout, slot, same));
    CHECK(device_used(layout, 0) == 3 * kGiB + (512ull << 20));
    CHECK(layout->processes[slot].ordinal_device[0] == 0);
  }
  SECTION("onto the other device: bytes, context and ordinals move") {
    std::int8_t swap[kMaxDevices] = {1, 0, -1, -1, -1, -1, -1, -1};
    REQUIRE(checkpoint_reacquire(layout, slot, swap));
    CHECK(device_used(layout, 0) == 0);
    CHECK(device_used(layout, 1) == 3 * kGiB + (512ull << 20));
    CHECK(layout->processes[slot].contexts[1] == 1);
    CHECK(layout->processes[slot].ordinal_device[0] == 1);
    CHECK(layout->processes[slot].ordinal_device[1] == 0);
    CHECK(layout->processes[slot].saved_bytes[0] == 0);
  }
}

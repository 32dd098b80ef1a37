// A job is the process tree of one gpushare-run: the
// registry groups the processes that prove membership of one tree file.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>

#include "coord/contract/fd_passing.h"
#include "coord/server/registry/registry.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;
using gpushare::Result;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;
constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;
constexpr std::uint64_t kNow = 0;

Caller peer(pid_t pid, uid_t uid) {
  Caller c;
  c.pid = pid;
  c.uid = uid;
  c.gid = uid;
  return c;
}

RegisterRequest request(const std::string& name, std::uint64_t limit = 4 * GiB,
                        const std::string& uuid = "GPU-a") {
  RegisterRequest r;
  r.name = name;
  r.tree = true;
  r.devices.push_back({uuid, 16 * GiB, limit, limit});
  return r;
}

TreeProof tree(std::uint64_t inode, uid_t owner = kAlice) {
  return TreeProof::for_test(64769, inode, owner);
}

void publish_used(const Process& process, std::uint64_t bytes) {
  const_cast<TelemetryPage&>(process.block->telemetry()).devices[0].mem_used_bytes.store(bytes);
}

}  // namespace

TEST_CASE("processes of one tree are one job with all their pids", "[coord][registry][tree]") {
  Registry registry({});
  Process* first = *registry.add(request("train"), peer(100, kAlice), tree(7));
  Process* second = *registry.add(request("train-worker"), peer(101, kAlice), tree(7));
  Process* other = *registry.add(request("eval"), peer(200, kAlice), tree(8));
  CHECK(first->job_id == second->job_id);
  CHECK(first->key != second->key);
  CHECK(other->job_id != first->job_id);
  CHECK(registry.size() == 2);

  auto jobs = registry.list(kNow);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].name == "train");  // the first process names the job
  CHECK(jobs[0].pid == 100);
  CHECK(jobs[0].pids == std::vector<std::int64_t>{100, 101});
  CHECK(jobs[1].pids == std::vector<std::int64_t>{200});
  // Either pid selects the job.
  std::string reason;
  CHECK(registry.show("101", kNow, &reason)->id == first->job_id);
  CHECK(registry.node(kNow).devices[0].production.jobs == 2);
}

TEST_CASE("a job's usage is summed over its processes", "[coord][registry][tree]") {
  Registry registry({});
  Process* first = *registry.add(request("train", 1 * GiB), peer(100, kAlice), tree(7));
  Process* second = *registry.add(request("train", 1 * GiB), peer(101, kAlice), tree(7));
  publish_used(*first, 768u << 20);
  publish_used(*second, 256u << 20);
  const_cast<TelemetryPage&>(first->block->telemetry()).launches.store(5);
  const_cast<TelemetryPage&>(second->block->telemetry()).launches.store(7);
  JobView view = registry.list(kNow).at(0);
  CHECK(view.devices.at(0).mem_used_bytes == 1 * GiB);
  CHECK(view.devices.at(0).mem_limit_bytes == 1 * GiB);
  CHECK(view.launches == 12);
  CHECK(registry.node(kNow).devices[0].production.mem_used_bytes == 1 * GiB);
}

TEST_CASE("set pause and resume reach every process of the job", "[coord][registry][tree]") {
  Registry registry({});
  Process* first = *registry.add(request("train"), peer(100, kAlice), tree(7));
  Process* second = *registry.add(request("train"), peer(101, kAlice), tree(7));
  std::string reason;
  SetRequest set;
  set.job = "101";  // a pid of the second process acts on the whole job
  set.mem_limit = "2GiB";
  set.compute = "30%";
  set.qos = kQosOpportunistic;
  REQUIRE(registry.set(set, peer(1, kAlice), kNow, &reason).ok());
  for (const Process* p : {first, second}) {
    CHECK(p->block->mem_limit(0) == 2 * GiB);
    CHECK(p->block->qos() == kQosOpportunistic);
    CHECK(p->block->compute(0).compute_cap_ppm == 300000);
  }
  REQUIRE(registry.pause({"train", true}, peer(1, kAlice), kNow, &reason).ok());
  CHECK(first->block->paused());
  CHECK(second->block->paused());
  CHECK(registry.node(kNow).paused_jobs == 1);
  // A process that joins now gets what the job has, not what it asked for.
  Process* third = *registry.add(request("train", 4 * GiB), peer(102, kAlice), tree(7));
  CHECK(third->block->mem_limit(0) == 2 * GiB);
  CHECK(third->block->qos() == kQosOpportunistic);
  CHECK(third->block->paused());
  CHECK(third->block->compute(0).compute_cap_ppm == 300000);
  REQUIRE(registry.pause({"train", false}, peer(1, kAlice), kNow, &reason).ok());
  for (const Process* p : {first, second, third}) CHECK_FALSE(p->block->paused());
  // The owner may raise the limit back to the start limit, not above it.
  set = SetRequest{};
  set.job = "train";
  set.mem_limit = "8GiB";
  CHECK_FALSE(registry.set(set, peer(1, kAlice), kNow, &reason).ok());
  CHECK(reason == kReasonDenied);
  CHECK(third->block->mem_limit(0) == 2 * GiB);
}

TEST_CASE("a job stays while any process lives and goes with the last", "[coord][registry][tree]") {
  Registry registry({});
  Process* first = *registry.add(request("train"), peer(100, kAlice), tree(7));
  std::uint64_t first_key = first->key;
  std::uint64_t id = first->job_id;
  std::uint64_t second_key = (*registry.add(request("train"), peer(101, kAlice), tree(7)))->key;
  CHECK(registry.remove(first_key));
  REQUIRE(registry.find(id) != nullptr);
  auto jobs = registry.list(kNow);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].pid == 101);
  CHECK(jobs[0].pids == std::vector<std::int64_t>{101});
  CHECK(jobs[0].name == "train");
  CHECK(registry.remove(second_key));
  CHECK(registry.find(id) == nullptr);
  CHECK(registry.size() == 0);
  CHECK(registry.node(kNow).devices.empty());
  // The tree's next process (its job gone) starts a new job.
  CHECK((*registry.add(request("train"), peer(102, kAlice), tree(7)))->job_id != id);
}

TEST_CASE("a tree proof joins only a job of the same uid", "[coord][registry][tree]") {
  Registry registry({});
  std::uint64_t alices = (*registry.add(request("train"), peer(100, kAlice), tree(7)))->job_id;
  // Bob with the same identity (he cannot open Alice's file, so this stands
  // for any confusion of identities): a job of his own.
  Process* bobs = *registry.add(request("intruder"), peer(300, kBob), tree(7, kBob));
  CHECK(bobs->job_id != alices);
  // No proof at all: a job of its own, whatever it claims.
  Process* loose = *registry.add(request("loose"), peer(301, kAlice));
  CHECK(loose->job_id != alices);
  std::string reason;
  CHECK(registry.show(std::to_string(alices), kNow, &reason)->pids ==
        std::vector<std::int64_t>{100});
}

TEST_CASE("a process on another device adds the device to the job", "[coord][registry][tree]") {
  Registry registry({});
  Process* first = *registry.add(request("train", 4 * GiB, "GPU-a"), peer(100, kAlice), tree(7));
  RegisterRequest both = request("train", 4 * GiB, "GPU-b");
  both.devices.push_back({"GPU-a", 16 * GiB, 4 * GiB, 4 * GiB});
  Process* second = *registry.add(both, peer(101, kAlice), tree(7));
  JobView view = registry.list(kNow).at(0);
  REQUIRE(view.devices.size() == 2);
  CHECK(view.devices[0].uuid == "GPU-a");
  CHECK(view.devices[1].uuid == "GPU-b");
  std::string reason;
  SetRequest set;
  set.job = "train";
  set.mem_limit = "1GiB";
  REQUIRE(registry.set(set, peer(1, kAlice), kNow, &reason).ok());
  CHECK(first->block->mem_limit(0) == 1 * GiB);
  CHECK(second->block->mem_limit(0) == 1 * GiB);  // GPU-b
  CHECK(second->block->mem_limit(1) == 1 * GiB);  // GPU-a, at another index in this process
  publish_used(*first, 512u << 20);
  const_cast<TelemetryPage&>(second->block->telemetry())
      .devices[1]
      .mem_used_bytes.store(256u << 20);
  CHECK(registry.list(kNow).at(0).devices[0].mem_used_bytes == 768u << 20);
}

TEST_CASE("a restarted coordinator restores a tree job's decisions", "[coord][registry][tree]") {
  Registry registry({});
  Decision decision;
  decision.id = 5;
  decision.uid = kAlice;
  decision.pid = 100;
  decision.name = "renamed";
  decision.paused = true;
  decision.mem_limit_bytes = {1 * GiB};
  registry.remember({decision});
  // The worker comes back first: it gets the job's id, not the decisions
  // (they were made for the job's first process).
  RegisterRequest worker = request("train");
  worker.id_hint = 5;
  Process* second = *registry.add(worker, peer(101, kAlice), tree(7));
  CHECK(second->job_id == 5);
  CHECK_FALSE(second->block->paused());
  // Then the first process: the job's decisions hold again, for both.
  Process* first = *registry.add(worker, peer(100, kAlice), tree(7));
  CHECK(first->job_id == 5);
  for (const Process* p : {first, second}) {
    CHECK(p->block->paused());
    CHECK(p->block->mem_limit(0) == 1 * GiB);
  }
  CHECK(registry.find(5)->name == "renamed");
}

TEST_CASE("a tree proof is the user's own private regular file", "[coord][registry][tree]") {
  char path[] = "/tmp/gpushare-tree-test-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  uid_t me = geteuid();
  auto open_again = [&] { return open(path, O_RDONLY | O_CLOEXEC); };

  Result<TreeProof> mine = TreeProof::verify(fd, me);  // mkstemp: mode 0600
  REQUIRE(mine.ok());
  Result<TreeProof> again = TreeProof::verify(open_again(), me);
  REQUIRE(again.ok());
  CHECK(mine->same_tree(*again));  // two descriptors of one file: one tree

  Result<TreeProof> not_mine = TreeProof::verify(open_again(), me + 1);
  REQUIRE_FALSE(not_mine.ok());
  CHECK_THAT(not_mine.error().message, Catch::Matchers::Contains("belongs to uid"));

  REQUIRE(chmod(path, 0640) == 0);
  Result<TreeProof> shared = TreeProof::verify(open_again(), me);
  REQUIRE_FALSE(shared.ok());
  CHECK_THAT(shared.error().message, Catch::Matchers::Contains("open to other users"));

  Result<TreeProof> directory = TreeProof::verify(open("/tmp", O_RDONLY | O_CLOEXEC), me);
  REQUIRE_FALSE(directory.ok());
  CHECK_THAT(directory.error().message, Catch::Matchers::Contains("not a regular file"));
  CHECK_FALSE(TreeProof::verify(-1, me).ok());
  unlink(path);
}

TEST_CASE("a new connection's first passed descriptor is kept and the rest closed",
          "[coord][registry][tree]") {
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  int passed[2] = {open("/dev/null", O_RDONLY | O_CLOEXEC),
                   open("/dev/zero", O_RDONLY | O_CLOEXEC)};
  REQUIRE(send_with_fds(pair[0], "hello", 5, passed, 2, 0) == 5);
  close(passed[0]);
  close(passed[1]);

  // Count this process's descriptors before and after: only the kept one stays.
  auto open_descriptors = [] {
    int count = 0;
    for (int fd = 0; fd < 1024; ++fd) count += fcntl(fd, F_GETFD) >= 0 ? 1 : 0;
    return count;
  };
  int before = open_descriptors();
  int kept = -1;
  char buffer[16];
  REQUIRE(receive_keeping_descriptor(pair[1], buffer, sizeof buffer, &kept) == 5);
  CHECK(std::string(buffer, 5) == "hello");
  REQUIRE(kept >= 0);
  struct stat info {};
  REQUIRE(fstat(kept, &info) == 0);
  struct stat null_info {};
  REQUIRE(stat("/dev/null", &null_info) == 0);
  CHECK(info.st_rdev == null_info.st_rdev);  // the first one: /dev/null
  CHECK(open_descriptors() == before + 1);
  close(kept);
  close(pair[0]);
  close(pair[1]);
}

TEST_CASE("a suspend asks every process of the job and ends when all are back",
          "[coord][registry][tree][suspend]") {
  Registry registry({});
  Process* first = *registry.add(request("train"), peer(100, kAlice), tree(7));
  Process* second = *registry.add(request("train"), peer(101, kAlice), tree(7));
  auto telemetry = [](Process* p) -> TelemetryPage& {
    return const_cast<TelemetryPage&>(p->block->telemetry());
  };
  std::string reason;
  REQUIRE(registry.suspend(SuspendRequest{"train"}, peer(1, kAlice), kNow, &reason).ok());
  for (Process* p : {first, second}) {
    CHECK(p->block->paused());
    CHECK(p->block->suspend_requested());
  }
  // One process done, the other still moving: the job is suspending.
  telemetry(first).suspend_state = kSuspendSuspended;
  telemetry(first).suspended_bytes[0] = 1 * GiB;
  telemetry(second).suspend_state = kSuspendSuspending;
  CHECK(registry.show("train", kNow, &reason)->state == "suspending");
  telemetry(second).suspend_state = kSuspendSuspended;
  telemetry(second).suspended_bytes[0] = 2 * GiB;
  auto shown = registry.show("train", kNow, &reason);
  CHECK(shown->state == "suspended");
  CHECK(shown->devices[0].suspended_bytes == 3 * GiB);

  // Resume: the request leaves both; the job runs once both are back.
  PauseRequest resume;
  resume.job = "train";
  resume.pause = false;
  REQUIRE(registry.pause(resume, peer(1, kAlice), kNow, &reason).ok());
  for (Process* p : {first, second}) CHECK_FALSE(p->block->suspend_requested());
  std::vector<std::string> notes;
  auto note = [&](const std::string& line) { notes.push_back(line); };
  telemetry(first).suspend_state = kSuspendRunning;
  telemetry(second).suspend_state = kSuspendResuming;
  registry.suspend_tick(note);
  CHECK(first->block->paused());  // held until the whole job is back
  CHECK(registry.show("train", kNow, &reason)->state == "resuming");
  telemetry(second).suspend_state = kSuspendRunning;
  registry.suspend_tick(note);
  CHECK_FALSE(first->block->paused());
  CHECK_FALSE(second->block->paused());
  CHECK(notes == std::vector<std::string>{"job 1 'train' resumed"});
}

TEST_CASE("one process refusing a suspend withdraws it from all and brings the rest back",
          "[coord][registry][tree][suspend]") {
  Registry registry({});
  Process* first = *registry.add(request("train"), peer(100, kAlice), tree(7));
  Process* second = *registry.add(request("train"), peer(101, kAlice), tree(7));
  auto telemetry = [](Process* p) -> TelemetryPage& {
    return const_cast<TelemetryPage&>(p->block->telemetry());
  };
  std::string reason;
  REQUIRE(registry.suspend(SuspendRequest{"train"}, peer(1, kAlice), kNow, &reason).ok());
  telemetry(first).suspend_state = kSuspendSuspended;  // moved its memory
  telemetry(second).suspend_blockers = kBlocksArrays;  // an array made after the check
  telemetry(second).suspend_state = kSuspendRefused;
  std::vector<std::string> notes;
  auto note = [&](const std::string& line) { notes.push_back(line); };
  registry.suspend_tick(note);
  for (Process* p : {first, second}) CHECK_FALSE(p->block->suspend_requested());
  CHECK(first->block->paused());  // its memory is still on the host
  telemetry(first).suspend_state = kSuspendRunning;
  telemetry(second).suspend_state = kSuspendRunning;
  registry.suspend_tick(note);
  CHECK_FALSE(first->block->paused());
  CHECK_FALSE(second->block->paused());
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] == "suspend of job 1 'train' refused by the job: CUDA arrays");
}

TEST_CASE("a job whose processes hold memory on two GPUs shows them as its ranks",
          "[coord][registry][tree][ranks]") {
  Registry registry({});
  // A launcher that uses no GPU, then two ranks, each on its own GPU.
  Process* launcher = *registry.add(request("train"), peer(100, kAlice), tree(7));
  Process* rank0 = *registry.add(request("train", 4 * GiB, "GPU-a"), peer(101, kAlice), tree(7));
  Process* rank1 = *registry.add(request("train", 4 * GiB, "GPU-b"), peer(102, kAlice), tree(7));
  CHECK(registry.list(kNow).at(0).ranks.empty());  // nobody holds memory yet
  publish_used(*rank0, GiB);
  CHECK(registry.list(kNow).at(0).ranks.empty());  // one GPU: not a multi-GPU job
  publish_used(*rank1, GiB);
  rank0->compute.speed_per_s = 60;
  rank0->compute.speed_in_iterations = true;
  rank1->compute.speed_per_s = 900;  // launches, not steps: not a step rate
  JobView view = registry.list(kNow).at(0);
  REQUIRE(view.ranks.size() == 2);
  CHECK(view.ranks[0].pid == 101);
  CHECK(view.ranks[0].gpus == std::vector<std::string>{"GPU-a"});
  CHECK(view.ranks[0].steps_per_s == 60);
  CHECK(view.ranks[1].gpus == std::vector<std::string>{"GPU-b"});
  CHECK(view.ranks[1].steps_per_s < 0);
  CHECK(launcher->job_id == rank0->job_id);
}

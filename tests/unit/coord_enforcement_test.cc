#include <catch2/catch.hpp>

#include "coord/server/memory/enforcement.h"
#include "coord/server/registry/registry.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t MiB = 1ull << 20;

// What the coordinator "sees" each pid hold, set by the test.
class FakeUsage final : public UsageSource {
 public:
  explicit FakeUsage(std::map<pid_t, std::uint64_t>* held) : held_(held) {}
  bool usage(const std::string& uuid, std::map<pid_t, std::uint64_t>* by_pid) override {
    ++queries;
    if (uuid != "GPU-a") return false;
    *by_pid = *held_;
    return true;
  }
  int queries = 0;

 private:
  std::map<pid_t, std::uint64_t>* held_;
};

Caller peer(pid_t pid) {
  Caller c;
  c.pid = pid;
  c.uid = 1000;
  c.gid = 1000;
  return c;
}

RegisterRequest job(const std::string& name, std::uint64_t limit) {
  RegisterRequest r;
  r.name = name;
  r.devices.push_back({"GPU-a", 16 * GiB, limit, limit});
  return r;
}

struct Fixture {
  Registry registry{Policy{}};
  std::map<pid_t, std::uint64_t> held;
  std::vector<std::string> warnings;
  Enforcer make(ViolationAction action) {
    return Enforcer(action, std::make_unique<FakeUsage>(&held),
                    [this](const std::string& line) { warnings.push_back(line); });
  }
  std::optional<ViolationView> violation_of(const Enforcer& enforcer, std::uint64_t id) {
    std::string reason;
    JobView view = *registry.show(std::to_string(id), 0, &reason);
    enforcer.annotate(view);
    return view.violation;
  }
};

}  // namespace

TEST_CASE("violation actions parse by name", "[coord][enforcement]") {
  CHECK(*parse_violation_action("warn") == ViolationAction::kWarn);
  CHECK(*parse_violation_action("pause") == ViolationAction::kPause);
  CHECK(*parse_violation_action("kill") == ViolationAction::kKill);
  CHECK_FALSE(parse_violation_action("stop"));
  CHECK(std::string(violation_action_name(ViolationAction::kKill)) == "kill");
}

TEST_CASE("the tolerance is 64 MiB or a 32nd of the limit", "[coord][enforcement]") {
  CHECK(violation_tolerance(1 * GiB) == 64 * MiB);
  CHECK(violation_tolerance(8 * GiB) == 256 * MiB);
}

TEST_CASE("a job over its limit at two checks in a row is marked and warned once",
          "[coord][enforcement]") {
  Fixture f;
  std::uint64_t greedy = (*f.registry.add(job("greedy", 1 * GiB), peer(100)))->job_id;
  std::uint64_t honest = (*f.registry.add(job("honest", 1 * GiB), peer(200)))->job_id;
  Enforcer enforcer = f.make(ViolationAction::kWarn);
  f.held = {{100, 4 * GiB}, {200, 1 * GiB + 32 * MiB}};  // honest: within the tolerance
  enforcer.check(f.registry, 0);
  CHECK_FALSE(f.violation_of(enforcer, greedy));  // once may be a free on its way
  enforcer.check(f.registry, 0);
  auto violation = f.violation_of(enforcer, greedy);
  REQUIRE(violation);
  CHECK(violation->observed_bytes == 4 * GiB);
  CHECK(violation->limit_bytes == 1 * GiB);
  CHECK(violation->action == "warn");
  CHECK_FALSE(f.violation_of(enforcer, honest));
  enforcer.check(f.registry, 0);
  CHECK(f.warnings.size() == 1);
  CHECK_FALSE(f.registry.find(greedy)->paused);
  // Back under the limit: the mark goes.
  f.held[100] = 512 * MiB;
  enforcer.check(f.registry, 0);
  CHECK_FALSE(f.violation_of(enforcer, greedy));
}

TEST_CASE("pause pauses a violator and a job with no limit is never one", "[coord][enforcement]") {
  Fixture f;
  std::uint64_t greedy = (*f.registry.add(job("greedy", 1 * GiB), peer(100)))->job_id;
  std::uint64_t free_job = (*f.registry.add(job("free", kNoLimit), peer(300)))->job_id;
  Enforcer enforcer = f.make(ViolationAction::kPause);
  f.held = {{100, 2 * GiB}, {300, 15 * GiB}};
  enforcer.check(f.registry, 0);
  enforcer.check(f.registry, 0);
  CHECK(f.registry.find(greedy)->paused);
  CHECK_FALSE(f.registry.find(free_job)->paused);
  CHECK_FALSE(f.violation_of(enforcer, free_job));
  REQUIRE(f.warnings.size() == 1);
  CHECK(f.warnings[0].find("; paused") != std::string::npos);
}

TEST_CASE("a device NVML cannot tell about is not checked", "[coord][enforcement]") {
  Fixture f;
  RegisterRequest other = job("elsewhere", 1 * GiB);
  other.devices[0].uuid = "GPU-b";
  std::uint64_t id = (*f.registry.add(other, peer(100)))->job_id;
  Enforcer enforcer = f.make(ViolationAction::kKill);
  f.held = {{100, 8 * GiB}};
  enforcer.check(f.registry, 0);
  enforcer.check(f.registry, 0);
  CHECK_FALSE(f.violation_of(enforcer, id));
  CHECK(f.warnings.empty());
}

TEST_CASE("a job's processes are checked together against the job's limit",
          "[coord][enforcement]") {
  Fixture f;
  // Two processes of one tree, 768 MiB each: each under the 1 GiB limit,
  // the job well over it.
  std::uint64_t id =
      (*f.registry.add(job("tree", 1 * GiB), peer(100), TreeProof::for_test(1, 42, 1000)))->job_id;
  REQUIRE((*f.registry.add(job("tree", 1 * GiB), peer(101), TreeProof::for_test(1, 42, 1000)))
              ->job_id == id);
  Enforcer enforcer = f.make(ViolationAction::kPause);
  f.held = {{100, 768 * MiB}, {101, 768 * MiB}};
  enforcer.check(f.registry, 0);
  enforcer.check(f.registry, 0);
  auto violation = f.violation_of(enforcer, id);
  REQUIRE(violation);
  CHECK(violation->observed_bytes == 1536 * MiB);
  CHECK(f.registry.find(id)->paused);
  for (std::uint64_t key : f.registry.find(id)->processes) {
    CHECK(f.registry.process(key)->block->paused());  // every process of the job
  }
  REQUIRE(f.warnings.size() == 1);
  CHECK(f.warnings[0].find("(pid 100, 101, uid 1000)") != std::string::npos);
}

TEST_CASE("a limit lowered below what a job holds makes no violator of it",
          "[coord][enforcement]") {
  Fixture f;
  std::uint64_t id = (*f.registry.add(job("lowered", 4 * GiB), peer(100)))->job_id;
  Enforcer enforcer = f.make(ViolationAction::kKill);
  auto& telemetry = const_cast<TelemetryPage&>(
      f.registry.process(*f.registry.find(id)->processes.begin())->block->telemetry());
  f.held = {{100, 3 * GiB}};
  telemetry.devices[0].mem_used_bytes.store(3 * GiB);
  enforcer.check(f.registry, 0);
  SetRequest lower;
  lower.job = "lowered";
  lower.mem_limit = "1GiB";
  std::string reason;
  Caller owner = peer(100);
  REQUIRE(f.registry.set(lower, owner, 0, &reason).ok());
  for (int i = 0; i < 3; ++i) enforcer.check(f.registry, 0);
  CHECK_FALSE(f.violation_of(enforcer, id));  // it still holds 3 GiB: given, not taken
  // A spill moves 2 GiB to the host: still reserved, the allowance stays.
  f.held[100] = 1 * GiB;
  enforcer.check(f.registry, 0);
  f.held[100] = 3 * GiB;  // brought back
  for (int i = 0; i < 2; ++i) enforcer.check(f.registry, 0);
  CHECK_FALSE(f.violation_of(enforcer, id));
  // It frees 1 GiB: the allowance follows it down, and growing back past it
  // is memory obtained past the interposer.
  f.held[100] = 2 * GiB;
  telemetry.devices[0].mem_used_bytes.store(2 * GiB);
  enforcer.check(f.registry, 0);
  f.held[100] = 3 * GiB;
  for (int i = 0; i < 2; ++i) enforcer.check(f.registry, 0);
  auto violation = f.violation_of(enforcer, id);
  REQUIRE(violation);
  CHECK(violation->limit_bytes == 1 * GiB);
  CHECK(f.warnings.size() == 1);
}

TEST_CASE("a job lowered before its first check may keep only what it held up to its start limit",
          "[coord][enforcement]") {
  Fixture f;
  std::uint64_t id = (*f.registry.add(job("escaped", 1 * GiB), peer(100)))->job_id;
  SetRequest lower;
  lower.job = "escaped";
  lower.mem_limit = "512MiB";
  std::string reason;
  REQUIRE(f.registry.set(lower, peer(100), 0, &reason).ok());
  Enforcer enforcer = f.make(ViolationAction::kWarn);
  f.held = {{100, 4 * GiB}};  // 4 GiB against a start limit of 1 GiB: escaped
  for (int i = 0; i < 2; ++i) enforcer.check(f.registry, 0);
  REQUIRE(f.violation_of(enforcer, id));
}

// The shared pages as the job sees them: what it may map, what it may not,
// and that a pause held on a read-only mapping is released by a resume.
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <climits>
#include <thread>

#include "coord/server/registry/control_block_owner.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

struct JobMapping {
  const LimitsPage* limits = nullptr;
  TelemetryPage* telemetry = nullptr;
  explicit JobMapping(const ControlBlock& block) {
    limits = static_cast<const LimitsPage*>(
        mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, block.limits_fd(), 0));
    telemetry = static_cast<TelemetryPage*>(mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE,
                                                 MAP_SHARED, block.telemetry_fd(), 0));
  }
  ~JobMapping() {
    munmap(const_cast<LimitsPage*>(limits), kControlPageBytes);
    munmap(telemetry, kControlPageBytes);
  }
};

std::unique_ptr<ControlBlock> make_block() {
  std::uint64_t limits[2] = {1000, kNoLimit};
  auto block = ControlBlock::create(42, 2, limits, kQosOpportunistic);
  REQUIRE(block.ok());
  return std::move(*block);
}

}  // namespace

TEST_CASE("a new control block holds the job's identity and limits", "[coord][control_block]") {
  auto block = make_block();
  JobMapping job(*block);
  REQUIRE(job.limits != MAP_FAILED);
  CHECK(job.limits->magic == kLimitsMagic);
  CHECK(job.limits->layout_version == kLayoutVersion);
  CHECK(job.limits->job_id == 42);
  CHECK(job.limits->device_count == 2);
  CHECK(job.limits->devices[0].mem_limit_bytes.load() == 1000);
  CHECK(job.limits->devices[1].mem_limit_bytes.load() == kNoLimit);
  CHECK(job.limits->qos.load() == kQosOpportunistic);
  CHECK(job.limits->paused.load() == 0);
  CHECK(job.telemetry->magic == kTelemetryMagic);
}

TEST_CASE("changes reach the job's mapping at once", "[coord][control_block]") {
  auto block = make_block();
  JobMapping job(*block);
  std::uint64_t generation = job.limits->generation.load();
  block->set_mem_limit(0, 500);
  CHECK(job.limits->devices[0].mem_limit_bytes.load() == 500);
  CHECK(job.limits->generation.load() > generation);
  block->set_qos(kQosProduction);
  CHECK(job.limits->qos.load() == kQosProduction);
  job.telemetry->devices[1].mem_used_bytes.store(777);
  job.telemetry->launches.store(5);
  CHECK(block->telemetry().devices[1].mem_used_bytes.load() == 777);
  CHECK(block->telemetry().launches.load() == 5);
}

TEST_CASE("the job cannot write its limits page or resize either page", "[coord][control_block]") {
  auto block = make_block();
  errno = 0;
  void* writable =
      mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, block->limits_fd(), 0);
  CHECK(writable == MAP_FAILED);
  CHECK(errno == EPERM);
  std::uint64_t value = 1;
  CHECK(pwrite(block->limits_fd(), &value, sizeof value, 0) < 0);

  // A read-only mapping cannot be made writable afterwards either.
  void* readable = mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, block->limits_fd(), 0);
  REQUIRE(readable != MAP_FAILED);
  CHECK(mprotect(readable, kControlPageBytes, PROT_READ | PROT_WRITE) != 0);
  munmap(readable, kControlPageBytes);

  // Reopening the memfd through /proc gives the same seals.
  std::string path = "/proc/self/fd/" + std::to_string(block->limits_fd());
  int reopened = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (reopened >= 0) {
    CHECK(mmap(nullptr, kControlPageBytes, PROT_WRITE, MAP_SHARED, reopened, 0) == MAP_FAILED);
    close(reopened);
  }

  CHECK(ftruncate(block->limits_fd(), 0) != 0);
  CHECK(ftruncate(block->telemetry_fd(), 0) != 0);
  CHECK(fcntl(block->telemetry_fd(), F_ADD_SEALS, F_SEAL_WRITE) != 0);  // sealed for good
}

TEST_CASE("a launch waiting on the read-only page wakes on resume", "[coord][control_block]") {
  auto block = make_block();
  JobMapping job(*block);
  block->set_pause_reasons(kPauseOperator);
  CHECK(job.limits->paused.load() == 1);
  std::atomic<bool> released{false};
  std::thread launcher([&] {
    auto* word = const_cast<std::atomic<std::uint32_t>*>(&job.limits->paused);
    while (word->load() != 0) {
      // No timeout: only the coordinator's FUTEX_WAKE can end this wait.
      syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, 1, nullptr, nullptr,
              0);
    }
    released = true;
  });
  // The launcher is held while paused...
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(released.load());
  // ...and released by the resume.
  auto start = std::chrono::steady_clock::now();
  block->set_pause_reasons(0);
  launcher.join();
  CHECK(released.load());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "probe/job_run.h"
#include "probe/svg.h"

using namespace gpushare;
using namespace gpushare::probe;

namespace {

// A GPU whose NVML lists the given processes with a fixed use each; the
// busy counter advances 1 ms per reading.
class ListingGpu final : public GpuApi {
 public:
  std::vector<ProcessMemory> processes;
  std::uint64_t busy = 0;
  Status init() override { return {}; }
  Result<int> device_count() override { return 1; }
  Result<DriverDevice> device(int) override { return DriverDevice{}; }
  Result<std::uint64_t> driver_used_bytes(int) override { return std::uint64_t{0}; }
  bool has_nvml() const override { return true; }
  Result<NvmlMemory> nvml_memory(const std::string&) override { return NvmlMemory{}; }
  std::optional<SimStats> sim_stats(int) override {
    SimStats stats;
    stats.busy_ns = busy += 1000000;
    return stats;
  }
  Result<std::vector<ProcessMemory>> nvml_processes(const std::string&) override {
    return processes;
  }
};

LaunchPlan plan_of(std::vector<std::string> argv) {
  LaunchPlan plan;
  plan.argv = std::move(argv);
  plan.environment = {{"GPUSHARE_PROBE_TEST", "1"}};
  return plan;
}

}  // namespace

TEST_CASE("probe job run: a command not found or not executable reports its errno") {
  auto missing = spawn_job(plan_of({"/nonexistent/gpushare-no-such-command"}));
  REQUIRE(missing);
  CHECK(missing->exec_errno == ENOENT);
  auto directory = spawn_job(plan_of({"/"}));
  REQUIRE(directory);
  CHECK(directory->exec_errno == EACCES);
}

TEST_CASE("probe job run: the job's process group is sampled until it exits") {
  auto spawned = spawn_job(plan_of({"/bin/sh", "-c", "sleep 0.2; exit 7"}));
  REQUIRE(spawned);
  REQUIRE(spawned->exec_errno == 0);
  CHECK(getpgid(spawned->pid) == spawned->pid);
  ListingGpu gpu;
  // The job's process, and one of another group that must not count.
  gpu.processes = {{spawned->pid, 300}, {static_cast<int>(getpid()), 5000}};
  std::size_t callbacks = 0;
  auto traces = sample_jobs(gpu, {"GPU-x"}, {spawned->pid}, {5, std::nullopt},
                            [&](std::size_t job, pid_t pid, const MemorySample& sample,
                                const std::vector<std::uint64_t>& per_device) {
                              CHECK(job == 0);
                              CHECK(pid == spawned->pid);
                              CHECK(per_device == std::vector<std::uint64_t>{300});
                              CHECK(sample.mem_bytes == 300);
                              ++callbacks;
                            });
  REQUIRE(traces);
  REQUIRE(traces->size() == 1);
  const JobTrace& trace = traces->front();
  CHECK(trace.exit_status == 7);
  CHECK_FALSE(trace.stopped);
  CHECK(trace.samples.size() == callbacks);
  CHECK(callbacks >= 10);
  CHECK(trace.samples.back().busy_ns > trace.samples.front().busy_ns);
  CHECK(trace.elapsed_ms >= 150);
}

TEST_CASE("probe job run: a job past its duration is stopped by SIGTERM") {
  auto spawned = spawn_job(plan_of({"/bin/sh", "-c", "sleep 30"}));
  REQUIRE(spawned);
  ListingGpu gpu;
  auto traces = sample_jobs(gpu, {"GPU-x"}, {spawned->pid}, {5, 100.0}, nullptr);
  REQUIRE(traces);
  CHECK(traces->front().stopped);
  CHECK(traces->front().exit_status == 128 + SIGTERM);
  CHECK(traces->front().elapsed_ms < 5000);
  CHECK(kill(spawned->pid, 0) != 0);  // reaped
}

TEST_CASE("probe svg: the memory plot names its series and escapes text") {
  std::vector<MemorySample> samples;
  for (int i = 0; i < 5000; ++i) {
    samples.push_back({i * 1.0, static_cast<std::uint64_t>(i % 10 < 3 ? 100 : 200), 0});
  }
  MemorySummary summary = summarise_memory(samples, 1);
  std::string svg = memory_svg("a<b & \"c\"", samples, summary,
                               {{"50%", 100, std::nullopt}, {"100%", 200, 80.0}});
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("<title>a&lt;b &amp; &quot;c&quot;</title>") != std::string::npos);
  for (const char* id : {"memory-curve", "floor", "ceiling", "speed-vs-cap"}) {
    CHECK(svg.find(std::string("id=\"") + id + "\"") != std::string::npos);
  }
  CHECK(svg.find("50%: failed") != std::string::npos);
  // Thousands of samples are drawn with at most a few thousand points.
  std::size_t begin = svg.find("id=\"memory-curve\"");
  std::size_t end = svg.find("/>", begin);
  std::string points = svg.substr(begin, end - begin);
  CHECK(std::count(points.begin(), points.end(), ',') <= 2100);
  CHECK(svg.find("</svg>") != std::string::npos);
}

TEST_CASE("probe svg: heat maps draw a cell per pair") {
  HeatMap map{"uncontrolled", {"j1", "j2"}, {{std::nullopt, 0.5}, {0.75, std::nullopt}}};
  std::string svg = interference_svg({map, map});
  CHECK(svg.find("id=\"interference-matrix\"") != std::string::npos);
  CHECK(svg.find("id=\"interference-matrix-1\"") != std::string::npos);
  CHECK(svg.find(">0.75</text>") != std::string::npos);
  CHECK(xml_escape(std::string("x\001y")) == "x?y");
}

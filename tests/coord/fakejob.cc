// gpushare-coord-fakejob: a stand-in for a job under the interposer, for the
// control plane's end-to-end tests. It registers through
// gpushare_coord_client exactly as the interposer does (client_start at
// "CUDA initialisation", mem_limit() before every allocation, paused() and
// wait_while_paused() before every launch), then obeys commands on stdin,
// one per line, answering each with one JSON line on stdout:
//
//   alloc SIZE [DEV]   reserve-then-check against mem_limit(DEV), as the
//                      interposer does: over the limit is out of memory and
//                      nothing changes
//   free SIZE [DEV]
//   launch N           N kernel launches, each waiting while paused
//   status             registration, limit, pause, class
//   wait-registered N  until registrations() >= N (5 s at most)
//   watch-limit BYTES  spins until mem_limit(0) == BYTES (5 s at most);
//                      prints when it saw the change (CLOCK_REALTIME ns)
//   exit
//
// Options: --uuid HEX32 (default 000102...0f), --mem-total SIZE (default
// 16GiB), --devices N (default 1). GPUSHARE_MEM_LIMIT (bytes or a
// percentage), GPUSHARE_JOB, GPUSHARE_QOS and GPUSHARE_SOCKET are read as
// the interposer reads them.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "common/units.h"
#include "coord/job/job_client.h"
#include "coord/job/limits.h"
#include "vocab/env.h"
#include "vocab/job.h"

namespace {

using namespace gpushare;

coord::job::LocalCounters g_counters;  // static: must outlive the client thread

std::uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string limit_json(std::uint64_t limit) {
  return limit == kNoLimit ? "null" : std::to_string(limit);
}

void reply(const std::string& line) { std::cout << line << '\n' << std::flush; }

std::string status_json(const char* kind) {
  return std::string("{\"kind\":\"") + kind +
         "\",\"registered\":" + (coord::job::job_id() != 0 ? "true" : "false") +
         ",\"job_id\":" + std::to_string(coord::job::job_id()) +
         ",\"registrations\":" + std::to_string(coord::job::registrations()) +
         ",\"mem_limit_bytes\":" + limit_json(coord::job::mem_limit(0)) +
         ",\"mem_used_bytes\":" + std::to_string(g_counters.mem_used_bytes[0].load()) +
         ",\"paused\":" + (coord::job::paused() ? "true" : "false") + ",\"qos\":\"" +
         (coord::job::qos() == kQosOpportunistic ? "opportunistic" : "production") +
         "\",\"launches\":" + std::to_string(g_counters.launches.load()) + "}";
}

bool parse_uuid(const char* hex, unsigned char out[16]) {
  if (std::strlen(hex) != 32) return false;
  for (int i = 0; i < 16; ++i) {
    unsigned value;
    if (std::sscanf(hex + 2 * i, "%2x", &value) != 1) return false;
    out[i] = static_cast<unsigned char>(value);
  }
  return true;
}

int fail(const std::string& message) {
  std::cerr << "gpushare-coord-fakejob: error: " << message << '\n';
  return 2;
}

// The interposer's allocation rule: reserve, check, roll back.
std::string alloc(std::uint64_t bytes, int device) {
  std::uint64_t limit = coord::job::mem_limit(device);
  std::uint64_t used = g_counters.mem_used_bytes[device].fetch_add(bytes) + bytes;
  if (used > limit) {
    g_counters.mem_used_bytes[device].fetch_sub(bytes);
    return "{\"kind\":\"alloc\",\"ok\":false,\"error\":\"CUDA_ERROR_OUT_OF_MEMORY\","
           "\"mem_limit_bytes\":" +
           limit_json(limit) + ",\"mem_used_bytes\":" + std::to_string(used - bytes) + "}";
  }
  return "{\"kind\":\"alloc\",\"ok\":true,\"mem_limit_bytes\":" + limit_json(limit) +
         ",\"mem_used_bytes\":" + std::to_string(used) + "}";
}

}  // namespace

int main(int argc, char** argv) {
  coord::job::JobIdentity job;
  std::uint64_t mem_total = 16ull << 30;
  unsigned char uuid[16];
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(i);
  int devices = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return fail("option " + arg + " needs a value");
    if (arg == "--uuid") {
      if (!parse_uuid(argv[++i], uuid)) return fail("--uuid takes 32 hex digits");
    } else if (arg == "--mem-total") {
      Result<std::uint64_t> total = parse_size(argv[++i]);
      if (!total) return fail(total.error().message);
      mem_total = *total;
    } else if (arg == "--devices") {
      devices = std::atoi(argv[++i]);
      if (devices < 1 || devices > kMaxDevices) return fail("--devices takes 1..16");
    } else {
      return fail("unknown option " + arg);
    }
  }

  // What the interposer does at CUDA initialisation.
  std::uint64_t requested = kNoLimit;
  if (const char* text = std::getenv("GPUSHARE_MEM_LIMIT"); text != nullptr && *text != '\0') {
    Result<std::uint64_t> limit = parse_size(text, mem_total);
    if (!limit) return fail("GPUSHARE_MEM_LIMIT: " + limit.error().message);
    requested = *limit;
  }
  // The job's other variables, read once as the interposer's settings do.
  if (const char* name = std::getenv(env::kJob); name != nullptr) job.name = name;
  if (const char* qos = std::getenv(env::kQos); qos != nullptr && !parse_qos(qos, &job.qos)) {
    return fail(std::string("GPUSHARE_QOS: ") + kQosExpected);
  }
  job.socket_path = std::getenv(env::kSocket);
  job.tree_path = std::getenv(env::kTree);
  if (const char* compute = std::getenv(env::kCompute);
      compute != nullptr && *compute != '\0' &&
      !parse_compute_percent(compute, &job.compute_cap_ppm)) {
    return fail(std::string("GPUSHARE_COMPUTE: ") + kComputeExpected);
  }
  const char* debug = std::getenv(env::kDebug);
  job.debug = debug != nullptr && *debug != '\0';
  job.device_count = devices;
  for (int d = 0; d < devices; ++d) {
    std::memcpy(job.devices[d].uuid, uuid, 16);
    job.devices[d].uuid[15] = static_cast<unsigned char>(uuid[15] + d);
    job.devices[d].mem_total_bytes = mem_total;
  }
  std::uint64_t start_limits[kMaxDevices];
  for (int d = 0; d < devices; ++d) start_limits[d] = requested;
  coord::job::set_start_limits(start_limits, devices);
  coord::job::client_start(job, &g_counters);
  reply(status_json("started"));

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command, argument;
    int device = 0;
    words >> command >> argument >> device;
    if (device < 0 || device >= devices) device = 0;
    if (command == "alloc" || command == "free") {
      Result<std::uint64_t> bytes = parse_size(argument);
      if (!bytes) {
        reply("{\"kind\":\"error\",\"message\":\"bad size\"}");
        continue;
      }
      if (command == "alloc") {
        reply(alloc(*bytes, device));
      } else {
        g_counters.mem_used_bytes[device].fetch_sub(*bytes);
        reply(status_json("free"));
      }
    } else if (command == "launch") {
      long count = std::atol(argument.c_str());
      for (long i = 0; i < count; ++i) {
        if (coord::job::paused()) coord::job::wait_while_paused();
        g_counters.launches.fetch_add(1, std::memory_order_relaxed);
      }
      reply(status_json("launch"));
    } else if (command == "status") {
      reply(status_json("status"));
    } else if (command == "wait-registered") {
      std::uint64_t want = std::strtoull(argument.c_str(), nullptr, 10);
      std::uint64_t start = clock_ns(CLOCK_MONOTONIC);
      std::uint64_t deadline = start + 5'000'000'000ull;
      while (coord::job::registrations() < want || coord::job::job_id() == 0) {
        if (clock_ns(CLOCK_MONOTONIC) > deadline) break;
        timespec pause{0, 1'000'000};
        nanosleep(&pause, nullptr);  // polling a flag the client thread sets
      }
      reply(status_json("registered"));
    } else if (command == "watch-limit") {
      std::uint64_t want = std::strtoull(argument.c_str(), nullptr, 10);
      std::uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + 5'000'000'000ull;
      bool seen = false;
      while (clock_ns(CLOCK_MONOTONIC) < deadline) {
        if (coord::job::mem_limit(0) == want) {
          seen = true;
          break;
        }
      }
      reply("{\"kind\":\"limit\",\"seen\":" + std::string(seen ? "true" : "false") +
            ",\"realtime_ns\":" + std::to_string(clock_ns(CLOCK_REALTIME)) +
            ",\"mem_limit_bytes\":" + limit_json(coord::job::mem_limit(0)) + "}");
    } else if (command == "exit") {
      break;
    } else if (!command.empty()) {
      reply("{\"kind\":\"error\",\"message\":\"unknown command\"}");
    }
  }
  coord::job::client_stop();
  return 0;
}

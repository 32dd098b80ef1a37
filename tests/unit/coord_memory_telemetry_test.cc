// What the job publishes of its managed memory (coord/job/memory_telemetry.h):
// the driver's evictions move bytes from the device's count to the host's,
// never below zero, and a migration under way is copied as it is.
#include <catch2/catch.hpp>
#include <memory>

#include "coord/job/memory_telemetry.h"

using namespace gpushare::coord;
using namespace gpushare::coord::job;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;

}  // namespace

TEST_CASE("evicted bytes are published host-resident", "[coord][memory]") {
  auto counters = std::make_unique<LocalCounters>();
  auto page = std::make_unique<TelemetryPage>();
  counters->device_resident_bytes[0] = 768 * MiB;
  counters->host_resident_bytes[0] = 0;
  counters->evicted_bytes[0] = 256 * MiB;
  copy_residency(*counters, 0, page.get());
  CHECK(page->device_resident_bytes[0] == 512 * MiB);
  CHECK(page->host_resident_bytes[0] == 256 * MiB);
  CHECK(page->evicted_bytes[0] == 256 * MiB);
}

TEST_CASE("an eviction reading older than a free never goes below zero", "[coord][memory]") {
  auto counters = std::make_unique<LocalCounters>();
  auto page = std::make_unique<TelemetryPage>();
  counters->device_resident_bytes[1] = 128 * MiB;  // a free took the rest meanwhile
  counters->host_resident_bytes[1] = 64 * MiB;
  counters->evicted_bytes[1] = 256 * MiB;
  copy_residency(*counters, 1, page.get());
  CHECK(page->device_resident_bytes[1] == 0);
  CHECK(page->host_resident_bytes[1] == 192 * MiB);
  CHECK(page->evicted_bytes[1] == 128 * MiB);
}

TEST_CASE("a migration under way is published with its bytes", "[coord][memory]") {
  auto counters = std::make_unique<LocalCounters>();
  auto page = std::make_unique<TelemetryPage>();
  counters->migration = kMigrationToHost;
  counters->migration_started_ns = 42;
  counters->migrating_bytes[0] = 512 * MiB;
  copy_residency(*counters, 0, page.get());
  copy_migration(*counters, page.get());
  CHECK(page->migration == kMigrationToHost);
  CHECK(page->migration_started_ns == 42);
  CHECK(page->migrating_bytes[0] == 512 * MiB);
}

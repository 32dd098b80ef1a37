#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "interpose/core/accounting.h"

using gpushare::interpose::AllocationRecord;
using gpushare::interpose::AllocationTable;
using gpushare::interpose::DeviceBudget;
using gpushare::interpose::virtual_view;

TEST_CASE("the budget refuses what would pass the limit and rolls back", "[interpose]") {
  DeviceBudget budget;
  CHECK(budget.try_reserve(600, 1000));
  CHECK_FALSE(budget.try_reserve(401, 1000));
  CHECK(budget.try_reserve(400, 1000));
  CHECK(budget.held() == 1000);
  budget.release(400);
  CHECK(budget.held() == 600);
  budget.release(10000);  // never below zero
  CHECK(budget.held() == 0);
  CHECK(budget.peak() == 1000);
  CHECK_FALSE(budget.try_reserve(~0ull, ~0ull - 1));
  budget.charge(5);
  CHECK_FALSE(budget.try_reserve(~0ull, ~0ull));  // overflow is a refusal, not a wrap
}

TEST_CASE("threads reserving at once never exceed the limit together", "[interpose]") {
  DeviceBudget budget;
  constexpr std::uint64_t kLimit = 1'000'000;
  std::atomic<std::uint64_t> granted{0};
  std::atomic<std::uint64_t> max_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(t);
      std::vector<std::uint64_t> mine;
      for (int i = 0; i < 20000; ++i) {
        std::uint64_t size = 1 + random() % 50000;
        if (budget.try_reserve(size, kLimit)) {
          mine.push_back(size);
          std::uint64_t now = granted.fetch_add(size) + size;
          std::uint64_t seen = max_seen.load();
          while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
          }
        }
        if (!mine.empty() && random() % 2 == 0) {
          granted.fetch_sub(mine.back());
          budget.release(mine.back());
          mine.pop_back();
        }
      }
      for (std::uint64_t size : mine) {
        granted.fetch_sub(size);
        budget.release(size);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(max_seen.load() <= kLimit);
  CHECK(budget.peak() <= kLimit);
  CHECK(budget.held() == 0);
}

TEST_CASE("the virtual view is clamped and never negative", "[interpose]") {
  auto v = virtual_view(4ull << 30, 16ull << 30, 10ull << 30, 1ull << 30);
  CHECK(v.total == 4ull << 30);
  CHECK(v.used == 1ull << 30);
  CHECK(v.free == 3ull << 30);
  v = virtual_view(~0ull, 16ull << 30, 10ull << 30, 1ull << 30);  // no limit
  CHECK(v.total == 16ull << 30);
  CHECK(v.free == 10ull << 30);                                       // what is physically free
  v = virtual_view(4ull << 30, 16ull << 30, 1ull << 30, 1ull << 30);  // others hold the rest
  CHECK(v.free == 1ull << 30);
  CHECK(v.reserved == 2ull << 30);  // total = used + free + reserved (4 = 1 + 1 + 2)
  v = virtual_view(1ull << 30, 16ull << 30, 10ull << 30, 2ull << 30);  // limit lowered below use
  CHECK(v.free == 0);
  CHECK(v.total == 1ull << 30);
  CHECK(v.used == 1ull << 30);  // never more than total (NVML's identity, tools)
  CHECK(v.reserved == 0);
  v = virtual_view(32ull << 30, 16ull << 30, 16ull << 30, 0);  // never above physical
  CHECK(v.total == 16ull << 30);
}

TEST_CASE("the allocation table matches a reference map under churn", "[interpose]") {
  AllocationTable table;
  std::map<std::uint64_t, AllocationRecord> reference;
  std::mt19937_64 random(42);
  for (int step = 0; step < 200000; ++step) {
    // Page-aligned keys with clustered hashes stress the probe runs.
    std::uint64_t key = ((random() % 5000) + 1) << 12;
    if (random() % 3 != 0) {
      AllocationRecord record{random() % 1000, static_cast<int>(random() % 4), random() % 3};
      REQUIRE(table.insert(key, record));
      reference[key] = record;
    } else {
      AllocationRecord got{};
      bool erased = table.erase(key, &got);
      auto it = reference.find(key);
      REQUIRE(erased == (it != reference.end()));
      if (erased) {
        CHECK(got.bytes == it->second.bytes);
        reference.erase(it);
      }
    }
  }
  CHECK(table.size() == reference.size());
  for (const auto& [key, record] : reference) {
    AllocationRecord got{};
    REQUIRE(table.find(key, &got));
    CHECK(got.bytes == record.bytes);
    CHECK(got.device == record.device);
  }
  // Erasing a context removes exactly its records.
  std::uint64_t released = 0;
  static std::uint64_t* sink;
  sink = &released;
  table.erase_context(1, [](const AllocationRecord& r) { *sink += r.bytes; });
  std::uint64_t expected = 0;
  for (auto it = reference.begin(); it != reference.end();) {
    if (it->second.context == 1) {
      expected += it->second.bytes;
      it = reference.erase(it);
    } else {
      ++it;
    }
  }
  CHECK(released == expected);
  CHECK(table.size() == reference.size());
  for (const auto& [key, record] : reference) {
    AllocationRecord got{};
    CHECK(table.find(key, &got));
  }
}

TEST_CASE("a VMM handle is gone only when released and unmapped", "[interpose]") {
  AllocationTable table;
  AllocationRecord created{1 << 20, 0, 0};
  created.references = 1;
  REQUIRE(table.insert(0x100, created));
  AllocationRecord record{0, -1, 0};
  bool gone = true;
  REQUIRE(table.adjust(0x100, 0, 1, &record, &gone));  // mapped
  CHECK_FALSE(gone);
  REQUIRE(table.adjust(0x100, 1, 0, &record, &gone));  // retained
  REQUIRE(table.adjust(0x100, -1, 0, &record, &gone));
  REQUIRE(table.adjust(0x100, -1, 0, &record, &gone));  // released while mapped
  CHECK_FALSE(gone);
  CHECK(record.references == 0);
  CHECK(record.mappings == 1);
  REQUIRE(table.adjust(0x100, 0, -1, &record, &gone));  // the last unmap
  CHECK(gone);
  CHECK(record.bytes == (1u << 20));
  CHECK(table.size() == 0);
  CHECK_FALSE(table.adjust(0x100, 0, -1, &record, &gone));
  // Counts never wrap below zero.
  REQUIRE(table.insert(0x200, created));
  REQUIRE(table.adjust(0x200, 0, -3, &record, &gone));
  CHECK(record.mappings == 0);
  CHECK_FALSE(gone);
}

TEST_CASE("relink moves a pool's allocations and sums them", "[interpose]") {
  AllocationTable table;
  for (std::uint64_t key = 1; key <= 10; ++key) {
    AllocationRecord record{key * 100, 0, 0};
    record.link = key % 2 == 0 ? 0xabc : 0xdef;
    REQUIRE(table.insert(key * 4096, record));
  }
  CHECK(table.relink(0xabc, 0) == 100 * (2 + 4 + 6 + 8 + 10));
  CHECK(table.relink(0xabc, 0) == 0);
  std::uint64_t keys[16];
  CHECK(table.keys(keys, 16) == 10);
  CHECK(table.keys(keys, 3) == 3);
}

namespace {
std::atomic<int> g_reclaims{0};
std::atomic<std::uint64_t> g_dead_slot{0};
std::atomic<std::uint64_t>* g_tree_sum = nullptr;
bool reclaim_for_test() {
  ++g_reclaims;
  std::uint64_t bytes = g_dead_slot.exchange(0);
  if (bytes == 0) return false;
  g_tree_sum->fetch_sub(bytes);
  return true;
}
}  // namespace

TEST_CASE("budgets attached to one tree share the limit and reclaim the dead", "[interpose]") {
  std::atomic<std::uint64_t> tree{0}, slot_a{0}, slot_b{0};
  g_tree_sum = &tree;
  DeviceBudget a, b;
  REQUIRE(a.try_reserve(100, 1000));  // held before joining counts in the tree
  a.attach(&tree, &slot_a, &reclaim_for_test);
  b.attach(&tree, &slot_b, &reclaim_for_test);
  CHECK(tree.load() == 100);
  CHECK(slot_a.load() == 100);
  REQUIRE(b.try_reserve(800, 1000));
  CHECK_FALSE(a.try_reserve(200, 1000));  // 1100 would pass the tree's limit
  CHECK(g_reclaims.load() == 1);
  CHECK(a.held() == 900);
  CHECK(a.own() == 100);
  CHECK(b.own() == 800);
  // A dead process's 300 bytes are reclaimed on refusal, then the retry fits.
  tree.fetch_add(300);
  g_dead_slot = 300;
  REQUIRE(a.try_reserve(100, 1000));
  CHECK(tree.load() == 1000);
  // Releasing never takes more than this process holds from the tree.
  b.release(5000);
  CHECK(b.own() == 0);
  CHECK(tree.load() == 200);
  a.reset();  // after fork: detached, the slot untouched
  CHECK(a.own() == 0);
  CHECK(slot_a.load() == 200);
}

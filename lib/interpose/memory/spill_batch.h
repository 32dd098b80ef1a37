// Running one planned batch of migrations in one context (spill_plan.h
// says which calls, in which order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "interpose/core/accounting.h"
#include "interpose/memory/spill_plan.h"

namespace gpushare::interpose {

/// The most allocations one batch moves (the spill tick's scan bound).
inline constexpr std::size_t kMaxBatch = 8192;

/// Moves the `count` allocations of `chosen` (indices into `keys`,
/// `records` and `candidates`, all in the context current on the calling
/// thread) to the host or back to their device, on migration streams made
/// for the batch (the legacy stream when none can be made), and waits once
/// per stream. moved[chosen[i]] says whether chosen[i] moved: its prefetch
/// was accepted and its stream finished without an error (`moved` is
/// indexed like `candidates`; other entries are left alone).
void run_batch(const std::uint64_t* keys, const AllocationRecord* records,
               const MigrationCandidate* candidates, const std::size_t* chosen, std::size_t count,
               bool to_host, bool* moved);

}  // namespace gpushare::interpose

// Runs a batch of migrations (spill_batch.h, spill_plan.h).
//
// The streams and the event are made for each batch and destroyed after
// it, not kept per context: the program may destroy a context at any time
// and its streams with it, and a kept handle would then name nothing (or,
// once the address is reused, another context's object). Making four
// streams costs microseconds; a batch moves tens of MiB at least.
// The streams are non-blocking: the legacy stream's work does not wait for
// them (the event orders them after it instead), so the program's later
// work on stream 0 is not held behind a spill.
#include "interpose/memory/spill_batch.h"

#include "interpose/core/log.h"
#include "interpose/core/runtime.h"

namespace gpushare::interpose {

namespace {

// The memory worker's scratch (run_batch is not reentrant: the spill tick
// and a suspend both run on the worker, memory_worker.h).
MigrationStep g_steps[batch_steps(kMaxBatch)];

// Makes up to kMigrationStreams streams that wait for `after`; returns how
// many it made (0: use the legacy stream).
int make_streams(CUevent after, CUstream* streams) {
  RealDriver& real = g_runtime.real;
  if (after == nullptr || real.real_cuStreamCreate == nullptr ||
      real.real_cuStreamWaitEvent == nullptr || real.real_cuStreamDestroy_v2 == nullptr) {
    return 0;
  }
  int made = 0;
  while (made < kMigrationStreams &&
         real.real_cuStreamCreate(&streams[made], CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS) {
    ++made;
  }
  return made;
}

}  // namespace

void run_batch(const std::uint64_t* keys, const AllocationRecord* records,
               const MigrationCandidate* candidates, const std::size_t* chosen, std::size_t count,
               bool to_host, bool* moved) {
  RealDriver& real = g_runtime.real;
  for (std::size_t i = 0; i < count; ++i) moved[chosen[i]] = false;
  if (count == 0 || count > kMaxBatch) return;
  CUevent after = nullptr;
  if (real.real_cuEventCreate == nullptr ||
      real.real_cuEventCreate(&after, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    after = nullptr;
  }
  CUstream streams[kMigrationStreams] = {};
  int made = make_streams(after, streams);
  std::size_t steps = plan_batch(candidates, chosen, count, made, g_steps, batch_steps(count));
  // Per stream: whether it failed (then its items did not surely move).
  bool stream_failed[kMigrationStreams + 1] = {};  // the last: the legacy stream
  CUresult issued = CUDA_SUCCESS;
  for (std::size_t n = 0; n < steps; ++n) {
    const MigrationStep& step = g_steps[n];
    CUstream stream = step.stream < 0 ? nullptr : streams[step.stream];
    bool& failed = stream_failed[step.stream < 0 ? kMigrationStreams : step.stream];
    CUdevice where = to_host ? CU_DEVICE_CPU : static_cast<CUdevice>(records[step.item].device);
    CUdeviceptr pointer = static_cast<CUdeviceptr>(keys[step.item]);
    switch (step.kind) {
      case StepKind::kRecordLegacy:
        if (real.real_cuEventRecord(after, nullptr) != CUDA_SUCCESS) {
          // No ordering event: every stream must wait for the legacy
          // stream some other way; the batch falls back to it alone.
          for (int s = 0; s < made; ++s) stream_failed[s] = true;
        }
        break;
      case StepKind::kStreamWait:
        if (!failed && real.real_cuStreamWaitEvent(stream, after, 0) != CUDA_SUCCESS) failed = true;
        break;
      case StepKind::kAdvise:
        // A stream that cannot be ordered after the legacy one moves nothing.
        if (failed) break;
        issued = real.real_cuMemAdvise(pointer, candidates[step.item].bytes,
                                       CU_MEM_ADVISE_SET_PREFERRED_LOCATION, where);
        break;
      case StepKind::kPrefetch:
        if (failed || issued != CUDA_SUCCESS) break;
        if (real.real_cuMemPrefetchAsync(pointer, candidates[step.item].bytes, where, stream) ==
            CUDA_SUCCESS) {
          moved[step.item] = true;
        }
        break;
      case StepKind::kSynchronize:
        if (real.real_cuStreamSynchronize(stream) != CUDA_SUCCESS) failed = true;
        break;
    }
  }
  // Items on a stream that failed did not (surely) move.
  for (std::size_t n = 0; n < steps; ++n) {
    const MigrationStep& step = g_steps[n];
    if (step.kind != StepKind::kPrefetch) continue;
    if (stream_failed[step.stream < 0 ? kMigrationStreams : step.stream]) moved[step.item] = false;
  }
  for (int s = 0; s < made; ++s) real.real_cuStreamDestroy_v2(streams[s]);
  if (after != nullptr) real.real_cuEventDestroy_v2(after);
  if (steps == 0) GS_DEBUG("a migration batch of %zu allocations could not be planned", count);
}

}  // namespace gpushare::interpose

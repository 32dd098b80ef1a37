// Plain device memory a suspend can release.
//
// With GPUSHARE_SUSPENDABLE=on (gpushare-run --suspendable), a job's plain
// device allocations (cuMemAlloc_v2, cuMemAllocPitch_v2) are made with the
// virtual memory management API instead of cuMemAlloc: an address range is
// reserved (cuMemAddressReserve), physical memory created on the device
// (cuMemCreate), mapped over the range (cuMemMap) and made accessible
// (cuMemSetAccess). The program gets the range's address, which works
// everywhere a cuMemAlloc pointer does. A suspend (suspend.h) copies the
// memory to the host, unmaps and releases the physical memory, and keeps
// the reservation; a resume creates physical memory again, maps it at the
// same address and copies the data back, so every pointer the program holds
// stays valid.
//
// It is opt-in, because it costs: each allocation is rounded up to the
// allocation granularity (2 MiB on current GPUs and on the simulator) and
// charged so, and an allocation takes four driver calls instead of one
// (bench/memory measures both); and real drivers refuse cuIpcGetMemHandle
// on VMM memory, so a program that shares memory between processes that
// way must not be started suspendable. Without it, a suspend refuses plain
// memory.
//
// The record (AllocationRecord, vmm_backed set) keeps the physical handle in
// `link`; while suspended, `link` holds the host copy and `suspended` is set.
// vmm_lock() serialises a suspend or resume of an allocation with its free.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "interpose/core/accounting.h"

namespace gpushare::interpose {

struct RealDriver;

/// Resolves the VMM and copy entry points suspend needs (not wrapped).
void resolve_suspend_entries(void* libcuda, RealDriver* real);

/// Whether this job's plain allocations are VMM-backed: suspendable and the
/// driver has every VMM entry point.
bool vmm_backing();

/// `bytes` rounded up to `device`'s allocation granularity; 0 when the
/// driver does not say.
std::uint64_t vmm_rounded(std::uint64_t bytes, int device);

/// Reserves `rounded` bytes of address space and maps new physical memory
/// of `device` over it; on success *pointer is the range and *handle the
/// physical memory's handle. Nothing is left behind on failure.
CUresult allocate_vmm_backed(CUdeviceptr* pointer, std::uint64_t rounded, int device,
                             std::uint64_t* handle);

/// Creates physical memory of `device` and maps it over [pointer, +bytes),
/// readable and writable by the device (the allocation step, and resume).
CUresult vmm_map_physical(CUdeviceptr pointer, std::uint64_t bytes, int device,
                          std::uint64_t* handle);
/// Unmaps [pointer, +bytes) and releases `handle` of `device` (the free
/// step, and suspend). On failure nothing has changed (a release refused
/// after the unmap maps the memory back).
CUresult vmm_release_physical(CUdeviceptr pointer, std::uint64_t bytes, std::uint64_t handle,
                              int device);

/// Frees a VMM-backed allocation (mapped, or suspended with a host copy):
/// the physical memory, the host copy, the reservation, the charge.
/// False when `pointer` is not a VMM-backed allocation (the caller frees it
/// as usual).
bool free_vmm_backed(CUdeviceptr pointer, CUresult* result);

/// Frees the VMM-backed allocations of a context being destroyed or reset:
/// unlike cuMemAlloc memory, VMM memory outlives its context in the driver,
/// so the program's allocations would otherwise leak.
void vmm_release_context(std::uint64_t context);

void vmm_lock();
void vmm_unlock();

/// Host memory for a suspended allocation's copy (mmap; never libstdc++).
void* host_copy_allocate(std::uint64_t bytes);
void host_copy_free(void* copy, std::uint64_t bytes);

}  // namespace gpushare::interpose

namespace gpushare::interpose {
/// What the program itself does with VMM and IPC (hooks_vmm.cc): its live
/// physical handles and mappings (its own, not vmm_backing's), and whether it exported memory with
/// cuIpcGetMemHandle.
std::size_t program_vmm_mappings();
bool ipc_exported();
/// Whether the job's memory pools hold device memory (hooks_pool.cc).
bool pools_hold_memory();
}  // namespace gpushare::interpose

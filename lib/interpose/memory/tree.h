// A job's process tree shares one memory budget per device (tree.cc).
#pragma once

#include <cstdint>

namespace gpushare::interpose {

/// Joins the tree named by GPUSHARE_TREE, once this process's devices are
/// known: from then on their budgets count the tree's sum against the
/// limit. Without the variable, or with a file that is not the user's own,
/// the process counts on its own.
void join_process_tree(int device_count);

/// The largest context a process of the job measured on `device` (this
/// process's index), or 0 when none did or the process counts on its own.
std::uint64_t tree_context_bytes(int device);
/// Records a context measured on `device` for the job's other processes.
void note_tree_context_bytes(int device, std::uint64_t bytes);
/// Serialises the job's first context measurement across its processes
/// (flock on the tree file, which dies with its holder): false, holding
/// nothing, when the process counts on its own.
bool lock_tree_measurement();
void unlock_tree_measurement();

/// The tree file this process joined (its descriptor goes with the
/// coordinator registration), or null.
const char* joined_tree_path();

}  // namespace gpushare::interpose

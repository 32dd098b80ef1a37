// A job's process tree shares one memory budget per device (tree.cc).
#pragma once

namespace gpushare::interpose {

/// Joins the tree named by GPUSHARE_TREE, once this process's devices are
/// known: from then on their budgets count the tree's sum against the
/// limit. Without the variable, or with a file that is not the user's own,
/// the process counts on its own.
void join_process_tree(int device_count);

/// The tree file this process joined (its descriptor goes with the
/// coordinator registration), or null.
const char* joined_tree_path();

}  // namespace gpushare::interpose

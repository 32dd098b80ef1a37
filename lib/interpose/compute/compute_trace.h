// The compute trace: an opportunistic job's admission decisions as JSON
// Lines, one file per process, for whoever has to say afterwards why the
// job got the GPU time it got (docs/compute-trace.md lists the records).
//
// Enabled by GPUSHARE_COMPUTE_TRACE=PATH (gpushare-run --compute-trace);
// "%p" in PATH becomes the process id, so that every process of a job, a
// forked one included, writes its own file. The file is created, never
// reused: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600. O_EXCL refuses a
// file or a link that is already there, so a path in a shared directory
// cannot be turned against the job (a planted link to a file of the
// user's is not followed, a planted file is not appended to), and a second
// run over the same path loses nothing of the first; the trace is then
// off for that process, which says so once on stderr.
//
// Cost. Records are written only where the launch path already waits or
// retires a marker event (once per wait or per few dozen launches, never
// per launch): a line is formatted by hand into a stack buffer (no
// allocation, no libstdc++) and appended to a process-wide buffer under its
// own mutex; the buffer goes to the file with write(2) when it is three
// quarters full, when a record comes 200 ms or more after the last write
// (so a job killed by a signal loses at most that much), and at exit.
// With no trace, every call site tests one process-local bool.
//
// Bounded: at kTraceMaxBytes the trace ends with a "compute-trace-truncated"
// record and nothing more is written.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpushare::interpose {

/// The most bytes one process's trace holds, its last record included.
inline constexpr std::uint64_t kTraceMaxBytes = 8ull << 20;

/// Whether records are wanted: GPUSHARE_COMPUTE_TRACE is set and its file
/// has not failed. One load.
bool trace_enabled();

/// One record, formatted in place: the constructor writes "kind",
/// "version" and "t_ns" (CLOCK_MONOTONIC), the calls add fields in order,
/// emit() appends the line to the trace. Keys are the caller's literals
/// (not escaped); string values are escaped. A line longer than the
/// buffer is dropped whole.
class TraceLine {
 public:
  TraceLine(const char* kind, std::uint64_t t_ns);
  TraceLine& num(const char* key, std::uint64_t value);
  TraceLine& real(const char* key, double value);
  TraceLine& str(const char* key, const char* value);
  TraceLine& flag(const char* key, bool value);
  void emit();

 private:
  void raw(const char* text);
  void key(const char* name);
  char text_[640];
  std::size_t length_ = 0;
  bool overflow_ = false;
};

/// Why the job is paused now, in the trace's words: "operator",
/// "host-memory" or "operator+host-memory" (the limits page's bits).
const char* trace_pause_reason();

/// Writes what is buffered (at exit, and before a process image is lost).
void trace_flush();

/// In a forked child: the parent's file and buffer stay the parent's; the
/// child opens its own file (its own pid) at its first record.
void trace_after_fork();

}  // namespace gpushare::interpose

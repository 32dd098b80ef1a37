// Waking the client thread, and through it the coordinator, between ticks
// (control_block.h, "Wake-ups"). Job side only: libc, no libstdc++.
//
// A production allocation that starts waiting for room calls wake_client()
// (local_counters.h): one write to an eventfd that the client thread polls
// beside its socket. The thread then publishes the counters and, when a
// room request is new since it last told the coordinator, sends the "room"
// line. A line from the coordinator wakes the thread the same way (its
// socket becomes readable), which runs its memory work at once. A
// production job's free of a large allocation wakes it too: the freed
// room lets spilled memory come back without waiting for a tick.
#pragma once

#include <cstdint>

#include "coord/job/local_counters.h"

namespace gpushare::coord::job::client_detail {

/// Opens the eventfd (false when it cannot: the client then ticks only).
bool wakeup_open();
/// Closes it (client_stop, a forked child).
void wakeup_close();
/// The descriptor the client thread polls, or -1.
int wakeup_fd();
/// Empties it after it polled readable.
void wakeup_drain();
/// After the counters were published: sends the "room" line on `socket_fd`
/// when some device's mem_request_seq is newer than the last one told, or
/// when a device's mem_used_bytes fell since it was last looked at (memory
/// freed: room for spilled memory to come back), the latter at most once
/// per 5 ms (CLOCK_MONOTONIC `now_ns`).
void tell_room_requests(int socket_fd, const LocalCounters* counters, int device_count,
                        std::uint64_t now_ns);
/// Forgets what was told (a new registration: a new coordinator).
void forget_told();

}  // namespace gpushare::coord::job::client_detail

// The job's side of the wire format (gpushare-protocol(7)), without a JSON
// library: the registration message is written with snprintf, and of the
// coordinator's one-line reply only "kind" and "message" are read (the job's
// id and limits come in the control block, not in the reply).
#pragma once

#include <cstddef>
#include <cstdint>

#include "coord/contract/control_block.h"
#include "coord/contract/version.h"

namespace gpushare::coord::job::wire {


struct RegisterFields {
  const char* name;       ///< any bytes; escaped, invalid UTF-8 replaced by '?', cut at 128 bytes
  const char* qos;        ///< "production" | "opportunistic"
  std::uint64_t id_hint;  ///< 0 for none: the id a previous coordinator gave
  int device_count;
  const unsigned char (*uuids)[16];
  const std::uint64_t* mem_total_bytes;
  const std::uint64_t* start_limit_bytes;  ///< kNoLimit = none
  const std::uint64_t* mem_limit_bytes;        ///< the limit in force now; kNoLimit = none
  std::uint64_t compute_cap_ppm = kNoLimit;    ///< the job's static compute cap; kNoLimit = none
  bool tree = false;  ///< the message comes with the job's tree file descriptor (SCM_RIGHTS)
};

/// Writes the register message, newline included. Returns its length, or 0
/// when it does not fit.
std::size_t write_register(char* buffer, std::size_t size, const RegisterFields& fields);

/// Copies the string value of top-level key `key` from a compact JSON line
/// (as the coordinator writes it) into `out`, undoing simple escapes.
/// False when absent or not a string.
bool find_string(const char* line, const char* key, char* out, std::size_t size);

}  // namespace gpushare::coord::job::wire

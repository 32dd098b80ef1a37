// gpushare-cuda-client's copy steps (copy_steps.cc): copies between a host
// buffer and the last allocation, for the simulator's copy-path tests.
#pragma once

#include <cstddef>
#include <string>

#include "client_api.h"

namespace gpushare::clients {

/// copy:DIR:SIZE[:async|sync] on the device allocation [device, device +
/// device_bytes). DIR: htod (host buffer to the allocation), dtoh (back),
/// dtod (the allocation's first SIZE bytes to the next SIZE). The host
/// buffer is anonymous memory mapped for the call (untouched pages cost
/// nothing until written). False for a malformed step; else *result is the
/// copy's status.
bool run_copy(const Api& api, CUstream stream, CUdeviceptr device, std::size_t device_bytes,
              const std::string& direction, std::size_t bytes, bool async, CUresult* result);

/// copies:COUNT:SIZE[:async]: COUNT host-to-device copies of SIZE bytes
/// into the allocation (asynchronous ones on `stream`), for the cost of
/// one call.
CUresult run_copies(const Api& api, CUstream stream, CUdeviceptr device, std::size_t device_bytes,
                    unsigned long long count, std::size_t bytes, bool async);

}  // namespace gpushare::clients

// A GPU's UUID as people and nvidia-smi write it.
#pragma once

#include <cstddef>

namespace gpushare {

/// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" and its terminating NUL.
inline constexpr std::size_t kUuidTextBytes = 41;

/// Writes the 16 bytes cuDeviceGetUuid gives as text into `text`, which
/// holds at least kUuidTextBytes.
void format_uuid(const unsigned char uuid[16], char* text);

}  // namespace gpushare

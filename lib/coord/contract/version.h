// The version of the coordinator's wire protocol, gpushare-protocol(7): both
// the job's hand-written encoder (job/wire.cc) and the JSON codec of the
// coordinator and gpushare-ctl (contract/protocol.cc) write and check it.
#pragma once

namespace gpushare::coord {

inline constexpr int kProtocolVersion = 1;

}  // namespace gpushare::coord

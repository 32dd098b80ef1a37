// libFuzzer target for the coordinator's message handling: framing
// (LineBuffer, with the input cut into pieces the way a socket cuts it) and
// parsing (parse_request), plus two properties that must hold for every
// input:
//   - a line the buffer yields is never longer than the bound;
//   - a request that parses re-encodes to a line that parses again to the
//     same encoding (what the coordinator accepts, gpushare-ctl can send).
// The reply decoder (decode_records) sees the same bytes, as a client would
// from a hostile or broken coordinator.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "coord/server/line_buffer.h"
#include "coord/contract/protocol.h"

using gpushare::coord::kMaxMessageBytes;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);

  // Framing: the first byte picks a piece size, as reads would split it.
  std::size_t piece = size == 0 ? 1 : 1 + data[0] % 64;
  gpushare::coord::server::LineBuffer buffer(kMaxMessageBytes);
  for (std::size_t at = 0; at < input.size(); at += piece) {
    if (!buffer.append(input.substr(at, piece))) break;
    while (auto line = buffer.next_line()) {
      if (line->size() > kMaxMessageBytes) std::abort();
      auto request = gpushare::coord::parse_request(*line);
      if (!request) continue;
      std::string encoded = gpushare::coord::encode_request(*request);
      std::string_view again(encoded);
      again.remove_suffix(1);  // the newline
      auto reparsed = gpushare::coord::parse_request(again);
      if (!reparsed) std::abort();
      if (gpushare::coord::encode_request(*reparsed) != encoded) std::abort();
    }
  }

  // The whole input as one message and as one reply.
  (void)gpushare::coord::parse_request(input);
  (void)gpushare::coord::decode_records(input);
  return 0;
}

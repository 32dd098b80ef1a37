#include "vocab/job.h"

namespace gpushare {

const char* qos_name(std::uint32_t qos) {
  return qos == kQosOpportunistic ? "opportunistic" : "production";
}

bool parse_qos(std::string_view text, Qos* qos) {
  if (text == "production") {
    *qos = kQosProduction;
  } else if (text == "opportunistic") {
    *qos = kQosOpportunistic;
  } else {
    return false;
  }
  return true;
}

JobNameError check_job_name(std::string_view name) {
  if (name.empty()) return JobNameError::kEmpty;
  if (name.size() > kMaxJobNameBytes) return JobNameError::kTooLong;
  for (char c : name) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return JobNameError::kControlCharacter;
  }
  return JobNameError::kNone;
}

const char* job_name_error_reason(JobNameError error) {
  switch (error) {
    case JobNameError::kEmpty:
      return "is empty";
    case JobNameError::kTooLong:
      return "is longer than 128 bytes";
    case JobNameError::kControlCharacter:
      return "contains a control character";
    case JobNameError::kNone:
      break;
  }
  return "is invalid";
}

// Exact decimal arithmetic in millionths of a percent would be overkill:
// a share is a control input, and the nearest ppm is what the loop uses.
bool parse_compute_percent(std::string_view text, std::uint64_t* ppm) {
  if (!text.empty() && text.back() == '%') text.remove_suffix(1);
  if (text.empty() || text.front() < '0' || text.front() > '9') return false;
  std::uint64_t whole = 0, fraction = 0, scale = 1;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
    if (whole > 100) return false;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (scale < 1000000000000ull) {  // digits beyond 1e-12 % cannot matter
        fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
        scale *= 10;
      }
    }
  }
  if (i != text.size()) return false;
  // percent * 10^4 = ppm, rounded to nearest.
  std::uint64_t value = whole * 10000 + (fraction * 10000 + scale / 2) / scale;
  if (value == 0 && whole == 0 && fraction == 0) return false;  // 0% is not a share
  if (value > 1000000) return false;                            // above 100%
  *ppm = value == 0 ? 1 : value;
  return true;
}

}  // namespace gpushare

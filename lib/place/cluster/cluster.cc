#include "place/cluster/cluster.h"

namespace gpushare::place {

std::string_view to_string(Qos job_class) { return qos_name(job_class); }

std::string_view to_string(Order order) { return order == Order::kBinpack ? "binpack" : "spread"; }

std::optional<Qos> parse_job_class(std::string_view text) {
  Qos qos = kQosProduction;
  if (!parse_qos(text, &qos)) return std::nullopt;
  return qos;
}

std::optional<Order> parse_order(std::string_view text) {
  if (text == "binpack") return Order::kBinpack;
  if (text == "spread") return Order::kSpread;
  return std::nullopt;
}

const ResidentJob* production_job(const Gpu& gpu) {
  for (const ResidentJob& job : gpu.jobs) {
    if (job.job_class == kQosProduction) return &job;
  }
  return nullptr;
}

std::optional<std::size_t> control_character(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) return i;
  }
  return std::nullopt;
}

std::string control_character_message(std::string_view text, std::size_t at) {
  static const char kHex[] = "0123456789ABCDEF";
  auto c = static_cast<unsigned char>(text[at]);
  return std::string("must not contain control characters (U+00") + kHex[c >> 4] + kHex[c & 0xf] +
         " at byte " + std::to_string(at + 1) + ")";
}

}  // namespace gpushare::place

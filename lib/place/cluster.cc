#include "place/cluster.h"

namespace gpushare::place {

std::string_view to_string(JobClass job_class) {
  return job_class == JobClass::kProduction ? "production" : "opportunistic";
}

std::string_view to_string(Order order) { return order == Order::kBinpack ? "binpack" : "spread"; }

std::optional<JobClass> parse_job_class(std::string_view text) {
  if (text == "production") return JobClass::kProduction;
  if (text == "opportunistic") return JobClass::kOpportunistic;
  return std::nullopt;
}

std::optional<Order> parse_order(std::string_view text) {
  if (text == "binpack") return Order::kBinpack;
  if (text == "spread") return Order::kSpread;
  return std::nullopt;
}

const ResidentJob* production_job(const Gpu& gpu) {
  for (const ResidentJob& job : gpu.jobs) {
    if (job.job_class == JobClass::kProduction) return &job;
  }
  return nullptr;
}

}  // namespace gpushare::place

// `gpushare-probe device`: one JSON record per GPU.
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "probe.h"

namespace probe_cmd {

int run_device(const ProbeOptions& options) {
  auto gpu = open_gpu(options.sim);
  if (!gpu) {
    gpushare::diag::error(gpu.error().message);
    return gpushare::exit_status::kFailure;
  }
  auto records = gpushare::probe::probe_devices(**gpu);
  if (!records) {
    gpushare::diag::error(records.error().message);
    return gpushare::exit_status::kFailure;
  }
  gpushare::JsonLinesWriter writer(std::cout);
  for (const auto& record : *records) {
    writer.write("device", 1, gpushare::probe::device_fields(record));
  }
  return gpushare::exit_status::kSuccess;
}

}  // namespace probe_cmd

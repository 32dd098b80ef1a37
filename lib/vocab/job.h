// The job's vocabulary: the words every part of gpushare uses for a job,
// defined once. The interposer, the simulated driver, the coordinator and
// the tools all include this header; it needs no libstdc++ symbols (only
// header-only <string_view>), allocates nothing and throws nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpushare {

/// Devices a job can see (CUDA_VISIBLE_DEVICES entries beyond are ignored).
inline constexpr int kMaxDevices = 16;
/// A limit of "none": the job may use the whole device (or all GPU time).
inline constexpr std::uint64_t kNoLimit = UINT64_MAX;

/// The QoS class. Its values are also its encoding in the control block.
enum Qos : std::uint32_t { kQosProduction = 0, kQosOpportunistic = 1 };

/// "production" | "opportunistic"; takes the control block's encoding too
/// (anything but kQosOpportunistic is production).
const char* qos_name(std::uint32_t qos);
/// False (and *qos untouched) unless `text` is exactly a class name.
bool parse_qos(std::string_view text, Qos* qos);
inline constexpr const char* kQosExpected = "expected production or opportunistic";

/// A job name: 1 to 128 bytes, no control characters (names are shown in
/// tables and logs, and travel in JSON).
inline constexpr std::size_t kMaxJobNameBytes = 128;
enum class JobNameError { kNone, kEmpty, kTooLong, kControlCharacter };
JobNameError check_job_name(std::string_view name);
/// "is empty", "is longer than 128 bytes", "contains a control character".
const char* job_name_error_reason(JobNameError error);

/// A compute share as `compute=` takes it: a percentage above 0 and at most
/// 100 ("30%", "12.5", "100%"), in parts per million (at least 1). "none" is
/// not handled here: callers map it to kNoLimit.
bool parse_compute_percent(std::string_view text, std::uint64_t* ppm);
inline constexpr const char* kComputeExpected =
    "expected a percentage above 0 and at most 100 (e.g. 30%), or none";

}  // namespace gpushare

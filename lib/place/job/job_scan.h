// The fast path of the job reader: one flat job record read straight from
// memory, without building a JSON tree.
//
// It takes only what it can read exactly as job_from_json reads it from
// nlohmann's tree: an object whose keys and string values are printable
// ASCII without escapes, whose numbers are non-negative, and whose values
// are all valid for their fields. Anything else (a nested value, true,
// false, null, a sign, an escape, a byte outside printable ASCII, a
// repeated field, a number out of range, any error) is "not mine": the
// caller parses the record again with nlohmann and job_from_json, so every
// accepted input and every error message is theirs.
#pragma once

#include <cstddef>
#include <string_view>

#include "place/job/job.h"

namespace gpushare::place {

enum class ScanResult {
  kJob,         ///< a valid job; *consumed bytes end at its '}'
  kIncomplete,  ///< the text ends inside the record: read more, try again
  kNotMine,     ///< parse it the careful way
};

/// Reads the record at the start of `text` (which starts at its '{').
ScanResult scan_job(std::string_view text, Job* job, std::size_t* consumed);

}  // namespace gpushare::place

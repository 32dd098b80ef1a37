// Jobs from a JSON Lines stream, without building a JSON tree per record.
//
// The reader owns a large buffer over the input stream and reads each
// record from it directly (job_scan.h). A record the fast path does not
// take, and every malformed one, is parsed by nlohmann from the same
// buffer, exactly as JsonLinesReader and job_from_json read it: the same
// records accepted, the same errors with the same record numbers and
// line:column positions, the same resynchronisation at the next line.
//
// It never waits for more input than the record it is reading, so
// placements still stream: a job is placed as soon as its line arrives.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "place/job/job.h"

namespace gpushare::place {

/// One input record: a job, or why it is not one.
struct JobRecord {
  std::optional<Job> job;
  std::optional<JobId> id;  ///< for errors, when the record had one
  std::string error;        ///< "SOURCE: record N: ..." when not a job
};

class JobReader {
 public:
  /// `source_name` prefixes errors: "stdin", or a file name.
  JobReader(std::istream& in, std::string source_name);
  ~JobReader();
  JobReader(const JobReader&) = delete;
  JobReader& operator=(const JobReader&) = delete;

  /// The next record into *record; false at the end of input.
  bool next(JobRecord* record);

  /// 1-based number of the record last returned.
  std::size_t record_number() const { return record_number_; }
  const std::string& source_name() const { return source_name_; }

  /// The input as buffered here: what a writer asks to learn whether more
  /// input is already waiting (in_avail), or to skip whitespace.
  std::streambuf* input();

 private:
  class Buffer;
  bool read_careful(JobRecord* record);

  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::istream> stream_;  // over buffer_, for nlohmann
  std::string source_name_;
  std::size_t record_number_ = 0;
};

}  // namespace gpushare::place

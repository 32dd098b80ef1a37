#include "place/job/job_reader.h"

#include <algorithm>
#include <cstring>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <vector>

#include "common/jsonl.h"
#include "place/job/job_scan.h"

namespace gpushare::place {

/// The input in large pieces, as a streambuf so nlohmann can read a record
/// the fast path leaves, from where it starts. It reads what the source
/// already holds (its buffer, what the kernel has for it) and waits for
/// more only when asked for a byte it does not have, as a peek would.
class JobReader::Buffer : public std::streambuf {
 public:
  explicit Buffer(std::streambuf* source) : source_(source), data_(kCapacity) {
    setg(data_.data(), data_.data(), data_.data());
  }

  std::string_view unread() const {
    return std::string_view(gptr(), static_cast<std::size_t>(egptr() - gptr()));
  }
  void consume(std::size_t bytes) { gbump(static_cast<int>(bytes)); }

  /// Moves the unread bytes to the front and reads more after them; false
  /// at the end of input or when a record fills the whole buffer.
  bool more() {
    std::size_t unread = static_cast<std::size_t>(egptr() - gptr());
    if (unread == data_.size()) return false;
    std::memmove(data_.data(), gptr(), unread);
    std::size_t added = fill(data_.data() + unread, data_.size() - unread);
    setg(data_.data(), data_.data(), data_.data() + unread + added);
    return added > 0;
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    std::size_t added = fill(data_.data(), data_.size());
    setg(data_.data(), data_.data(), data_.data() + added);
    return added > 0 ? traits_type::to_int_type(*gptr()) : traits_type::eof();
  }

  // Bytes the source holds count as waiting input too.
  std::streamsize showmanyc() override { return source_->in_avail(); }

 private:
  // Records longer than this take the careful path, which streams.
  static constexpr std::size_t kCapacity = 1 << 20;

  std::size_t fill(char* to, std::size_t room) {
    if (traits_type::eq_int_type(source_->sgetc(), traits_type::eof())) return 0;
    std::size_t total = 0;
    while (total < room) {
      std::streamsize available = source_->in_avail();
      if (available <= 0) break;
      std::streamsize got =
          source_->sgetn(to + total, static_cast<std::streamsize>(std::min(
                                         room - total, static_cast<std::size_t>(available))));
      if (got <= 0) break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

  std::streambuf* source_;
  std::vector<char> data_;
};

JobReader::JobReader(std::istream& in, std::string source_name)
    : buffer_(std::make_unique<Buffer>(in.rdbuf())),
      stream_(std::make_unique<std::istream>(buffer_.get())),
      source_name_(std::move(source_name)) {}

JobReader::~JobReader() = default;

std::streambuf* JobReader::input() { return buffer_.get(); }

bool JobReader::next(JobRecord* record) {
  *record = JobRecord{};
  // As JsonLinesReader's peek: a stream that reached the end stays there.
  if (!stream_->good()) return false;
  for (;;) {
    int c = buffer_->sgetc();
    if (c == std::char_traits<char>::eof()) {
      stream_->setstate(std::ios::eofbit);
      return false;
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    buffer_->sbumpc();
  }
  ++record_number_;

  Job job;
  for (;;) {
    std::size_t consumed = 0;
    ScanResult result = scan_job(buffer_->unread(), &job, &consumed);
    if (result == ScanResult::kJob) {
      buffer_->consume(consumed);
      record->id = job.id;
      record->job = std::move(job);
      return true;
    }
    if (result == ScanResult::kNotMine || !buffer_->more()) break;
  }
  return read_careful(record);
}

bool JobReader::read_careful(JobRecord* record) {
  std::string prefix = source_name_ + ": record " + std::to_string(record_number_) + ": ";
  nlohmann::json value;
  try {
    *stream_ >> value;
  } catch (const nlohmann::json::exception& e) {
    // Resynchronise at the next line: the usual case is one bad line.
    stream_->clear();
    stream_->ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    record->error = prefix + without_exception_id(e.what());
    return true;
  }
  record->id = job_id_of(value);
  Result<Job> job = job_from_json(value);
  if (!job) {
    record->error =
        prefix + (record->id ? "job " + quoted(*record->id) + ": " : "") + job.error().message;
    return true;
  }
  record->job = std::move(*job);
  return true;
}

}  // namespace gpushare::place

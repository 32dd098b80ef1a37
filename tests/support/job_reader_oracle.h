// The job reader's oracle, shared by its unit test and its fuzz target:
// a record as text (every field spelled out, so two readers' results
// compare as strings and a difference shows), what gpushare-place read
// before the fast path (JsonLinesReader, then job_from_json, with the same
// words around an error), and JobReader over the same input, whole or
// handed over in pieces as a pipe does.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "common/jsonl.h"
#include "place/job/job.h"
#include "place/job/job_reader.h"

namespace gpushare::place::oracle {

namespace place = ::gpushare::place;


/// A record as text, every field of the job spelled out, so two readers'
/// results compare as strings and a difference shows in the message.
inline std::string describe(const place::JobRecord& r, std::size_t number) {
  std::ostringstream out;
  out.precision(17);
  out << "#" << number << " ";
  if (r.id) out << "id=" << r.id->text << (r.id->number ? "(n)" : "(s)") << " ";
  if (!r.job) return out.str() + "error: " + r.error;
  const place::Job& j = *r.job;
  out << "job=" << j.id.text << (j.id.number ? "(n)" : "(s)") << " tenant=" << j.tenant
      << " gpus=" << j.gpus << " mem=" << j.mem_bytes << " class=" << place::to_string(j.hint)
      << " util=" << j.util << " queued=" << (j.queued_s ? std::to_string(*j.queued_s) : "-")
      << " node_order=" << (j.node_order ? static_cast<int>(*j.node_order) : -1)
      << " gpu_order=" << (j.gpu_order ? static_cast<int>(*j.gpu_order) : -1);
  if (j.queued_s) out << " queued_exact=" << *j.queued_s;
  return out.str();
}

/// What gpushare-place read before the fast path: JsonLinesReader, then
/// job_from_json, with the same words around an error.
inline std::vector<std::string> reference(const std::string& input) {
  std::istringstream in(input);
  ::gpushare::JsonLinesReader reader(in, "jobs");
  std::vector<std::string> out;
  for (;;) {
    place::JobRecord r;
    auto next = reader.next();
    if (!next) {
      r.error = next.error().message;
    } else if (!*next) {
      break;
    } else {
      r.id = place::job_id_of(**next);
      auto job = place::job_from_json(**next);
      if (job) {
        r.job = std::move(*job);
      } else {
        r.error = reader.source_name() + ": record " + std::to_string(reader.record_number()) +
                  ": " + (r.id ? "job " + place::quoted(*r.id) + ": " : "") + job.error().message;
      }
    }
    out.push_back(describe(r, reader.record_number()));
  }
  return out;
}

/// A source that hands over at most `piece` bytes at a time, as a pipe
/// does: records arrive cut anywhere, and the reader must read on.
class Trickle : public std::streambuf {
 public:
  Trickle(const std::string& text, std::size_t piece) : text_(text), piece_(piece) {}

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (at_ == text_.size()) return traits_type::eof();
    std::size_t n = std::min(piece_, text_.size() - at_);
    char* begin = text_.data() + at_;
    setg(begin, begin, begin + n);
    at_ += n;
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string text_;
  std::size_t piece_;
  std::size_t at_ = 0;
};

inline std::vector<std::string> fast(const std::string& input, std::size_t piece = 0) {
  std::istringstream whole(input);
  Trickle trickle(input, piece);
  std::istream pieces(&trickle);
  place::JobReader reader(piece == 0 ? static_cast<std::istream&>(whole) : pieces, "jobs");
  std::vector<std::string> out;
  place::JobRecord r;
  while (reader.next(&r)) out.push_back(describe(r, reader.record_number()));
  return out;
}

}  // namespace gpushare::place::oracle

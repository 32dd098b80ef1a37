#include "common/kernel_trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace gpushare {
namespace {

// A cursor over one CSV file: fields of the current line and where each starts.
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  /// The next line (without its newline; a '\r' before it is dropped); false at the end.
  bool next_line() {
    if (pos_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    line_ = text_.substr(pos_, end - pos_);
    if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
    pos_ = end + 1;
    ++line_number_;
    column_ = 0;
    return true;
  }
  bool blank() const { return line_.find_first_not_of(" \t") == std::string_view::npos; }
  std::string_view line() const { return line_; }

  /// The next comma-separated field; `rest` takes the remainder of the line.
  /// False (with *error set) when the line has no more fields.
  bool field(std::string_view what, bool rest, std::string_view* out, Error* error) {
    if (column_ > line_.size()) {
      *error = at(line_.size() + 1, "missing field '" + std::string(what) + "'");
      return false;
    }
    field_column_ = column_;
    std::size_t comma = rest ? std::string_view::npos : line_.find(',', column_);
    if (comma == std::string_view::npos) comma = line_.size();
    *out = line_.substr(column_, comma - column_);
    column_ = comma + 1;
    return true;
  }
  /// After the last field: false (with *error) when more follow.
  bool end(Error* error) const {
    if (column_ <= line_.size()) {
      *error = at(column_ + 1, "unexpected extra field");
      return false;
    }
    return true;
  }
  bool number(std::string_view what, double* out, Error* error) {
    std::string_view text;
    if (!field(what, false, &text, error)) return false;
    std::string copy(text);
    char* stop = nullptr;
    errno = 0;
    double value = copy.empty() ? NAN : std::strtod(copy.c_str(), &stop);
    if (copy.empty() || stop == nullptr || *stop != '\0' || errno != 0 || !std::isfinite(value)) {
      *error = at(field_column_ + 1, std::string(what) + ": '" + copy + "' is not a number");
      return false;
    }
    if (value < 0) {
      *error = at(field_column_ + 1, std::string(what) + ": '" + copy + "' is negative");
      return false;
    }
    *out = value;
    return true;
  }
  Error at(std::size_t column, const std::string& message) const {
    return make_error(std::string(name_) + ":" + std::to_string(line_number_) + ":" +
                      std::to_string(column) + ": " + message);
  }

 private:
  std::string_view text_;
  std::string_view name_;
  std::size_t pos_ = 0;
  std::string_view line_;
  long line_number_ = 0;
  std::size_t column_ = 0;
  std::size_t field_column_ = 0;
};

Status expect_header(CsvReader& reader, std::string_view header, std::string_view name) {
  if (!reader.next_line()) return make_error(std::string(name) + ":1:1: empty file");
  if (reader.line() != header) {
    return reader.at(1, "expected the header '" + std::string(header) + "'");
  }
  return {};
}

struct Row {
  double launch_us = 0;
  double kernel_us = 0;
};

Result<std::vector<Row>> read_kernels(std::string_view csv, std::string_view name) {
  CsvReader reader(csv, name);
  if (Status status = expect_header(reader, "launch_us,start_us,kernel_us,stream,kernel", name);
      !status) {
    return status.error();
  }
  std::vector<Row> rows;
  Error error;
  double previous_launch = 0;
  while (reader.next_line()) {
    if (reader.blank()) continue;
    Row row;
    double start_us = 0, stream = 0;
    std::string_view kernel;
    if (!reader.number("launch_us", &row.launch_us, &error) ||
        !reader.number("start_us", &start_us, &error) ||
        !reader.number("kernel_us", &row.kernel_us, &error) ||
        !reader.number("stream", &stream, &error) ||
        !reader.field("kernel", true, &kernel, &error)) {
      return error;
    }
    if (row.launch_us < previous_launch) {
      return reader.at(1, "launch_us goes back in time (" + std::to_string(row.launch_us) +
                              " after " + std::to_string(previous_launch) + ")");
    }
    if (row.kernel_us > 3600e6) return reader.at(1, "kernel_us: longer than an hour");
    previous_launch = row.launch_us;
    rows.push_back(row);
  }
  if (rows.empty()) return make_error(std::string(name) + ": no kernels");
  return rows;
}

Result<std::vector<double>> read_syncs(std::string_view syncs, std::string_view name) {
  CsvReader reader(syncs, name);
  if (Status status = expect_header(reader, "call_us,return_us,call", name); !status) {
    return status.error();
  }
  std::vector<double> calls;
  Error error;
  while (reader.next_line()) {
    if (reader.blank()) continue;
    double call_us = 0, return_us = 0;
    std::string_view call;
    if (!reader.number("call_us", &call_us, &error) ||
        !reader.number("return_us", &return_us, &error) ||
        !reader.field("call", true, &call, &error)) {
      return error;
    }
    if (return_us < call_us) return reader.at(1, "return_us is before call_us");
    calls.push_back(call_us);
  }
  std::sort(calls.begin(), calls.end());
  return calls;
}

}  // namespace

Result<KernelTrace> parse_kernel_trace(std::string_view csv, std::string_view csv_name,
                                       std::string_view syncs, std::string_view syncs_name) {
  Result<std::vector<Row>> rows = read_kernels(csv, csv_name);
  if (!rows) return rows.error();
  std::vector<double> calls;
  if (!syncs_name.empty()) {
    Result<std::vector<double>> read = read_syncs(syncs, syncs_name);
    if (!read) return read.error();
    calls = std::move(*read);
  }
  KernelTrace trace;
  std::size_t next_call = 0;
  double step_first = 0;
  for (const Row& row : *rows) {
    bool new_step = trace.steps.empty();
    while (next_call < calls.size() && row.launch_us >= calls[next_call]) {
      ++next_call;  // this kernel comes after a synchronisation: a new step
      new_step = true;
    }
    if (new_step) {
      trace.steps.emplace_back();
      step_first = row.launch_us;
    }
    trace.steps.back().kernels.push_back({row.launch_us - step_first, row.kernel_us});
  }
  return trace;
}

std::string syncs_path_for(std::string_view trace_path) {
  constexpr std::string_view kSuffix = ".csv";
  if (trace_path.size() >= kSuffix.size() &&
      trace_path.substr(trace_path.size() - kSuffix.size()) == kSuffix) {
    trace_path.remove_suffix(kSuffix.size());
  }
  return std::string(trace_path) + ".syncs.csv";
}

}  // namespace gpushare

#include "replay/trace.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpushare::replay {
namespace {

std::vector<std::string_view> split(std::string_view line, char separator) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = line.find(separator, start);
    fields.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return fields;
    start = end + 1;
  }
}

/// Lines without their CR, with 1-based numbers; blank lines skipped.
std::vector<std::pair<long, std::string_view>> lines_of(std::string_view text) {
  std::vector<std::pair<long, std::string_view>> out;
  long number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    if (!line.empty()) out.emplace_back(number, line);
    start = end + 1;
  }
  return out;
}

Error at_line(std::string_view source, long line, const std::string& message) {
  return make_error(std::string(source) + ":" + std::to_string(line) + ": " + message);
}

bool to_double(std::string_view text, double* value) {
  // from_chars for double is in libstdc++ 11 and later.
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// days_from_civil).
long days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400;
  long yoe = y - era * 400;
  long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/// "2017-10-09 07:01:55" as seconds since the epoch (the trace's own clock).
bool parse_timestamp(std::string_view text, double* seconds) {
  int y, mo, d, h, mi, s;
  std::string copy(text);
  char tail;
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail) !=
      6) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return false;
  *seconds = static_cast<double>(days_from_civil(y, mo, d)) * 86400.0 + h * 3600 + mi * 60 + s;
  return true;
}

struct Column {
  std::string_view name;
  std::size_t index = 0;
};

/// Finds each wanted column in the header, or says which is missing.
Status find_columns(const std::vector<std::string_view>& header, std::vector<Column>* columns,
                    std::string_view source) {
  for (Column& column : *columns) {
    auto it = std::find(header.begin(), header.end(), column.name);
    if (it == header.end()) {
      return at_line(source, 1, "no '" + std::string(column.name) + "' column");
    }
    column.index = static_cast<std::size_t>(it - header.begin());
  }
  return {};
}

enum class Format { kTiresias, kPhilly };

/// One data row into `jobs`, or the Error that makes it unusable.
Error row(Format format, const std::vector<Column>& columns, std::size_t width, std::size_t i,
          long number, std::string_view line, std::string_view source,
          std::vector<TraceJob>* jobs) {
  std::vector<std::string_view> fields = split(line, ',');
  if (fields.size() != width) {
    return at_line(
        source, number,
        "expected " + std::to_string(width) + " fields, found " + std::to_string(fields.size()));
  }
  auto field = [&](std::size_t c) { return fields[columns[c].index]; };
  TraceJob job;
  double gpus = 0;
  bool ok;
  if (format == Format::kTiresias) {
    job.id = std::string(field(0));
    job.tenant = "default";
    ok = to_double(field(1), &gpus) && to_double(field(2), &job.submit_s) &&
         to_double(field(3), &job.duration_s);
  } else {
    job.id = "philly-" + std::to_string(i);
    job.tenant = std::string(field(3));
    ok = parse_timestamp(field(0), &job.submit_s) && to_double(field(1), &gpus) &&
         to_double(field(2), &job.duration_s);
  }
  if (!ok) return at_line(source, number, "unreadable value in '" + std::string(line) + "'");
  if (!(gpus >= 1) || gpus != static_cast<double>(static_cast<std::int64_t>(gpus))) {
    return at_line(source, number, "the GPU count must be a whole number, at least 1");
  }
  if (!(job.duration_s >= 0) || !(job.submit_s >= 0)) {
    return at_line(source, number, "times must not be negative");
  }
  if (job.tenant.empty()) return at_line(source, number, "empty cluster name");
  job.gpus = static_cast<std::int64_t>(gpus);
  jobs->push_back(std::move(job));
  return Error{};
}

}  // namespace

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

Result<Trace> parse_trace(std::string_view text, std::string_view source) {
  auto lines = lines_of(text);
  if (lines.empty()) return make_error(std::string(source) + ": empty trace");
  std::vector<std::string_view> header = split(lines.front().second, ',');
  auto has = [&](std::string_view name) {
    return std::find(header.begin(), header.end(), name) != header.end();
  };
  Format format;
  if (has("job_id") && has("num_gpu") && has("submit_time") && has("duration")) {
    format = Format::kTiresias;
  } else if (has("timestamp") && has("duration") && has("num_gpus")) {
    format = Format::kPhilly;
  } else if (has("num_replicas") && has("application")) {
    return at_line(source, 1,
                   "a Pollux workload has no job durations (Pollux derives them from its "
                   "models), so it cannot be replayed here");
  } else {
    return at_line(source, 1,
                   "unknown trace format (expected a Tiresias job trace: job_id,num_gpu,"
                   "submit_time,...,duration, or a Philly trace: timestamp,duration,num_gpus,...)");
  }
  std::vector<Column> columns =
      format == Format::kTiresias
          ? std::vector<Column>{{"job_id"}, {"num_gpu"}, {"submit_time"}, {"duration"}}
          : std::vector<Column>{{"timestamp"}, {"num_gpus"}, {"duration"}, {"cluster"}};
  if (Status s = find_columns(header, &columns, source); !s) return s.error();

  Trace trace;
  std::vector<TraceJob>& jobs = trace.jobs;
  double first_submit = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto [number, line] = lines[i];
    Error problem = row(format, columns, header.size(), i, number, line, source, &jobs);
    if (!problem.message.empty()) trace.skipped.push_back(std::move(problem.message));
  }
  if (jobs.empty()) {
    return make_error(std::string(source) + ": the trace has no usable jobs" +
                      (trace.skipped.empty() ? "" : " (first problem: " + trace.skipped[0] + ")"));
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  first_submit = jobs.front().submit_s;
  for (TraceJob& job : jobs) job.submit_s -= first_submit;
  return trace;
}

Result<Trace> load_trace(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text) return text.error();
  return parse_trace(*text, path);
}

Result<place::Cluster> parse_cluster_spec(std::string_view text, std::string_view source,
                                          std::uint64_t gpu_mem_bytes) {
  auto lines = lines_of(text);
  std::vector<Column> columns = {{"num_switch"}, {"num_node_p_switch"}, {"num_gpu_p_node"}};
  if (lines.size() != 2) {
    return make_error(std::string(source) + ": a cluster spec is a header and one line");
  }
  std::vector<std::string_view> header = split(lines[0].second, ',');
  if (Status s = find_columns(header, &columns, source); !s) return s.error();
  std::vector<std::string_view> fields = split(lines[1].second, ',');
  if (fields.size() != header.size()) return at_line(source, lines[1].first, "wrong field count");
  long counts[3];
  for (int c = 0; c < 3; ++c) {
    std::string_view f = fields[columns[static_cast<std::size_t>(c)].index];
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), counts[c]);
    if (ec != std::errc() || end != f.data() + f.size() || counts[c] < 1 || counts[c] > 100000) {
      return at_line(source, lines[1].first,
                     "'" + std::string(columns[static_cast<std::size_t>(c)].name) +
                         "' must be a whole number from 1 to 100000");
    }
  }
  place::Cluster cluster;
  for (long s = 0; s < counts[0]; ++s) {
    for (long n = 0; n < counts[1]; ++n) {
      place::Node node{"s" + std::to_string(s) + "n" + std::to_string(n), {}};
      for (long g = 0; g < counts[2]; ++g) {
        place::Gpu gpu;
        gpu.index = static_cast<int>(g);
        gpu.mem_bytes = gpu_mem_bytes;
        node.gpus.push_back(gpu);
      }
      cluster.nodes.push_back(std::move(node));
    }
  }
  return cluster;
}

}  // namespace gpushare::replay

// The replay's metrics from its final state, and their three forms: a CSV
// line, a JSON record, and an SVG of the JCT CDFs.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "replay/sim.h"

namespace gpushare::replay {
namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

/// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

/// `text` as a JSON string. Tenant names come from the trace: quotes,
/// backslashes and control characters are escaped, and bytes outside ASCII
/// become U+FFFD so a malformed name cannot make the record invalid JSON.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", byte);
      out += code;
    } else if (byte >= 0x80) {
      out += "\\ufffd";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

}  // namespace

ReplayMetrics summarise(const Sim& s, double busy_gpu_s, double frag_gpu_s) {
  ReplayMetrics m = s.metrics;
  m.policy = std::string(to_string(s.options.policy));
  const std::size_t n = s.jobs.size();
  m.jobs = static_cast<std::int64_t>(n);
  std::vector<double> jct, wait;
  double first = s.jobs.front().trace->submit_s, last = first, work_gpu_s = 0;
  std::int64_t prod_jobs = 0, prod_ok = 0;
  for (const SimJob& job : s.jobs) {
    const double submit = job.trace->submit_s;
    jct.push_back(job.end_s - submit);
    wait.push_back(job.start_s - submit);
    m.results.push_back({submit, job.start_s, job.end_s});
    last = std::max(last, job.end_s);
    work_gpu_s += job.trace->duration_s * job.gpus * job.util;
    m.reservations += job.ever_reserved;
    if (job.prod_work_s > 0) {
      ++prod_jobs;
      double extra_ms = job.batch_ms * (job.prod_wall_s / job.prod_work_s - 1.0);
      prod_ok += extra_ms <= 10.0 + 1e-9;
    }
  }
  m.avg_jct_s = mean(jct);
  m.avg_wait_s = mean(wait);
  std::sort(jct.begin(), jct.end());
  std::sort(wait.begin(), wait.end());
  m.p50_jct_s = percentile(jct, 0.50);
  m.p95_jct_s = percentile(jct, 0.95);
  m.p99_jct_s = percentile(jct, 0.99);
  m.p90_wait_s = percentile(wait, 0.90);
  m.p95_wait_s = percentile(wait, 0.95);
  m.makespan_s = last - first;
  const auto gpus = static_cast<double>(s.gpus.size());
  if (m.makespan_s > 0) {
    m.gpu_util = busy_gpu_s / (gpus * m.makespan_s);
    m.gpu_compute = work_gpu_s / (gpus * m.makespan_s);
    m.frag_gpus = frag_gpu_s / m.makespan_s;
  }
  m.prod_within_10ms =
      prod_jobs ? static_cast<double>(prod_ok) / static_cast<double>(prod_jobs) : 1;
  // Each tenant, while it had jobs waiting, against its quota: the GPUs
  // it received on average over that time / its quota. Tenants that never
  // waited had all they asked for and are left out.
  double sum = 0, squares = 0, count = 0;
  for (std::size_t t = 0; t < s.backlog_s.size(); ++t) {
    if (s.backlog_s[t] <= 0) continue;
    double x = s.backlog_gpu_s[t] / s.backlog_s[t] /
               static_cast<double>(std::max<std::int64_t>(1, s.quota[t]));
    sum += x;
    squares += x * x;
    ++count;
  }
  m.fairness = squares > 0 ? sum * sum / (count * squares) : 1;
  double quotas = 0;
  for (std::int64_t q : s.quota) quotas += static_cast<double>(std::max<std::int64_t>(1, q));
  for (std::size_t t = 0; t < s.tenant_gpu_s.size(); ++t) {
    ReplayMetrics::TenantShare share;
    share.tenant = s.tenant_names[t];
    share.gpu_share = s.work_gpu_s > 0 ? s.tenant_gpu_s[t] / s.work_gpu_s : 0;
    share.quota_share = static_cast<double>(std::max<std::int64_t>(1, s.quota[t])) / quotas;
    if (s.backlog_s[t] > 0) {
      share.backlog_ratio = s.backlog_gpu_s[t] / s.backlog_s[t] /
                            static_cast<double>(std::max<std::int64_t>(1, s.quota[t]));
    }
    m.tenants.push_back(share);
  }
  m.work_gpu_s = s.work_gpu_s;
  return m;
}

std::string replay_csv_header() {
  return "policy,avg_jct,p50_jct,p95_jct,p99_jct,avg_wait,p90_wait,p95_wait,makespan,gpu_util,"
         "gpu_compute,frag_gpus,prod_within_10ms,fairness,ot_jobs,upgrades,conversions,"
         "reservations,packed,timesliced,migrations,jobs";
}

std::string replay_csv(const ReplayMetrics& m) {
  std::string line = m.policy;
  for (double v : {m.avg_jct_s, m.p50_jct_s, m.p95_jct_s, m.p99_jct_s, m.avg_wait_s, m.p90_wait_s,
                   m.p95_wait_s, m.makespan_s}) {
    line += "," + fixed(v, 1);
  }
  for (double v : {m.gpu_util, m.gpu_compute}) line += "," + fixed(v, 4);
  line += "," + fixed(m.frag_gpus, 2);
  for (double v : {m.prod_within_10ms, m.fairness}) line += "," + fixed(v, 4);
  for (std::int64_t v : {m.ot_jobs, m.upgrades, m.conversions, m.reservations, m.packed,
                         m.timesliced, m.migrations, m.jobs}) {
    line += "," + std::to_string(v);
  }
  return line;
}

std::string replay_json(const ReplayMetrics& m) {
  std::string out = "{\"kind\":\"replay\",\"version\":2,\"policy\":\"" + m.policy + "\"";
  auto number = [&](const char* key, double v, int decimals) {
    out += std::string(",\"") + key + "\":" + fixed(v, decimals);
  };
  number("avg_jct_s", m.avg_jct_s, 3);
  number("p50_jct_s", m.p50_jct_s, 3);
  number("p95_jct_s", m.p95_jct_s, 3);
  number("p99_jct_s", m.p99_jct_s, 3);
  number("avg_wait_s", m.avg_wait_s, 3);
  number("p90_wait_s", m.p90_wait_s, 3);
  number("p95_wait_s", m.p95_wait_s, 3);
  number("makespan_s", m.makespan_s, 3);
  number("gpu_util", m.gpu_util, 6);
  number("gpu_compute", m.gpu_compute, 6);
  number("frag_gpus", m.frag_gpus, 4);
  number("prod_within_10ms", m.prod_within_10ms, 6);
  number("fairness", m.fairness, 6);
  auto count = [&](const char* key, std::int64_t v) {
    out += std::string(",\"") + key + "\":" + std::to_string(v);
  };
  count("ot_jobs", m.ot_jobs);
  count("upgrades", m.upgrades);
  count("conversions", m.conversions);
  count("reservations", m.reservations);
  count("packed", m.packed);
  count("timesliced", m.timesliced);
  count("migrations", m.migrations);
  count("jobs", m.jobs);
  out += ",\"tenants\":[";
  for (std::size_t t = 0; t < m.tenants.size(); ++t) {
    const ReplayMetrics::TenantShare& share = m.tenants[t];
    out += (t ? ",{" : "{") + std::string("\"tenant\":") + json_string(share.tenant);
    out += ",\"gpu_share\":" + fixed(share.gpu_share, 6);
    out += ",\"quota_share\":" + fixed(share.quota_share, 6);
    out += ",\"backlog_ratio\":";
    out += share.backlog_ratio < 0 ? "null" : fixed(share.backlog_ratio, 6);
    out += "}";
  }
  return out + "]}";
}

std::string replay_plot_svg(const std::vector<ReplayMetrics>& runs) {
  // x: log10 of JCT in seconds over the runs' range; y: share of jobs.
  const double width = 640, height = 400, left = 60, bottom = 40, top = 20, right = 140;
  double lo = INFINITY, hi = 0;
  std::vector<std::vector<double>> sorted;
  for (const ReplayMetrics& run : runs) {
    std::vector<double> jct;
    for (const ReplayJobResult& r : run.results) jct.push_back(std::max(1.0, r.end_s - r.submit_s));
    std::sort(jct.begin(), jct.end());
    if (!jct.empty()) {
      lo = std::min(lo, jct.front());
      hi = std::max(hi, jct.back());
    }
    sorted.push_back(std::move(jct));
  }
  double x0 = std::floor(std::log10(std::isfinite(lo) ? lo : 1.0));
  double x1 = std::max(x0 + 1, std::ceil(std::log10(std::max(hi, 1.0))));
  auto x = [&](double v) {
    return left + (std::log10(v) - x0) / (x1 - x0) * (width - left - right);
  };
  auto y = [&](double share) { return height - bottom - share * (height - bottom - top); };
  static const char* const kColours[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"};
  std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"640\" height=\"400\" fill=\"white\"/>\n";
  for (double d = x0; d <= x1; ++d) {
    svg += "<line x1=\"" + fixed(x(std::pow(10, d)), 1) + "\" y1=\"" + fixed(y(0), 1) + "\" x2=\"" +
           fixed(x(std::pow(10, d)), 1) + "\" y2=\"" + fixed(y(1), 1) +
           "\" stroke=\"#ddd\"/>\n<text x=\"" + fixed(x(std::pow(10, d)), 1) + "\" y=\"" +
           fixed(y(0) + 16, 1) + "\" text-anchor=\"middle\">1e" + fixed(d, 0) + "</text>\n";
  }
  svg += "<text x=\"" + fixed(left, 0) + "\" y=\"" + fixed(height - 6, 0) +
         "\">JCT (s, log scale); y: share of jobs</text>\n";
  for (std::size_t r = 0; r < sorted.size(); ++r) {
    const std::vector<double>& jct = sorted[r];
    std::string points;
    const std::size_t steps = std::min<std::size_t>(jct.size(), 400);
    for (std::size_t i = 1; i <= steps; ++i) {
      std::size_t index = i * jct.size() / steps - 1;
      double share = static_cast<double>(index + 1) / static_cast<double>(jct.size());
      points += fixed(x(jct[index]), 1) + "," + fixed(y(share), 1) + " ";
    }
    const char* colour = kColours[r % 5];
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
           "\" stroke-width=\"2\" points=\"" + points + "\"/>\n<text x=\"" +
           fixed(width - right + 10, 0) + "\" y=\"" +
           fixed(top + 16 * static_cast<double>(r + 1), 0) + "\" fill=\"" + colour + "\">" +
           runs[r].policy + "</text>\n";
  }
  return svg + "</svg>\n";
}

}  // namespace gpushare::replay

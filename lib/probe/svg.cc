#include "probe/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpushare::probe {
namespace {

constexpr double kPanelWidth = 560;
constexpr double kPanelHeight = 300;
constexpr double kMargin = 60;
constexpr std::size_t kMaxPoints = 2000;  // buckets of min/max keep every peak
constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string label_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string header(double width, double height) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         number(width) + "\" height=\"" + number(height) + "\" viewBox=\"0 0 " + number(width) +
         " " + number(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

std::string text_at(double x, double y, const std::string& text, const std::string& anchor) {
  return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" text-anchor=\"" + anchor + "\">" +
         xml_escape(text) + "</text>\n";
}

// Axes of a panel at (x0, y0) with its labels and the top of each scale.
std::string axes(double x0, double y0, const std::string& title, const std::string& x_label,
                 double x_max, const std::string& y_label, double y_max) {
  double left = x0 + kMargin, bottom = y0 + kPanelHeight - kMargin;
  double right = x0 + kPanelWidth - 20, top = y0 + 30;
  std::string out = "<g class=\"axes\" stroke=\"black\" fill=\"none\">\n";
  out += "<line x1=\"" + number(left) + "\" y1=\"" + number(bottom) + "\" x2=\"" + number(right) +
         "\" y2=\"" + number(bottom) + "\"/>\n";
  out += "<line x1=\"" + number(left) + "\" y1=\"" + number(bottom) + "\" x2=\"" + number(left) +
         "\" y2=\"" + number(top) + "\"/>\n</g>\n";
  out += text_at((left + right) / 2, y0 + 18, title, "middle");
  out += text_at((left + right) / 2, bottom + 35, x_label, "middle");
  out += text_at(left - 6, bottom + 4, "0", "end");
  out += text_at(left - 6, top + 4, label_number(y_max), "end");
  out += text_at(right, bottom + 16, label_number(x_max), "end");
  out += "<text x=\"" + number(x0 + 15) + "\" y=\"" + number((top + bottom) / 2) +
         "\" transform=\"rotate(-90 " + number(x0 + 15) + " " + number((top + bottom) / 2) +
         ")\" text-anchor=\"middle\">" + xml_escape(y_label) + "</text>\n";
  return out;
}

struct Scale {
  double x0, y0, x_max, y_max;
  double x(double value) const {
    return x0 + kMargin + (kPanelWidth - 20 - kMargin) * (x_max > 0 ? value / x_max : 0);
  }
  double y(double value) const {
    double bottom = y0 + kPanelHeight - kMargin, top = y0 + 30;
    return bottom - (bottom - top) * (y_max > 0 ? std::min(value / y_max, 1.0) : 0);
  }
};

std::string memory_panel(const std::vector<MemorySample>& samples, const MemorySummary& summary) {
  double t_max = samples.empty() ? 1 : std::max(samples.back().t_ms / 1e3, 1e-3);
  double y_max = std::max(static_cast<double>(summary.peak_bytes) / kGiB * 1.1, 1e-3);
  Scale scale{0, 0, t_max, y_max};
  std::string out = axes(0, 0, "Device memory", "time (s)", t_max, "GiB", y_max);
  out +=
      "<polyline id=\"memory-curve\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1\" points=\"";
  std::size_t per_bucket = std::max<std::size_t>(1, samples.size() / (kMaxPoints / 2));
  for (std::size_t begin = 0; begin < samples.size(); begin += per_bucket) {
    std::size_t end = std::min(samples.size(), begin + per_bucket);
    auto [lo, hi] = std::minmax_element(
        samples.begin() + static_cast<std::ptrdiff_t>(begin),
        samples.begin() + static_cast<std::ptrdiff_t>(end),
        [](const MemorySample& a, const MemorySample& b) { return a.mem_bytes < b.mem_bytes; });
    const MemorySample* first = lo->t_ms <= hi->t_ms ? &*lo : &*hi;
    const MemorySample* second = first == &*lo ? &*hi : &*lo;
    for (const MemorySample* s : {first, second}) {
      out += number(scale.x(s->t_ms / 1e3)) + "," +
             number(scale.y(static_cast<double>(s->mem_bytes) / kGiB)) + " ";
    }
  }
  out += "\"/>\n";
  auto level = [&](const char* id, const char* colour, std::uint64_t bytes, const char* name) {
    double y = scale.y(static_cast<double>(bytes) / kGiB);
    return "<line id=\"" + std::string(id) + "\" x1=\"" + number(scale.x(0)) + "\" y1=\"" +
           number(y) + "\" x2=\"" + number(scale.x(t_max)) + "\" y2=\"" + number(y) +
           "\" stroke=\"" + colour + "\" stroke-dasharray=\"6 4\"/>\n" +
           text_at(
               scale.x(t_max) - 4, y - 4,
               std::string(name) + " " + label_number(static_cast<double>(bytes) / kGiB) + " GiB",
               "end");
  };
  if (summary.touched_gpu) {
    out += level("floor", "#2ca02c", summary.floor_bytes, "floor");
    out += level("ceiling", "#d62728", summary.ceiling_bytes, "ceiling");
  }
  return out;
}

std::string caps_panel(double x0, const std::vector<CapPoint>& caps) {
  double x_max = 0, y_max = 0;
  for (const CapPoint& cap : caps) {
    x_max = std::max(x_max, static_cast<double>(cap.limit_bytes) / kGiB);
    if (cap.iterations_per_s) y_max = std::max(y_max, *cap.iterations_per_s);
  }
  x_max = std::max(x_max * 1.1, 1e-3);
  y_max = std::max(y_max * 1.1, 1e-3);
  Scale scale{x0, 0, x_max, y_max};
  std::string out =
      axes(x0, 0, "Speed under a memory cap", "cap (GiB)", x_max, "iterations/s", y_max);
  out +=
      "<g id=\"speed-vs-cap\" fill=\"#ff7f0e\" stroke=\"#ff7f0e\">\n<polyline fill=\"none\" "
      "points=\"";
  for (const CapPoint& cap : caps) {
    if (!cap.iterations_per_s) continue;
    out += number(scale.x(static_cast<double>(cap.limit_bytes) / kGiB)) + "," +
           number(scale.y(*cap.iterations_per_s)) + " ";
  }
  out += "\"/>\n";
  for (const CapPoint& cap : caps) {
    double x = scale.x(static_cast<double>(cap.limit_bytes) / kGiB);
    if (cap.iterations_per_s) {
      out += "<circle cx=\"" + number(x) + "\" cy=\"" + number(scale.y(*cap.iterations_per_s)) +
             "\" r=\"4\"><title>" + xml_escape(cap.cap) + "</title></circle>\n";
    } else {
      // A failed run sits on the axis as a cross.
      double y = scale.y(0);
      out += "<path d=\"M" + number(x - 4) + " " + number(y - 4) +
             " l8 8 m0 -8 l-8 8\" "
             "fill=\"none\"><title>" +
             xml_escape(cap.cap) + ": failed</title></path>\n";
    }
  }
  out += "</g>\n";
  return out;
}

// Green (1: unaffected) to red (0: stopped).
std::string heat_colour(double relative) {
  double v = std::clamp(relative, 0.0, 1.0);
  int red = static_cast<int>(std::lround(255 * (1 - v) + 60 * v));
  int green = static_cast<int>(std::lround(70 * (1 - v) + 170 * v));
  char text[16];
  std::snprintf(text, sizeof text, "#%02x%02x50", red, green);
  return text;
}

std::string heat_map(double x0, const HeatMap& map, std::size_t index) {
  const double cell = 70, left = x0 + 130, top = 60;
  std::string out = "<g id=\"interference-matrix";
  out += index == 0 ? "" : "-" + std::to_string(index);
  out += "\">\n" + text_at(left + cell * static_cast<double>(map.labels.size()) / 2, 20,
                           map.caption, "middle");
  for (std::size_t c = 0; c < map.labels.size(); ++c) {
    out += text_at(left + cell * (static_cast<double>(c) + 0.5), top - 8, map.labels[c], "middle");
  }
  for (std::size_t r = 0; r < map.cells.size(); ++r) {
    double y = top + cell * static_cast<double>(r);
    out += text_at(left - 8, y + cell / 2 + 4, map.labels[r], "end");
    for (std::size_t c = 0; c < map.cells[r].size(); ++c) {
      double x = left + cell * static_cast<double>(c);
      const std::optional<double>& value = map.cells[r][c];
      out += "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(cell) +
             "\" height=\"" + number(cell) + "\" stroke=\"white\" fill=\"" +
             (value ? heat_colour(*value) : std::string("#dddddd")) + "\"/>\n";
      if (value) out += text_at(x + cell / 2, y + cell / 2 + 4, label_number(*value), "middle");
    }
  }
  return out + "</g>\n";
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 allows no control characters but tab, newline and return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string memory_svg(const std::string& title, const std::vector<MemorySample>& samples,
                       const MemorySummary& summary, const std::vector<CapPoint>& caps) {
  double width = caps.empty() ? kPanelWidth : 2 * kPanelWidth;
  std::string out = header(width, kPanelHeight + 20);
  out += "<title>" + xml_escape(title) + "</title>\n";
  out += memory_panel(samples, summary);
  if (!caps.empty()) out += caps_panel(kPanelWidth, caps);
  return out + "</svg>\n";
}

std::string interference_svg(const std::vector<HeatMap>& maps) {
  double panel = 0;
  for (const HeatMap& map : maps)
    panel = std::max(panel, 70.0 * static_cast<double>(map.labels.size()));
  double width = (panel + 160) * static_cast<double>(std::max<std::size_t>(1, maps.size()));
  std::string out = header(width, panel + 90);
  out += "<title>interference</title>\n";
  for (std::size_t i = 0; i < maps.size(); ++i) {
    out += heat_map((panel + 160) * static_cast<double>(i), maps[i], i);
  }
  return out + "</svg>\n";
}

}  // namespace gpushare::probe

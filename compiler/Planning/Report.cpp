//===- Report.cpp - Text, SVG and HTML memory reports ---------------------===//

#include "compiler/Planning/Analysis.h"
#include "compiler/Planning/Planning.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace cgc::planning {
namespace {

constexpr uint64_t kNone = UINT64_MAX;

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  if (n < 0)
    return {};
  if (size_t(n) < sizeof(buffer))
    return std::string(buffer, size_t(n));
  std::string out(size_t(n) + 1, '\0');
  va_start(args, fmt);
  vsnprintf(out.data(), out.size(), fmt, args);
  va_end(args);
  out.resize(size_t(n));
  return out;
}

std::string human(uint64_t bytes) {
  if (bytes >= (1ULL << 30))
    return format("%.2f GiB", double(bytes) / double(1ULL << 30));
  if (bytes >= (1ULL << 20))
    return format("%.2f MiB", double(bytes) / double(1ULL << 20));
  if (bytes >= (1ULL << 10))
    return format("%.2f KiB", double(bytes) / double(1ULL << 10));
  return format("%" PRIu64 " B", bytes);
}

double ratio(uint64_t a, uint64_t b) { return b ? double(a) / double(b) : 1.0; }

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

/// The placed intermediates, by first step then offset.
std::vector<int32_t> placedTensors(const Graph &graph, const MemoryPlan &plan) {
  std::vector<int32_t> out;
  for (size_t t = 0; t < graph.tensors.size() && t < plan.offsets.size(); ++t)
    if (plan.offsets[t] != kNone)
      out.push_back(int32_t(t));
  detail::sortIndices(out, [&](int32_t a, int32_t b) {
    if (plan.firstStep[a] != plan.firstStep[b])
      return plan.firstStep[a] < plan.firstStep[b];
    return plan.offsets[a] < plan.offsets[b];
  });
  return out;
}

std::string summaryLines(const MemoryPlan &plan) {
  std::string s;
  s += format("footprint    %14" PRIu64 " B  %12s\n", plan.footprint,
              human(plan.footprint).c_str());
  s += format("lower bound  %14" PRIu64 " B  %12s   footprint / lower bound "
              "= %.4f\n",
              plan.lowerBound, human(plan.lowerBound).c_str(),
              ratio(plan.footprint, plan.lowerBound));
  s += format("naive sum    %14" PRIu64 " B  %12s   footprint / naive = "
              "%.4f\n",
              plan.naiveSum, human(plan.naiveSum).c_str(),
              ratio(plan.footprint, plan.naiveSum));
  if (plan.partitionViewFootprint)
    s += format("partition view %12" PRIu64 " B  %12s   every intermediate of a "
                "partition live for its whole dispatch\n",
                plan.partitionViewFootprint,
                human(plan.partitionViewFootprint).c_str());
  return s;
}

std::string header(const Graph &graph, const MemoryPlan &plan) {
  size_t count = placedTensors(graph, plan).size();
  int32_t groups = plan.stepGroup.empty() ? 0 : plan.stepGroup.back() + 1;
  std::string s = format("memory plan: %zu intermediates over %zu steps", count,
                         plan.order.size());
  if (plan.mode == ScheduleMode::MaxConcurrency)
    s += format(" (%d concurrency groups)", groups);
  s += format(", %s, alignment %" PRIu64 ", placed by %s",
              scheduleModeName(plan.mode), plan.alignment,
              plan.strategy.c_str());
  return s;
}

/// A round step for about `ticks` ticks over [0, max] (1, 2, 5 x 10^k).
uint64_t tickStep(uint64_t max, uint64_t ticks) {
  uint64_t raw = std::max<uint64_t>(1, max / ticks), unit = 1;
  while (unit * 10 <= raw)
    unit *= 10;
  for (uint64_t m : {1, 2, 5})
    if (unit * m >= raw)
      return unit * m;
  return unit * 10;
}

/// A power-of-two step for about `ticks` ticks over [0, max] bytes.
uint64_t byteTickStep(uint64_t max, uint64_t ticks) {
  uint64_t step = 1;
  while (step * ticks < max)
    step *= 2;
  return step;
}

/// Bytes in the largest binary unit that keeps them whole or with at most
/// two decimals: "768 KiB", "1.5 MiB".
std::string shortBytes(uint64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = double(bytes);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::string s = format("%.2f", v);
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s + " " + units[u];
}

} // namespace

std::string renderMemoryReportText(const Graph &graph, const MemoryPlan &plan) {
  std::string s = header(graph, plan) + "\n";
  s += format("%6s  %-32s %12s %12s %12s  %-11s %s\n", "id", "name", "bytes",
              "offset", "end", "steps", "in place of");
  for (int32_t t : placedTensors(graph, plan)) {
    const Tensor &tensor = graph.tensors[t];
    std::string name = tensor.name.size() > 32
                           ? tensor.name.substr(0, 31) + "~"
                           : tensor.name;
    std::string steps = format("%d-%d", plan.firstStep[t], plan.lastStep[t]);
    std::string inPlace;
    if (plan.inPlaceOf[t] >= 0)
      inPlace = graph.tensors[plan.inPlaceOf[t]].name;
    s += format("%6d  %-32s %12" PRIu64 " %12" PRIu64 " %12" PRIu64
                "  %-11s %s\n",
                t, name.c_str(), tensor.bytes, plan.offsets[t],
                plan.offsets[t] + alignUp(tensor.bytes, plan.alignment),
                steps.c_str(), inPlace.c_str());
  }
  s += summaryLines(plan);
  return s;
}

std::string renderMemoryReportSVG(const Graph &graph, const MemoryPlan &plan) {
  std::vector<int32_t> tensors = placedTensors(graph, plan);
  size_t steps = std::max<size_t>(plan.order.size(), 1);
  const double left = 100, right = 30, top = 64, bottom = 48;
  const double plotW = std::clamp(double(steps) * 8.0, 900.0, 2400.0);
  const double plotH = 640;
  const double width = left + plotW + right, height = top + plotH + bottom;
  uint64_t yMax = std::max<uint64_t>({plan.footprint, plan.lowerBound, 1});
  auto xOf = [&](double step) { return left + step / double(steps) * plotW; };
  auto yOf = [&](double offset) {
    return top + plotH - offset / double(yMax) * plotH;
  };

  std::string s;
  s += format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
              "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
              "font-family=\"sans-serif\" font-size=\"12\">\n",
              width, height, width, height);
  s += "<style>rect.t{stroke:#ffffff;stroke-width:0.4}"
       "rect.t:hover{stroke:#000000;stroke-width:1.5}"
       "line.g{stroke:#dddddd;stroke-width:0.5}"
       "text.a{fill:#444444}</style>\n";
  s += format("<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
              "fill=\"#ffffff\"/>\n",
              width, height);
  s += format("<text x=\"%.0f\" y=\"20\" font-size=\"14\" "
              "font-weight=\"bold\">%s</text>\n",
              left, escape(header(graph, plan)).c_str());
  s += format("<text x=\"%.0f\" y=\"40\">footprint %s, lower bound %s "
              "(ratio %.4f), naive %s (ratio %.4f)</text>\n",
              left, escape(human(plan.footprint)).c_str(),
              escape(human(plan.lowerBound)).c_str(),
              ratio(plan.footprint, plan.lowerBound),
              escape(human(plan.naiveSum)).c_str(),
              ratio(plan.footprint, plan.naiveSum));

  // Axes and grid.
  uint64_t yStep = byteTickStep(yMax, 8);
  for (uint64_t v = 0; v <= yMax; v += yStep) {
    double y = yOf(double(v));
    s += format("<line class=\"g\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                "y2=\"%.1f\"/>\n",
                left, y, left + plotW, y);
    s += format("<text class=\"a\" x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"end\">%s</text>\n",
                left - 6, y + 4, escape(shortBytes(v)).c_str());
  }
  uint64_t xStep = tickStep(steps, 20);
  for (uint64_t v = 0; v <= steps; v += xStep) {
    double x = xOf(double(v));
    s += format("<line class=\"g\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                "y2=\"%.1f\"/>\n",
                x, top, x, top + plotH);
    s += format("<text class=\"a\" x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%" PRIu64 "</text>\n",
                x, top + plotH + 16, v);
  }
  s += format("<text class=\"a\" x=\"%.1f\" y=\"%.1f\" "
              "text-anchor=\"middle\">step</text>\n",
              left + plotW / 2, top + plotH + 36);
  s += format("<text class=\"a\" transform=\"translate(16 %.1f) rotate(-90)\" "
              "text-anchor=\"middle\">scratch offset</text>\n",
              top + plotH / 2);

  // Concurrency group boundaries, where they stay readable.
  int32_t groups = plan.stepGroup.empty() ? 0 : plan.stepGroup.back() + 1;
  if (plan.mode == ScheduleMode::MaxConcurrency && groups <= 120)
    for (size_t st = 1; st < plan.stepGroup.size(); ++st)
      if (plan.stepGroup[st] != plan.stepGroup[st - 1])
        s += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"#9999cc\" stroke-width=\"0.6\"/>\n",
                    xOf(double(st)), top, xOf(double(st)), top + plotH);

  // The tensors.
  s += "<g>\n";
  for (int32_t t : tensors) {
    const Tensor &tensor = graph.tensors[t];
    uint64_t size = alignUp(tensor.bytes, plan.alignment);
    double x0 = xOf(plan.firstStep[t]), x1 = xOf(plan.lastStep[t] + 1.0);
    double y0 = yOf(double(plan.offsets[t] + size)),
           y1 = yOf(double(plan.offsets[t]));
    uint32_t hash = 2166136261u;
    for (char c : tensor.name)
      hash = (hash ^ uint8_t(c)) * 16777619u;
    std::string title = format(
        "%s: %" PRIu64 " B at [%" PRIu64 ", %" PRIu64 "), steps %d-%d",
        tensor.name.c_str(), tensor.bytes, plan.offsets[t],
        plan.offsets[t] + size, plan.firstStep[t], plan.lastStep[t]);
    if (plan.inPlaceOf[t] >= 0)
      title += ", in place of " + graph.tensors[plan.inPlaceOf[t]].name;
    s += format("<rect class=\"t\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                "height=\"%.2f\" fill=\"hsl(%u,55%%,62%%)\">"
                "<title>%s</title></rect>\n",
                x0, y0, std::max(x1 - x0, 0.5), std::max(y1 - y0, 0.5),
                hash % 360, escape(title).c_str());
  }
  s += "</g>\n";

  // Footprint and lower bound.
  double yf = yOf(double(plan.footprint)), yl = yOf(double(plan.lowerBound));
  s += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
              "stroke=\"#cc0000\" stroke-width=\"1\"/>\n",
              left, yf, left + plotW, yf);
  s += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
              "stroke=\"#0000cc\" stroke-width=\"1\" "
              "stroke-dasharray=\"6 4\"/>\n",
              left, yl, left + plotW, yl);
  s += format("<text x=\"%.1f\" y=\"%.1f\" fill=\"#cc0000\" "
              "text-anchor=\"end\">footprint</text>\n",
              left + plotW, yf - 4);
  s += format("<text x=\"%.1f\" y=\"%.1f\" fill=\"#0000cc\" "
              "text-anchor=\"end\">lower bound</text>\n",
              left + plotW - 80, yl - 4);
  s += format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
              "fill=\"none\" stroke=\"#444444\"/>\n",
              left, top, plotW, plotH);
  s += "</svg>\n";
  return s;
}

std::string renderMemoryReportHTML(const Graph &graph, const MemoryPlan &plan,
                                   const std::string &title) {
  std::string s = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                  "<title>" +
                  escape(title) +
                  "</title>\n<style>body{font-family:sans-serif;margin:20px}"
                  "table{border-collapse:collapse;font-size:12px}"
                  "td,th{border:1px solid #ccc;padding:2px 6px;"
                  "text-align:right}td.n{text-align:left}"
                  "pre{background:#f6f6f6;padding:8px}</style></head>\n"
                  "<body>\n<h1>" +
                  escape(title) + "</h1>\n<p>" + escape(header(graph, plan)) +
                  "</p>\n<pre>" + escape(summaryLines(plan)) + "</pre>\n" +
                  renderMemoryReportSVG(graph, plan) +
                  "<table>\n<tr><th>id</th><th>name</th><th>bytes</th>"
                  "<th>offset</th><th>end</th><th>first step</th>"
                  "<th>last step</th><th>in place of</th></tr>\n";
  for (int32_t t : placedTensors(graph, plan)) {
    const Tensor &tensor = graph.tensors[t];
    std::string inPlace = plan.inPlaceOf[t] >= 0
                              ? graph.tensors[plan.inPlaceOf[t]].name
                              : std::string();
    s += format("<tr><td>%d</td><td class=\"n\">", t) + escape(tensor.name) +
         format("</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
                "</td><td>%d</td><td>%d</td><td class=\"n\">",
                tensor.bytes, plan.offsets[t],
                plan.offsets[t] + alignUp(tensor.bytes, plan.alignment),
                plan.firstStep[t], plan.lastStep[t]) +
         escape(inPlace) + "</td></tr>\n";
  }
  s += "</table>\n</body></html>\n";
  return s;
}

} // namespace cgc::planning

//===- ReportTest.cpp - Text, SVG and HTML memory reports -----------------===//

#include "compiler/Planning/Planning.h"
#include "compiler/Planning/SyntheticGraphs.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace cgc::planning;

namespace {

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + what.size()))
    ++n;
  return n;
}

/// The numeric value of attribute `name` in the tag starting at `at`.
double attribute(const std::string &s, size_t at, const std::string &name) {
  size_t end = s.find('>', at);
  size_t p = s.find(" " + name + "=\"", at);
  EXPECT_LT(p, end) << name;
  return std::strtod(s.c_str() + p + name.size() + 3, nullptr);
}

struct Planned {
  Graph graph;
  MemoryPlan plan;
  size_t placed = 0;
};

Planned plan(Graph g, ScheduleMode mode = ScheduleMode::MinMemory) {
  MemoryPlanOptions options;
  options.mode = mode;
  Planned p{std::move(g), {}, 0};
  p.plan = planMemory(p.graph, orderNodes(p.graph, mode, options), options);
  for (uint64_t o : p.plan.offsets)
    p.placed += o != UINT64_MAX;
  return p;
}

TEST(Report, TextListsEveryIntermediateAndTheRatios) {
  Planned p = plan(synthetic::resnet50(synthetic::Granularity::Fused));
  std::string text = renderMemoryReportText(p.graph, p.plan);
  for (size_t t = 0; t < p.graph.tensors.size(); ++t)
    if (p.plan.offsets[t] != UINT64_MAX)
      EXPECT_NE(text.find(p.graph.tensors[t].name.substr(0, 31)),
                std::string::npos)
          << p.graph.tensors[t].name;
  EXPECT_NE(text.find(std::to_string(p.plan.footprint)), std::string::npos);
  EXPECT_NE(text.find(std::to_string(p.plan.lowerBound)), std::string::npos);
  EXPECT_NE(text.find(std::to_string(p.plan.naiveSum)), std::string::npos);
  char ratio[64];
  std::snprintf(ratio, sizeof(ratio), "footprint / naive = %.4f",
                double(p.plan.footprint) / double(p.plan.naiveSum));
  EXPECT_NE(text.find(ratio), std::string::npos) << text;
  // One line per intermediate, a header, a title and three summary lines.
  EXPECT_EQ(count(text, "\n"), p.placed + 5);
}

TEST(Report, SVGHasOneBoxPerIntermediateInsideThePlot) {
  for (auto mode : {ScheduleMode::MinMemory, ScheduleMode::MaxConcurrency}) {
    // BERT at layer granularity: over 300 intermediates.
    Planned p = plan(synthetic::bertBase(synthetic::Granularity::Layers), mode);
    ASSERT_GT(p.placed, 200u);
    std::string svg = renderMemoryReportSVG(p.graph, p.plan);
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
    EXPECT_EQ(count(svg, "<rect class=\"t\""), p.placed);
    EXPECT_EQ(count(svg, "<title>"), p.placed);
    EXPECT_LT(svg.size(), 1u << 20);
    double width = attribute(svg, 0, "width"), height = attribute(svg, 0, "height");
    EXPECT_LE(width, 3000);
    for (size_t at = svg.find("<rect class=\"t\""); at != std::string::npos;
         at = svg.find("<rect class=\"t\"", at + 1)) {
      double x = attribute(svg, at, "x"), y = attribute(svg, at, "y");
      double w = attribute(svg, at, "width"), h = attribute(svg, at, "height");
      EXPECT_GE(x, 0);
      EXPECT_GE(y, 0);
      EXPECT_LE(x + w, width + 0.01);
      EXPECT_LE(y + h, height + 0.01);
      EXPECT_GT(w, 0);
      EXPECT_GT(h, 0);
    }
  }
}

TEST(Report, NamesAreEscaped) {
  Graph g;
  g.tensors = {{"in", 64, BufferKind::Input, 0},
               {"a<b>&\"c\"", 64, BufferKind::Scratch, 0},
               {"out", 64, BufferKind::Output, 0}};
  g.nodes = {{"n0", {0}, {1}, {}}, {"n1", {1}, {2}, {}}};
  Planned p = plan(g);
  for (const std::string &doc :
       {renderMemoryReportSVG(p.graph, p.plan),
        renderMemoryReportHTML(p.graph, p.plan, "t<itle>")}) {
    EXPECT_EQ(doc.find("a<b>"), std::string::npos);
    EXPECT_NE(doc.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  }
}

TEST(Report, HTMLHoldsTheTimelineAndTheTable) {
  Planned p = plan(synthetic::mobileNetV2(synthetic::Granularity::Fused));
  std::string html = renderMemoryReportHTML(p.graph, p.plan, "mobilenet");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 1u);
  EXPECT_EQ(count(html, "<tr><td>"), p.placed);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

} // namespace

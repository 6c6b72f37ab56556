#include "host/validate/scatter_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "host/core/number_format.h"

namespace paraplan::host {
namespace {

// The plot area: a square, so y = x runs at 45 degrees.
constexpr double kLeft = 90, kTop = 80, kSide = 560, kWidth = 760;
constexpr double kLegendLine = 20;

// Distinct, colour-blind-friendly hues, one per source in order of appearance.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  return buffer;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// 10^k written out: "0.01", "1", "100".
std::string decade_label(int k) {
  if (k >= 0) return "1" + std::string(static_cast<size_t>(k), '0');
  return "0." + std::string(static_cast<size_t>(-k - 1), '0') + "1";
}

// Whole decades [10^low, 10^high] covering every value (1 s +/- a decade when there are none).
struct LogAxis {
  int low = -1, high = 1;

  explicit LogAxis(const std::vector<double>& values) {
    if (values.empty()) return;
    const auto [smallest, largest] = std::minmax_element(values.begin(), values.end());
    low = static_cast<int>(std::floor(std::log10(*smallest)));
    high = static_cast<int>(std::ceil(std::log10(*largest)));
    if (high <= low) high = low + 1;
  }
  // 0 at 10^low, 1 at 10^high.
  double fraction(double value) const { return (std::log10(value) - low) / (high - low); }
  double x(double value) const { return kLeft + fraction(value) * kSide; }
  double y(double value) const { return kTop + kSide - fraction(value) * kSide; }
};

class Svg {
 public:
  void line(double x1, double y1, double x2, double y2, const std::string& style) {
    out_ << "<line x1=\"" << number(x1) << "\" y1=\"" << number(y1) << "\" x2=\"" << number(x2) << "\" y2=\""
         << number(y2) << "\" " << style << "/>\n";
  }
  void text(double x, double y, const std::string& content, const std::string& style) {
    out_ << "<text x=\"" << number(x) << "\" y=\"" << number(y) << "\" " << style << ">" << escaped(content) << "</text>\n";
  }
  void raw(const std::string& element) { out_ << element << "\n"; }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

void draw_grid(Svg& svg, const LogAxis& axis) {
  for (int k = axis.low; k <= axis.high; ++k) {
    const double decade = std::pow(10.0, k);
    const double x = axis.x(decade), y = axis.y(decade);
    svg.line(x, kTop, x, kTop + kSide, "stroke=\"#c8c8c8\" stroke-width=\"1\"");
    svg.line(kLeft, y, kLeft + kSide, y, "stroke=\"#c8c8c8\" stroke-width=\"1\"");
    svg.line(x, kTop + kSide, x, kTop + kSide + 6, "stroke=\"#333\" stroke-width=\"1\"");
    svg.line(kLeft - 6, y, kLeft, y, "stroke=\"#333\" stroke-width=\"1\"");
    svg.text(x, kTop + kSide + 22, decade_label(k), "text-anchor=\"middle\" font-size=\"12\"");
    svg.text(kLeft - 10, y + 4, decade_label(k), "text-anchor=\"end\" font-size=\"12\"");
    if (k == axis.high) break;
    for (int multiple = 2; multiple <= 9; ++multiple) {
      const double value = multiple * decade;
      svg.line(axis.x(value), kTop, axis.x(value), kTop + kSide, "stroke=\"#ececec\" stroke-width=\"1\"");
      svg.line(kLeft, axis.y(value), kLeft + kSide, axis.y(value), "stroke=\"#ececec\" stroke-width=\"1\"");
    }
  }
}

// y = factor * x across the whole area (clipped to it).
void draw_ratio_line(Svg& svg, const LogAxis& axis, double factor, const std::string& style) {
  const double from = std::pow(10.0, axis.low - 1), to = std::pow(10.0, axis.high + 1);
  svg.line(axis.x(from), axis.y(factor * from), axis.x(to), axis.y(factor * to), style);
}

std::string file_names(const std::vector<std::string>& files) {
  std::string text;
  for (const std::string& file : files)
    text += (text.empty() ? "" : ", ") + std::filesystem::path(file).filename().string();
  return text;
}

}  // namespace

std::string scatter_plot_svg(const ValidationReport& report) {
  const ValidationSummary& summary = report.summary;
  std::vector<double> values;
  for (const Prediction& prediction : report.predictions)
    if (prediction.evaluated()) {
      values.push_back(prediction.run->iteration_seconds(prediction.run->value));
      values.push_back(prediction.run->iteration_seconds(*prediction.predicted));
    }
  const LogAxis axis(values);
  const double legend_top = kTop + kSide + 80;
  const double height = legend_top + kLegendLine * static_cast<double>(summary.sources.size() + 2) + 10;

  Svg svg;
  svg.raw("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kWidth) + "\" height=\"" + number(height) +
          "\" viewBox=\"0 0 " + number(kWidth) + " " + number(height) + "\" font-family=\"sans-serif\">");
  svg.raw("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
  svg.raw("<clipPath id=\"plot-area\"><rect x=\"" + number(kLeft) + "\" y=\"" + number(kTop) + "\" width=\"" +
          number(kSide) + "\" height=\"" + number(kSide) + "\"/></clipPath>");

  svg.text(kWidth / 2, 28, "Predicted vs measured iteration time: " + file_names(report.files),
           "text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\"");
  std::string statistics = "no row could be evaluated";
  if (summary.mape_pct)
    statistics = "MAPE " + format_number("%.1f", *summary.mape_pct) + " % over " + std::to_string(summary.evaluated) +
                 " rows; Spearman " + (summary.spearman ? format_number("%.3f", *summary.spearman) : std::string("n/a"));
  if (summary.unevaluable > 0) statistics += "; " + std::to_string(summary.unevaluable) + " unevaluable";
  svg.text(kWidth / 2, 50, statistics, "text-anchor=\"middle\" font-size=\"13\"");

  draw_grid(svg, axis);
  svg.raw("<g clip-path=\"url(#plot-area)\">");
  draw_ratio_line(svg, axis, 1.0, "stroke=\"#333\" stroke-width=\"1.2\"");
  draw_ratio_line(svg, axis, 1.1, "stroke=\"#666\" stroke-width=\"1\" stroke-dasharray=\"6 4\"");
  draw_ratio_line(svg, axis, 0.9, "stroke=\"#666\" stroke-width=\"1\" stroke-dasharray=\"6 4\"");
  for (const Prediction& prediction : report.predictions) {
    if (!prediction.evaluated()) continue;
    const MeasuredRun& run = *prediction.run;
    const size_t source = static_cast<size_t>(
        std::find_if(summary.sources.begin(), summary.sources.end(),
                     [&](const SourceAccuracy& known) { return known.source == run.source; }) -
        summary.sources.begin());
    const double measured = run.iteration_seconds(run.value), predicted = run.iteration_seconds(*prediction.predicted);
    svg.raw("<circle cx=\"" + number(axis.x(measured)) + "\" cy=\"" + number(axis.y(predicted)) + "\" r=\"4\" fill=\"" +
            kPalette[source % std::size(kPalette)] + "\" fill-opacity=\"0.75\" stroke=\"#222\" stroke-width=\"0.5\">" +
            "<title>" + escaped(run.id + ": measured " + significant(measured) + " s, predicted " + significant(predicted) +
                                " s (" + format_number("%+.1f", prediction.error_pct) + " %)") +
            "</title></circle>");
  }
  svg.raw("</g>");
  svg.raw("<rect x=\"" + number(kLeft) + "\" y=\"" + number(kTop) + "\" width=\"" + number(kSide) + "\" height=\"" +
          number(kSide) + "\" fill=\"none\" stroke=\"#333\" stroke-width=\"1\"/>");
  svg.text(kLeft + kSide / 2, kTop + kSide + 45, "measured iteration time (s)", "text-anchor=\"middle\" font-size=\"13\"");
  svg.raw("<text x=\"30\" y=\"" + number(kTop + kSide / 2) + "\" transform=\"rotate(-90 30 " + number(kTop + kSide / 2) +
          ")\" text-anchor=\"middle\" font-size=\"13\">predicted iteration time (s)</text>");

  double y = legend_top;
  for (size_t i = 0; i < summary.sources.size(); ++i, y += kLegendLine) {
    const SourceAccuracy& source = summary.sources[i];
    svg.raw("<circle cx=\"" + number(kLeft + 12) + "\" cy=\"" + number(y - 4) + "\" r=\"4\" fill=\"" +
            kPalette[i % std::size(kPalette)] + "\" fill-opacity=\"0.75\" stroke=\"#222\" stroke-width=\"0.5\"/>");
    const std::string accuracy = source.mape_pct ? ", MAPE " + format_number("%.1f", *source.mape_pct) + " %" : "";
    svg.text(kLeft + 30, y, source_label(source.source) + " (" + std::to_string(source.rows) +
                                (source.rows == 1 ? " row" : " rows") + accuracy + ")",
             "font-size=\"12\"");
  }
  svg.line(kLeft, y - 4, kLeft + 24, y - 4, "stroke=\"#333\" stroke-width=\"1.2\"");
  svg.text(kLeft + 30, y, "predicted = measured", "font-size=\"12\"");
  y += kLegendLine;
  svg.line(kLeft, y - 4, kLeft + 24, y - 4, "stroke=\"#666\" stroke-width=\"1\" stroke-dasharray=\"6 4\"");
  svg.text(kLeft + 30, y, "predicted within 10 % of measured", "font-size=\"12\"");
  svg.raw("</svg>");
  return svg.str();
}

}  // namespace paraplan::host

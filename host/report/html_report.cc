#include "host/report/html_report.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "host/core/errors.h"
#include "host/report/html_assets.h"
#include "host/report/report_output.h"

namespace paraplan::host {
namespace {

// Text for an HTML element's content: what a title or warning says, never markup.
std::string escaped_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// JSON inside <script>: '<' only occurs inside JSON strings, where \u003c means the same, so no
// "</script>" or "<!--" in a plan's names can end or bend the element.
std::string script_safe_json(const nlohmann::ordered_json& document) {
  std::string text = dump_json(document, -1), out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

}  // namespace

std::string html_page(const HtmlReport& report) {
  nlohmann::ordered_json document = {{"kind", report.kind},
                                     {"title", report.title},
                                     {"generated_by", std::string("paraplan ") + PARAPLAN_VERSION + ", d3 " + kHtmlD3Version},
                                     {"warnings", report.warnings},
                                     {"report", report.report}};
  for (const auto& [key, value] : report.extras.items()) document[key] = value;
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"generator\" content=\"paraplan " PARAPLAN_VERSION "\">\n";
  page += "<title>" + escaped_text(report.title) + "</title>\n<style>\n";
  page += kHtmlReportStyle;
  page += "</style>\n</head>\n<body>\n<div id=\"paraplan-errors\"></div>\n<div id=\"paraplan-report\"></div>\n";
  page += "<script id=\"paraplan-data\" type=\"application/json\">" + script_safe_json(document) + "</script>\n";
  page += "<script>\n";
  page += kHtmlD3Script;
  page += "\n</script>\n<script>\n";
  page += kHtmlReportScript;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

void write_html_report(const std::string& file, const HtmlReport& report) {
  std::ofstream out(file, std::ios::binary);
  if (!out) throw InputError(file + ": cannot write the HTML report (" + std::strerror(errno) + ")");
  out << html_page(report);
  out.close();
  if (!out) throw InputError(file + ": cannot write the HTML report (" + std::strerror(errno) + ")");
}

}  // namespace paraplan::host

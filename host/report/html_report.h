// paraplan/host/report/html_report.h: a report as one self-contained HTML file (--html FILE).
//
// The file holds the command's JSON report, d3 (Debian's libjs-d3, embedded at build time) and
// the drawing script (html/report.js): it opens offline, in any browser, and draws the plan's
// memory per stage against capacity, where the step time goes (with its range), the simulated
// timeline, or a validation's predicted-against-measured charts.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace paraplan::host {

struct HtmlReport {
  std::string kind;   // "evaluate", "simulate", "validate": which charts report.js draws
  std::string title;  // the page's heading
  nlohmann::ordered_json report;  // the command's --json report
  // What the page draws beside the report, by key: simulate's "trace" ({"events": [...], "note"}),
  // search's "front" and "cells" (search_report.h, search_map_json).
  nlohmann::ordered_json extras = nlohmann::ordered_json::object();
  std::vector<std::string> warnings;  // shown at the top, as on stderr
};

// The whole page. The JSON is embedded so that no text in it can end its <script> element.
std::string html_page(const HtmlReport& report);

// Writes the page to `file`; InputError (exit 3) naming the file when it cannot be written.
void write_html_report(const std::string& file, const HtmlReport& report);

}  // namespace paraplan::host

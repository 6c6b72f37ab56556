// The HTML page's framing (host/report/html_report.h): whatever a plan's names hold, the page has
// exactly its own three scripts and its data reads back as the report. The charts themselves are
// checked in a browser (tests/cli/html_report_test.py).
#include <gtest/gtest.h>

#include <string>

#include "host/report/html_report.h"

namespace paraplan::host {
namespace {

size_t count(const std::string& text, const std::string& part) {
  size_t found = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
  return found;
}

std::string data_of(const std::string& page) {
  const std::string open = "<script id=\"paraplan-data\" type=\"application/json\">";
  const size_t start = page.find(open) + open.size();
  return page.substr(start, page.find("</script>", start) - start);
}

TEST(HtmlReport, NamesCannotEndTheScriptsOrAddMarkup) {
  HtmlReport report;
  report.kind = "evaluate";
  report.title = "</title><script>alert(1)</script>";
  report.report = {{"plan", {{"model", "</script><script>alert(2)</script><!--"}}}};
  report.warnings = {"<b>bold</b>"};
  const std::string page = html_page(report);
  // The data element, d3 and report.js: three scripts, each closed once.
  EXPECT_EQ(count(page, "<script"), 3u);
  EXPECT_EQ(count(page, "</script>"), 3u);
  EXPECT_NE(page.find("<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>"), std::string::npos);
  // The data is JSON that means what was given ('<' written as \u003c, which JSON reads back).
  const nlohmann::json data = nlohmann::json::parse(data_of(page));
  EXPECT_EQ(data["report"]["plan"]["model"], "</script><script>alert(2)</script><!--");
  EXPECT_EQ(data["title"], report.title);
  EXPECT_EQ(data["warnings"][0], "<b>bold</b>");
  EXPECT_EQ(data["kind"], "evaluate");
  EXPECT_FALSE(data.contains("trace"));
}

TEST(HtmlReport, AnUnwritableFileIsAnInputError) {
  HtmlReport report;
  report.kind = "evaluate";
  try {
    write_html_report("/nonexistent-directory/report.html", report);
    FAIL() << "no error";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-directory/report.html: cannot write the HTML report"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace paraplan::host

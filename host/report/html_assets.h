// paraplan/host/report/html_assets.h: the files an HTML report embeds, read into the executable at
// build time (html_assets.cc.in): d3 from Debian's libjs-d3, and paraplan's own script and style.
#pragma once

namespace paraplan::host {

extern const char* const kHtmlD3Script;
extern const char* const kHtmlReportScript;
extern const char* const kHtmlReportStyle;
extern const char* const kHtmlD3Version;

}  // namespace paraplan::host

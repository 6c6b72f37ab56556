// paraplan/host/report/report_output.h: where reports go, kept apart from plugins' output.
//
// stdout carries the report, which scripts parse (--json). Plugins run in this process and may
// write to stdout by any route (printf, std::cout, write(1, ...)); the executable therefore moves
// file descriptor 1 to stderr for the whole command and writes reports to a stream over the
// original stdout (main.cc, redirect_stdout_for_plugins). Every report is written through
// report_stream(), which is std::cout until the executable installs its own.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace paraplan::host {

std::ostream& report_stream();

// The executable's report stream (owned by the caller, which outlives every report).
void set_report_stream(std::ostream* stream);

// From now on report_stream() discards what it is given: this process's report is not wanted
// (a plugin asked, paraplan/host.h withhold_report).
void withhold_report();

// Moves what plugins write to stdout onto stderr for the rest of the process, and makes
// report_stream() write to the original stdout. Returns false (and changes nothing) when
// stdout cannot be duplicated.
bool redirect_stdout_for_plugins();

// JSON text of a report: indented, and valid UTF-8 whatever a plugin put into it (invalid bytes
// become U+FFFD instead of an exception).
std::string dump_json(const nlohmann::ordered_json& document, int indent = 2);
std::string dump_json(const nlohmann::json& document, int indent = 2);

}  // namespace paraplan::host

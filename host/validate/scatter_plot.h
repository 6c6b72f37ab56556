// paraplan/host/validate/scatter_plot.h: predicted vs measured iteration time as an SVG image.
//
// Log-log axes over whole decades, x = measured, y = predicted, both in seconds per iteration
// (a tokens-per-second row is converted with MeasuredRun::iteration_seconds, measured and
// predicted alike); the y = x diagonal and dashed +/-10 % lines; one colour per source, with a
// legend of its rows and MAPE. Written by hand, self-contained and byte-for-byte deterministic
// (fixed number formatting, rows in file order), so it can be committed next to the docs.
#pragma once

#include <string>

#include "host/validate/validation_report.h"

namespace paraplan::host {

std::string scatter_plot_svg(const ValidationReport& report);

}  // namespace paraplan::host

// paraplan/host/search/search_report.h: a search's result for people (text) and programs (JSON).
//
// Text: what was searched, the top K with their key figures and step-time intervals (a plan tied
// with the winner marked "="), the rejected plans by reason, and the winner as [[strategy]] tables
// to paste into a recipe. JSON: the same, keyed (docs/search.md lists the keys). The winner's full evaluate report is added by the command.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include "host/recipe/recipe.h"
#include "host/search/search_engine.h"
#include "host/validate/prediction_intervals.h"

namespace paraplan::host {

struct SearchReportContext {
  const Recipe& recipe;
  const SearchSettings& settings;
  std::string hardware;      // the profile's name
  double train_tokens = 0;   // for the time-to-train objective
  // The plans' comparable class and its interval (prediction_intervals.h); null: none. Every plan
  // of a recipe shares the class, so a plan whose step range overlaps the winner's ties with it.
  const IntervalClass* interval = nullptr;
  double interval_coverage = 0;
};

// Whether `plan`'s step-time interval overlaps the winner's (the cost model cannot tell them
// apart); false without an interval or under the memory objective.
bool ties_with_winner(const SearchResult& result, const SearchReportContext& context, const RankedPlan& plan);

void write_search_text(std::ostream& out, const SearchResult& result, const SearchReportContext& context);
nlohmann::ordered_json search_json(const SearchResult& result, const SearchReportContext& context);

// One ranked plan as search_json's "top" lists it (rank: 1 for the best; 0 for none).
nlohmann::ordered_json ranked_plan_json(const SearchResult& result, const SearchReportContext& context,
                                        const RankedPlan& plan, size_t rank);

// What SearchSettings::map_candidates kept, for the HTML page: "front" (ranked_plan_json of each
// plan of the Pareto front, least memory first) and "cells" (each cell's plan: its figures, its
// description and the number of plans in the cell).
nlohmann::ordered_json search_map_json(const SearchResult& result, const SearchReportContext& context);

// The winner as recipe text: [[strategy]] tables, micro_batch, recompute and mesh_order.
std::string ranked_plan_recipe(const SearchResult& result, const RankedPlan& plan);

// One line for a search that kept no plan, naming what emptied it (the command's error).
std::string empty_search_message(const SearchResult& result, const Recipe& recipe);

const char* objective_name(Objective objective);

}  // namespace paraplan::host

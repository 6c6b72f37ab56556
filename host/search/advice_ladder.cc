#include "host/search/advice_ladder.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <sstream>

#include "host/core/errors.h"
#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_reader.h"
#include "host/report/text_report.h"
#include "host/search/search_engine.h"

namespace paraplan::host {
namespace {

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f %%", 100.0 * fraction);
  return buffer;
}

std::string gigabytes(double bytes) { return format_value("bytes", bytes); }

// training.recompute as the recipe writes it: one value pins it; absent, "auto" or a set of
// values (search syntax) leave it to the ladder.
std::optional<pp_recompute> written_recompute(const Recipe& recipe) {
  const toml::node* node = recipe.document->at_path("training.recompute").node();
  if (!node) return std::nullopt;
  std::optional<std::string> name = node->value_exact<std::string>();
  if (const toml::array* array = node->as_array(); array && array->size() == 1)
    name = array->get(0)->value_exact<std::string>();
  if (!name || *name == "auto") return std::nullopt;
  return *name == "full" ? PP_RECOMPUTE_FULL : *name == "selective" ? PP_RECOMPUTE_SELECTIVE : PP_RECOMPUTE_NONE;
}

// Errors from a rung name the rung's generated recipe text, whose lines mean nothing to the
// reader: drop the "file:line:column: " (or "file: ") they start with.
std::string without_location(const std::string& message, const std::string& file) {
  if (!message.starts_with(file + ":")) return message;
  size_t at = file.size() + 1;
  size_t digits = at;
  while (digits < message.size() && (std::isdigit(static_cast<unsigned char>(message[digits])) || message[digits] == ':'))
    ++digits;
  if (digits > at && message.compare(digits, 1, " ") == 0) return message.substr(digits + 1);
  if (message.compare(at, 1, " ") == 0) return message.substr(at + 1);
  return message;
}

double number(const ResultTree& results, const std::string& key, bool required, const std::string& executor) {
  if (std::optional<double> value = results.number(key)) return *value;
  if (required)
    throw InputError("executor '" + executor + "' reports no " + key + ", which the advice ladder needs");
  return 0;
}

// The plugins a rung uses, with what each stands for, for the error when one is missing.
const char* plugin_role(const std::string& name) {
  if (name == "fsdp") return "ZeRO/FSDP data parallelism";
  if (name == "hsdp") return "hybrid sharded data parallelism";
  if (name == "tp") return "tensor parallelism";
  if (name == "sp") return "sequence/context parallelism";
  return "pipeline parallelism";
}

class Climber {
 public:
  Climber(const Recipe& recipe, const PluginCatalog& catalog, const LadderSettings& settings)
      : recipe_(recipe), catalog_(catalog), settings_(settings), hardware_(open_hardware(recipe, catalog)) {
    const LoadedPlugin& executor = catalog.require(settings.executor, PP_KIND_EXECUTOR);
    wants_schedule_ = executor.metadata->executor->flags & PP_EXECUTOR_WALKS_SCHEDULE;
    per_node_ = gpus_per_node(recipe, *hardware_);
    result_.usable_memory_bytes = hardware_->profile().memory_bytes * (1.0 - settings.memory_headroom);
    pinned_recompute_ = written_recompute(recipe);
    gpus_ = recipe.cluster.num_gpus;
  }

  LadderResult climb() {
    const pp_model& model = recipe_.model.shape;
    const int64_t cp = ladder_context_parallel_degree(model.seq_len);
    std::string start = "start";
    if (cp > 1)
      start += "; sequence " + std::to_string(model.seq_len) + " > " + std::to_string(kLadderContextChunk) +
               ": sp ring, cp = " + std::to_string(cp) + " (ceil(" + std::to_string(model.seq_len) + " / " +
               std::to_string(kLadderContextChunk) + ") to a power of two)";

    // Rung 1: data parallelism alone.
    std::optional<size_t> fitting = settle(1, 1, cp, "size", start);
    if (done(fitting)) return finish(fitting, true);
    std::optional<size_t> last_fit = fitting;
    std::string why = shortfall(fitting, "no data-parallel plan fits");

    // Rung 2: tensor parallelism within a node.
    const int64_t tp_limit = std::min(kLadderTensorParallelLimit, per_node_);
    int64_t tp_used = 1;
    for (int64_t tp = 2; tp <= tp_limit && tp * cp <= gpus_; tp *= 2) {
      if (gpus_ % (tp * cp) != 0) continue;
      fitting = settle(tp, 1, cp, "tp", "add TP = " + std::to_string(tp) + ": " + why);
      if (composed_any_) tp_used = tp;
      if (fitting) last_fit = fitting;
      if (done(fitting)) return finish(fitting, true);
      why = "tp = " + std::to_string(tp) + " " + shortfall(fitting, "does not fit");
    }

    // Rung 3: pipeline parallelism on the largest tensor-parallel degree that composed.
    const std::string limit = "TP would exceed " + std::to_string(tp_limit) +
                              (tp_limit < kLadderTensorParallelLimit ? " (the GPUs of a node)" : "") +
                              ": add PP on tp = " + std::to_string(tp_used) + " (" + why + ")";
    for (int64_t pp = 2; pp <= model.layers && gpus_ % (tp_used * cp * pp) == 0; pp *= 2) {
      fitting = settle(tp_used, pp, cp, "pp", pp == 2 ? limit : "add PP = " + std::to_string(pp) + ": " + why);
      if (fitting) last_fit = fitting;
      if (done(fitting)) return finish(fitting, true);
      why = "pp = " + std::to_string(pp) + " " + shortfall(fitting, "does not fit");
    }
    return finish(last_fit, false);
  }

 private:
  // One (tp, pp, cp) rung: the data-parallel strategy by its size, its stage raised and then
  // recomputation added until the plan fits. Returns the step that fits, if one does.
  std::optional<size_t> settle(int64_t tp, int64_t pp, int64_t cp, const std::string& rule, const std::string& reason) {
    composed_any_ = false;
    LadderPlan plan;
    plan.tp = tp;
    plan.pp = pp;
    plan.cp = cp;
    plan.data_parallel_degree = gpus_ / (tp * pp * cp);
    plan.micro_batch = recipe_.training.micro_batch;
    plan.recompute = pinned_recompute_.value_or(PP_RECOMPUTE_NONE);
    const int64_t d = plan.data_parallel_degree;
    std::string size_rule;
    if (d <= kLadderStage1Gpus) {
      plan.stage = 1;
      size_rule = "<= " + std::to_string(kLadderStage1Gpus) + ": FSDP-1";
    } else if (d <= kLadderStage2Gpus) {
      plan.stage = 2;
      size_rule = "<= " + std::to_string(kLadderStage2Gpus) + ": FSDP-2";
    } else if (d <= kLadderStage3Gpus) {
      plan.stage = 3;
      size_rule = "<= " + std::to_string(kLadderStage3Gpus) + ": FSDP-3";
    } else {
      plan.data_parallel = "hsdp";
      plan.stage = 3;
      size_rule = "> " + std::to_string(kLadderStage3Gpus) + ": hybrid sharding (hsdp stage 3)";
    }
    size_t step = evaluate(plan, rule, reason + "; " + std::to_string(d) + " data-parallel GPU" + (d == 1 ? " " : "s ") + size_rule);
    if (!result_.steps[step].composed) return std::nullopt;  // stage and recompute lift no constraint
    composed_any_ = true;
    // One data-parallel rank shards nothing: its stage changes no byte.
    while (!result_.steps[step].fits && plan.stage < 3 && d > 1) {
      const std::string needs = needs_text(step);
      ++plan.stage;
      step = evaluate(plan, "stage", "stage " + std::to_string(plan.stage - 1) + " " + needs + ": raise to stage " +
                                         std::to_string(plan.stage) + " (start with FSDP-3)");
    }
    for (pp_recompute mode : {PP_RECOMPUTE_SELECTIVE, PP_RECOMPUTE_FULL}) {
      if (result_.steps[step].fits || pinned_recompute_) break;
      const std::string needs = needs_text(step);
      const pp_recompute before = plan.recompute;
      plan.recompute = mode;
      step = evaluate(plan, "recompute", std::string("recompute ") + recompute_name(before) + " " + needs +
                                             ": recompute " + recompute_name(mode));
    }
    if (!result_.steps[step].fits) return std::nullopt;
    return step;
  }

  std::string needs_text(size_t step) const {
    return "needs " + gigabytes(result_.steps[step].figures.memory_per_gpu_bytes) + " > " +
           gigabytes(result_.usable_memory_bytes);
  }

  bool done(std::optional<size_t> step) const { return step && result_.steps[*step].efficient; }

  // Why a rung's outcome sends the ladder up: its efficiency, or `otherwise` when it fits nowhere.
  std::string shortfall(std::optional<size_t> step, const std::string& otherwise) const {
    if (!step) return composed_any_ ? otherwise : "does not compose";
    return "FSDP efficiency " + percent(result_.steps[*step].figures.efficiency()) + " < " +
           percent(kLadderEfficiencyTarget);
  }

  size_t evaluate(const LadderPlan& plan, const std::string& rule, const std::string& reason) {
    LadderStep step;
    step.rule = rule;
    step.reason = reason;
    step.plan = plan;
    ResultTree results;
    try {
      std::unique_ptr<Recipe> rung = parse_recipe(recipe_text(plan), recipe_.file, reader_options());
      ComposedPlan composed = compose_plan(*rung, catalog_, per_node_, wants_schedule_);
      results = run_executor(settings_.executor, *rung, catalog_, composed, *hardware_);
      step.composed = true;
    } catch (const PlanError& failure) {
      step.skipped = without_location(failure.what(), recipe_.file);
    }
    if (step.composed) {
      LadderFigures& figures = step.figures;
      const std::string& executor = settings_.executor;
      figures.step_s = number(results, "time.step_s", true, executor);
      figures.compute_s = number(results, "time.compute_s", true, executor);
      figures.memory_per_gpu_bytes = number(results, "memory.per_gpu_bytes", true, executor);
      figures.exposed_data_parallel_comm_s = number(results, "time.exposed_comm_s." + plan.data_parallel, false, executor);
      figures.mfu = number(results, "throughput.mfu", false, executor);
      figures.tokens_per_s_per_gpu = number(results, "throughput.tokens_per_s_per_gpu", false, executor);
      step.fits = figures.memory_per_gpu_bytes <= result_.usable_memory_bytes;
      step.efficient = step.fits && figures.efficiency() >= kLadderEfficiencyTarget;
    }
    result_.steps.push_back(std::move(step));
    reports_.push_back(std::move(results));
    return result_.steps.size() - 1;
  }

  // The recipe with its [[strategy]] list replaced by the rung's, and micro_batch and recompute
  // written as single values (the recipe may hold search sets).
  std::string recipe_text(const LadderPlan& plan) const {
    for (const char* name : {plan.data_parallel.c_str(), "tp", "sp", "pp"}) {
      const bool used = name == plan.data_parallel || (std::string(name) == "tp" && plan.tp > 1) ||
                        (std::string(name) == "sp" && (plan.tp > 1 || plan.cp > 1)) ||
                        (std::string(name) == "pp" && plan.pp > 1);
      if (!used || catalog_.find(name)) continue;
      throw InputError(std::string("the advice ladder needs the strategy plugin '") + name + "' (" + plugin_role(name) +
                       "), which is not loaded; add its directory with --plugin-path");
    }
    toml::table document = *recipe_.document;
    document.erase("strategy");
    if (toml::table* training = document["training"].as_table()) {
      training->insert_or_assign("micro_batch", plan.micro_batch);
      training->insert_or_assign("recompute", std::string(recompute_name(plan.recompute)));
    }
    std::ostringstream text;
    text << toml::toml_formatter(document) << "\n\n" << plan.strategy_tables();
    return text.str();
  }

  RecipeReaderOptions reader_options() const {
    RecipeReaderOptions options;
    options.model_directories = settings_.model_directories;
    return options;
  }

  LadderResult finish(std::optional<size_t> advice, bool reached) {
    if (!advice) {
      // Nothing fits: the last rung evaluated that composed, to show how far off it is.
      for (size_t step = result_.steps.size(); step-- > 0;)
        if (result_.steps[step].composed) {
          advice = step;
          break;
        }
    }
    result_.final_step = advice;
    result_.reached_target = reached;
    if (!advice) {
      result_.outcome = "no rung composes";
    } else if (reached) {
      result_.outcome = "step " + std::to_string(*advice + 1) + " fits and reaches FSDP efficiency " +
                        percent(kLadderEfficiencyTarget);
    } else if (result_.steps[*advice].fits) {
      result_.outcome = "no rung reaches FSDP efficiency " + percent(kLadderEfficiencyTarget) + "; step " +
                        std::to_string(*advice + 1) + " is the last one that fits";
    } else {
      result_.outcome = "no rung fits in " + gigabytes(result_.usable_memory_bytes) + " per GPU; step " +
                        std::to_string(*advice + 1) + " is the last one evaluated";
    }
    if (advice) result_.final_report = reports_[*advice];
    return std::move(result_);
  }

  const Recipe& recipe_;
  const PluginCatalog& catalog_;
  const LadderSettings& settings_;
  std::unique_ptr<HardwareBinding> hardware_;
  bool wants_schedule_ = false;
  int64_t per_node_ = 1;
  int64_t gpus_ = 1;
  std::optional<pp_recompute> pinned_recompute_;
  bool composed_any_ = false;  // whether the last settle() composed a plan
  LadderResult result_;
  std::vector<ResultTree> reports_;  // per step
};

}  // namespace

double LadderFigures::efficiency() const {
  const double total = compute_s + exposed_data_parallel_comm_s;
  return total > 0 ? compute_s / total : 1.0;
}

std::string LadderPlan::describe() const {
  std::string text;
  if (tp > 1) text += "tp=" + std::to_string(tp) + " ";
  if (cp > 1)
    text += "sp=" + std::to_string(cp) + " (mode=ring) ";
  else if (tp > 1)
    text += "sp (mode=megatron) ";
  if (pp > 1) text += "pp=" + std::to_string(pp) + " (schedule=1f1b trim_ends=true) ";
  text += data_parallel + "=" + std::to_string(data_parallel_degree) + " (stage=" + std::to_string(stage) + ")";
  return text + "; micro_batch " + std::to_string(micro_batch) + ", recompute " + recompute_name(recompute);
}

std::string LadderPlan::strategy_tables() const {
  std::string text;
  if (tp > 1) text += "[[strategy]]\nname = \"tp\"\ndegree = " + std::to_string(tp) + "\n\n";
  // One sp entry per recipe: ring attention takes it when the sequence needs context
  // parallelism, and TP then runs without Megatron's sequence parallelism.
  if (cp > 1)
    text += "[[strategy]]\nname = \"sp\"\ndegree = " + std::to_string(cp) + "\nmode = \"ring\"\n\n";
  else if (tp > 1)
    text += "[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n\n";
  if (pp > 1)
    text += "[[strategy]]\nname = \"pp\"\ndegree = " + std::to_string(pp) + "\nschedule = \"1f1b\"\ntrim_ends = true\n\n";
  text += "[[strategy]]\nname = \"" + data_parallel + "\"\ndegree = " + std::to_string(data_parallel_degree) +
          "\nstage = " + std::to_string(stage) + "\n";
  return text;
}

int64_t ladder_context_parallel_degree(int64_t seq_len) {
  if (seq_len <= kLadderContextChunk) return 1;
  const int64_t needed = (seq_len + kLadderContextChunk - 1) / kLadderContextChunk;
  int64_t degree = 1;
  while (degree < needed) degree *= 2;
  return degree;
}

LadderResult climb_ladder(const Recipe& recipe, const PluginCatalog& catalog, const LadderSettings& settings) {
  return Climber(recipe, catalog, settings).climb();
}

}  // namespace paraplan::host

// paraplan/host/plan/plan.h: the host-side owner of a training plan.
//
// Plan stores what pp_plan_view_v1 shows (see sdk/include/paraplan/plan.h) and implements the
// pp_plan_api_v1 editing services strategies call. It checks every edit (indices, struct sizes,
// names, every enum in range, every number finite and not negative, degrees within the GPU
// count, layer sums) so a misbehaving plugin gets an error status instead of corrupting host
// memory or an executor's arithmetic, and no exception ever unwinds into the plugin. The first
// refusal is kept (refusal()): the host fails the strategy with it, even when the plugin ignores
// the status.
//
//   Plan plan(model, training, cluster, /*data_parallel_size=*/8);
//   const pp_plan_api_v1& api = plan.api();   // hand to strategy->apply()
//   plan.lay_out_mesh({"tp", "cp", "ep", "dp", "pp"});
//   pp_plan_view_v1 view = plan.view();       // hand to executor->run()
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "host/model/layer_stack.h"
#include "paraplan/plan.h"

namespace paraplan::host {

// Bounds on what strategies may build (far above any real plan).
inline constexpr uint32_t kMaxRepeat = 1000000;      // pp_op.repeat
inline constexpr size_t kMaxOps = 1u << 20;          // ops, and memory items
inline constexpr int64_t kMaxMicroBatches = 1 << 24;  // per step and data-parallel rank

class Plan {
 public:
  Plan(const pp_model& model, const pp_training& training, const pp_cluster& cluster, int64_t data_parallel_size);
  Plan(const Plan&) = delete;  // api() and view() hand out pointers into this object
  Plan& operator=(const Plan&) = delete;

  const pp_plan_api_v1& api() const { return api_; }
  pp_plan_view_v1 view() const;

  // Fills each axis's stride from the mesh order (innermost first; axes not named there go
  // outermost in creation order; a child axis subdivides its parent). Throws PlanError when the
  // product of top-level degrees differs from the GPU count.
  void lay_out_mesh(const std::vector<std::string>& mesh_order);

  // Everything strategies change, saved to roll back to after trying one: the search applies a
  // strategy, explores what follows, and restores the plan for the strategy's next option.
  // Restoring copies back only the ops and memory items at or after the first index edited since
  // the state was saved or last restored (strategies mostly append and edit the last ops), the
  // whole state when the plan cannot tell (a state saved before one saved earlier was restored).
  struct State {
    std::vector<pp_mesh_axis> axes;
    std::vector<pp_op> ops;
    std::vector<pp_memory_item> memory;
    pp_pipeline pipeline{};
    std::vector<pp_stage> stages;
    std::vector<pp_schedule_step> steps;
    // ABI 1.6: the layer kind of each op and memory item, the layers of each kind per virtual stage.
    std::vector<uint32_t> op_kinds;
    std::vector<uint32_t> memory_kinds;
    std::vector<int64_t> layer_counts;
    // Which of the plan's change marks (below) this state's contents match; 0: none.
    uint64_t mark_id = 0;
    size_t mark = 0;
  };
  void save(State& state);     // reuses state's storage: no allocation once it is warm
  void restore(State& state);  // the state stays valid for further restores

  // Starts over with other training settings: no ops, no memory, no axes, one stage.
  void reset(const pp_training& training, int64_t data_parallel_size);

  // The first edit refused since clear_refusal() ("" when none), saying why.
  const std::string& refusal() const { return refusal_; }
  void clear_refusal() { refusal_.clear(); }

  // The host's own passes (the workload builder, activation offload) add ops and items directly
  // (each of a layer kind, or PP_EVERY_LAYER_KIND); everyone else edits through api().
  void add_workload_op(const pp_op& op, uint32_t layer_kind);
  void add_workload_memory(const pp_memory_item& item, uint32_t layer_kind);
  // A cached workload put back whole (the search builds each one once).
  void set_workload(const std::vector<pp_op>& ops, const std::vector<uint32_t>& op_kinds,
                    const std::vector<pp_memory_item>& memory, const std::vector<uint32_t>& memory_kinds);
  const std::vector<pp_op>& op_list() const { return state_.ops; }
  const std::vector<pp_memory_item>& memory_items() const { return state_.memory; }
  const std::vector<uint32_t>& op_layer_kinds() const { return state_.op_kinds; }
  const std::vector<uint32_t>& memory_layer_kinds() const { return state_.memory_kinds; }
  const LayerStack& layer_stack() const { return stack_; }
  const std::vector<pp_mesh_axis>& axes() const { return state_.axes; }
  // The mesh axis `strategy`'s degree spans when its name does not say it ("cp" for sp in ring
  // mode; not fsdp's "dp"), so reports call the degree what it is; "" otherwise, or when it owns
  // no axis or several.
  std::string axis_named_otherwise(const std::string& strategy) const;
  const pp_pipeline& pipeline() const { return state_.pipeline; }
  const std::vector<pp_stage>& stages() const { return state_.stages; }
  const pp_model& model() const { return model_; }
  const pp_training& training() const { return training_; }
  // Partial recomputation's layers per chunk (pp_training.recompute_num_layers, > 0): the
  // workload is the same for every count, only which layers the executors count changes, so the
  // search tries counts on one composed plan.
  void set_recompute_num_layers(int64_t layers) { training_.recompute_num_layers = layers; }
  const pp_cluster& cluster() const { return cluster_; }
  int64_t data_parallel_size() const { return data_parallel_size_; }

 private:
  static Plan& self(void* plan) { return *static_cast<Plan*>(plan); }
  pp_status refuse(const std::string& problem);
  template <typename Body>
  static pp_status guarded(void* plan, Body&& body) noexcept;
  int32_t add_axis_checked(const char* name, int64_t degree, const char* parent, const char* owner);
  static void get_view(void* plan, pp_plan_view_v1* out);
  static int32_t add_axis(void* plan, const char* name, int64_t degree, const char* parent, const char* owner);
  static pp_status set_op(void* plan, uint32_t index, const pp_op* op);
  static pp_status insert_op(void* plan, uint32_t index, const pp_op* op);
  static pp_status remove_op(void* plan, uint32_t index);
  static pp_status set_memory(void* plan, uint32_t index, const pp_memory_item* item);
  static pp_status add_memory(void* plan, const pp_memory_item* item);
  static pp_status set_pipeline(void* plan, const pp_pipeline* pipeline, const pp_stage* stages, uint32_t count);
  static pp_status set_schedule(void* plan, const pp_schedule_step* steps, uint64_t count);
  static pp_status insert_layer_op(void* plan, uint32_t index, const pp_op* op, uint32_t layer_kind);
  static pp_status add_layer_memory(void* plan, const pp_memory_item* item, uint32_t layer_kind);
  static pp_status set_layer_counts(void* plan, const int64_t* counts, uint64_t count);
  pp_status insert_op_of_kind(const char* call, uint32_t index, const pp_op* op, uint32_t layer_kind);
  pp_status add_memory_of_kind(const char* call, const pp_memory_item* item, uint32_t layer_kind);
  uint32_t inferred_kind(uint32_t index) const;  // a 1.5 plugin's LAYER op at `index`
  void fill_layer_counts_in_order();             // the stages' layers in the model's order
  int64_t stack_layers() const { return static_cast<int64_t>(stack_.sequence().size()); }

  // Edits since each outstanding save or restore, innermost last: the lowest op and memory
  // index each changed (SIZE_MAX: none). Saves and restores nest as the search's levels do.
  struct ChangeMark {
    uint64_t id;
    size_t first_op;
    size_t first_memory;
  };
  void changed_op(size_t index) {
    if (!marks_.empty()) marks_.back().first_op = std::min(marks_.back().first_op, index);
  }
  void changed_memory(size_t index) {
    if (!marks_.empty()) marks_.back().first_memory = std::min(marks_.back().first_memory, index);
  }
  void changed_everything() {
    changed_op(0);
    changed_memory(0);
  }
  void mark(State& state);  // state_ equals `state` now
  ChangeMark changes_since(size_t mark) const;  // the lowest indices edited since marks_[mark]

  LayerStack stack_;
  pp_model model_;
  std::string model_name_;
  pp_training training_;
  pp_cluster cluster_;
  int64_t data_parallel_size_;
  State state_;  // what pp_plan_api_v1 edits
  std::vector<ChangeMark> marks_;
  uint64_t next_mark_id_ = 1;
  std::string refusal_;
  pp_plan_api_v1 api_{};
};

// The top-level axes (indices into `axes`) in the order `names` gives, innermost first; axes it
// does not name go last, in creation order.
std::vector<size_t> top_level_axes_in_order(std::span<const pp_mesh_axis> axes, const std::vector<std::string>& names);

// The stride of every axis when the top-level axes are laid innermost-first in `top_level_order`
// (indices into `axes`; every top-level axis exactly once); child axes subdivide their parent
// innermost-first in creation order. A parent may be a region, adjacent top-level axes joined by
// '*' innermost first ("tp*cp*dp", paraplan::axis_region): its children subdivide the ranks those
// axes span together, as Megatron-LM carves the expert grid out of tp x cp x dp. Writes one
// stride per axis into `strides`. Throws PlanError when the top-level degrees do not multiply to
// `num_gpus`, children do not divide a parent, or a region's axes are not neighbours in the
// layout.
void mesh_strides(std::span<const pp_mesh_axis> axes, std::span<const size_t> top_level_order, int64_t num_gpus,
                  int64_t* strides);

// The same without throwing, for the search, which tries every layout: false when the layout
// cannot be laid out, the reason written to `why` when it is not null (formatted only then).
bool try_mesh_strides(std::span<const pp_mesh_axis> axes, std::span<const size_t> top_level_order, int64_t num_gpus,
                      int64_t* strides, std::string* why);

}  // namespace paraplan::host

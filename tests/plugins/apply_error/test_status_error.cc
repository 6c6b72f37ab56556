// test_status_error: a C plugin whose create fails the C way, with a status code and a message in
// the host's error buffer. The host must surface both (e.g. "test_status_error: bad parameters").
#include "c_abi_plugin.h"

static pp_status refuse_create(const pp_param_set*, void** instance, pp_error* error) {
  *instance = nullptr;
  paraplan_test::write_error(error, "bad parameters");
  return PP_ERROR_INVALID_ARGUMENT;
}

static const pp_strategy_v1 kStrategy = {
    .struct_size = sizeof(pp_strategy_v1),
    .apply_order = 100,
    .flags = 0,
    .create = refuse_create,
    .destroy = paraplan_test::accept_destroy,
    .validate = paraplan_test::accept_validate,
    .apply = paraplan_test::accept_apply,
    .search_cases = nullptr,
    .search_case_count = 0,
};

static const pp_plugin_v1 kPlugin = paraplan_test::strategy_plugin(
    "test_status_error", "create always fails with PP_ERROR_INVALID_ARGUMENT", PP_ABI_MAJOR,
    PP_ABI_MINOR, &kStrategy);

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) { return &kPlugin; }
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)

// test_no_entry: an ordinary shared library that happens to sit on the plugin path. It exports a
// function but no paraplan entry point, so the host must skip it as "not a paraplan plugin".
#include "paraplan/abi.h"

PP_EXTERN_C PP_EXPORT int paraplan_test_unrelated_function(int value) { return value + 1; }

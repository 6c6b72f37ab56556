/* paraplan/params.h: parameter schemas and typed parameter values.
 *
 * A plugin declares the recipe keys it accepts as an array of pp_param_spec. The host validates
 * the recipe's table against that schema (unknown keys, types, ranges, enum values), fills the
 * defaults, and hands the plugin a pp_param_set in which every declared key is present with the
 * declared type. A plugin therefore never parses TOML and never sees an unknown key.
 *
 * Example (a strategy with one enum and one integer key):
 *   static const char* const kModes[] = {"megatron", "ring", "ulysses"};
 *   static const pp_param_spec kSpec[] = {
 *     {sizeof(pp_param_spec), "mode", PP_PARAM_ENUM, "how the sequence is split",
 *      0, 0.0, 0, "megatron", 0, 0.0, 0, 0.0, kModes, 3},
 *     {sizeof(pp_param_spec), "chunks", PP_PARAM_INT, "ring chunks per rank",
 *      2, 0.0, 0, NULL, 1, 1.0, 1, 64.0, NULL, 0},
 *   };
 */
#ifndef PARAPLAN_PARAMS_H
#define PARAPLAN_PARAMS_H

#include "paraplan/abi.h"

typedef enum pp_param_type {
  PP_PARAM_INT = 1,    /* int64_t; TOML integer */
  PP_PARAM_FLOAT = 2,  /* double; TOML float or integer */
  PP_PARAM_BOOL = 3,   /* 0/1; TOML boolean */
  PP_PARAM_STRING = 4, /* free text; TOML string */
  PP_PARAM_ENUM = 5    /* one of enum_values; TOML string */
} pp_param_type;

typedef struct pp_param_spec {
  uint32_t struct_size;
  const char* name;
  pp_param_type type;
  const char* doc;
  /* Defaults: the field matching `type` is used (enum and string use default_string). */
  int64_t default_int;
  double default_float;
  int32_t default_bool;
  const char* default_string;
  /* Inclusive range for INT and FLOAT; ignored unless the has_ flag is set. */
  int32_t has_min;
  double min;
  int32_t has_max;
  double max;
  /* Allowed values for ENUM. */
  const char* const* enum_values;
  uint32_t enum_count;
} pp_param_spec;

typedef struct pp_param_value {
  uint32_t struct_size;
  const char* name;
  pp_param_type type;
  int64_t int_value;
  double float_value;
  int32_t bool_value;
  const char* string_value; /* STRING and ENUM; NUL-terminated, owned by the host */
} pp_param_value;

/* Every key of the plugin's schema, validated and with defaults filled in. Valid for the duration
 * of the call it is passed to; a plugin copies what it keeps. */
typedef struct pp_param_set {
  uint32_t struct_size;
  const pp_param_value* values;
  uint32_t count;
} pp_param_set;

#endif /* PARAPLAN_PARAMS_H */

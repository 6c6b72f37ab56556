// tests/abi/plugins/legacy_names.h: the names of the plugins built against one frozen minor.
//
// Every file here compiles against exactly one released minor's headers (tests/abi/1.<m>), so
// PP_ABI_MINOR is that minor: the plugins of 1.2 are abi_1_2_buffer, abi_1_2_gpu, ...
#pragma once

#define PARAPLAN_LEGACY_TEXT2(x) #x
#define PARAPLAN_LEGACY_TEXT(x) PARAPLAN_LEGACY_TEXT2(x)
#define PARAPLAN_LEGACY_NAME(kind) "abi_1_" PARAPLAN_LEGACY_TEXT(PP_ABI_MINOR) "_" kind

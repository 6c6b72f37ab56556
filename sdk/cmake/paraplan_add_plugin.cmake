# paraplan_add_plugin(<target> SOURCES <files...> [OUTPUT_DIRECTORY <dir>] [INSTALL_DESTINATION <dir>])
#
# Builds a paraplan plugin: a MODULE library linked to paraplan::sdk, named without the "lib"
# prefix, with hidden visibility so only the entry point is exported. Used in-tree and by
# third-party projects after find_package(paraplan_sdk).
function(paraplan_add_plugin target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OUTPUT_DIRECTORY;INSTALL_DESTINATION" "SOURCES")
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "paraplan_add_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE paraplan::sdk)
  target_compile_features(${target} PRIVATE cxx_std_20)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  if(ARG_INSTALL_DESTINATION)
    install(TARGETS ${target} LIBRARY DESTINATION ${ARG_INSTALL_DESTINATION})
  endif()
endfunction()

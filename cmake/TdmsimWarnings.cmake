# tdmsim_set_warnings(target): the project's warning set, applied to every target we own.
function(tdmsim_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 reports false -Wrestrict positives inside std::string concatenation
    # at -O2 (GCC bug 105329, fixed in 13).
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(TDMSIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

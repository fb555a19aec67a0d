# Run by the test install.c_example (tests/cli/install.cmake).
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "expected /${regex}/ in:\n${text}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f bin/tdmsim include/tdmsim/tdmsim_moe.h include/tdmsim/hipext_moe.h
          share/tdmsim/workloads/machines/mi500x-tdm.yaml share/tdmsim/examples/c/tiny-moe.yaml)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
file(GLOB_RECURSE configs ${prefix}/*/tdmsimConfig.cmake)
file(GLOB_RECURSE pcs ${prefix}/*/tdmsim.pc)
if(NOT configs OR NOT pcs)
  message(FATAL_ERROR "tdmsimConfig.cmake or tdmsim.pc not installed")
endif()

# The installed CLI runs on the installed workloads.
set(ENV{TDMSIM_WORKLOADS} ${prefix}/share/tdmsim/workloads)
run("installed tdmsim" ${prefix}/bin/tdmsim config validate --quiet
    ${prefix}/share/tdmsim/examples/c/tiny-moe.yaml)

# find_package(tdmsim) from a project of its own (C only).
run("configure the example" ${CMAKE_COMMAND} -S ${prefix}/share/tdmsim/examples/c
    -B ${WORK_DIR}/example -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_C_COMPILER=${C_COMPILER})
run("build the example" ${CMAKE_COMMAND} --build ${WORK_DIR}/example)
run("the example" ${WORK_DIR}/example/moe_descriptor_demo ${prefix}/share/tdmsim/examples/c/tiny-moe.yaml)
message("${out}")
expect("${out}" "TDM vs software: max \\|diff\\| [0-9.e-]+ .*tolerance 1e-04: agree")
expect("${out}" "simulate on mi500x-tdm: output identical to the emulator's")
expect("${out}" "TDM speedup over software: [0-9.]+x")
expect("${out}" "gpu: ran emulate, fell back: yes")

# pkg-config: the same program from one compiler line.
get_filename_component(pcdir ${pcs} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pcdir})
run("pkg-config" pkg-config --cflags --libs tdmsim)
string(STRIP "${out}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("cc with pkg-config" ${C_COMPILER} -std=c99 -o ${WORK_DIR}/demo-pc
    ${prefix}/share/tdmsim/examples/c/moe_descriptor_demo.c ${flags})
run("the pkg-config build" ${WORK_DIR}/demo-pc ${prefix}/share/tdmsim/examples/c/tiny-moe.yaml)
expect("${out}" "tolerance 1e-04: agree")
message("install example: ok")

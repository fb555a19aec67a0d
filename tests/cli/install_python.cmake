# Run by the test install.python_module (tests/cli/python.cmake): `cmake
# --install` into a prefix in the build tree, then the module imported from
# PREFIX/PYDIR alone (not the build tree) and one forward run on the
# installed workloads.
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${err}")
endif()
file(GLOB modules ${prefix}/${PYDIR}/tdmsim*.so)
if(NOT modules)
  message(FATAL_ERROR "the Python module is not installed in ${prefix}/${PYDIR}")
endif()
set(script [=[
import os, sys
import numpy as np
import tdmsim
prefix = os.path.realpath(sys.argv[1])
assert os.path.realpath(tdmsim.__file__).startswith(prefix + os.sep), tdmsim.__file__
d = tdmsim.Descriptor(os.path.join(prefix, "share", "tdmsim", "examples", "c", "tiny-moe.yaml"))
y, res = d.forward(np.ones((2, d.info["hidden_size"]), np.float32))
assert y.shape == (2, 256) and res["ran"] == "emulate", res
print("imported", tdmsim.__file__, "version", tdmsim.__version__)
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/${PYDIR}
                        TDMSIM_WORKLOADS=${prefix}/share/tdmsim/workloads
                        ${PYTHON} -c "${script}" ${prefix}
                WORKING_DIRECTORY ${WORK_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "importing the installed module failed (${rc}):\n${out}\n${err}")
endif()
message("${out}")
message("install python: ok")

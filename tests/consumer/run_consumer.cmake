# SPDX-License-Identifier: BSD-3-Clause
# ctest driver: installs the build tree into BUILD_DIR/consumer/install, configures and builds
# tests/consumer against it, and runs the program. Arguments: -DBUILD_DIR= -DSOURCE_DIR= -DGENERATOR=
set(work "${BUILD_DIR}/consumer")
file(REMOVE_RECURSE "${work}")
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "consumer test: \"${ARGN}\" failed (${result})")
  endif()
endfunction()
step("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${work}/install")
step("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${work}/build" -G "${GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${work}/install" -DCMAKE_BUILD_TYPE=Release)
step("${CMAKE_COMMAND}" --build "${work}/build")
step("${work}/build/consumer")

# SPDX-License-Identifier: BSD-3-Clause
# ctest driver: every source, build and tool file of the project names its license in its first
# three lines. Argument: -DSOURCE_DIR=
file(GLOB_RECURSE candidates RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/*.cpp" "${SOURCE_DIR}/*.hpp" "${SOURCE_DIR}/*.cu" "${SOURCE_DIR}/*.cuh" "${SOURCE_DIR}/*.h"
     "${SOURCE_DIR}/*.py" "${SOURCE_DIR}/*.sh" "${SOURCE_DIR}/*.cmake" "${SOURCE_DIR}/*CMakeLists.txt")
set(missing "")
foreach(path IN LISTS candidates)
  if(path MATCHES "^build" OR path MATCHES "/build" OR path MATCHES "^\\.")
    continue()
  endif()
  file(STRINGS "${SOURCE_DIR}/${path}" head LIMIT_COUNT 3)
  if(NOT head MATCHES "SPDX-License-Identifier: BSD-3-Clause")
    list(APPEND missing "${path}")
  endif()
endforeach()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "no SPDX-License-Identifier line in the first three lines of:\n  ${text}")
endif()
list(LENGTH candidates count)
message(STATUS "${count} files carry the SPDX line")

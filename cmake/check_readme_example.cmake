# SPDX-License-Identifier: BSL-1.0
# Fails when the README's C++ example and examples/hello.cpp have drifted apart.
# Usage: cmake -DREADME=<README.md> -DEXAMPLE=<hello.cpp> -P check_readme_example.cmake
#
# The README's first ```cpp block must equal the example file without its leading
# comment lines (which say where the file comes from).

foreach(var README EXAMPLE)
  if(NOT EXISTS "${${var}}")
    message(FATAL_ERROR "${var} not found: '${${var}}'")
  endif()
endforeach()

file(READ "${README}" readme)
string(FIND "${readme}" "```cpp\n" open)
if(open EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block")
endif()
math(EXPR body_start "${open} + 7")
string(SUBSTRING "${readme}" ${body_start} -1 rest)
string(FIND "${rest}" "\n```" close)
if(close EQUAL -1)
  message(FATAL_ERROR "${README}: the ```cpp block is not closed")
endif()
math(EXPR body_length "${close} + 1")  # keep the block's last newline
string(SUBSTRING "${rest}" 0 ${body_length} block)

file(READ "${EXAMPLE}" example)
# Drop the leading "//" comment lines of the example.
string(REGEX REPLACE "^(//[^\n]*\n)+" "" example "${example}")

if(NOT block STREQUAL example)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_block.cpp" "${block}")
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/example_body.cpp" "${example}")
  execute_process(COMMAND diff -u "${CMAKE_CURRENT_BINARY_DIR}/readme_block.cpp"
                          "${CMAKE_CURRENT_BINARY_DIR}/example_body.cpp")
  message(FATAL_ERROR "The README's ```cpp block differs from ${EXAMPLE} (diff above: "
                      "README first); copy one into the other.")
endif()
message(STATUS "The README's example matches ${EXAMPLE}")

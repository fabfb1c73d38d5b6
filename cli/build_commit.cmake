# Run at build time (cmake -P, from the grove_build_commit target in
# cli/CMakeLists.txt), not at configure time, so that `grove version`
# names the commit the binary was built from:
#   cmake -DSOURCE_DIR=... -DOUTPUT=.../build_commit.h [-DGIT=git] -P build_commit.cmake
# Writes OUTPUT with GROVE_GIT_DESCRIBE (`git describe --always --dirty`,
# "unknown" outside a git checkout) only when its text changes: an
# unchanged commit rewrites nothing and so recompiles nothing.
if(NOT SOURCE_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "build_commit.cmake needs -DSOURCE_DIR=... and -DOUTPUT=...")
endif()
if(NOT GIT)
  set(GIT git)
endif()
execute_process(COMMAND ${GIT} describe --always --dirty
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE result ERROR_QUIET)
if(NOT result EQUAL 0 OR describe STREQUAL "")
  set(describe "unknown")
endif()
string(CONCAT text
  "/* Generated at build time by cli/build_commit.cmake; do not edit. */\n"
  "#define GROVE_GIT_DESCRIBE \"${describe}\"\n")
set(old "")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()

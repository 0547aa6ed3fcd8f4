# The hostile-input suite (tests/hostile/run.sh): one CTest test per case, each with a time limit
# so that a hang fails.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/hostile/run.sh hostile_lines REGEX "^case_[a-z0-9_]+\\(\\)")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/hostile/run.sh)
foreach(line ${hostile_lines})
  string(REGEX REPLACE "^case_([a-z0-9_]+)\\(\\).*" "\\1" case "${line}")
  add_test(NAME hostile_${case}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hostile/run.sh $<TARGET_FILE:mbopt>
            ${PROJECT_BINARY_DIR}/hostile ${case}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(hostile_${case} PROPERTIES TIMEOUT 120)
endforeach()

# dplace_add_library(NAME SRCS ... DEPS ... [TESTS ...] [TEST_LABELS ...])
# One library per folder: target dplace_<NAME>, sources relative to the caller, public dependencies
# on the named targets. Each TESTS file becomes part of one test binary <NAME>_test run by CTest,
# its tests labelled `unit` and TEST_LABELS (docs/testing.md: the labels and `ctest --preset fast`).
function(dplace_add_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;TESTS;TEST_DEPS;TEST_LABELS" ${ARGN})
  add_library(dplace_${name} STATIC ${ARG_SRCS})
  target_include_directories(dplace_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(dplace_${name} PUBLIC ${ARG_DEPS})
  dplace_set_warnings(dplace_${name})
  if(DPLACE_BUILD_TESTS AND ARG_TESTS)
    add_executable(${name}_test ${ARG_TESTS})
    target_link_libraries(${name}_test PRIVATE dplace_${name} ${ARG_TEST_DEPS} GTest::gtest_main GTest::gmock)
    target_compile_definitions(${name}_test PRIVATE
      DPLACE_SOURCE_DIR="${PROJECT_SOURCE_DIR}" DPLACE_BINARY_DIR="${PROJECT_BINARY_DIR}")
    dplace_set_warnings(${name}_test)
    # One LABELS pair per label: a list value ("unit;torch") reaches set_tests_properties split,
    # its second label read as a property name (then `ctest -L torch` found none of these tests);
    # repeated pairs give the test every label.
    set(labels LABELS unit)
    foreach(label IN LISTS ARG_TEST_LABELS)
      list(APPEND labels LABELS ${label})
    endforeach()
    gtest_discover_tests(${name}_test WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60
                         PROPERTIES ${labels})
  endif()
endfunction()

function(dplace_set_warnings target)
  # -Wno-missing-field-initializers: designated initializers rely on member defaults.
  # -Wno-restrict: GCC 12 reports false positives on std::string concatenation at -O3 (GCC PR 105329).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-restrict
    -Wno-missing-field-initializers)
  if(DPLACE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

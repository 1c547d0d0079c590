# heartwheel_testing.cmake — what registers a Boost.Test suite with ctest, for test/ and for the examples'
# own suites (an example's tests live beside it: nothing under test/ includes an example).
find_package(Boost 1.74 REQUIRED COMPONENTS unit_test_framework)

# heartwheel_add_test(name SOURCES ... LIBS ... [LABELS ...])
function(heartwheel_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} Boost::unit_test_framework heartwheel_warnings)
  target_compile_definitions(${name} PRIVATE BOOST_TEST_DYN_LINK)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/test/support)
  add_test(NAME ${name} COMMAND ${name} --log_level=message)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()

# Configures, builds (no build type: -O0, what is tested is that it links and runs) and runs the
# separate_asio parent project; fails on any step.
foreach(step configure build run)
  if(step STREQUAL "configure")
    set(cmd ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -G ${GENERATOR}
        -DHEARTWHEEL_SOURCE_DIR=${HEARTWHEEL_SOURCE_DIR} --fresh)
  elseif(step STREQUAL "build")
    set(cmd ${CMAKE_COMMAND} --build ${BUILD_DIR} --target separate_asio)
  else()
    set(cmd ${BUILD_DIR}/separate_asio)
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
message("${out}")

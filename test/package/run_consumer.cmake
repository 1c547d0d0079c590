# Installs the build tree into a scratch prefix, then configures, builds and runs a separate project
# that finds it with find_package(heartwheel). Fails on any step.
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/package/consumer -B ${WORK_DIR}/build
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
     -DREADME=${SOURCE_DIR}/README.md -DDOCS_DIR=${SOURCE_DIR}/docs -DKV_SERVER_SOURCE=${SOURCE_DIR}/examples/kv_server.cpp
     -DCHAT_SERVER_SOURCE=${SOURCE_DIR}/examples/chat/chat_server.cpp)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
# One consumer per exported target; each must run and say what it did.
foreach(target core heartwheel net boost_net)
  step(${WORK_DIR}/build/consumer_${target})
  if(NOT step_output MATCHES "consumer_${target}: ")
    message(FATAL_ERROR "consumer_${target} printed: ${step_output}")
  endif()
  message(STATUS "${step_output}")
endforeach()
# The embedding examples, built from the installed package, refuse a bad flag naming it.
foreach(example kv_server chat_server)
  execute_process(COMMAND timeout 5 ${WORK_DIR}/build/${example} --listen 127.0.0.1:0 --bogus
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "unknown argument '--bogus'")
    message(FATAL_ERROR "${example} from the installed package: exit ${rc}, ${err}")
  endif()
endforeach()

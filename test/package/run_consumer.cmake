# Installs the build tree into a scratch prefix, then configures, builds and runs a separate project
# that finds it with find_package(heartwheel). Fails on any step.
file(REMOVE_RECURSE ${WORK_DIR})
# The consumers build with every core (a Makefile build would use one: most of this test's time), and
# with no build type (-O0): what is tested is that the package is found, compiles, links and runs, and
# unoptimized that takes half the time of a Release build.
cmake_host_system_information(RESULT jobs QUERY NUMBER_OF_LOGICAL_CORES)
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/package/consumer -B ${WORK_DIR}/build
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
     -DREADME=${SOURCE_DIR}/README.md -DDOCS_DIR=${SOURCE_DIR}/docs -DKV_SERVER_SOURCE=${SOURCE_DIR}/examples/kv_server.cpp
     -DCHAT_SERVER_SOURCE=${SOURCE_DIR}/examples/chat/chat_server.cpp)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --parallel ${jobs})
# The wheel, the policies, the driver and TCP connections, found with OpenSSL, toml++ and Boost
# unavailable: the package must not look for what those components do not use, and their headers
# must not include OpenSSL's (an include directory searched first makes every openssl/*.h an error).
foreach(h ssl conf err evp x509 x509v3 crypto opensslv)
  file(WRITE ${WORK_DIR}/no_openssl/openssl/${h}.h "#error \"a TCP-only heartwheel header included OpenSSL's <openssl/${h}.h>\"\n")
endforeach()
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/package/core_only -B ${WORK_DIR}/core_only
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_FLAGS=-I${WORK_DIR}/no_openssl
     -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON -DCMAKE_DISABLE_FIND_PACKAGE_tomlplusplus=ON
     -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/core_only --parallel ${jobs})
# A connection-level consumer that reads no TOML, found with toml++ unavailable.
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/package/net_only -B ${WORK_DIR}/net_only
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_DISABLE_FIND_PACKAGE_tomlplusplus=ON)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/net_only --parallel ${jobs})
# A component the package does not have is refused with the reason.
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/package/bad_component -B ${WORK_DIR}/bad_component
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
if(NOT step_output MATCHES "heartwheel_FOUND=(FALSE|0): heartwheel has no component 'websocket': this package has core, policies, toml, driver, net, tls")
  message(FATAL_ERROR "find_package(heartwheel COMPONENTS websocket) said: ${step_output}")
endif()
# A consumer whose standalone Asio is not the one heartwheel was built against is refused, both named.
file(WRITE ${WORK_DIR}/other_asio/asio/version.hpp "#define ASIO_VERSION 101800 // 1.18.0\n")
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/package/bad_component -B ${WORK_DIR}/other_asio_build
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DHW_COMPONENTS=driver -Dheartwheel_ASIO_INCLUDE_DIR=${WORK_DIR}/other_asio)
if(NOT step_output MATCHES "heartwheel_FOUND=(FALSE|0): heartwheel was built against standalone Asio [0-9]+ \\(ASIO_VERSION\\); this project finds 101800")
  message(FATAL_ERROR "a consumer with another Asio was told: ${step_output}")
endif()
# One consumer per exported target; each must run and say what it did.
foreach(exe core_only/consumer_core core_only/consumer_policies core_only/consumer_driver core_only/consumer_old_name
            core_only/consumer_net build/consumer_toml build/consumer_tls net_only/consumer_boost_net
            net_only/consumer_beast)
  step(${WORK_DIR}/${exe})
  get_filename_component(target ${exe} NAME)
  string(REPLACE "old_name" "driver" target ${target})
  if(NOT step_output MATCHES "${target}: ")
    message(FATAL_ERROR "${exe} printed: ${step_output}")
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

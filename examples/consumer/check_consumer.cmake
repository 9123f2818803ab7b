# ctest example_find_package_consumer (examples/CMakeLists.txt):
#   cmake -DBUILD_DIR=<this project's build> -DCONSUMER_DIR=<examples/consumer>
#         -DWORK_DIR=<scratch> -DOPTIONS_FILE=<examples/OPTIONS.ini>
#         [-DGENERATOR=..] [-DCXX_COMPILER=..] [-DNO_RTTI=ON] -P check_consumer.cmake
# Installs BUILD_DIR into WORK_DIR/prefix (cmake --install), configures and
# builds the consumer project against that prefix alone, and runs the
# three programs it built. Fails at the first step that fails.
foreach(v BUILD_DIR CONSUMER_DIR WORK_DIR OPTIONS_FILE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_consumer.cmake: -D${v}=... is required")
  endif()
endforeach()

function(step name)
  message(STATUS "consumer: ${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${name} failed (${rc})")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")

step("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

set(configure ${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${build}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}")
if(GENERATOR)
  list(APPEND configure -G "${GENERATOR}")
endif()
if(CXX_COMPILER)
  list(APPEND configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(NO_RTTI)  # the RocksDB found has no RTTI, so this project was built -fno-rtti
  list(APPEND configure "-DCMAKE_CXX_FLAGS=-fno-rtti")
endif()
step("configure" ${configure})
step("build" ${CMAKE_COMMAND} --build "${build}")

# The consumer found the install, not the build tree.
file(STRINGS "${build}/CMakeCache.txt" found REGEX "^rocksdb_dlcbf_DIR:")
if(NOT found MATCHES "^rocksdb_dlcbf_DIR:PATH=${prefix}/")
  message(FATAL_ERROR "consumer: rocksdb_dlcbf was not found in the install prefix: ${found}")
endif()

step("run core_filter_example" "${build}/core_filter_example")
step("run live_key_db_example" "${build}/live_key_db_example" "${WORK_DIR}/live_key_db")
step("run options_file_example" "${build}/options_file_example" "${OPTIONS_FILE}" "${WORK_DIR}/options_db")

file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "consumer: PASS (installed, found by find_package(rocksdb_dlcbf), built, ran)")

# In-tree mode: imported targets RocksDB::rocksdb and RocksDB::rocksdb-shared
# for a RocksDB built from source with ROCKSDB_PLUGINS=dlcbf (included by
# the top-level CMakeLists.txt when DLCBF_ROCKSDB_SOURCE_DIR is set).
#
# Consumers compile with RocksDB's public and internal headers (the source
# root as a SYSTEM directory: its warnings are not ours), the platform
# defines RocksDB's own build uses on Linux, DLCBF_ROCKSDB_IN_TREE (so
# abi/*.h include the real headers), and without RTTI when RocksDB was built
# without it (its Release default): a class of ours derived from a RocksDB
# class would otherwise need RocksDB typeinfo symbols that do not exist.
set(_src "${DLCBF_ROCKSDB_SOURCE_DIR}")
if(NOT EXISTS "${_src}/include/rocksdb/version.h")
  message(FATAL_ERROR "DLCBF_ROCKSDB_SOURCE_DIR=${_src} is not a RocksDB source tree "
                      "(no include/rocksdb/version.h)")
endif()
if(NOT DLCBF_ROCKSDB_BUILD_DIR)
  set(DLCBF_ROCKSDB_BUILD_DIR "${_src}/build")
endif()
find_library(DLCBF_ROCKSDB_SHARED_LIBRARY NAMES rocksdb PATHS "${DLCBF_ROCKSDB_BUILD_DIR}"
             NO_DEFAULT_PATH REQUIRED)
file(STRINGS "${_src}/include/rocksdb/version.h" _ver REGEX "^#define ROCKSDB_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*ROCKSDB_MAJOR ([0-9]+).*ROCKSDB_MINOR ([0-9]+).*ROCKSDB_PATCH ([0-9]+).*"
       "\\1.\\2.\\3" DLCBF_ROCKSDB_VERSION "${_ver}")
message(STATUS "dlcbf: in-tree mode, RocksDB ${DLCBF_ROCKSDB_VERSION} from ${_src}, "
               "library ${DLCBF_ROCKSDB_SHARED_LIBRARY}")

# RTTI: follow the RocksDB build (its CMakeCache says how it was configured).
set(DLCBF_ROCKSDB_NO_RTTI ON)
if(EXISTS "${DLCBF_ROCKSDB_BUILD_DIR}/CMakeCache.txt")
  file(STRINGS "${DLCBF_ROCKSDB_BUILD_DIR}/CMakeCache.txt" _bt REGEX "^CMAKE_BUILD_TYPE:")
  file(STRINGS "${DLCBF_ROCKSDB_BUILD_DIR}/CMakeCache.txt" _rtti REGEX "^USE_RTTI:")
  if(_rtti MATCHES "=ON$" OR (_rtti MATCHES "=AUTO$" AND NOT _bt MATCHES "=Release$"))
    set(DLCBF_ROCKSDB_NO_RTTI OFF)
  endif()
endif()

add_library(RocksDB::rocksdb-shared SHARED IMPORTED)
set_target_properties(RocksDB::rocksdb-shared PROPERTIES
  IMPORTED_LOCATION "${DLCBF_ROCKSDB_SHARED_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${_src}/include"
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${_src}/include;${_src}"
  INTERFACE_COMPILE_DEFINITIONS
    "DLCBF_ROCKSDB_IN_TREE=1;OS_LINUX;ROCKSDB_PLATFORM_POSIX;ROCKSDB_LIB_IO_POSIX")
set_property(TARGET RocksDB::rocksdb-shared APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_src}")
if(DLCBF_ROCKSDB_NO_RTTI)
  set_property(TARGET RocksDB::rocksdb-shared PROPERTY INTERFACE_COMPILE_OPTIONS -fno-rtti)
endif()
add_library(RocksDB::rocksdb INTERFACE IMPORTED)
set_property(TARGET RocksDB::rocksdb PROPERTY INTERFACE_LINK_LIBRARIES RocksDB::rocksdb-shared)

# tools/ link gflags::gflags_shared; with Debian's RocksDB package that target
# comes from RocksDBConfig.cmake's find_dependency(gflags CONFIG).
set(GFLAGS_USE_TARGET_NAMESPACE TRUE)
find_package(gflags CONFIG REQUIRED)

# Installation: the static libraries, the public headers, a CMake package
# (find_package(kwire) -> kwire::kwire) and a pkg-config file (kwire.pc).
#
# Installed layout (below CMAKE_INSTALL_PREFIX):
#   include/kwire/{protocol,client,checkpoint,source}/...
#   include/kwire/version.hpp       (generated from the project version)
#   lib/libkwire_{protocol,client,checkpoint,source,postgres}.a
#   lib/cmake/kwire/kwireConfig.cmake, kwireConfigVersion.cmake, kwireTargets*.cmake
#   lib/pkgconfig/kwire.pc, kwire-postgres.pc, kwire-protobuf.pc
#   bin/kwire                       (installed by tools/CMakeLists.txt)
#
# Exported targets (namespace kwire::):
#   kwire::kwire       every layer; what applications link
#   kwire::protocol, kwire::client, kwire::checkpoint, kwire::source
#   kwire::snappy      link helper for the snappy library (see below)
#   kwire::postgres    the PostgreSQL sink (postgres_sink.hpp); needs libpq,
#                      which kwireConfig.cmake looks up with pkg-config
#
# Both the package and the .pc file are relocatable: the prefix can be
# changed at install time (cmake --install BUILD --prefix DIR).
include(CMakePackageConfigHelpers)

set(KWIRE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/kwire"
    CACHE STRING "Where kwireConfig.cmake is installed, relative to the prefix")
set(KWIRE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where kwire.pc is installed, relative to the prefix")

set(_kwire_layers kwire_protocol kwire_client kwire_checkpoint kwire_source)

# The public headers are C++20: make that a usage requirement so that
# consumers get the right -std= without having to know.
foreach(_t IN LISTS _kwire_layers ITEMS kwire)
  target_compile_features(${_t} INTERFACE cxx_std_20)
endforeach()

set_target_properties(kwire_protocol PROPERTIES EXPORT_NAME protocol)
set_target_properties(kwire_client PROPERTIES EXPORT_NAME client)
set_target_properties(kwire_checkpoint PROPERTIES EXPORT_NAME checkpoint)
set_target_properties(kwire_source PROPERTIES EXPORT_NAME source)
set_target_properties(kwire PROPERTIES EXPORT_NAME kwire)
set_target_properties(kwire_postgres PROPERTIES EXPORT_NAME postgres)
set_target_properties(kwire_protobuf PROPERTIES EXPORT_NAME protobuf)

# kwire_snappy (top-level CMakeLists.txt) names the snappy library by the
# absolute path found when kwire was configured. kwire_protocol links it
# privately, which for a static library still puts it into the exported link
# interface, so it has to be exported too. Its installed form refers to
# kwire::snappy_library instead, an imported target that kwireConfig.cmake
# creates from the consumer's own lookup of snappy; the build tree keeps using
# the path found here.
set_target_properties(kwire_snappy PROPERTIES
  EXPORT_NAME snappy
  INTERFACE_LINK_LIBRARIES "$<BUILD_INTERFACE:${SNAPPY_LIBRARY}>;$<INSTALL_INTERFACE:kwire::snappy_library>"
  INTERFACE_INCLUDE_DIRECTORIES "$<BUILD_INTERFACE:${SNAPPY_INCLUDE_DIR}>")

install(TARGETS ${_kwire_layers} kwire kwire_snappy kwire_postgres kwire_protobuf
  EXPORT kwireTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

foreach(_layer protocol client checkpoint source)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_layer}/include/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
endforeach()
# Generated headers (kwire/version.hpp, protocol/CMakeLists.txt).
install(DIRECTORY ${KWIRE_GENERATED_INCLUDE_DIR}/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")

install(EXPORT kwireTargets
  NAMESPACE kwire::
  DESTINATION ${KWIRE_INSTALL_CMAKEDIR}
  FILE kwireTargets.cmake)
# The build tree is a package too: find_package(kwire CONFIG PATHS
# <build dir>/cmake NO_DEFAULT_PATH) links the libraries built there, with the
# headers of this source tree (`pip install ./python` reuses a build that way).
export(EXPORT kwireTargets
  NAMESPACE kwire::
  FILE "${PROJECT_BINARY_DIR}/cmake/kwireTargets.cmake")

# PkgConfig::<PREFIX> targets (from pkg_check_modules(... IMPORTED_TARGET))
# that the layers link. They cannot be exported; kwireConfig.cmake recreates
# each from the same pkg-config module, and kwire.pc lists the modules. Found
# from the targets' link lists so that a newly added one is not forgotten.
set(_kwire_pkgconfig_deps "")   # lines of "PREFIX;module" for kwireConfig.cmake
set(_kwire_pkgconfig_prefixes "")
set(_kwire_pkgconfig_modules "")
foreach(_t IN LISTS _kwire_layers)
  get_target_property(_libs ${_t} LINK_LIBRARIES)
  get_target_property(_ilibs ${_t} INTERFACE_LINK_LIBRARIES)
  foreach(_lib IN LISTS _libs _ilibs)
    if(_lib MATCHES "PkgConfig::([A-Za-z0-9_]+)")
      set(_prefix "${CMAKE_MATCH_1}")
      if(NOT _prefix IN_LIST _kwire_pkgconfig_prefixes)
        if(NOT ${_prefix}_MODULE_NAME)
          message(FATAL_ERROR "install.cmake: ${_t} links PkgConfig::${_prefix}, but the pkg-config module "
                              "behind it is unknown (use pkg_check_modules with a single module)")
        endif()
        list(APPEND _kwire_pkgconfig_prefixes "${_prefix}")
        list(APPEND _kwire_pkgconfig_modules "${${_prefix}_MODULE_NAME}")
        string(APPEND _kwire_pkgconfig_deps "  \"${_prefix};${${_prefix}_MODULE_NAME}\"\n")
      endif()
    endif()
  endforeach()
endforeach()

# ------------------------------------------------------------ kwireConfig.cmake
#
# The exported link interface names these targets, which the config file must
# provide before it loads kwireTargets.cmake:
#   Boost::boost, OpenSSL::SSL, OpenSSL::Crypto, Threads::Threads   (kwire_client, public)
#   fmt::fmt, simdjson::simdjson                                    (private, link only)
#   ZLIB::ZLIB, PkgConfig::ZSTD, PkgConfig::LZ4, PkgConfig::XXHASH  (kwire_protocol, link only)
#   PkgConfig::SASL2, PkgConfig::GSSAPI                            (kwire_client, link only)
#   kwire::snappy_library                                           (see kwire_snappy above)
set(_kwire_config_in "${PROJECT_BINARY_DIR}/cmake/kwireConfig.cmake.in")
file(WRITE "${_kwire_config_in}" [==[
# CMake package file for kwire @PROJECT_VERSION@.
#
#   find_package(kwire 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE kwire::kwire)
@PACKAGE_INIT@

include(CMakeFindDependencyMacro)

find_dependency(Threads)
find_dependency(Boost @KWIRE_BOOST_MIN_VERSION@)
find_dependency(OpenSSL)
find_dependency(ZLIB)
find_dependency(fmt)
find_dependency(simdjson)

# zstd and lz4 come from pkg-config, as in kwire's own build (the targets keep
# the names FindPkgConfig gives them).
find_dependency(PkgConfig)
foreach(_kwire_pc IN ITEMS "ZSTD;libzstd" "LZ4;liblz4" "XXHASH;libxxhash" "SASL2;libsasl2"
                         "GSSAPI;krb5-gssapi")
  list(GET _kwire_pc 0 _kwire_prefix)
  list(GET _kwire_pc 1 _kwire_module)
  if(NOT TARGET PkgConfig::${_kwire_prefix})
    pkg_check_modules(${_kwire_prefix} QUIET IMPORTED_TARGET ${_kwire_module})
    if(NOT TARGET PkgConfig::${_kwire_prefix})
      set(kwire_NOT_FOUND_MESSAGE "kwire needs ${_kwire_module}, which pkg-config could not find")
      set(kwire_FOUND FALSE)
      return()
    endif()
  endif()
endforeach()
unset(_kwire_pc)
unset(_kwire_prefix)
unset(_kwire_module)
# kwire::postgres links libpq: looked up, not required (kwire::kwire does
# without it).
if(NOT TARGET PkgConfig::LIBPQ)
  pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
endif()
# kwire::protobuf links libprotobuf and libprotoc: likewise.
if(NOT TARGET protobuf::libprotobuf)
  find_package(Protobuf QUIET)
endif()

if(NOT TARGET kwire::snappy_library)
  find_library(KWIRE_SNAPPY_LIBRARY NAMES snappy)
  find_path(KWIRE_SNAPPY_INCLUDE_DIR snappy.h)
  if(NOT KWIRE_SNAPPY_LIBRARY)
    set(kwire_NOT_FOUND_MESSAGE "kwire needs the snappy library, which was not found (set KWIRE_SNAPPY_LIBRARY)")
    set(kwire_FOUND FALSE)
    return()
  endif()
  add_library(kwire::snappy_library UNKNOWN IMPORTED)
  set_target_properties(kwire::snappy_library PROPERTIES IMPORTED_LOCATION "${KWIRE_SNAPPY_LIBRARY}")
  if(KWIRE_SNAPPY_INCLUDE_DIR)
    set_target_properties(kwire::snappy_library PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${KWIRE_SNAPPY_INCLUDE_DIR}")
  endif()
endif()

if(NOT TARGET kwire::kwire)
  include("${CMAKE_CURRENT_LIST_DIR}/kwireTargets.cmake")
endif()
check_required_components(kwire)
]==])

set(KWIRE_BOOST_MIN_VERSION 1.74)
configure_package_config_file("${_kwire_config_in}" "${PROJECT_BINARY_DIR}/cmake/kwireConfig.cmake"
  INSTALL_DESTINATION ${KWIRE_INSTALL_CMAKEDIR})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/cmake/kwireConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/cmake/kwireConfig.cmake"
  "${PROJECT_BINARY_DIR}/cmake/kwireConfigVersion.cmake"
  DESTINATION ${KWIRE_INSTALL_CMAKEDIR})

# ------------------------------------------------------------------- kwire.pc
#
# The libraries are static, so their dependencies go into Requires/Libs (not
# the .private fields): a plain `pkg-config --libs kwire` must be enough.
# ${pcfiledir} keeps the file valid when the prefix changes at install time.
if(IS_ABSOLUTE "${KWIRE_INSTALL_PKGCONFIGDIR}")
  set(_kwire_pc_prefix "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _kwire_pc_up "/kwire-root/${KWIRE_INSTALL_PKGCONFIGDIR}" "/kwire-root")
  string(REGEX REPLACE "/$" "" _kwire_pc_up "${_kwire_pc_up}")
  set(_kwire_pc_prefix "\${pcfiledir}/${_kwire_pc_up}")
endif()
foreach(_dir libdir includedir)
  string(TOUPPER "${_dir}" _DIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_DIR}}")
    set(_kwire_pc_${_dir} "${CMAKE_INSTALL_${_DIR}}")
  else()
    set(_kwire_pc_${_dir} "\${prefix}/${CMAKE_INSTALL_${_DIR}}")
  endif()
endforeach()

set(_kwire_pc_requires "libzstd liblz4 libxxhash zlib openssl fmt simdjson libsasl2 krb5-gssapi")
set(_kwire_pc_libs "-L\${libdir} -lkwire_source -lkwire_checkpoint -lkwire_client -lkwire_protocol")
pkg_check_modules(KWIRE_PC_SNAPPY QUIET snappy)
if(KWIRE_PC_SNAPPY_FOUND)
  string(APPEND _kwire_pc_requires " snappy")
else()
  get_filename_component(_snappy_dir "${SNAPPY_LIBRARY}" DIRECTORY)
  string(APPEND _kwire_pc_libs " -L${_snappy_dir} -lsnappy")
endif()
string(APPEND _kwire_pc_libs " -pthread")
set(_kwire_pc_cflags "-I\${includedir}")
foreach(_inc IN LISTS Boost_INCLUDE_DIRS)
  if(NOT _inc STREQUAL "/usr/include")
    string(APPEND _kwire_pc_cflags " -I${_inc}")
  endif()
endforeach()
string(APPEND _kwire_pc_cflags " -pthread")

file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/cmake/kwire.pc" @ONLY CONTENT [==[
prefix=@_kwire_pc_prefix@
exec_prefix=${prefix}
libdir=@_kwire_pc_libdir@
includedir=@_kwire_pc_includedir@

Name: kwire
Description: Kafka wire-protocol client and streaming source (C++20 headers; compile with -std=c++20)
Version: @PROJECT_VERSION@
Requires: @_kwire_pc_requires@
Libs: @_kwire_pc_libs@
Cflags: @_kwire_pc_cflags@
]==])
install(FILES "${PROJECT_BINARY_DIR}/cmake/kwire.pc" DESTINATION ${KWIRE_INSTALL_PKGCONFIGDIR})
# The PostgreSQL sink: `pkg-config --libs kwire-postgres`.
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/cmake/kwire-postgres.pc" @ONLY CONTENT [==[
prefix=@_kwire_pc_prefix@
exec_prefix=${prefix}
libdir=@_kwire_pc_libdir@
includedir=@_kwire_pc_includedir@

Name: kwire-postgres
Description: kwire's PostgreSQL sink (libpq)
Version: @PROJECT_VERSION@
Requires: kwire libpq
Libs: -L${libdir} -lkwire_postgres
]==])
install(FILES "${PROJECT_BINARY_DIR}/cmake/kwire-postgres.pc" DESTINATION ${KWIRE_INSTALL_PKGCONFIGDIR})

unset(_kwire_layers)
unset(_kwire_pkgconfig_deps)
unset(_kwire_pkgconfig_prefixes)
unset(_kwire_pkgconfig_modules)
unset(_kwire_config_in)
# The Protobuf reader: `pkg-config --libs kwire-protobuf`.
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/cmake/kwire-protobuf.pc" @ONLY CONTENT [==[
prefix=@_kwire_pc_prefix@
exec_prefix=${prefix}
libdir=@_kwire_pc_libdir@
includedir=@_kwire_pc_includedir@

Name: kwire-protobuf
Description: kwire's Protobuf value reader (libprotobuf)
Version: @PROJECT_VERSION@
Requires: kwire protobuf
Libs: -L${libdir} -lkwire_protobuf -lprotoc
]==])
install(FILES "${PROJECT_BINARY_DIR}/cmake/kwire-protobuf.pc" DESTINATION ${KWIRE_INSTALL_PKGCONFIGDIR})

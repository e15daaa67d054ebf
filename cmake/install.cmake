# SPDX-License-Identifier: BSL-1.0
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Two components, packaged apart as Debian does (below): `dev`, what a program that uses
# the library compiles and links against, and `tool`, the redlock command with its manual
# page. `cmake --install` installs both.
install(TARGETS redlock EXPORT redlock-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY include/redlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT redlock-targets NAMESPACE redlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock
        COMPONENT dev)

configure_package_config_file(cmake/redlock-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/redlock-config.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/redlock-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redlock-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/redlock-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock COMPONENT dev)

# redlock.pc finds the prefix from its own location (${pcfiledir}), so the installed tree
# can live under any prefix (cmake --install --prefix) and be moved. Directories given as
# absolute paths cannot follow the prefix and are written as they are.
set(redlock_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${redlock_pc_dir}")
  set(REDLOCK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH redlock_pc_up "/prefix/${redlock_pc_dir}" "/prefix")
  string(REGEX REPLACE "/$" "" redlock_pc_up "${redlock_pc_up}")
  set(REDLOCK_PC_PREFIX "\${pcfiledir}/${redlock_pc_up}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(REDLOCK_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(REDLOCK_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(cmake/redlock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/redlock.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redlock.pc DESTINATION ${redlock_pc_dir} COMPONENT dev)

# Each package's documentation directory, named as Debian names it after the package:
# the licence as its copyright file (Debian's machine-readable format) and as it is, and
# the docs its users read (the library's API and guarantees; the tool's manual).
set(REDLOCK_DEV_PACKAGE libredlock-asio-dev)
set(REDLOCK_TOOL_PACKAGE redlock)
set(redlock_doc ${CMAKE_INSTALL_DATAROOTDIR}/doc)
install(FILES cmake/copyright LICENSE_1_0.txt README.md docs/api.md docs/safety.md
              docs/getting-started.md docs/holding-locks.md docs/deployment.md
        DESTINATION ${redlock_doc}/${REDLOCK_DEV_PACKAGE} COMPONENT dev)
install(FILES cmake/copyright LICENSE_1_0.txt docs/cli.md docs/safety.md
        DESTINATION ${redlock_doc}/${REDLOCK_TOOL_PACKAGE} COMPONENT tool)
# The manual page, compressed as Debian policy asks (man reads it either way).
find_program(REDLOCK_GZIP gzip REQUIRED)
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/redlock.1.gz
                   COMMAND ${REDLOCK_GZIP} -9nc ${PROJECT_SOURCE_DIR}/docs/redlock.1 >
                           ${CMAKE_CURRENT_BINARY_DIR}/redlock.1.gz
                   DEPENDS ${PROJECT_SOURCE_DIR}/docs/redlock.1 VERBATIM)
add_custom_target(redlock_manual ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/redlock.1.gz)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redlock.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT tool)

# Debian packages of what `cmake --install` puts in place, one per component, as Debian
# splits a library from its tools: `cpack -G DEB` in the build directory writes
# libredlock-asio-dev_<version>_<arch>.deb (the static library, headers, CMake and
# pkg-config files; it depends on the -dev packages its headers include) and
# redlock_<version>_<arch>.deb (the tool; its runtime libraries are found by
# dpkg-shlibdeps). A user of the tool alone installs no compiler headers. Both install
# with `apt install ./<file>.deb`.
set(CPACK_PACKAGE_NAME redlock-asio)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Redlock distributed lock for C++20 and Boost.Asio")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE_1_0.txt)
set(CPACK_PACKAGE_CONTACT "redlock-asio maintainers <maintainers@redlock-asio.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL dev tool)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${REDLOCK_DEV_PACKAGE})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libboost1.81-dev, libfmt-dev (>= 9), libssl-dev (>= 3)")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Redlock distributed lock for C++20 and Boost.Asio: development files\n\
A static library, its headers, and CMake and pkg-config files, for programs that take\n\
locks, leases, permits and leadership on a majority of independent Redis masters.")
set(CPACK_DEBIAN_TOOL_PACKAGE_NAME ${REDLOCK_TOOL_PACKAGE})
set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOL_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_TOOL_DESCRIPTION
    "flock(1) across machines, on a majority of Redis masters (Redlock)\n\
redlock run takes a fenced lock, runs a command while it is renewed, and releases it;\n\
redlock status and redlock nodes show who holds a resource and check the fleet.")
include(CPack)

# SPDX-License-Identifier: BSL-1.0
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS redlock EXPORT redlock-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/redlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT redlock-targets NAMESPACE redlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)

configure_package_config_file(cmake/redlock-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/redlock-config.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/redlock-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redlock-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/redlock-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)

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
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redlock.pc DESTINATION ${redlock_pc_dir})

# The licence goes with every installed tree: as the package's copyright file (Debian's
# machine-readable format) where a Debian package looks for it, and as it is.
install(FILES cmake/copyright LICENSE_1_0.txt DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/redlock-asio)

# A Debian package of what `cmake --install` puts in place (library, headers, CMake and
# pkg-config files, the redlock tool): `cpack -G DEB` in the build directory writes
# redlock-asio_<version>_<arch>.deb, installable with `apt install ./redlock-asio_*.deb`.
# The library is static: what a consumer compiles against comes as -dev packages, what
# the tool runs with as runtime libraries.
set(CPACK_PACKAGE_NAME redlock-asio)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Redlock distributed lock for C++20 and Boost.Asio, with the redlock command-line tool")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE_1_0.txt)
set(CPACK_PACKAGE_CONTACT "redlock-asio maintainers <maintainers@redlock-asio.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libboost1.81-dev, libfmt-dev (>= 9), libssl-dev (>= 3), libboost-program-options1.81.0")
include(CPack)

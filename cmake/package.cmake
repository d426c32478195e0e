# Installing cuswap, and the files another project finds it by: a CMake
# package (find_package(cuswap) -> cuswap::cuswap) and pkg-config's
# cuswap.pc. Installed: bin/cuswap, lib/libcuswap.so, include/cuswap/cuswap.h,
# lib/cmake/cuswap/ and lib/pkgconfig/cuswap.pc (GNUInstallDirs decides the
# directory names). Both package files find the prefix relative to
# themselves, so `cmake --install --prefix P` and DESTDIR staging need no
# reconfiguration. The build tree is a package too: cuswap_DIR=BUILD.
include(CMakePackageConfigHelpers)

set(cuswap_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cuswap)

install(TARGETS cuswap_shim EXPORT cuswapTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS cuswap RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/cuswap/cuswap.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cuswap)

install(EXPORT cuswapTargets NAMESPACE cuswap:: DESTINATION ${cuswap_cmake_dir})
export(EXPORT cuswapTargets NAMESPACE cuswap:: FILE ${PROJECT_BINARY_DIR}/cuswapTargets.cmake)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cuswapConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cuswapConfig.cmake
                              INSTALL_DESTINATION ${cuswap_cmake_dir})
# 0.x: a new minor version may change the interface.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cuswapConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cuswapConfig.cmake
              ${PROJECT_BINARY_DIR}/cuswapConfigVersion.cmake
        DESTINATION ${cuswap_cmake_dir})

# pkg-config: ${pcfiledir} is the directory cuswap.pc is found in.
set(cuswap_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(cuswap_pc_prefix "${CMAKE_INSTALL_PREFIX}")
  set(cuswap_pc_libdir "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(cuswap_pc_includedir "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH cuswap_pc_up /prefix/${cuswap_pc_dir} /prefix)
  set(cuswap_pc_prefix "\${pcfiledir}/${cuswap_pc_up}")
  set(cuswap_pc_libdir "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(cuswap_pc_includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/cuswap.pc.in ${PROJECT_BINARY_DIR}/cuswap.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cuswap.pc DESTINATION ${cuswap_pc_dir})

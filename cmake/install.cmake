# `cmake --install`: libhelios.so with its public headers and a HeliosConfig.cmake exporting Helios::helios,
# the command-line tools (self-contained: the engine is linked into them statically), and the default corpus
# under share/helios, where the library and tools look for it (engine/io/install_dir.hpp).
include(CMakePackageConfigHelpers)

install(TARGETS helios EXPORT HeliosTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/helios DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS helios-probe helios-train helios-run helios-bench helios-spv helios-coop-check
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(HELIOS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Helios)
install(EXPORT HeliosTargets NAMESPACE Helios:: DESTINATION ${HELIOS_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/HeliosConfig.cmake.in
  ${PROJECT_BINARY_DIR}/HeliosConfig.cmake INSTALL_DESTINATION ${HELIOS_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/HeliosConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/HeliosConfig.cmake ${PROJECT_BINARY_DIR}/HeliosConfigVersion.cmake
  DESTINATION ${HELIOS_CMAKE_DIR})

# The corpus: copied at install (its real file, not the prefix's symlink), linked into <build>/share/helios
# so that the build tree finds it the same way.
option(HELIOS_INSTALL_CORPUS "Install the default training text into share/helios/corpus" ON)
if(HELIOS_DEFAULT_CORPUS AND EXISTS "${HELIOS_DEFAULT_CORPUS}")
  get_filename_component(_corpus "${HELIOS_DEFAULT_CORPUS}" REALPATH)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/share/helios/corpus)
  file(CREATE_LINK "${_corpus}" ${PROJECT_BINARY_DIR}/share/helios/corpus/kjv.txt SYMBOLIC)
  if(HELIOS_INSTALL_CORPUS)
    install(FILES "${_corpus}" DESTINATION ${CMAKE_INSTALL_DATADIR}/helios/corpus RENAME kjv.txt)
  endif()
endif()

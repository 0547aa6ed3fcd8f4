# cmake --install: the mbopt command, the static and shared libraries, the headers, a CMake
# package (find_package(mbopt) gives mbopt::mbopt, the shared library, and mbopt::mbopt_static),
# a pkg-config file (pkg-config --cflags --libs mbopt), the Python package
# (PREFIX/lib/python3/dist-packages/mbopt), the docs and the example programs.
include(CMakePackageConfigHelpers)

install(TARGETS mbopt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS mbopt_shared mbopt_lib mbopt_deps EXPORT mboptTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mbopt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/api.md
              ${PROJECT_SOURCE_DIR}/docs/model-format.md ${PROJECT_SOURCE_DIR}/docs/model.schema.json
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/examples/simulate.c ${PROJECT_SOURCE_DIR}/examples/gradient.c
              ${PROJECT_SOURCE_DIR}/examples/optimize.c ${PROJECT_SOURCE_DIR}/examples/threads.c
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

set(MBOPT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mbopt)
install(EXPORT mboptTargets NAMESPACE mbopt:: FILE mboptTargets.cmake DESTINATION ${MBOPT_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/mboptConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/mboptConfig.cmake INSTALL_DESTINATION ${MBOPT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mboptConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mboptConfig.cmake ${PROJECT_BINARY_DIR}/mboptConfigVersion.cmake
        DESTINATION ${MBOPT_CMAKE_DIR})

# the Python package, beside the shared library it loads (PREFIX/lib)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/mbopt DESTINATION ${CMAKE_INSTALL_LIBDIR}/python3/dist-packages
        PATTERN __pycache__ EXCLUDE)

# pkg-config: the prefix found from the file's own place, so that any --prefix works
file(RELATIVE_PATH MBOPT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
set(MBOPT_PC_LIBS_PRIVATE "")
foreach(lib ${MBOPT_NLOPT_LIB} ${MBOPT_KLU_LIB} ${MBOPT_LDL_LIB} ${MBOPT_AMD_LIB} ${MBOPT_OPENBLAS_LIB}
            ${MBOPT_CJSON_LIB})
  get_filename_component(name ${lib} NAME_WE)
  string(REGEX REPLACE "^lib" "-l" name ${name})
  string(APPEND MBOPT_PC_LIBS_PRIVATE " ${name}")
endforeach()
string(APPEND MBOPT_PC_LIBS_PRIVATE " -lpthread -lm")
configure_file(${CMAKE_CURRENT_LIST_DIR}/mbopt.pc.in ${PROJECT_BINARY_DIR}/mbopt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/mbopt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

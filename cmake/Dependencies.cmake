# Finds NLopt, CBLAS and LAPACK (OpenBLAS), SuiteSparse (AMD, KLU, LDL), cJSON and POSIX threads,
# and gathers them in the target mbopt::deps.
# A missing dependency stops the configuration with the Debian package to install
# (scripts/install-deps.sh installs them all).

function(mbopt_require_header header package out_var)
  find_path(${out_var} NAMES ${header} PATH_SUFFIXES cjson openblas suitesparse x86_64-linux-gnu
                                                    aarch64-linux-gnu)
  if(NOT ${out_var})
    message(FATAL_ERROR "mbopt: header ${header} not found; install the Debian package ${package} "
                        "(sudo apt-get install ${package}, or run scripts/install-deps.sh)")
  endif()
endfunction()

function(mbopt_require_library name package out_var)
  find_library(${out_var} NAMES ${name})
  if(NOT ${out_var})
    message(FATAL_ERROR "mbopt: library ${name} not found; install the Debian package ${package} "
                        "(sudo apt-get install ${package}, or run scripts/install-deps.sh)")
  endif()
endfunction()

mbopt_require_header(nlopt.h libnlopt-dev MBOPT_NLOPT_INCLUDE)
mbopt_require_library(nlopt libnlopt-dev MBOPT_NLOPT_LIB)
mbopt_require_header(cblas.h libopenblas-dev MBOPT_CBLAS_INCLUDE)
mbopt_require_library(openblas libopenblas-dev MBOPT_OPENBLAS_LIB)
# LAPACK's Fortran routines come from OpenBLAS; liblapacke-dev gives their declarations
# (lapack.h). Linking LAPACKE itself would load a second LAPACK at every start.
mbopt_require_header(lapack.h liblapacke-dev MBOPT_LAPACK_INCLUDE)
mbopt_require_header(klu.h libsuitesparse-dev MBOPT_SUITESPARSE_INCLUDE)
mbopt_require_library(klu libsuitesparse-dev MBOPT_KLU_LIB)
mbopt_require_library(ldl libsuitesparse-dev MBOPT_LDL_LIB)
mbopt_require_library(amd libsuitesparse-dev MBOPT_AMD_LIB)
mbopt_require_header(cJSON.h libcjson-dev MBOPT_CJSON_INCLUDE)
mbopt_require_library(cjson libcjson-dev MBOPT_CJSON_LIB)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

add_library(mbopt_deps INTERFACE)
add_library(mbopt::deps ALIAS mbopt_deps)
target_include_directories(mbopt_deps INTERFACE
  ${MBOPT_NLOPT_INCLUDE} ${MBOPT_CBLAS_INCLUDE} ${MBOPT_LAPACK_INCLUDE} ${MBOPT_SUITESPARSE_INCLUDE}
  ${MBOPT_CJSON_INCLUDE})
target_link_libraries(mbopt_deps INTERFACE
  ${MBOPT_NLOPT_LIB} ${MBOPT_KLU_LIB} ${MBOPT_LDL_LIB} ${MBOPT_AMD_LIB}
  ${MBOPT_OPENBLAS_LIB}
  ${MBOPT_CJSON_LIB} Threads::Threads m)

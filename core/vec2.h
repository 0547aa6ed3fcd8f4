/* Pairs of doubles in one vector register (the vector extension of gcc and clang: SSE2 on
   x86-64, NEON on arm64), for the small block kernels: a 3 x 3 block column is one pair and one
   scalar, which the compilers do not pack on their own. Each lane does exactly the scalar
   operations, so results are bitwise those of the scalar code. Internal. */
#ifndef MBOPT_VEC2_H
#define MBOPT_VEC2_H

#include <string.h>

typedef double mb_v2 __attribute__((vector_size(2 * sizeof(double))));

static inline mb_v2 mb_v2_load(const double* p) {
  mb_v2 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void mb_v2_store(double* p, mb_v2 v) {
  memcpy(p, &v, sizeof v);
}

#endif

/* The compiled sparsity of a model in natural coordinates: the pattern every nq x nq matrix of the
   integrator and the sensitivities shares (M, K, C, the constraint Hessians, the Newton and
   projection matrices), the pattern of Phi_q by rows, the maps that assemble the Gram product
   Phi_q^T S Phi_q and the constant constraint Hessians into it, and the symbolic factorisations.
   Built once per model by mb_compile, read-only while running. Internal. */
#ifndef MBOPT_STRUCTURE_H
#define MBOPT_STRUCTURE_H

#include "linalg.h"
#include "mbopt/model.h"

/* Models up to this many coordinates are factorised dense by default: the two are as fast at 4
   coordinates and the block sparse methods faster from 6 (results/performance/crossover.md, by
   scripts/perf-crossover.sh). */
#define MB_DENSE_MAX_COORDINATES 4

typedef struct mb_structure {
  mb_pattern* sys; /* blocks of dim: every coupling of M, K, C, Phi_q^T Phi_q and Phi_qq */
  mb_rows phiq;    /* Phi_q (ncon x nq), rows over the blocks each constraint touches */
  int* gram_adr;   /* (ncon + 1) first block pair of each row in gram */
  int* gram;       /* for each pair x <= y of the blocks of a row (row by row, x-major): the entry
                      and column stride of blocks (x, y) and (y, x) of sys (4 ints) */
  int* hess_adr;   /* (2 ncon + 1) first Hessian entry of product term j of constraint i, at 2 i +
                      j: the entries of J_a^T J_b + J_b^T J_a for the pair a . b */
  int* hess_entry; /* entry of sys */
  double* hess_value;
  /* the distinct entries of sys the Hessian lists reach, in column order: a compact Hessian
     product (values at hess_slot of each list item, entry u at row and column hess_rc[2 u ..]) */
  int nhess_unique;
  int* hess_slot;
  int* hess_rc;
  /* force elements on their own coordinate blocks: element i has blocks force_block[
     force_blkadr[i] ...] (ascending), and block pair (a, b) of them starts at entry
     force_entry[force_pairadr[i] + a nb + b] of sys, its columns force_stride[...] apart */
  int* force_blkadr; /* (nforce + 1) */
  int* force_block;
  int* force_pairadr; /* (nforce + 1) */
  int* force_entry;
  int* force_stride;
  /* the linear vectors the constraints use, evaluated once per pass (mb_data.lvcache) */
  int ncache;
  int* cache_lvec;   /* (ncache) */
  int* con_slot;     /* (ncon x 4) the cache slot of each linear vector of a constraint */
  int* con_toff_adr; /* (4 ncon + 1) first of the offsets of linear vector j of constraint i,
                        at 4 i + j */
  int* con_toff;     /* the offset in the constraint's row of Phi_q of each of its terms */
  unsigned char* term_scalar; /* (nterm) 1 when W_k = c I, as every term of spatial natural
                                 coordinates: products with it take c alone (bitwise the same) */
  double* mass;               /* (sys->nnz) M on the system pattern */
  double mass_diag_max;       /* largest diagonal entry of M */
  int dense;                  /* 1 when the factorisations are dense */
  mb_solver newton;           /* LU of the Newton matrix */
  mb_solver projection;       /* Cholesky of M + pen Phi_q^T S Phi_q */
  void* buffer;               /* the allocation of the maps */
} mb_structure;

/* The most coordinate blocks of one force element: each of its linear vectors lives on one body,
   whose base has at most four elements. */
#define MB_LOCAL_BLOCKS 8
#define MB_LOCAL_COORDS (3 * MB_LOCAL_BLOCKS)

/* The coordinate blocks of one element and where their pairs sit in the system pattern: the
   element's matrices are formed dense on these few blocks, then added without lookups. */
typedef struct mb_local {
  int nb;            /* blocks */
  const int* block;  /* (nb) ascending */
  const int* entry;  /* (nb x nb) entry of element (0, 0) of each block pair */
  const int* stride; /* (nb x nb) distance between the pair's columns */
} mb_local;

/* The blocks of force element i. */
mb_local mb_force_local(const mb_model* m, int i);

/* J (dim x dim nb, row-major): the Jacobian of linear vector lv on the coordinates of L's blocks,
   which hold all of lv's. */
void mb_local_jacobian(const mb_model* m, const mb_local* L, int lv, double* J);

/* Q (r x n, row-major) = W P: W (r x k, row stride ws) times P (k x n, row-major), rows of
   Jacobians on the n = dim nb coordinates of a force element's blocks; the zero entries of P, most
   of them, cost nothing. */
void mb_local_premul(int n, const double* W, int ws, int r, const double* P, int k, double* Q);

/* A (values on the system pattern) += s P^T Q, with P and Q (r x dim nb, row-major) on L's
   coordinates: the Jacobian products of force elements (J^T G J as P = J, Q = G J). */
void mb_local_add_ptq(const mb_model* m, const mb_local* L, double* A, double s, const double* P,
                      const double* Q, int r);

/* Builds the structure of a compiled model into m->structure. */
mb_status mb_structure_build(mb_model* m, mb_error* err);

/* Frees a structure; s may be NULL. */
void mb_structure_free(mb_structure* s);

/* y (nq) += s M x, over the mass blocks of m (a model or its tangent model). */
void mb_mass_mul(const mb_model* m, const double* x, double s, double* y);

/* y (nq) += s M x over the mass blocks first to last - 1 alone (a body's are consecutive). */
void mb_mass_mul_blocks(const mb_model* m, int first, int last, const double* x, double s,
                        double* y);

/* x^T M y over the mass blocks of m (a model or its tangent model). */
double mb_mass_form(const mb_model* m, const double* x, const double* y);

#endif

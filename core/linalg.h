/* Linear algebra of the integrator and the sensitivities: sparsity patterns compiled once per
   model, products on the values of matrices with those patterns, and factorisations whose
   symbolic analysis (fill-reducing ordering) is done once per model while only the numeric
   factorisation is done per step. Dense kernels and SuiteSparse (KLU, CHOLMOD) sit behind one
   table of functions per method; every formulation uses this layer the same way. Internal. */
#ifndef MBOPT_LINALG_H
#define MBOPT_LINALG_H

#include <stddef.h>

/* ---------------------------------------------------------------------------------------------
   patterns */

/* Pattern of square n x n matrices in compressed sparse columns: structurally symmetric, every
   diagonal entry present, and made of full bs x bs blocks (entry (i, j) is present exactly when
   block (i / bs, j / bs) is). The values of a matrix with this pattern are one array of nnz
   doubles in column order; in block column J, element (r, c) of block k (bcolptr[J] <= k <
   bcolptr[J + 1]) is entry bs^2 bcolptr[J] + c bs (bcolptr[J + 1] - bcolptr[J]) + bs (k -
   bcolptr[J]) + r. */
typedef struct mb_pattern {
  int n, bs, nb; /* order, block size, block rows (n = bs nb) */
  int nnz, nbnz; /* entries, blocks */
  int* bcolptr;  /* (nb + 1) first block of each block column */
  int* browind;  /* (nbnz) block row of each block, ascending within a block column */
  int* colptr;   /* (n + 1) first entry of each column */
  int* rowind;   /* (nnz) row of each entry, ascending within a column */
  int* diag;     /* (n) entry of each diagonal element */
} mb_pattern;

/* Block pairs collected before a pattern is built. */
typedef struct mb_pairs {
  int count, capacity;
  int* ij; /* (2 capacity) */
} mb_pairs;

/* Adds block (I, J) and its transpose; returns 0, or -1 when out of memory. */
int mb_pairs_add(mb_pairs* pairs, int bi, int bj);

/* Adds every block (I, J) with I and J from blocks (n of them, repeats allowed). */
int mb_pairs_add_all(mb_pairs* pairs, int n, const int* blocks);

void mb_pairs_free(mb_pairs* pairs);

/* The pattern of nb x nb blocks of size bs made of the diagonal and the pairs; NULL when out of
   memory. Free with mb_pattern_free. */
mb_pattern* mb_pattern_create(int nb, int bs, const mb_pairs* pairs);

void mb_pattern_free(mb_pattern* p);

/* Entry of element (0, 0) of block (I, J), or -1 when the block is absent; *stride receives the
   distance between the block's columns (element (r, c) is at entry + c stride + r). */
int mb_pattern_block(const mb_pattern* p, int bi, int bj, int* stride);

/* Entry of element (i, j), or -1 when absent. */
int mb_pattern_entry(const mb_pattern* p, int i, int j);

/* A += s G on block (I, J), with G a bs x bs block in a 3 x 3 row-major slot (bs <= 3). The
   block must be in the pattern. */
void mb_pattern_add_block(const mb_pattern* p, double* A, int bi, int bj, double s,
                          const double* G);

/* y += s A x. */
void mb_spmv(const mb_pattern* p, const double* A, const double* x, double s, double* y);

/* y += s A^T x. */
void mb_spmv_t(const mb_pattern* p, const double* A, const double* x, double s, double* y);

/* D (n x n, row-major) = A. */
void mb_pattern_to_dense(const mb_pattern* p, const double* A, double* D);

/* The nonzero entries of a matrix on a pattern, by columns: products with a matrix whose pattern
   is much wider than its values (a force Jacobian on the Newton matrix's pattern) skip its zeros
   and give mb_spmv's sums. */
typedef struct mb_compact {
  int n, nnz;
  int ncol;          /* the columns holding a nonzero: a product visits those alone */
  int *col, *colptr; /* (ncol) their indices, (ncol + 1) their first entries */
  int* rowind;       /* (capacity) */
  double* val;       /* (capacity) */
} mb_compact;

/* Storage for the matrices of pattern p; -1 when out of memory. */
int mb_compact_init(mb_compact* c, const mb_pattern* p);

void mb_compact_release(mb_compact* c);

/* c = the nonzero entries of A (on the pattern c was made for). */
void mb_compact_set(mb_compact* c, const mb_pattern* p, const double* A);

/* c = the nonzero entries of A among its n entries `entries` (ascending), A's other entries
   known to be zero: a matrix whose values can only fall on a few entries of the pattern. */
void mb_compact_set_entries(mb_compact* c, const mb_pattern* p, const double* A, int n,
                            const int* entries);

/* y += s c x. */
void mb_compact_mul(const mb_compact* c, const double* x, double s, double* y);

/* y += s c^T x. */
void mb_compact_mul_t(const mb_compact* c, const double* x, double s, double* y);

/* ---------------------------------------------------------------------------------------------
   rows: sparse matrices with a fixed pattern per row (compressed sparse rows) */

typedef struct mb_rows {
  int nrow, ncol, nnz;
  int bs;      /* entries come in runs of bs consecutive columns (bs = 1: any pattern) */
  int* rowptr; /* (nrow + 1) */
  int* col;    /* (nnz) column of each entry, ascending within a row */
} mb_rows;

/* init + the dot product of row i of A with x, summed in entry order. */
static inline double mb_rows_dot(const mb_rows* r, int i, const double* A, const double* x,
                                 double init) {
  double sum = init;
  const int* col = r->col;
  switch (r->bs) {
    case 3:
      for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e += 3) {
        const double* xc = x + col[e];
        sum += A[e] * xc[0];
        sum += A[e + 1] * xc[1];
        sum += A[e + 2] * xc[2];
      }
      break;
    case 2:
      for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e += 2) {
        const double* xc = x + col[e];
        sum += A[e] * xc[0];
        sum += A[e + 1] * xc[1];
      }
      break;
    default:
      for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e++) sum += A[e] * x[col[e]];
  }
  return sum;
}

/* y += w times row i of A. */
static inline void mb_rows_axpy(const mb_rows* r, int i, const double* A, double w, double* y) {
  const int* col = r->col;
  switch (r->bs) {
    case 3:
      for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e += 3) {
        double* yc = y + col[e];
        yc[0] += A[e] * w;
        yc[1] += A[e + 1] * w;
        yc[2] += A[e + 2] * w;
      }
      break;
    case 2:
      for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e += 2) {
        double* yc = y + col[e];
        yc[0] += A[e] * w;
        yc[1] += A[e + 1] * w;
      }
      break;
    default:
      for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e++) y[col[e]] += A[e] * w;
  }
}

/* y (nrow) += s A x. */
void mb_rows_mul(const mb_rows* r, const double* A, const double* x, double s, double* y);

/* y (ncol) += s A^T w. */
void mb_rows_mul_t(const mb_rows* r, const double* A, const double* w, double s, double* y);

/* A[row i] = dense row (ncol), which is cleared on the row's pattern (so that a zero scatter
   buffer stays zero). */
void mb_rows_gather(const mb_rows* r, int i, double* A, double* dense);

/* D (nrow x ncol, row-major) = A. */
void mb_rows_to_dense(const mb_rows* r, const double* A, double* D);

/* ---------------------------------------------------------------------------------------------
   factorisations */

typedef enum mb_factor_type { MB_FACTOR_LU, MB_FACTOR_CHOLESKY } mb_factor_type;

/* A factorisation method: a table of functions, filled by each backend (GSL style). */
typedef struct mb_solver_method {
  const char* name;
  /* symbolic analysis of a pattern, once per model; NULL when out of memory */
  void* (*analyze)(const mb_pattern* p);
  /* the same with the caller's elimination order (n indices: the row and column eliminated k-th),
     for the methods that take one (the dense ones; NULL for the sparse ones, which find their
     own by AMD) */
  void* (*analyze_ordered)(const mb_pattern* p, const int* order);
  void (*free_symbolic)(void* symbolic);
  /* numeric workspace of one run; NULL when out of memory */
  void* (*create)(const mb_pattern* p, const void* symbolic);
  /* numeric factorisation of the values A on the pattern: 0, or 1 when singular (LU) or not
     positive definite (Cholesky) */
  int (*factor)(void* numeric, const double* A);
  /* overwrites B (n x nrhs, column-major, leading dimension n) with A^-1 B, or A^-T B */
  void (*solve)(void* numeric, int transpose, int nrhs, double* B);
  void (*free)(void* numeric);
} mb_solver_method;

extern const mb_solver_method mb_dense_lu, mb_dense_cholesky, mb_block_lu, mb_block_ldlt, mb_klu_lu,
    mb_ldl_cholesky;

/* A method with its symbolic analysis of one pattern (one per model and matrix). */
typedef struct mb_solver {
  const mb_solver_method* method;
  const mb_pattern* pattern;
  void* symbolic;
} mb_solver;

/* A numeric factorisation (one per run). */
typedef struct mb_factor {
  const mb_solver* solver;
  void* numeric;
  int valid; /* 1 after a successful factorisation */
} mb_factor;

/* Analyses pattern p for method; returns 0, or -1 when out of memory. */
int mb_solver_init(mb_solver* s, const mb_solver_method* method, const mb_pattern* p);
/* The same eliminating in the order `order` (n indices, a permutation, copied) when the method
   takes one: an order that keeps the factors sparse where the pattern cannot tell (a dense
   pattern on the matrices of a tree). */
int mb_solver_init_ordered(mb_solver* s, const mb_solver_method* method, const mb_pattern* p,
                           const int* order);
void mb_solver_release(mb_solver* s);

/* Creates the numeric workspace; returns 0, or -1 when out of memory. */
int mb_factor_init(mb_factor* f, const mb_solver* s);
void mb_factor_release(mb_factor* f);

/* Factorises A (values on the solver's pattern): 0, or 1 when singular / not positive
   definite. */
int mb_factor_compute(mb_factor* f, const double* A);

/* B (n x nrhs, column-major) = A^-1 B (transpose 0) or A^-T B (transpose 1). */
void mb_factor_solve(mb_factor* f, int transpose, int nrhs, double* B);

#endif

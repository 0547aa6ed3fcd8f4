/* The normal matrix A A^T of a large sparse A (rows x n, rows <= n) by sparse LDL^T (LDL and AMD
   of SuiteSparse): the minimum-norm solutions of A x = b by the semi-normal equations, and a
   certificate of full row rank. The initial assembly's systems are of this kind (the constraints
   of a few hundred natural coordinates, a handful of nonzeros per row), where LAPACK's SVD costs
   tens of times as much. */
#include <amd.h>
#include <float.h>
#include <ldl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../linalg.h"
#include "internal.h"

/* The systems taken: large (the SVD of a small one costs little and keeps its rank decisions),
   sparse, and whose A A^T stays sparse. */
enum { NORMAL_MIN_ROWS = 64, NORMAL_DENSITY = 8, NORMAL_FILL = 16 };

/* A A^T = P^T L D L^T P, with A's rows by rows (rp, ci, v). */
typedef struct normal {
  int rows;
  int *rp, *ci;       /* (rows + 1), (nnz) */
  double *v, amax;    /* (nnz), the largest |entry| */
  int *P, *Lp, *Li;   /* (rows), (rows + 1), (Lp[rows]) */
  double *Lx, *D, *Y; /* (Lp[rows]), (rows), (rows) */
} normal;

static void normal_free(normal* f) {
  free(f->rp), free(f->ci), free(f->v), free(f->P), free(f->Lp), free(f->Li), free(f->Lx),
      free(f->D);
}

/* Factorises A A^T of A (rows x n, row-major): 0, or 1 when A is not of the kind taken, A A^T is
   not positive definite with every pivot above 1e-10 of the largest (a deficient or doubtful
   rank), or memory runs out; f is then freed. */
static int normal_factor(normal* f, int rows, int n, const double* A) {
  memset(f, 0, sizeof *f);
  if (rows < NORMAL_MIN_ROWS || rows > n) return 1;
  size_t nnz = 0;
  for (size_t k = 0; k < (size_t)rows * n; k++) nnz += A[k] != 0;
  if (nnz * NORMAL_DENSITY > (size_t)rows * n) return 1;
  f->rows = rows;
  mb_pairs pairs = {0};
  mb_pattern* p = NULL;
  int ok = 0;
  f->rp = malloc(sizeof(int) * ((size_t)rows + 1));
  f->ci = malloc(sizeof(int) * (nnz + 1));
  f->v = malloc(sizeof(double) * (nnz + 1));
  int* cp = calloc((size_t)n + 1, sizeof(int)); /* A by columns: cp, ri */
  int* ri = malloc(sizeof(int) * (nnz + 1));
  int* iw = malloc(sizeof(int) * (5 * (size_t)rows + 1)); /* Pinv, Parent, Lnz, Flag, Pattern */
  double* w = malloc(sizeof(double) * ((size_t)n + 1));
  double* G = NULL;
  f->P = malloc(sizeof(int) * ((size_t)rows + 1));
  f->Lp = malloc(sizeof(int) * ((size_t)rows + 1));
  f->D = malloc(sizeof(double) * (2 * (size_t)rows + 1));
  if (!f->rp || !f->ci || !f->v || !cp || !ri || !iw || !w || !f->P || !f->Lp || !f->D) goto done;
  f->Y = f->D + rows;
  f->rp[0] = 0;
  for (int i = 0, k = 0; i < rows; i++, f->rp[i] = k)
    for (int j = 0; j < n; j++) {
      const double x = A[(size_t)i * n + j];
      if (x == 0) continue;
      f->ci[k] = j, f->v[k++] = x;
      cp[j + 1]++;
      f->amax = fmax(f->amax, fabs(x));
    }
  /* A A^T couples the rows that share a column: declined when it would be much denser than A
     (a column that many rows share, as the equilibrium's gravity and multiplier columns) */
  size_t coupled = 0;
  for (int j = 0; j < n; j++) coupled += (size_t)cp[j + 1] * cp[j + 1];
  if (coupled > NORMAL_FILL * nnz) goto done;
  for (int j = 0; j < n; j++) cp[j + 1] += cp[j];
  for (int i = 0; i < rows; i++)
    for (int k = f->rp[i]; k < f->rp[i + 1]; k++) ri[cp[f->ci[k]]++] = i;
  for (int j = n; j > 0; j--) cp[j] = cp[j - 1]; /* the fill moved each start to the next */
  cp[0] = 0;
  for (int j = 0; j < n; j++)
    if (mb_pairs_add_all(&pairs, cp[j + 1] - cp[j], ri + cp[j])) goto done;
  if (!(p = mb_pattern_create(rows, 1, &pairs)) || !(G = malloc(sizeof(double) * (size_t)p->nnz)))
    goto done;
  /* G's column c: row c of A scattered into w, dotted with the rows that share its columns */
  memset(w, 0, sizeof(double) * (size_t)n);
  for (int c = 0; c < rows; c++) {
    for (int k = f->rp[c]; k < f->rp[c + 1]; k++) w[f->ci[k]] = f->v[k];
    for (int e = p->colptr[c]; e < p->colptr[c + 1]; e++) {
      const int r = p->rowind[e];
      double s = 0;
      for (int k = f->rp[r]; k < f->rp[r + 1]; k++) s += f->v[k] * w[f->ci[k]];
      G[e] = s;
    }
    for (int k = f->rp[c]; k < f->rp[c + 1]; k++) w[f->ci[k]] = 0;
  }
  int *Pinv = iw, *Parent = Pinv + rows, *Lnz = Parent + rows, *Flag = Lnz + rows,
      *Pattern = Flag + rows;
  if (amd_order(rows, p->colptr, p->rowind, f->P, NULL, NULL) != AMD_OK) goto done;
  ldl_symbolic(rows, p->colptr, p->rowind, f->Lp, Parent, Lnz, Flag, f->P, Pinv);
  f->Li = malloc(sizeof(int) * ((size_t)f->Lp[rows] + 1));
  f->Lx = malloc(sizeof(double) * ((size_t)f->Lp[rows] + 1));
  if (!f->Li || !f->Lx ||
      ldl_numeric(rows, p->colptr, p->rowind, G, f->Lp, Parent, Lnz, f->Li, f->Lx, f->D, f->Y,
                  Pattern, Flag, f->P, Pinv) != rows)
    goto done;
  double dmax = 0, dmin = INFINITY;
  for (int k = 0; k < rows; k++) dmax = fmax(dmax, f->D[k]), dmin = fmin(dmin, f->D[k]);
  ok = dmin > 1e-10 * dmax;
done:
  mb_pairs_free(&pairs);
  mb_pattern_free(p);
  free(cp), free(ri), free(iw), free(w), free(G);
  if (!ok) normal_free(f);
  return !ok;
}

/* y (rows) = (A A^T)^-1 b */
static void normal_solve(const normal* f, const double* b, double* y) {
  const int rows = f->rows;
  ldl_perm(rows, f->Y, (double*)b, f->P);
  ldl_lsolve(rows, f->Y, f->Lp, f->Li, f->Lx);
  ldl_dsolve(rows, f->Y, f->D);
  ldl_ltsolve(rows, f->Y, f->Lp, f->Li, f->Lx);
  ldl_permt(rows, y, f->Y, f->P);
}

/* r (rows) = b - A x */
static void residual(const normal* f, const double* b, const double* x, double* r) {
  for (int i = 0; i < f->rows; i++) {
    double s = b[i];
    for (int k = f->rp[i]; k < f->rp[i + 1]; k++) s -= f->v[k] * x[f->ci[k]];
    r[i] = s;
  }
}

/* x (n) += A^T y */
static void add_transpose(const normal* f, const double* y, double* x) {
  for (int i = 0; i < f->rows; i++)
    for (int k = f->rp[i]; k < f->rp[i + 1]; k++) x[f->ci[k]] += f->v[k] * y[i];
}

/* Each solution refined until its residual is at round-off: a solution of A x = b in the range
   of A^T is the minimum-norm one whatever the rank, so that residual certifies it. */
int mbu_least_squares_sparse(int rows, int n, int nrhs, const double* A, double* B, int ldb) {
  normal f;
  if (normal_factor(&f, rows, n, A)) return 1;
  double* X = malloc(sizeof(double) * ((size_t)n * nrhs + 2 * (size_t)rows + 1));
  int solved = X != NULL;
  for (int c = 0; c < nrhs && solved; c++) {
    const double* b = B + (size_t)c * ldb;
    double *x = X + (size_t)c * n, *r = X + (size_t)n * nrhs, *y = r + rows;
    memset(x, 0, sizeof(double) * (size_t)n);
    memcpy(r, b, sizeof(double) * (size_t)rows);
    const double bmax = mbu_norm_inf(rows, b);
    double last = INFINITY;
    solved = 0;
    for (int it = 0; it < 4 && !solved; it++) {
      normal_solve(&f, r, y);
      add_transpose(&f, y, x);
      residual(&f, b, x, r);
      const double rnorm = mbu_norm_inf(rows, r);
      solved = rnorm <= 64 * DBL_EPSILON * (bmax + f.amax * mbu_norm_inf(n, x));
      if (!(rnorm < 0.5 * last)) break; /* the refinement stalls: declined */
      last = rnorm;
    }
  }
  for (int c = 0; c < nrhs && solved; c++)
    memcpy(B + (size_t)c * ldb, X + (size_t)c * n, sizeof(double) * (size_t)n);
  free(X);
  normal_free(&f);
  return !solved;
}

/* cond(A A^T) <= trace(A A^T) trace((A A^T)^-1), each trace from the factor: the bound holds
   whatever the spread of the eigenvalues, and 1e12 leaves the SVD's threshold (1e-9 of the
   largest singular value) a margin of 1e3 beyond the bound's own rounding. */
int mbu_full_row_rank(int rows, int n, const double* A) {
  normal f;
  if (normal_factor(&f, rows, n, A)) return 0;
  double* e = calloc(2 * (size_t)rows + 1, sizeof(double));
  double trace = 0, trace_inv = 0;
  for (size_t k = 0; e && k < (size_t)f.rp[rows]; k++) trace += f.v[k] * f.v[k];
  for (int i = 0; e && i < rows; i++) {
    double* y = e + rows;
    e[i] = 1;
    normal_solve(&f, e, y);
    e[i] = 0;
    trace_inv += y[i];
  }
  free(e);
  normal_free(&f);
  return trace_inv > 0 && trace * trace_inv <= 1e12;
}

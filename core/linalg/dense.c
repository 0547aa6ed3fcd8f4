/* Dense LU (partial pivoting) and Cholesky factorisations for small models, where they beat the
   sparse methods: plain loops on a column-major copy of the matrix, without the per-call overhead
   of LAPACK's interface (argument and NaN checks, which cost more than a 6 x 6 factorisation).
   Eliminated in a given order (mb_solver_init_ordered), the copy holds the matrix permuted to it:
   the updates skip the zeros of each pivot row, so an order that keeps the factors sparse (a
   tree's coordinates from the leaves) saves most of the work of a dense elimination. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../linalg.h"
#include "internal.h"

/* The symbolic part: the pattern and the elimination order. */
typedef struct dense_symbolic {
  const mb_pattern* p;
  int* order; /* (n) the row and column eliminated k-th, or NULL for the natural order */
  int* place; /* (n) where each row and column is eliminated: order's inverse */
} dense_symbolic;

typedef struct dense {
  const mb_pattern* p;
  int n;
  const int *order, *place; /* the symbolic part's */
  double* x;                /* (n) a right-hand side in elimination order */
  double* a;     /* (n x n) column-major factors of the matrix permuted to elimination order */
  double* rdiag; /* (n) reciprocals of the diagonal of U or L: solves multiply, not divide */
  int* piv;      /* (n) LU: row swapped with row k at step k */
} dense;

static void* dense_analyze_ordered(const mb_pattern* p, const int* order) {
  const size_t n = (size_t)p->n;
  dense_symbolic* s = calloc(1, sizeof *s + (order ? 2 * sizeof(int) * n : 0));
  if (!s) return NULL;
  s->p = p;
  if (order) {
    s->order = (int*)(s + 1), s->place = s->order + n;
    memcpy(s->order, order, n * sizeof(int));
    for (size_t k = 0; k < n; k++) s->place[order[k]] = (int)k;
  }
  return s;
}

static void* dense_analyze(const mb_pattern* p) {
  return dense_analyze_ordered(p, NULL);
}

static void dense_free_symbolic(void* symbolic) {
  free(symbolic);
}

static void* dense_create(const mb_pattern* p, const void* symbolic) {
  const dense_symbolic* s = symbolic;
  const size_t n = (size_t)p->n;
  dense* f = calloc(1, sizeof *f + sizeof(double) * (n * n + 2 * n + 1) + sizeof(int) * (n + 1));
  if (!f) return NULL;
  f->p = p, f->n = p->n;
  f->order = s->order, f->place = s->place;
  f->a = (double*)(f + 1);
  f->rdiag = f->a + n * n;
  f->x = f->rdiag + n;
  f->piv = (int*)(f->x + n + 1);
  return f;
}

static void dense_free(void* numeric) {
  free(numeric);
}

/* the column-major copy of the values, permuted to elimination order */
static void scatter(dense* f, const double* A) {
  const mb_pattern* p = f->p;
  const int n = f->n;
  memset(f->a, 0, sizeof(double) * (size_t)n * n);
  if (!f->place) {
    for (int j = 0; j < n; j++)
      for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++)
        f->a[(size_t)j * n + p->rowind[e]] = A[e];
    return;
  }
  for (int j = 0; j < n; j++) {
    double* col = f->a + (size_t)f->place[j] * n;
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) col[f->place[p->rowind[e]]] = A[e];
  }
}

/* B's columns (n each) into elimination order (in 1) or back (in 0) */
static void permute_columns(const dense* f, int in, int nrhs, double* B) {
  if (!f->order) return;
  const int n = f->n;
  for (int c = 0; c < nrhs; c++) {
    double* b = B + (size_t)c * n;
    if (in) {
      for (int k = 0; k < n; k++) f->x[k] = b[f->order[k]];
      memcpy(b, f->x, (size_t)n * sizeof(double));
    } else {
      memcpy(f->x, b, (size_t)n * sizeof(double));
      for (int k = 0; k < n; k++) b[f->order[k]] = f->x[k];
    }
  }
}

static int lu_factor(void* numeric, const double* A) {
  dense* f = numeric;
  const int n = f->n;
  double* a = f->a;
  scatter(f, A);
  for (int k = 0; k < n; k++) {
    double* ck = a + (size_t)k * n;
    int p = k;
    for (int i = k + 1; i < n; i++)
      if (fabs(ck[i]) > fabs(ck[p])) p = i;
    if (!(ck[p] != 0) || !isfinite(ck[p])) return 1;
    f->piv[k] = p;
    if (p != k)
      for (int j = 0; j < n; j++) {
        double* cj = a + (size_t)j * n;
        const double t = cj[k];
        cj[k] = cj[p], cj[p] = t;
      }
    const double inv = 1 / ck[k];
    f->rdiag[k] = inv;
    for (int i = k + 1; i < n; i++) ck[i] *= inv;
    for (int j = k + 1; j < n; j++) {
      double* cj = a + (size_t)j * n;
      const double akj = cj[k];
      if (akj != 0)
        for (int i = k + 1; i < n; i++) cj[i] -= ck[i] * akj;
    }
  }
  return 0;
}

/* several right-hand sides at once (up to MULTI), the columns innermost: the short loops of a
   small model do all the columns' work per pass; each column sees the operations of its own
   solve */
#define MULTI 8

/* rows k and p of the columns */
static void swap_rows(int n, int nrhs, double* B, int k, int p) {
  for (int c = 0; c < nrhs; c++) {
    double* x = B + (size_t)c * n;
    const double t = x[k];
    x[k] = x[p], x[p] = t;
  }
}

/* A^T x = b, one column: the factors' columns are the rows of U^T and L^T, so each unknown is a
   dot product (mbu_dot's partial sums), column by column for several right-hand sides too */
static void lu_solve_transposed(const dense* f, double* x) {
  const int n = f->n;
  const double* a = f->a;
  for (int k = 0; k < n; k++) x[k] = (x[k] - mbu_dot(k, a + (size_t)k * n, x)) * f->rdiag[k];
  for (int k = n - 1; k >= 0; k--) x[k] -= mbu_dot(n - k - 1, a + (size_t)k * n + k + 1, x + k + 1);
  for (int k = n - 1; k >= 0; k--)
    if (f->piv[k] != k) swap_rows(n, 1, x, k, f->piv[k]);
}

static void lu_solve_multi(const dense* f, int nrhs, double* B) {
  const int n = f->n;
  const double* a = f->a;
  double xk[MULTI];
  for (int k = 0; k < n; k++)
    if (f->piv[k] != k) swap_rows(n, nrhs, B, k, f->piv[k]);
  for (int k = 0; k < n; k++) {
    const double* ck = a + (size_t)k * n;
    for (int c = 0; c < nrhs; c++) xk[c] = B[(size_t)c * n + k];
    for (int i = k + 1; i < n; i++)
      for (int c = 0; c < nrhs; c++) B[(size_t)c * n + i] -= ck[i] * xk[c];
  }
  for (int k = n - 1; k >= 0; k--) {
    const double* ck = a + (size_t)k * n;
    for (int c = 0; c < nrhs; c++) xk[c] = B[(size_t)c * n + k] *= f->rdiag[k];
    for (int i = 0; i < k; i++)
      for (int c = 0; c < nrhs; c++) B[(size_t)c * n + i] -= ck[i] * xk[c];
  }
}

/* one right-hand side: the loops over columns of the factors unit-stride, the same operations in
   the same order as lu_solve_multi's */
static void lu_solve_one(const dense* f, double* restrict x) {
  const int n = f->n;
  const double* a = f->a;
  for (int k = 0; k < n; k++)
    if (f->piv[k] != k) swap_rows(n, 1, x, k, f->piv[k]);
  for (int k = 0; k < n; k++) {
    const double* restrict ck = a + (size_t)k * n;
    const double xk = x[k];
    for (int i = k + 1; i < n; i++) x[i] -= ck[i] * xk;
  }
  for (int k = n - 1; k >= 0; k--) {
    const double* restrict ck = a + (size_t)k * n;
    const double xk = x[k] *= f->rdiag[k];
    for (int i = 0; i < k; i++) x[i] -= ck[i] * xk;
  }
}

/* P A = L U: A x = b is L U x = P b; A^T x = b is U^T L^T (P x) = b */
static void lu_solve(void* numeric, int transpose, int nrhs, double* B) {
  const dense* f = numeric;
  permute_columns(f, 1, nrhs, B);
  if (transpose)
    for (int c = 0; c < nrhs; c++) lu_solve_transposed(f, B + (size_t)c * f->n);
  else if (nrhs == 1)
    lu_solve_one(f, B);
  else
    for (int c = 0; c < nrhs; c += MULTI)
      lu_solve_multi(f, nrhs - c < MULTI ? nrhs - c : MULTI, B + (size_t)c * f->n);
  permute_columns(f, 0, nrhs, B);
}

/* A = L L^T in the lower triangle */
static int cholesky_factor(void* numeric, const double* A) {
  dense* f = numeric;
  const int n = f->n;
  double* a = f->a;
  scatter(f, A);
  for (int k = 0; k < n; k++) {
    double* ck = a + (size_t)k * n;
    if (!(ck[k] > 0) || !isfinite(ck[k])) return 1;
    const double lkk = sqrt(ck[k]), inv = 1 / lkk;
    ck[k] = lkk;
    f->rdiag[k] = inv;
    for (int i = k + 1; i < n; i++) ck[i] *= inv;
    for (int j = k + 1; j < n; j++) {
      double* cj = a + (size_t)j * n;
      const double ljk = ck[j];
      if (ljk != 0)
        for (int i = j; i < n; i++) cj[i] -= ck[i] * ljk;
    }
  }
  return 0;
}

/* L^T x = y, one column: each unknown a dot product with L's column (mbu_dot's partial sums), for
   several right-hand sides too */
static void cholesky_backward(const dense* f, double* x) {
  const int n = f->n;
  for (int k = n - 1; k >= 0; k--)
    x[k] = (x[k] - mbu_dot(n - k - 1, f->a + (size_t)k * n + k + 1, x + k + 1)) * f->rdiag[k];
}

static void cholesky_solve_multi(const dense* f, int nrhs, double* B) {
  const int n = f->n;
  const double* a = f->a;
  double xk[MULTI];
  for (int k = 0; k < n; k++) {
    const double* ck = a + (size_t)k * n;
    for (int c = 0; c < nrhs; c++) xk[c] = B[(size_t)c * n + k] *= f->rdiag[k];
    for (int i = k + 1; i < n; i++) {
      const double aik = ck[i];
      for (int c = 0; c < nrhs; c++) B[(size_t)c * n + i] -= aik * xk[c];
    }
  }
  for (int c = 0; c < nrhs; c++) cholesky_backward(f, B + (size_t)c * n);
}

/* one right-hand side: the loops over columns of L unit-stride, the same operations in the same
   order as cholesky_solve_multi's */
static void cholesky_solve_one(const dense* f, double* restrict x) {
  const int n = f->n;
  for (int k = 0; k < n; k++) {
    const double* restrict ck = f->a + (size_t)k * n;
    const double xk = x[k] *= f->rdiag[k];
    for (int i = k + 1; i < n; i++) x[i] -= ck[i] * xk;
  }
  cholesky_backward(f, x);
}

static void cholesky_solve(void* numeric, int transpose, int nrhs, double* B) {
  (void)transpose; /* symmetric */
  const dense* f = numeric;
  permute_columns(f, 1, nrhs, B);
  if (nrhs == 1)
    cholesky_solve_one(f, B);
  else
    for (int c = 0; c < nrhs; c += MULTI)
      cholesky_solve_multi(f, nrhs - c < MULTI ? nrhs - c : MULTI, B + (size_t)c * f->n);
  permute_columns(f, 0, nrhs, B);
}

const mb_solver_method mb_dense_lu = {
    "dense LU", dense_analyze, dense_analyze_ordered, dense_free_symbolic, dense_create, lu_factor,
    lu_solve,   dense_free};

const mb_solver_method mb_dense_cholesky = {
    "dense Cholesky", dense_analyze,   dense_analyze_ordered, dense_free_symbolic,
    dense_create,     cholesky_factor, cholesky_solve,        dense_free};

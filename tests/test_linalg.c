/* The linear algebra layer (core/linalg.h) against plain dense arithmetic written here: pattern
   lookups, sparse products, and every factorisation method (dense LU and Cholesky, block LU and
   block LDL^T, KLU and LDL) solving A x = b and A^T x = b on random block-sparse matrices of
   block sizes 1, 2 and 3, with the solution checked by its residual and against Gaussian
   elimination with partial pivoting of the dense copy; the sparse minimum-norm least squares
   and full-rank certificate against LAPACK's SVD; then the solver choice of a model: the same
   simulation and gradients whichever method factorises. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "linalg.h"
#include "mbopt/sensitivity.h"
#include "structure.h"
#include "testing.h"

/* A random pattern of nb blocks of size bs: the diagonal, a chain (so that the matrix is
   connected) and about `extra` further pairs. */
static mb_pattern* random_pattern(int nb, int bs, int extra, unsigned* seed) {
  mb_pairs pairs = {0, 0, NULL};
  for (int i = 0; i + 1 < nb; i++) mb_pairs_add(&pairs, i, i + 1);
  for (int k = 0; k < extra; k++) {
    const int i = (int)((mbt_uniform(seed) + 1) / 2 * nb),
              j = (int)((mbt_uniform(seed) + 1) / 2 * nb);
    if (i < nb && j < nb) mb_pairs_add(&pairs, i, j);
  }
  mb_pattern* p = mb_pattern_create(nb, bs, &pairs);
  mb_pairs_free(&pairs);
  return p;
}

/* Random values on the pattern: symmetric positive definite (spd) or unsymmetric, both with a
   dominant diagonal so that pivoting inside the diagonal blocks suffices. */
static void random_values(const mb_pattern* p, int spd, unsigned* seed, double* A) {
  const int n = p->n;
  double* D = calloc((size_t)n * n, sizeof(double));
  for (int j = 0; j < n; j++)
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) {
      const int i = p->rowind[e];
      if (spd && i < j) continue;
      const double v = mbt_uniform(seed);
      D[(size_t)i * n + j] = v;
      if (spd) D[(size_t)j * n + i] = v;
    }
  for (int i = 0; i < n; i++) {
    double row = 0;
    for (int j = 0; j < n; j++) row += fabs(D[(size_t)i * n + j]);
    D[(size_t)i * n + i] = row + 1;
  }
  for (int j = 0; j < n; j++)
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) A[e] = D[(size_t)p->rowind[e] * n + j];
  free(D);
}

/* x = D^-1 b (transpose: D^-T b) by Gaussian elimination with partial pivoting, D row-major */
static void dense_solve(int n, const double* D, int transpose, const double* b, double* x) {
  double* a = malloc(sizeof(double) * (size_t)n * (n + 1));
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      a[(size_t)i * (n + 1) + j] = transpose ? D[(size_t)j * n + i] : D[(size_t)i * n + j];
    a[(size_t)i * (n + 1) + n] = b[i];
  }
  for (int k = 0; k < n; k++) {
    int piv = k;
    for (int i = k + 1; i < n; i++)
      if (fabs(a[(size_t)i * (n + 1) + k]) > fabs(a[(size_t)piv * (n + 1) + k])) piv = i;
    for (int j = 0; j <= n; j++) {
      const double t = a[(size_t)k * (n + 1) + j];
      a[(size_t)k * (n + 1) + j] = a[(size_t)piv * (n + 1) + j], a[(size_t)piv * (n + 1) + j] = t;
    }
    for (int i = k + 1; i < n; i++) {
      const double f = a[(size_t)i * (n + 1) + k] / a[(size_t)k * (n + 1) + k];
      for (int j = k; j <= n; j++) a[(size_t)i * (n + 1) + j] -= f * a[(size_t)k * (n + 1) + j];
    }
  }
  for (int i = n - 1; i >= 0; i--) {
    double s = a[(size_t)i * (n + 1) + n];
    for (int j = i + 1; j < n; j++) s -= a[(size_t)i * (n + 1) + j] * x[j];
    x[i] = s / a[(size_t)i * (n + 1) + i];
  }
  free(a);
}

static double max_abs_diff(int n, const double* a, const double* b) {
  double d = 0;
  for (int i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
  return d;
}

static double max_abs(int n, const double* a) {
  double d = 0;
  for (int i = 0; i < n; i++) d = fmax(d, fabs(a[i]));
  return d;
}

/* z (n) = 2 D x, or with transpose 2 D^T x, D dense row-major: the reference of the sparse
   products */
static void dense_twice(int n, const double* D, int transpose, const double* x, double* z) {
  for (int i = 0; i < n; i++) {
    double s = 0;
    for (int j = 0; j < n; j++)
      s += (transpose ? D[(size_t)j * n + i] : D[(size_t)i * n + j]) * x[j];
    z[i] = 2 * s;
  }
}

/* Lookups and products of a pattern against its dense copy. */
static void check_pattern(mbt_tally* t, const mb_pattern* p, const double* A, unsigned* seed) {
  const int n = p->n;
  char what[160];
  double* D = calloc((size_t)n * n, sizeof(double));
  double *x = calloc(n, sizeof(double)), *y = calloc(n, sizeof(double)),
         *z = calloc(n, sizeof(double));
  mb_pattern_to_dense(p, A, D);
  /* every entry found where it is, and absent entries reported absent */
  int lookups = 1;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      const int e = mb_pattern_entry(p, i, j);
      if (e >= 0 ? A[e] != D[(size_t)i * n + j] : D[(size_t)i * n + j] != 0) lookups = 0;
      if (e >= 0 && (p->rowind[e] != i || e < p->colptr[j] || e >= p->colptr[j + 1])) lookups = 0;
    }
  snprintf(what, sizeof what, "pattern n = %d, bs = %d: entry lookups", n, p->bs);
  mbt_check(t, lookups, what, !lookups, 0);
  for (int i = 0; i < n; i++) x[i] = mbt_uniform(seed);
  for (int transpose = 0; transpose < 2; transpose++) {
    memset(y, 0, sizeof(double) * n);
    (transpose ? mb_spmv_t : mb_spmv)(p, A, x, 2, y);
    dense_twice(n, D, transpose, x, z);
    const double e = max_abs_diff(n, y, z) / fmax(max_abs(n, z), 1e-300);
    snprintf(what, sizeof what, "pattern n = %d, bs = %d: y += 2 A%s x", n, p->bs,
             transpose ? "^T" : "");
    mbt_check(t, e < 1e-14, what, e, 1e-14);
  }
  /* the nonzero entries alone: every other entry of A zeroed, the product against the dense one */
  double* half = malloc(sizeof(double) * (size_t)p->nnz + 1);
  for (int e = 0; e < p->nnz; e++) half[e] = e % 2 ? 0 : A[e];
  mb_compact c;
  if (mb_compact_init(&c, p) == 0) {
    mb_compact_set(&c, p, half);
    memset(y, 0, sizeof(double) * n);
    mb_compact_mul(&c, x, 2, y);
    mb_pattern_to_dense(p, half, D);
    dense_twice(n, D, 0, x, z);
    const double e = max_abs_diff(n, y, z) / fmax(max_abs(n, z), 1e-300);
    snprintf(what, sizeof what, "pattern n = %d, bs = %d: y += 2 A x on A's %d nonzeros of %d", n,
             p->bs, c.nnz, p->nnz);
    mbt_check(t, e < 1e-14 && c.nnz == (p->nnz + 1) / 2, what, e, 1e-14);
    /* a subset of the entries: every third, the others' values (here A's) never read */
    int* listed = malloc(sizeof(int) * (size_t)p->nnz + 1);
    double* within = calloc((size_t)p->nnz + 1, sizeof(double));
    int nlisted = 0;
    for (int k = 0; k < p->nnz; k += 3) listed[nlisted++] = k, within[k] = half[k];
    for (int k = 0; k < p->nnz; k++) half[k] = k % 3 ? 12345.0 : within[k];
    mb_compact_set_entries(&c, p, half, nlisted, listed);
    memset(y, 0, sizeof(double) * n);
    mb_compact_mul(&c, x, 2, y);
    mb_pattern_to_dense(p, within, D);
    dense_twice(n, D, 0, x, z);
    int expected = 0;
    for (int k = 0; k < nlisted; k++) expected += within[listed[k]] != 0;
    const double e3 = max_abs_diff(n, y, z) / fmax(max_abs(n, z), 1e-300);
    snprintf(what, sizeof what,
             "pattern n = %d, bs = %d: y += 2 A x on %d listed entries of %d, others ignored", n,
             p->bs, nlisted, p->nnz);
    mbt_check(t, e3 < 1e-14 && c.nnz == expected, what, e3, 1e-14);
    /* whole columns empty (every third): both products against the dense ones, over the
       columns kept alone */
    for (int j = 0; j < n; j++)
      for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) within[e] = j % 3 == 1 ? 0 : A[e];
    mb_compact_set(&c, p, within);
    mb_pattern_to_dense(p, within, D);
    int kept = 0;
    for (int j = 0; j < n; j++) {
      int any = 0;
      for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) any |= within[e] != 0;
      kept += any;
    }
    for (int transpose = 0; transpose < 2; transpose++) {
      memset(y, 0, sizeof(double) * n);
      (transpose ? mb_compact_mul_t : mb_compact_mul)(&c, x, 2, y);
      dense_twice(n, D, transpose, x, z);
      const double e4 = max_abs_diff(n, y, z) / fmax(max_abs(n, z), 1e-300);
      snprintf(what, sizeof what,
               "pattern n = %d, bs = %d: y += 2 A%s x over the %d of %d columns with entries", n,
               p->bs, transpose ? "^T" : "", c.ncol, n);
      mbt_check(t, e4 < 1e-14 && c.ncol == kept, what, e4, 1e-14);
    }
    free(listed), free(within);
    mb_compact_release(&c);
  }
  free(half), free(D), free(x), free(y), free(z);
}

/* One method on one matrix, eliminating in order (NULL: the method's own): one right-hand side
   and two, plain and transposed. */
static void check_method_ordered(mbt_tally* t, const mb_solver_method* method, const mb_pattern* p,
                                 const double* A, const int* order, unsigned* seed) {
  const int n = p->n;
  char what[160];
  mb_solver solver;
  mb_factor f;
  const char* ordered = order ? ", in a given order" : "";
  if (mb_solver_init_ordered(&solver, method, p, order) != 0 || mb_factor_init(&f, &solver) != 0) {
    snprintf(what, sizeof what, "%s%s: set up on n = %d", method->name, ordered, n);
    mbt_check(t, 0, what, 1, 0);
    return;
  }
  double* D = calloc((size_t)n * n, sizeof(double));
  double *b = calloc(2 * (size_t)n, sizeof(double)), *x = calloc(2 * (size_t)n, sizeof(double));
  double* ref = calloc(n, sizeof(double));
  mb_pattern_to_dense(p, A, D);
  const int factored = mb_factor_compute(&f, A) == 0;
  snprintf(what, sizeof what, "%s%s: factorises n = %d, bs = %d", method->name, ordered, n, p->bs);
  mbt_check(t, factored, what, !factored, 0);
  /* one column (the solvers' path of a single right-hand side) and two */
  for (int cols = 1; cols <= 2 && factored; cols++)
    for (int transpose = 0; transpose < 2; transpose++) {
      for (int i = 0; i < cols * n; i++) b[i] = mbt_uniform(seed);
      memcpy(x, b, sizeof(double) * cols * n);
      mb_factor_solve(&f, transpose, cols, x);
      double worst = 0;
      for (int c = 0; c < cols; c++) {
        dense_solve(n, D, transpose, b + (size_t)c * n, ref);
        worst =
            fmax(worst, max_abs_diff(n, x + (size_t)c * n, ref) / fmax(max_abs(n, ref), 1e-300));
      }
      snprintf(what, sizeof what, "%s%s: A%s x = b, n = %d, bs = %d, %d column%s (vs elimination)",
               method->name, ordered, transpose ? "^T" : "", n, p->bs, cols, cols > 1 ? "s" : "");
      mbt_check(t, worst < 1e-12, what, worst, 1e-12);
    }
  free(D), free(b), free(x), free(ref);
  mb_factor_release(&f);
  mb_solver_release(&solver);
}

static void check_method(mbt_tally* t, const mb_solver_method* method, const mb_pattern* p,
                         const double* A, unsigned* seed) {
  check_method_ordered(t, method, p, A, NULL, seed);
}

/* The dense methods eliminating in a random order: the copy they factorise is the matrix
   permuted, and every solve permutes its right-hand sides in and back. */
static void check_dense_ordered(mbt_tally* t, const mb_pattern* p, const double* A, int spd,
                                unsigned* seed) {
  int* order = malloc((size_t)p->n * sizeof(int));
  for (int k = 0; k < p->n; k++) order[k] = k;
  for (int k = p->n - 1; k > 0; k--) {
    const int j = (int)((mbt_uniform(seed) + 1) / 2 * (k + 1)) % (k + 1); /* 0 .. k */
    const int tmp = order[k];
    order[k] = order[j], order[j] = tmp;
  }
  check_method_ordered(t, spd ? &mb_dense_cholesky : &mb_dense_lu, p, A, order, seed);
  free(order);
}

/* A singular matrix (a zero block row and column) is reported, not solved. */
static void check_singular(mbt_tally* t, const mb_solver_method* method, int spd, unsigned* seed) {
  mb_pattern* p = random_pattern(6, 3, 6, seed);
  double* A = calloc(p->nnz, sizeof(double));
  random_values(p, spd, seed, A);
  for (int j = 0; j < p->n; j++)
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++)
      if (p->rowind[e] / 3 == 2 || j / 3 == 2) A[e] = 0;
  mb_solver solver;
  mb_factor f;
  int reported = 0;
  if (mb_solver_init(&solver, method, p) == 0 && mb_factor_init(&f, &solver) == 0) {
    reported = mb_factor_compute(&f, A) != 0 && !f.valid;
    mb_factor_release(&f);
    mb_solver_release(&solver);
  }
  char what[160];
  snprintf(what, sizeof what, "%s: a singular matrix is reported", method->name);
  mbt_check(t, reported, what, !reported, 0);
  free(A);
  mb_pattern_free(p);
}

static void check_methods(mbt_tally* t, unsigned* seed) {
  const mb_solver_method* unsym[] = {&mb_dense_lu, &mb_block_lu, &mb_klu_lu};
  const mb_solver_method* sym[] = {&mb_dense_cholesky, &mb_block_ldlt, &mb_ldl_cholesky};
  const int sizes[][3] = {{1, 1, 0}, {5, 1, 6}, {4, 2, 3}, {12, 2, 20}, {7, 3, 5}, {40, 3, 60}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    mb_pattern* p = random_pattern(sizes[k][0], sizes[k][1], sizes[k][2], seed);
    double* A = calloc(p->nnz, sizeof(double));
    random_values(p, 0, seed, A);
    check_pattern(t, p, A, seed);
    for (int i = 0; i < 3; i++) check_method(t, unsym[i], p, A, seed);
    check_dense_ordered(t, p, A, 0, seed);
    random_values(p, 1, seed, A);
    for (int i = 0; i < 3; i++) check_method(t, sym[i], p, A, seed);
    check_dense_ordered(t, p, A, 1, seed);
    free(A);
    mb_pattern_free(p);
  }
  /* a diagonal a millionth of the rest: the row exchanges of partial pivoting, in both solves */
  mb_pattern* p = random_pattern(8, 1, 20, seed);
  double* A = calloc(p->nnz, sizeof(double));
  random_values(p, 0, seed, A);
  for (int j = 0; j < p->n; j++) A[p->diag[j]] *= 1e-6;
  check_method(t, &mb_dense_lu, p, A, seed);
  check_dense_ordered(t, p, A, 0, seed);
  check_method(t, &mb_klu_lu, p, A, seed);
  free(A);
  mb_pattern_free(p);
  for (int i = 0; i < 3; i++) check_singular(t, unsym[i], 0, seed);
  for (int i = 0; i < 3; i++) check_singular(t, sym[i], 1, seed);
}

/* The same model factorised densely, by the block methods and by KLU: psi and the gradients of
   both sensitivity methods agree to the rounding the simulation and the sensitivities amplify,
   psi_tol of psi and grad_tol of each gradient's norm. The buggy's chassis is started upwards at
   rate_z m/s (0: as the spec says). */
static void check_model_solvers(mbt_tally* t, const char* path, double t_end, double rate_z,
                                double psi_tol, double grad_tol) {
  const int solvers[3] = {MB_LINEAR_DENSE, MB_LINEAR_SPARSE, MB_LINEAR_KLU};
  mb_desc d;
  mb_error err;
  char what[200];
  if (mb_desc_load_json(path, &d, &err) != MB_OK) {
    printf("FAIL cannot load %s: %s\n", path, err.message);
    t->failed++;
    return;
  }
  if (t_end > 0) d.settings.t_end = t_end;
  if (rate_z != 0) mbt_buggy_bounce(&d, rate_z);
  const int p = d.nparam;
  double *psi0 = NULL, *grad0 = NULL;
  for (int s = 0; s < 3; s++) {
    d.settings.linear_solver = solvers[s];
    mb_model* m = NULL;
    if (mb_compile(&d, &m, &err) != MB_OK) {
      printf("FAIL %s: %s\n", path, err.message);
      t->failed++;
      break;
    }
    const int nf = m->nfunctional;
    if (!psi0) psi0 = calloc(nf, sizeof(double)), grad0 = calloc((size_t)nf * p, sizeof(double));
    double* psi = calloc(nf, sizeof(double));
    double* grad = calloc((size_t)nf * p, sizeof(double));
    mb_data* data = mb_data_create(m);
    for (int method = 0; method < 2; method++) {
      const mb_status st = method ? mbd_adjoint(&d, m, data, 0, psi, grad, NULL, &err)
                                  : mbd_forward(&d, m, data, psi, grad, &err);
      if (st != MB_OK) {
        printf("FAIL %s: %s\n", path, err.message);
        t->failed++;
        continue;
      }
      if (s == 0 && method == 0) {
        memcpy(psi0, psi, sizeof(double) * nf), memcpy(grad0, grad, sizeof(double) * nf * p);
        continue;
      }
      double dpsi = 0, dgrad = 0;
      for (int f = 0; f < nf; f++) {
        double norm = 0, diff = 0;
        for (int k = 0; k < p; k++) {
          const double a = grad0[(size_t)f * p + k], b = grad[(size_t)f * p + k];
          norm += a * a, diff += (a - b) * (a - b);
        }
        dgrad = fmax(dgrad, sqrt(diff / fmax(norm, 1e-300)));
        dpsi = fmax(dpsi, fabs(psi[f] - psi0[f]) / fmax(fabs(psi0[f]), 1e-300));
      }
      snprintf(what, sizeof what, "%s, %s, %s: psi as dense forward", strrchr(path, '/') + 1,
               mb_linear_solver_name(solvers[s]), method ? "adjoint" : "forward");
      mbt_check(t, dpsi < psi_tol, what, dpsi, psi_tol);
      snprintf(what, sizeof what, "%s, %s, %s: gradients as dense forward", strrchr(path, '/') + 1,
               mb_linear_solver_name(solvers[s]), method ? "adjoint" : "forward");
      mbt_check(t, dgrad < grad_tol, what, dgrad, grad_tol);
    }
    mb_data_free(data);
    free(psi), free(grad);
    mb_model_free(m);
  }
  free(psi0), free(grad0);
  mb_desc_free(&d);
}

/* A random sparse system (rows x n, row-major): `per_row` entries in random columns of each row,
   and in row i column i, so that square systems have a dominant diagonal. */
static void sparse_system(int rows, int n, int per_row, unsigned* seed, double* A) {
  memset(A, 0, sizeof(double) * (size_t)rows * n);
  for (int i = 0; i < rows; i++) {
    for (int k = 0; k < per_row; k++) {
      const int j = (int)((mbt_uniform(seed) + 1) / 2 * n) % n;
      A[(size_t)i * n + j] = mbt_uniform(seed);
    }
    A[(size_t)i * n + i % n] = 4;
  }
}

/* cols (rows x n, column-major, LAPACK's layout) = A (row-major) */
static void column_major(int rows, int n, const double* A, double* cols) {
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < n; j++) cols[(size_t)j * rows + i] = A[(size_t)i * n + j];
}

/* One case of the sparse least squares: whether it solves or declines (expect_taken), and its
   solutions, or those of mbu_least_squares_rows that then falls back to the SVD, against
   LAPACK's minimum-norm solutions of the same system (dgelsd, by mbu_least_squares). */
static void least_squares_case(mbt_tally* t, const char* name, int rows, int n, int nrhs,
                               const double* A, int expect_taken, unsigned* seed) {
  const int ld = rows > n ? rows : n;
  double* B = calloc((size_t)ld * nrhs, sizeof(double));
  double* X = calloc((size_t)ld * nrhs, sizeof(double));
  double* ref = calloc((size_t)ld * nrhs, sizeof(double));
  double* cols = calloc((size_t)rows * n, sizeof(double));
  /* right-hand sides in the range of A, so that a rank-deficient system is consistent */
  for (int c = 0; c < nrhs; c++)
    for (int j = 0; j < n; j++) {
      const double x = mbt_uniform(seed);
      for (int i = 0; i < rows; i++) B[(size_t)c * ld + i] += A[(size_t)i * n + j] * x;
    }
  memcpy(X, B, sizeof(double) * (size_t)ld * nrhs);
  memcpy(ref, B, sizeof(double) * (size_t)ld * nrhs);
  const int taken = mbu_least_squares_sparse(rows, n, nrhs, A, X, ld) == 0;
  char what[160];
  snprintf(what, sizeof what, "least squares %s: semi-normal equations %s", name,
           expect_taken ? "solve it" : "decline it");
  mbt_check(t, taken == expect_taken, what, taken, expect_taken);
  if (!taken) {
    const int untouched = memcmp(X, B, sizeof(double) * (size_t)ld * nrhs) == 0;
    snprintf(what, sizeof what, "least squares %s: declined, the right-hand sides untouched", name);
    mbt_check(t, untouched, what, !untouched, 0);
    mbu_least_squares_rows(rows, n, nrhs, A, X, ld, NULL);
  }
  column_major(rows, n, A, cols);
  mbu_least_squares(rows, n, nrhs, cols, ref, ld, NULL);
  double worst = 0, scale = 0;
  for (int c = 0; c < nrhs; c++)
    for (int j = 0; j < n; j++) {
      worst = fmax(worst, fabs(X[(size_t)c * ld + j] - ref[(size_t)c * ld + j]));
      scale = fmax(scale, fabs(ref[(size_t)c * ld + j]));
    }
  mbt_check_scaled(t, worst, scale, 1e-12, "least squares %s: against LAPACK's dgelsd", name);
  free(B), free(X), free(ref), free(cols);
}

/* The full-rank certificate against the singular values of LAPACK's SVD: a claim only where
   they are all above 1e-6 of the largest, and the claim expected of the case. */
static void full_rank_case(mbt_tally* t, const char* name, int rows, int n, const double* A,
                           int expect_certified) {
  double* cols = malloc(sizeof(double) * (size_t)rows * n);
  double* sv = malloc(sizeof(double) * (size_t)rows);
  column_major(rows, n, A, cols);
  mbu_svd(rows, n, cols, sv, NULL, NULL);
  const double spread = sv[rows - 1] / sv[0];
  const int certified = mbu_full_row_rank(rows, n, A);
  char what[160];
  snprintf(what, sizeof what, "full row rank %s: %s (smallest/largest singular value)", name,
           expect_certified ? "certified" : "not certified");
  mbt_check(t, certified == expect_certified && (!certified || spread > 1e-6), what, spread, 1e-6);
  free(cols), free(sv);
}

static void check_least_squares(mbt_tally* t, unsigned* seed) {
  const int rows = 120, n = 150;
  double* A = malloc(sizeof(double) * (size_t)n * n);
  sparse_system(rows, n, 5, seed, A);
  least_squares_case(t, "120 x 150, sparse", rows, n, 3, A, 1, seed);
  full_rank_case(t, "120 x 150, sparse", rows, n, A, 1);
  /* a row scaled by 1e-8: its singular value below 1e-6 of the largest */
  for (int j = 0; j < n; j++) A[(size_t)9 * n + j] *= 1e-8;
  full_rank_case(t, "120 x 150, a row scaled by 1e-8", rows, n, A, 0);
  for (int j = 0; j < n; j++) A[(size_t)9 * n + j] *= 1e8;
  /* rows of very different sizes: cond(A) about 1e3, still taken and to round-off */
  for (int j = 0; j < n; j++) A[(size_t)7 * n + j] *= 1e-3;
  least_squares_case(t, "120 x 150, a row scaled by 1e-3", rows, n, 2, A, 1, seed);
  /* a row the sum of two others: rank 119, the SVD's */
  sparse_system(rows, n, 5, seed, A);
  for (int j = 0; j < n; j++) A[(size_t)(rows - 1) * n + j] = A[(size_t)3 * n + j] + A[5 * n + j];
  least_squares_case(t, "120 x 150, rank 119", rows, n, 2, A, 0, seed);
  full_rank_case(t, "120 x 150, rank 119", rows, n, A, 0);
  sparse_system(n, n, 5, seed, A);
  least_squares_case(t, "150 x 150, sparse", n, n, 1, A, 1, seed);
  sparse_system(40, 60, 5, seed, A);
  least_squares_case(t, "40 x 60, too small", 40, 60, 1, A, 0, seed);
  sparse_system(rows, n, 40, seed, A);
  least_squares_case(t, "120 x 150, dense", rows, n, 1, A, 0, seed);
  /* a column every row shares: A A^T full, 120^2 entries against A's 720 */
  sparse_system(rows, n, 5, seed, A);
  for (int i = 0; i < rows; i++) A[(size_t)i * n + n - 1] = 1 + 0.5 * mbt_uniform(seed);
  least_squares_case(t, "120 x 150, a full column", rows, n, 1, A, 0, seed);
  sparse_system(n, rows, 5, seed, A);
  least_squares_case(t, "150 x 120, overdetermined", n, rows, 1, A, 0, seed);
  free(A);
}

int main(void) {
  mbt_tally t = {0};
  unsigned seed = 20261122u;
  check_methods(&t, &seed);
  check_least_squares(&t, &seed);
  check_model_solvers(&t, "problems/fivebar.json", 1, 0, 1e-9, 1e-7);
  check_model_solvers(&t, "problems/slider_crank.json", 0.5, 0, 1e-9, 1e-7);
  /* the buggy before the step, which starts at rest on its suspension: its chassis is started
     upwards at 0.1 m/s so that the comfort functional, the integral of a squared acceleration,
     measures a motion rather than the rounding of the Newton corrections divided by beta h^2 */
  check_model_solvers(&t, "problems/vehicle/step_descent.json", 0.05, 0.1, 1e-7, 1e-5);
  return mbt_finish(&t);
}

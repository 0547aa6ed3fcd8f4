/* Sparse LU with KLU (SuiteSparse), made for the small, very sparse matrices of circuits and
   multibody systems: AMD ordering once per model (klu_analyze); per step a refactorisation with
   the pivot sequence of the last full factorisation (klu_refactor), which is redone with partial
   pivoting when the pivots degrade. */
#include <stdlib.h>

#include <klu.h>

#include "../linalg.h"

typedef struct lu {
  const mb_pattern* p;
  klu_symbolic* symbolic; /* shared by the model's runs: KLU only reads it */
  klu_numeric* numeric;   /* NULL until the first factorisation */
  klu_common common;
  double rcond; /* of the last full factorisation */
} lu;

static void* klu_method_analyze(const mb_pattern* p) {
  klu_common common;
  klu_defaults(&common);
  common.btf = 0; /* one irreducible block: the permutation search would only cost */
  return klu_analyze(p->n, p->colptr, p->rowind, &common);
}

static void klu_method_free_symbolic(void* symbolic) {
  klu_common common;
  klu_defaults(&common);
  klu_symbolic* s = symbolic;
  klu_free_symbolic(&s, &common);
}

static void* klu_method_create(const mb_pattern* p, const void* symbolic) {
  lu* f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->p = p;
  f->symbolic = (klu_symbolic*)symbolic;
  klu_defaults(&f->common);
  f->common.btf = 0;
  return f;
}

static void klu_method_free(void* numeric) {
  lu* f = numeric;
  if (f->numeric) klu_free_numeric(&f->numeric, &f->common);
  free(f);
}

/* a full factorisation with partial pivoting (allocates the factors) */
static int full_factor(lu* f, const double* A) {
  if (f->numeric) klu_free_numeric(&f->numeric, &f->common);
  f->numeric = klu_factor(f->p->colptr, f->p->rowind, (double*)A, f->symbolic, &f->common);
  if (!f->numeric) return 1;
  klu_rcond(f->symbolic, f->numeric, &f->common);
  f->rcond = f->common.rcond;
  return 0;
}

static int klu_method_factor(void* numeric, const double* A) {
  lu* f = numeric;
  if (!f->numeric) return full_factor(f, A);
  /* the last pivot sequence, unless a pivot vanished or the diagonal of U lost three orders of
     magnitude of balance against the last full factorisation */
  if (!klu_refactor(f->p->colptr, f->p->rowind, (double*)A, f->symbolic, f->numeric, &f->common))
    return full_factor(f, A);
  klu_rcond(f->symbolic, f->numeric, &f->common);
  if (!(f->common.rcond >= 1e-3 * f->rcond)) return full_factor(f, A);
  return 0;
}

static void klu_method_solve(void* numeric, int transpose, int nrhs, double* B) {
  lu* f = numeric;
  if (transpose)
    klu_tsolve(f->symbolic, f->numeric, f->p->n, nrhs, B, &f->common);
  else
    klu_solve(f->symbolic, f->numeric, f->p->n, nrhs, B, &f->common);
}

const mb_solver_method mb_klu_lu = {"KLU",
                                    klu_method_analyze,
                                    NULL,
                                    klu_method_free_symbolic,
                                    klu_method_create,
                                    klu_method_factor,
                                    klu_method_solve,
                                    klu_method_free};

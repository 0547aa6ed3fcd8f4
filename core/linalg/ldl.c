/* Sparse LDL^T with LDL (SuiteSparse) for the symmetric positive definite projection matrices:
   the AMD ordering and the elimination tree once per model, then a lean up-looking numeric
   factorisation per step into preallocated factors (nothing allocated, no per-call setup: for the
   small matrices of multibody models this beats CHOLMOD's general machinery several times). */
#include <stdlib.h>
#include <string.h>

#include <amd.h>
#include <ldl.h>

#include "../linalg.h"

/* the ordering and the shape of L, shared by the model's runs */
typedef struct symbolic {
  int n;
  int *P, *Pinv, *Parent, *Lp; /* (n), (n), (n), (n + 1) */
} symbolic;

typedef struct numeric {
  const mb_pattern* p;
  const symbolic* s;
  int *Li, *Lnz, *Pattern, *Flag; /* (Lp[n]), (n), (n), (n) */
  double *Lx, *D, *Y;             /* (Lp[n]), (n), (n) */
} numeric;

static void* ldl_method_analyze(const mb_pattern* p) {
  const int n = p->n;
  symbolic* s = calloc(1, sizeof *s + sizeof(int) * (5 * (size_t)n + 1));
  int* flag = malloc(sizeof(int) * ((size_t)n + 1));
  int* lnz = malloc(sizeof(int) * ((size_t)n + 1));
  if (!s || !flag || !lnz) goto fail;
  s->n = n;
  s->P = (int*)(s + 1);
  s->Pinv = s->P + n, s->Parent = s->Pinv + n, s->Lp = s->Parent + n;
  if (n > 0 && amd_order(n, p->colptr, p->rowind, s->P, NULL, NULL) != AMD_OK) goto fail;
  ldl_symbolic(n, p->colptr, p->rowind, s->Lp, s->Parent, lnz, flag, s->P, s->Pinv);
  free(flag), free(lnz);
  return s;
fail:
  free(s), free(flag), free(lnz);
  return NULL;
}

static void ldl_method_free_symbolic(void* symbolic) {
  free(symbolic);
}

static void* ldl_method_create(const mb_pattern* p, const void* symbolic_) {
  const symbolic* s = symbolic_;
  const size_t n = (size_t)s->n, lnz = (size_t)s->Lp[n];
  numeric* f =
      calloc(1, sizeof *f + sizeof(int) * (lnz + 3 * n + 1) + sizeof(double) * (lnz + 2 * n + 1));
  if (!f) return NULL;
  f->p = p, f->s = s;
  f->Lx = (double*)(f + 1);
  f->D = f->Lx + lnz, f->Y = f->D + n;
  f->Li = (int*)(f->Y + n);
  f->Lnz = f->Li + lnz, f->Pattern = f->Lnz + n, f->Flag = f->Pattern + n;
  return f;
}

static void ldl_method_free(void* numeric) {
  free(numeric);
}

static int ldl_method_factor(void* numeric_, const double* A) {
  numeric* f = numeric_;
  const symbolic* s = f->s;
  const int n = s->n;
  if (ldl_numeric(n, f->p->colptr, f->p->rowind, (double*)A, s->Lp, s->Parent, f->Lnz, f->Li, f->Lx,
                  f->D, f->Y, f->Pattern, f->Flag, s->P, s->Pinv) != n)
    return 1;
  for (int k = 0; k < n; k++)
    if (!(f->D[k] > 0)) return 1; /* positive definite: every pivot positive */
  return 0;
}

static void ldl_method_solve(void* numeric_, int transpose, int nrhs, double* B) {
  (void)transpose; /* symmetric */
  numeric* f = numeric_;
  const symbolic* s = f->s;
  const int n = s->n;
  for (int c = 0; c < nrhs; c++) {
    double* b = B + (size_t)c * n;
    ldl_perm(n, f->Y, b, s->P);
    ldl_lsolve(n, f->Y, s->Lp, f->Li, f->Lx);
    ldl_dsolve(n, f->Y, f->D);
    ldl_ltsolve(n, f->Y, s->Lp, f->Li, f->Lx);
    ldl_permt(n, b, f->Y, s->P);
  }
}

const mb_solver_method mb_ldl_cholesky = {"LDL",
                                          ldl_method_analyze,
                                          NULL,
                                          ldl_method_free_symbolic,
                                          ldl_method_create,
                                          ldl_method_factor,
                                          ldl_method_solve,
                                          ldl_method_free};

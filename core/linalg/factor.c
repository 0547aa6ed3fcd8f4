/* The factorisation interface over the methods' tables (see linalg.h). */
#include <string.h>

#include "../linalg.h"

int mb_solver_init(mb_solver* s, const mb_solver_method* method, const mb_pattern* p) {
  return mb_solver_init_ordered(s, method, p, NULL);
}

int mb_solver_init_ordered(mb_solver* s, const mb_solver_method* method, const mb_pattern* p,
                           const int* order) {
  s->method = method, s->pattern = p;
  s->symbolic = order && method->analyze_ordered ? method->analyze_ordered(p, order)
                                                 : method->analyze(p);
  return s->symbolic ? 0 : -1;
}

void mb_solver_release(mb_solver* s) {
  if (s->symbolic) s->method->free_symbolic(s->symbolic);
  s->symbolic = NULL;
}

int mb_factor_init(mb_factor* f, const mb_solver* s) {
  f->solver = s, f->valid = 0;
  f->numeric = s->method->create(s->pattern, s->symbolic);
  return f->numeric ? 0 : -1;
}

void mb_factor_release(mb_factor* f) {
  if (f->numeric) f->solver->method->free(f->numeric);
  f->numeric = NULL, f->valid = 0;
}

int mb_factor_compute(mb_factor* f, const double* A) {
  const int st = f->solver->method->factor(f->numeric, A);
  f->valid = st == 0;
  return st;
}

void mb_factor_solve(mb_factor* f, int transpose, int nrhs, double* B) {
  if (nrhs > 0) f->solver->method->solve(f->numeric, transpose, nrhs, B);
}

/* Design optimisation of a spec: its "optimization" section run on the optimiser layer, with
   objective and constraint gradients from the sensitivity core. */
#ifndef MBOPT_OPTIMIZE_H
#define MBOPT_OPTIMIZE_H

#include <signal.h>

#include "mbopt/desc.h"

/* One evaluation, as it happens: x (nvar, design variables in the order of the spec's
   "optimization.parameters"), the objective and the constraint functionals (ncon), whether
   gradients were computed and whether the point failed (then objective and c are meaningless). */
typedef struct mb_opt_evaluation {
  int index; /* from 1 */
  int nvar, ncon;
  const double* x;
  double objective;
  const double* c;
  int with_gradient, failed;
  double seconds; /* since the start of the run */
} mb_opt_evaluation;

typedef void (*mb_opt_observer)(const mb_opt_evaluation* e, void* user);

/* The outcome of a run. */
typedef struct mb_opt_result {
  char algorithm[32];
  char status[32]; /* see mbo_result: converged, max_evaluations, ..., interrupted, failed */
  char message[512];
  double objective; /* at x */
  int evaluations, gradient_evaluations, iterations, failed_evaluations;
  double seconds;
  char sensitivity_method[16]; /* forward or adjoint, "" when no gradient was computed */
} mb_opt_result;

/* Minimises the spec's objective over its design variables with `algorithm` (NULL: the spec's),
   starting from the parameter values of desc, which on return hold the best point found (also in
   x, nvar values, may be NULL). observer (may be NULL) sees every evaluation. A nonzero
   *interrupt (may be NULL; set it from a signal handler) ends the run with status
   "interrupted" and the best point so far. Returns a negative status only when the run could not
   be set up (bad algorithm name, constraints the algorithm cannot take: err names the spec key)
   or a fatal error; a run that ends early still returns MB_OK with its status in result. */
mb_status mb_optimize(mb_desc* desc, const char* algorithm, mb_opt_observer observer, void* user,
                      volatile sig_atomic_t* interrupt, double* x, mb_opt_result* result,
                      mb_error* err);

/* Checks, without evaluating anything, that the spec can be optimised with `algorithm` (NULL:
   the spec's): an objective and design variables, a known algorithm, bounds and constraints it
   takes. Returns MB_OK, or the status mb_optimize would fail with and err naming the spec key. */
mb_status mb_optimize_check(const mb_desc* desc, const char* algorithm, mb_error* err);

#endif

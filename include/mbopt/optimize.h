/* Design optimisation of a spec: its "optimization" section run on the optimiser layer, with
   objective and constraint gradients from the sensitivity core. */
#ifndef MBOPT_OPTIMIZE_H
#define MBOPT_OPTIMIZE_H

#include <signal.h>

#include "mbopt/desc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One evaluation, as it happens: x (nvar, design variables in the order of the spec's
   "optimization.parameters"), the objective and the constraint functionals (ncon), whether
   gradients were computed and whether the point failed (then objective, c, df and dc are
   meaningless), and the gradients df (nvar) of the objective and dc (ncon x nvar, row-major) of
   the constraints when with_gradient (else NULL). */
typedef struct mb_opt_evaluation {
  int index; /* from 1 */
  int nvar, ncon;
  const double* x;
  double objective;
  const double* c;
  int with_gradient, failed;
  double seconds; /* since the start of the run (of the first run, for a resumed one) */
  const double* df;
  const double* dc;
  int replayed; /* taken from the record of a resumed run (mb_optimize_resume) */
  int feasible; /* not failed, and every constraint met (see mb_opt_result) */
} mb_opt_evaluation;

typedef void (*mb_opt_observer)(const mb_opt_evaluation* e, void* user);

/* The outcome of a run. */
typedef struct mb_opt_result {
  char algorithm[32];
  char status[32]; /* see mbo_result: converged, max_evaluations, ..., interrupted, failed */
  char message[MB_MESSAGE_LEN + 200]; /* the optimiser's and the last failure's */
  double objective;                   /* at x */
  int evaluations, gradient_evaluations, iterations, failed_evaluations;
  double seconds;
  char sensitivity_method[16]; /* forward or adjoint, "" when no gradient was computed */
  int replayed;                /* evaluations a resumed run took from its record */
  int left_record_at;          /* the evaluation at which it asked for a point the record does
                                  not hold first (0: none), from where it evaluated again */
  int feasible;     /* x meets every constraint (see mbo_result); 1 without constraints */
  double violation; /* x's largest relative constraint violation, 0 when none */
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

/* Resumes a run of mb_optimize that ended early (interrupted, killed, or out of evaluations):
   done[0..ndone-1] are its evaluations in order, as its observer saw them. The algorithms are
   deterministic, so the run is started again from the same point with the same settings and
   each evaluation it asks for is taken from the record as long as the point matches the
   recorded one bitwise (and the record has the gradients asked for); the optimiser's state is
   thereby rebuilt exactly, and the run goes on evaluating from where the record ends. The
   observer sees every evaluation, the replayed ones included, and the evaluation count and the
   seconds continue those of the record. Settings that measure time (optimization.maxtime)
   count from the resumption. Arguments and result otherwise as mb_optimize. */
mb_status mb_optimize_resume(mb_desc* desc, const char* algorithm, const mb_opt_evaluation* done,
                             int ndone, mb_opt_observer observer, void* user,
                             volatile sig_atomic_t* interrupt, double* x, mb_opt_result* result,
                             mb_error* err);

/* Checks, without evaluating anything, that the spec can be optimised with `algorithm` (NULL:
   the spec's): an objective and design variables, a known algorithm, bounds and constraints it
   takes. Returns MB_OK, or the status mb_optimize would fail with and err naming the spec key. */
mb_status mb_optimize_check(const mb_desc* desc, const char* algorithm, mb_error* err);

#ifdef __cplusplus
}
#endif

#endif

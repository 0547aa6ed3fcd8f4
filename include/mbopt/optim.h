/* The optimiser: an opaque handle over a local optimisation library (NLopt), with algorithms by
   name, box bounds with optional log scaling, constraint functionals with lower and upper bounds,
   stopping rules, an observer for history files, an evaluation cache and interruption.
   Create, set, run, destroy:

     mbo_optimizer* o = mbo_create(MBO_SLSQP, n, &err);
     mbo_set_bounds(o, lower, upper, NULL, &err);
     mbo_set_constraints(o, ncon, c_lower, c_upper, &err);
     mbo_set_eval(o, my_eval, my_data);
     mbo_run(o, x, &result, &err);
     mbo_destroy(o);

   The optimiser works on the unit box u in [0, 1]^n: x = lower + u (upper - lower), or, for a
   log-scaled variable, x = exp(log lower + u (log upper - log lower)). Gradients are chain-ruled
   accordingly and the step tolerance applies in u, so variables of different units and
   magnitudes weigh alike. */
#ifndef MBOPT_OPTIM_H
#define MBOPT_OPTIM_H

#include <stddef.h>

#include "mbopt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mbo_algorithm {
  MBO_LBFGS,      /* limited-memory BFGS; gradient, bounds only */
  MBO_SLSQP,      /* sequential quadratic programming; gradient, inequalities and equalities */
  MBO_MMA,        /* method of moving asymptotes; gradient, inequalities */
  MBO_CCSAQ,      /* conservative convex separable quadratic approximations; as MMA */
  MBO_TNEWTON,    /* preconditioned truncated Newton with restarts; gradient, bounds only */
  MBO_BOBYQA,     /* quadratic trust-region models; no gradient, bounds only */
  MBO_COBYLA,     /* linear trust-region models; no gradient, inequalities and equalities */
  MBO_NELDERMEAD, /* simplex; no gradient, bounds only */
  MBO_SBPLX       /* Nelder-Mead on subspaces; no gradient, bounds only */
} mbo_algorithm;

/* Returns the name of an algorithm ("lbfgs", "slsqp", "mma", "ccsaq", "tnewton", "bobyqa",
   "cobyla", "neldermead", "sbplx"), or "?" for a value outside the enum. */
const char* mbo_algorithm_name(mbo_algorithm alg);

/* Returns the algorithm of a name as listed for mbo_algorithm_name, or -1 when the name is unknown
   or NULL. */
int mbo_algorithm_parse(const char* name);

/* Returns 1 when the algorithm needs gradients from the callback, 0 when it uses values only. */
int mbo_algorithm_uses_gradient(mbo_algorithm alg);

/* Returns the constraints the algorithm supports: 0 none (bounds only), 1 inequalities,
   2 inequalities and equalities. */
int mbo_algorithm_constraints(mbo_algorithm alg);

/* The problem, evaluated at one point. Inputs: x (n) in physical units, and want_grad, nonzero
   when gradients are wanted. Outputs: f, the objective; df (n), its gradient; c (ncon), the
   constraint functionals; dc (ncon x n, row-major), their gradients. df and dc are NULL unless
   want_grad; c and dc are NULL when there are no constraints. Returns 0 on success, > 0 when the
   point failed but the run may go on (for instance, the simulation diverged there), < 0 for a
   fatal error that ends the run (an mb_status code is passed on to the caller of mbo_run). A
   success with a non-finite value or gradient counts as a failed point. The algorithm sees a
   failed point as one to reject (+inf, or for bobyqa and cobyla a value worse than any of the
   run); 3 failed evaluations in a row end the run. */
typedef int (*mbo_eval)(const double* x, int want_grad, double* f, double* df, double* c,
                        double* dc, void* user);

/* Called after every evaluation of the callback, for instance to append a line to a history file
   as the run goes. evaluation counts from 1; x (n) is the point in physical units; f (the
   objective) and c (ncon, NULL when there are no constraints) are meaningless when failed is
   nonzero; with_gradient says whether gradients were computed. */
typedef void (*mbo_observer)(int evaluation, const double* x, double f, const double* c,
                             int with_gradient, int failed, void* user);

/* Stopping rules. ftol_rel and ftol_abs bound the change of the objective between iterations;
   xtol_rel bounds the step in u, relative to |u| and, u lying in the unit box, also absolutely;
   maxtime is in seconds (0 for no limit); maxeval counts calls of the callback (0 for no limit).
   A tolerance of 0 is not used. */
typedef struct mbo_settings {
  double ftol_rel, ftol_abs, xtol_rel, maxtime;
  int maxeval;
} mbo_settings;

/* Fills s (not NULL) with the defaults: ftol_rel 1e-10, ftol_abs 0, xtol_rel 1e-8, maxtime 0 (no
   limit), maxeval 200. */
void mbo_settings_default(mbo_settings* s);

/* The outcome of a run. status is one of
     "converged"          the ftol, xtol or stopval criterion was met, or (gradient-based
                          algorithms without constraints) 5 evaluations in a row improved the
                          best objective by less than ftol_rel (relative) and ftol_abs,
     "max_evaluations"    maxeval evaluations were spent,
     "max_time"           maxtime seconds were spent,
     "roundoff_limited"   the algorithm could make no further progress because of roundoff,
     "evaluation_failed"  3 evaluations in a row failed, or none succeeded,
     "interrupted"        mbo_interrupt was called,
     "failed"             the algorithm failed (the library's reason is in message), or the
                          callback returned a fatal error;
   message says more in a sentence. */
typedef struct mbo_result {
  double f;                 /* objective at the returned point (NaN when no evaluation succeeded) */
  int evaluations;          /* calls of the callback */
  int gradient_evaluations; /* those with want_grad */
  int iterations;           /* evaluations that improved the best feasible objective */
  int failed_evaluations;   /* calls that returned > 0 or non-finite values */
  char status[32];
  char message[160];
  double seconds;   /* wall-clock time of the run */
  int feasible;     /* the returned point meets every constraint within the feasibility tolerance
                       (1e-8 relative to max(1, |bound|)); 1 without constraints */
  double violation; /* the returned point's largest constraint violation, relative as above (0
                       when feasible to the last bit; NaN when no evaluation succeeded) */
} mbo_result;

typedef struct mbo_optimizer mbo_optimizer;

/* Creates an optimiser for n >= 1 variables with the default settings. Returns NULL and fills err
   (may be NULL) when alg is not an algorithm, n < 1, or memory runs out. Bounds and the callback
   must be set before mbo_run. */
mbo_optimizer* mbo_create(mbo_algorithm alg, int n, mb_error* err);

/* Frees the optimiser; opt may be NULL. */
void mbo_destroy(mbo_optimizer* opt);

/* Sets the box lower[i] < x[i] < upper[i] (n each, finite, not NULL). log_scale (n, may be NULL
   for none) asks for a logarithmic transform of the variables where it is nonzero, which requires
   lower[i] > 0. On error the previous bounds stay and err (may be NULL) says which entry is
   wrong. */
mb_status mbo_set_bounds(mbo_optimizer* opt, const double* lower, const double* upper,
                         const int* log_scale, mb_error* err);

/* Declares ncon >= 0 constraint functionals with lower[i] <= c[i] <= upper[i] (ncon each; may be
   NULL when ncon is 0). Either side may be infinite (-inf, +inf); lower[i] == upper[i] makes an
   equality. Each finite side becomes one inequality of the algorithm, scaled by max(1, |bound|).
   Constraints with a finite side are refused for algorithms without constraints, equalities for
   algorithms that take only inequalities, with a message naming the algorithm. On error the
   previous constraints stay. */
mb_status mbo_set_constraints(mbo_optimizer* opt, int ncon, const double* lower,
                              const double* upper, mb_error* err);

/* Sets the stopping rules from settings (NULL restores the defaults). */
void mbo_set_settings(mbo_optimizer* opt, const mbo_settings* settings);

/* Sets the problem callback and its user data (user may be NULL). */
void mbo_set_eval(mbo_optimizer* opt, mbo_eval fn, void* user);

/* Sets the observer called after every evaluation (fn may be NULL for none). */
void mbo_set_observer(mbo_optimizer* opt, mbo_observer fn, void* user);

/* 1 when the constraint values c (as the callback returns them) meet every constraint within
   the feasibility tolerance of mbo_result (1e-8 relative to max(1, |bound|)); 1 without
   constraints. */
int mbo_feasible(const mbo_optimizer* opt, const double* c);

/* Runs the optimisation. x (n, physical units) is the start, clamped into the bounds, and
   receives the best point evaluated: the feasible point (violation <= 1e-8 relative to
   max(1, |bound|)) of least objective, a violation v within that tolerance counting as
   1e3 max(1, |f|) v, or, when no point was feasible, the least infeasible.
   result (may be NULL) receives the objective there, counts, status and time; err may be NULL.
   Returns MB_OK when the run ended normally, whatever its status; a negative status for invalid
   arguments, a fatal callback error (the callback's code, or MB_ERR_ARGUMENT when it is not an
   mb_status) or lack of memory, in which case x and result still hold the best point so far. */
mb_status mbo_run(mbo_optimizer* opt, double* x, mbo_result* result, mb_error* err);

/* Asks the running optimisation to stop after the current evaluation, with status "interrupted"
   and the best point so far. Async-signal-safe: it only sets a flag, which may be called from a
   signal handler or from the observer. A request made while no run is going stops the next run
   before its first evaluation; the flag is cleared when a run ends. opt may be NULL. */
void mbo_interrupt(mbo_optimizer* opt);

#ifdef __cplusplus
}
#endif

#endif

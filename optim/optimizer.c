/* The optimiser handle over NLopt: the unit-box transform of the variables, constraint
   functionals turned into scaled NLopt inequalities and equalities, one cached evaluation serving
   NLopt's separate objective and constraint calls, failed points, interruption, and the best
   point evaluated. The only code in mbopt that includes nlopt.h (with algorithms.c). */
#include "mbopt/optim.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algorithms.h"

/* consecutive failed evaluations that end a run, and consecutive requests for the point just
   evaluated that mean the algorithm is stuck (legitimately it asks at most twice: value, then
   gradient) */
enum { MAX_CONSECUTIVE_FAILURES = 3, MAX_CONSECUTIVE_REPEATS = 20 };

/* evaluations in a row that improve the best objective by less than ftol_rel or ftol_abs and
   end a gradient-based run on bounds only: NLopt tests its tolerances only on accepted steps, and
   once an objective's noise (from the solver tolerances) is all a line search sees, it can
   backtrack until the budget is spent. With constraints, points that approach feasibility without
   lowering the objective are progress, so the rule does not apply. */
enum { MAX_EVALUATIONS_WITHOUT_PROGRESS = 5 };

/* a point is feasible when every violation, relative to max(1, |bound|), is at most this */
static const double FEASIBILITY_TOL = 1e-8;

/* feasible points compare by f + PENALTY max(1, |f|) violation: a violation within the tolerance
   must not buy a lower objective, or on an equality constraint the best point would slide along
   the constraint by up to the square root of the tolerance */
static const double PENALTY = 1e3;

/* why the wrapper stopped the run */
typedef enum stop_reason {
  STOP_NONE,
  STOP_INTERRUPTED,
  STOP_MAXEVAL,
  STOP_FAILURES,
  STOP_FATAL,
  STOP_NONFINITE_POINT,
  STOP_STALLED,
  STOP_NO_PROGRESS
} stop_reason;

struct mbo_optimizer {
  const mbo_algorithm_info* alg;
  int n;

  /* variables: x = a + u b, or exp(a + u b) where log_scale */
  int have_bounds;
  double* lower;  /* (n) */
  double* upper;  /* (n) */
  double* a;      /* (n) */
  double* b;      /* (n) */
  int* log_scale; /* (n) */

  /* constraint functionals lower <= c <= upper, and the NLopt sides made of them: the nineq
     inequalities first, then the neq equalities; side k is sign (c[con] - bound) / scale */
  int ncon, nineq, neq;
  void* con_block;    /* the one allocation of everything sized by ncon */
  double* con_lower;  /* (ncon) */
  double* con_upper;  /* (ncon) */
  int* side_con;      /* (nineq + neq) */
  double* side_bound; /* (nineq + neq) */
  double* side_sign;  /* (nineq + neq) */
  double* side_scale; /* (nineq + neq) */
  double* side_tol;   /* (nineq + neq) */
  double* side_worst; /* (nineq + neq) largest side value of the run (|value| for equalities) */

  /* problem, observer, stopping rules */
  mbo_settings settings;
  mbo_eval eval;
  void* eval_user;
  mbo_observer observer;
  void* observer_user;
  volatile sig_atomic_t interrupt;

  /* per run: the NLopt handle, counts and why the wrapper stopped */
  nlopt_opt nlopt;
  int evaluations, gradient_evaluations, failed_evaluations, improvements, consecutive_failures;
  int repeats;                       /* consecutive objective requests served by the cache */
  int have_progress, since_progress; /* evaluations since the best objective improved */
  double progress_f;                 /* by more than the tolerances, and that objective */
  double f_lo, f_hi; /* range of the objective over the successful evaluations of the run */
  stop_reason reason;
  int fatal_code;
  char message[160];

  /* the cached evaluation */
  int cache_valid, cache_grad, cache_failed, cache_hit;
  double cache_f;
  double* cache_u;    /* (n) */
  double* cache_x;    /* (n) */
  double* cache_dxdu; /* (n) */
  double* cache_df;   /* (n) */
  double* cache_c;    /* (ncon) */
  double* cache_dc;   /* (ncon x n) */

  /* the best point evaluated */
  int have_best, best_feasible, have_range;
  double best_f, best_violation;
  double* best_x; /* (n) */
  double* best_u; /* (n) */
  double* best_c; /* (ncon) */

  double* run_u; /* (n) the point NLopt works on */
};

void mbo_settings_default(mbo_settings* s) {
  s->ftol_rel = 1e-10;
  s->ftol_abs = 0;
  s->xtol_rel = 1e-8;
  s->maxtime = 0;
  s->maxeval = 200;
}

mbo_optimizer* mbo_create(mbo_algorithm alg, int n, mb_error* err) {
  const mbo_algorithm_info* info = mbo_algorithm_info_of(alg);
  if (!info) {
    mb_error_set(err, MB_ERR_ARGUMENT, "optimizer: algorithm %d is not an mbo_algorithm", (int)alg);
    return NULL;
  }
  if (n < 1 || n > (1 << 24)) {
    mb_error_set(err, MB_ERR_ARGUMENT, "optimizer: n = %d variables, must be in [1, 2^24]", n);
    return NULL;
  }

  /* one allocation: the handle, then the n-sized doubles, then the ints */
  const size_t ndouble = 11 * (size_t)n;
  mbo_optimizer* o = calloc(1, sizeof *o + ndouble * sizeof(double) + (size_t)n * sizeof(int));
  if (!o) {
    mb_error_set(err, MB_ERR_MEMORY, "optimizer: out of memory for n = %d", n);
    return NULL;
  }
  double* d = (double*)(o + 1);
  o->lower = d, d += n;
  o->upper = d, d += n;
  o->a = d, d += n;
  o->b = d, d += n;
  o->cache_u = d, d += n;
  o->cache_x = d, d += n;
  o->cache_dxdu = d, d += n;
  o->cache_df = d, d += n;
  o->best_x = d, d += n;
  o->best_u = d, d += n;
  o->run_u = d, d += n;
  o->log_scale = (int*)d;

  o->alg = info;
  o->n = n;
  mbo_settings_default(&o->settings);
  return o;
}

void mbo_destroy(mbo_optimizer* opt) {
  if (!opt) return;
  free(opt->con_block);
  free(opt);
}

mb_status mbo_set_bounds(mbo_optimizer* opt, const double* lower, const double* upper,
                         const int* log_scale, mb_error* err) {
  if (!opt || !lower || !upper)
    return mb_error_set(err, MB_ERR_ARGUMENT, "bounds: optimizer, lower and upper must be given");

  /* check everything before changing anything */
  for (int i = 0; i < opt->n; i++) {
    if (!isfinite(lower[i]) || !isfinite(upper[i]))
      return mb_error_set(err, MB_ERR_ARGUMENT,
                          "bounds[%d]: [%g, %g] must be finite (the optimiser works on the box)", i,
                          lower[i], upper[i]);
    if (!(lower[i] < upper[i]))
      return mb_error_set(err, MB_ERR_ARGUMENT, "bounds[%d]: lower %g must be < upper %g", i,
                          lower[i], upper[i]);
    if (log_scale && log_scale[i] && !(lower[i] > 0))
      return mb_error_set(err, MB_ERR_ARGUMENT, "bounds[%d]: log scale needs lower > 0, not %g", i,
                          lower[i]);
    const double width =
        log_scale && log_scale[i] ? log(upper[i]) - log(lower[i]) : upper[i] - lower[i];
    if (!(width > 0) || !isfinite(width))
      return mb_error_set(err, MB_ERR_ARGUMENT, "bounds[%d]: [%g, %g] is too narrow or too wide", i,
                          lower[i], upper[i]);
  }

  /* the transform to the unit box */
  for (int i = 0; i < opt->n; i++) {
    opt->lower[i] = lower[i];
    opt->upper[i] = upper[i];
    opt->log_scale[i] = log_scale && log_scale[i];
    opt->a[i] = opt->log_scale[i] ? log(lower[i]) : lower[i];
    opt->b[i] = opt->log_scale[i] ? log(upper[i]) - log(lower[i]) : upper[i] - lower[i];
  }
  opt->have_bounds = 1;
  mb_error_clear(err);
  return MB_OK;
}

/* The algorithms that take what a constraint needs, for error messages. */
static const char* algorithms_with(int kind) {
  return kind == 2 ? "slsqp or cobyla" : "slsqp, cobyla, mma or ccsaq";
}

mb_status mbo_set_constraints(mbo_optimizer* opt, int ncon, const double* lower,
                              const double* upper, mb_error* err) {
  if (!opt) return mb_error_set(err, MB_ERR_ARGUMENT, "constraints: no optimizer");
  if (ncon < 0 || ncon > (1 << 24))
    return mb_error_set(err, MB_ERR_ARGUMENT, "constraints: ncon = %d must be in [0, 2^24]", ncon);
  if (ncon > 0 && (!lower || !upper))
    return mb_error_set(err, MB_ERR_ARGUMENT,
                        "constraints: lower and upper bounds (%d each) must be given", ncon);

  /* check every constraint and count the sides before changing anything */
  const char* name = opt->alg->name;
  int nineq = 0, neq = 0;
  for (int i = 0; i < ncon; i++) {
    const double lo = lower[i], hi = upper[i];
    if (isnan(lo) || isnan(hi) || lo > hi || lo == INFINITY || hi == -INFINITY)
      return mb_error_set(err, MB_ERR_ARGUMENT,
                          "constraints[%d]: bounds [%g, %g] must satisfy -inf <= lower <= upper "
                          "<= +inf with lower < +inf and upper > -inf",
                          i, lo, hi);
    const int equality = lo == hi;
    const int sides = equality ? 0 : isfinite(lo) + isfinite(hi);
    if ((equality || sides) && opt->alg->constraints == 0)
      return mb_error_set(err, MB_ERR_ARGUMENT,
                          "constraints[%d]: %s takes no constraints (bounds only); use %s", i, name,
                          algorithms_with(equality ? 2 : 1));
    if (equality && opt->alg->constraints < 2)
      return mb_error_set(err, MB_ERR_ARGUMENT,
                          "constraints[%d]: equality c = %g, but %s takes only inequalities; use "
                          "%s, or give the constraint a band lower < upper",
                          i, lo, name, algorithms_with(2));
    neq += equality;
    nineq += sides;
  }

  /* one allocation for everything sized by ncon: doubles first, then the ints (one spare double
     keeps it non-empty, so that the pointers below are never offsets from NULL) */
  const int nside = nineq + neq;
  const size_t ndouble = 2 * (size_t)ncon + 5 * (size_t)nside + (size_t)ncon * (opt->n + 2) + 1;
  void* block = calloc(1, ndouble * sizeof(double) + (size_t)nside * sizeof(int));
  if (!block)
    return mb_error_set(err, MB_ERR_MEMORY, "constraints: out of memory for %d constraints", ncon);
  free(opt->con_block);
  opt->con_block = block;
  opt->ncon = ncon, opt->nineq = nineq, opt->neq = neq;
  double* d = block;
  opt->con_lower = d, d += ncon;
  opt->con_upper = d, d += ncon;
  opt->side_bound = d, d += nside;
  opt->side_sign = d, d += nside;
  opt->side_scale = d, d += nside;
  opt->side_tol = d, d += nside;
  opt->side_worst = d, d += nside;
  opt->cache_c = d, d += ncon;
  opt->best_c = d, d += ncon;
  opt->cache_dc = d, d += (size_t)ncon * opt->n;
  opt->side_con = (int*)(d + 1);

  /* the sides: c <= upper as (c - upper) / s <= 0, c >= lower as (lower - c) / s <= 0, and
     equalities as (c - value) / s = 0, with s = max(1, |bound|) so that all weigh alike */
  int k = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < ncon; i++) {
      const double lo = lower[i], hi = upper[i];
      opt->con_lower[i] = lo, opt->con_upper[i] = hi;
      const int equality = lo == hi;
      for (int side = 0; side < 2; side++) {
        const double bound = side ? hi : lo;
        if (pass == 0 ? equality || !isfinite(bound) : !equality || side) continue;
        opt->side_con[k] = i;
        opt->side_bound[k] = bound;
        opt->side_sign[k] = side || equality ? 1 : -1;
        opt->side_scale[k] = fmax(1, fabs(bound));
        opt->side_tol[k] = FEASIBILITY_TOL;
        k++;
      }
    }
  }
  mb_error_clear(err);
  return MB_OK;
}

void mbo_set_settings(mbo_optimizer* opt, const mbo_settings* settings) {
  if (!opt) return;
  if (settings)
    opt->settings = *settings;
  else
    mbo_settings_default(&opt->settings);
}

void mbo_set_eval(mbo_optimizer* opt, mbo_eval fn, void* user) {
  if (!opt) return;
  opt->eval = fn;
  opt->eval_user = user;
}

void mbo_set_observer(mbo_optimizer* opt, mbo_observer fn, void* user) {
  if (!opt) return;
  opt->observer = fn;
  opt->observer_user = user;
}

void mbo_interrupt(mbo_optimizer* opt) {
  if (opt) opt->interrupt = 1;
}

/* Physical x and dx/du at the unit-box point u; x is clamped into the bounds against roundoff. */
static void to_physical(const mbo_optimizer* o, const double* u, double* x, double* dxdu) {
  for (int j = 0; j < o->n; j++) {
    const double t = o->a[j] + u[j] * o->b[j];
    x[j] = o->log_scale[j] ? exp(t) : t;
    dxdu[j] = o->log_scale[j] ? x[j] * o->b[j] : o->b[j];
    x[j] = fmin(fmax(x[j], o->lower[j]), o->upper[j]);
  }
}

/* The unit-box coordinate of a physical value already inside the bounds. */
static double to_unit(const mbo_optimizer* o, int j, double x) {
  const double u = ((o->log_scale[j] ? log(x) : x) - o->a[j]) / o->b[j];
  return fmin(fmax(u, 0), 1);
}

/* Writes "(x0, x1, ...)" into buf, cut with "..." when it does not fit. */
static void format_point(char* buf, size_t size, const double* x, int n) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int j = 0; j < n && used < size; j++)
    used += (size_t)snprintf(buf + used, size - used, "%s%.6g", j ? ", " : "", x[j]);
  if (used < size) used += (size_t)snprintf(buf + used, size - used, ")");
  if (used >= size && size > 4) memcpy(buf + size - 4, "...", 4);
}

/* Largest constraint violation at c, each relative to max(1, |bound|). */
static double violation(const mbo_optimizer* o, const double* c) {
  double v = 0;
  for (int i = 0; i < o->ncon; i++) {
    const double lo = o->con_lower[i], hi = o->con_upper[i];
    if (isfinite(lo)) v = fmax(v, (lo - c[i]) / fmax(1, fabs(lo)));
    if (isfinite(hi)) v = fmax(v, (c[i] - hi) / fmax(1, fabs(hi)));
  }
  return v;
}

int mbo_feasible(const mbo_optimizer* opt, const double* c) {
  return violation(opt, c) <= FEASIBILITY_TOL;
}

/* Keeps the cached evaluation when it beats the best: feasible before infeasible, then the lower
   penalised objective among feasible points or the lower violation among infeasible ones. */
static void record_best(mbo_optimizer* o) {
  const double v = violation(o, o->cache_c), f = o->cache_f;
  const int feasible = v <= FEASIBILITY_TOL;
  int better;
  if (!o->have_best)
    better = 1;
  else if (feasible != o->best_feasible)
    better = feasible;
  else if (feasible) {
    const double mu = PENALTY * fmax(1, fmax(fabs(f), fabs(o->best_f)));
    better = f + mu * v < o->best_f + mu * o->best_violation;
  } else
    better = v < o->best_violation || (v == o->best_violation && f < o->best_f);
  if (!better) return;
  o->improvements += feasible;
  o->have_best = 1;
  o->best_feasible = feasible;
  o->best_f = f;
  o->best_violation = v;
  memcpy(o->best_x, o->cache_x, (size_t)o->n * sizeof(double));
  memcpy(o->best_u, o->cache_u, (size_t)o->n * sizeof(double));
  if (o->ncon) memcpy(o->best_c, o->cache_c, (size_t)o->ncon * sizeof(double));
}

/* Widens the ranges of the objective and of the constraint sides by the cached evaluation; they
   give failed points finite values for the algorithms that need them. */
static void record_range(mbo_optimizer* o) {
  const int first = o->have_range == 0;
  o->f_lo = first ? o->cache_f : fmin(o->f_lo, o->cache_f);
  o->f_hi = first ? o->cache_f : fmax(o->f_hi, o->cache_f);
  for (int k = 0; k < o->nineq + o->neq; k++) {
    double v = o->side_sign[k] / o->side_scale[k] * (o->cache_c[o->side_con[k]] - o->side_bound[k]);
    if (k >= o->nineq) v = fabs(v);
    o->side_worst[k] = first ? v : fmax(o->side_worst[k], v);
  }
  o->have_range = 1;
}

/* Counts the evaluations since the best objective last improved by more than
   max(ftol_rel |f|, ftol_abs). */
static void track_progress(mbo_optimizer* o, int failed) {
  if (!failed) {
    const double f = o->cache_f;
    const double tol = fmax(o->settings.ftol_rel * fabs(o->progress_f), o->settings.ftol_abs);
    if (!o->have_progress || f < o->progress_f - tol) {
      o->have_progress = 1, o->progress_f = f, o->since_progress = 0;
      return;
    }
  }
  if (o->have_progress) o->since_progress++;
}

/* Asks NLopt to stop, keeping the first reason; returns 1 (the point is not usable). */
static int stop(mbo_optimizer* o, stop_reason reason) {
  if (o->reason == STOP_NONE) o->reason = reason;
  nlopt_force_stop(o->nlopt);
  return 1;
}

static int all_finite(const double* v, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

/* Makes the cache hold the evaluation at u, with gradients when want_grad, calling the problem
   only when the cached point differs bitwise or lacks the gradients. Returns 0 when the cached
   point is usable, 1 when it failed or was not evaluated because the run is stopping. */
static int evaluate(mbo_optimizer* o, const double* u, int want_grad) {
  const int n = o->n, ncon = o->ncon;

  /* a stopping run evaluates nothing more; a failed point is not retried for its gradient */
  if (o->reason != STOP_NONE) return 1;
  o->cache_hit = o->cache_valid && !memcmp(o->cache_u, u, (size_t)n * sizeof *u) &&
                 (o->cache_failed || o->cache_grad || !want_grad);
  if (o->cache_hit) return o->cache_failed;

  /* the best point serves values too: COBYLA asks for its best vertex again */
  if (!want_grad && o->have_best && !memcmp(o->best_u, u, (size_t)n * sizeof *u)) {
    memcpy(o->cache_u, u, (size_t)n * sizeof *u);
    to_physical(o, u, o->cache_x, o->cache_dxdu);
    o->cache_f = o->best_f;
    if (ncon) memcpy(o->cache_c, o->best_c, (size_t)ncon * sizeof(double));
    o->cache_valid = o->cache_hit = 1;
    o->cache_grad = o->cache_failed = 0;
    return 0;
  }

  /* a pending request or a spent budget stops before spending an evaluation */
  if (o->interrupt) return stop(o, STOP_INTERRUPTED);
  if (o->settings.maxeval > 0 && o->evaluations >= o->settings.maxeval)
    return stop(o, STOP_MAXEVAL);
  if (!all_finite(u, (size_t)n)) return stop(o, STOP_NONFINITE_POINT);

  /* evaluate; a success with non-finite numbers is a failed point too */
  memcpy(o->cache_u, u, (size_t)n * sizeof *u);
  to_physical(o, u, o->cache_x, o->cache_dxdu);
  o->cache_valid = 1;
  o->cache_grad = want_grad;
  o->cache_f = NAN;
  const int rc =
      o->eval(o->cache_x, want_grad, &o->cache_f, want_grad ? o->cache_df : NULL,
              ncon ? o->cache_c : NULL, want_grad && ncon ? o->cache_dc : NULL, o->eval_user);
  /* a point whose evaluation an interruption cut short was not evaluated: neither counted nor
     observed, so that a resumed run evaluates it again */
  if (rc > 0 && o->interrupt) {
    o->cache_valid = 0;
    return stop(o, STOP_INTERRUPTED);
  }
  o->evaluations++;
  o->gradient_evaluations += want_grad != 0;
  int failed = rc != 0 || !isfinite(o->cache_f) || !all_finite(o->cache_c, (size_t)ncon);
  if (!failed && want_grad)
    failed = !all_finite(o->cache_df, (size_t)n) || !all_finite(o->cache_dc, (size_t)ncon * n);
  o->cache_failed = failed;
  if (failed) {
    o->failed_evaluations++;
    o->consecutive_failures++;
  } else {
    o->consecutive_failures = 0;
    record_best(o);
    record_range(o);
  }
  track_progress(o, failed);
  if (o->observer)
    o->observer(o->evaluations, o->cache_x, o->cache_f, ncon ? o->cache_c : NULL, want_grad, failed,
                o->observer_user);

  /* a fatal error, too many failures in a row, or a request from the observer ends the run */
  char point[88];
  if (rc < 0) {
    format_point(point, sizeof point, o->cache_x, n);
    o->fatal_code = rc;
    snprintf(o->message, sizeof o->message, "the callback returned %d (fatal) at x = %s", rc,
             point);
    stop(o, STOP_FATAL);
  } else if (failed && o->consecutive_failures >= MAX_CONSECUTIVE_FAILURES) {
    format_point(point, sizeof point, o->cache_x, n);
    snprintf(o->message, sizeof o->message, "%d evaluations in a row failed, the last at x = %s",
             o->consecutive_failures, point);
    stop(o, STOP_FAILURES);
  } else if (o->interrupt) {
    stop(o, STOP_INTERRUPTED);
  } else if (o->alg->gradient && ncon == 0 &&
             (o->settings.ftol_rel > 0 || o->settings.ftol_abs > 0) &&
             o->since_progress >= MAX_EVALUATIONS_WITHOUT_PROGRESS) {
    stop(o, STOP_NO_PROGRESS);
  }
  return failed;
}

/* The objective NLopt sees at a failed point. +inf, with a zero gradient, makes every algorithm
   reject the point: line searches backtrack (lbfgs, slsqp, tnewton), MMA and CCSAQ raise their
   penalties and shorten the step, simplex methods drop the vertex. BOBYQA and COBYLA interpolate
   models through every value, which one infinity turns into NaN: they see a finite value worse
   than any of the run instead, the highest objective plus the spread. */
static double failed_objective(const mbo_optimizer* o) {
  if (!o->alg->finite || !o->have_range) return HUGE_VAL;
  return o->f_hi + fmax(o->f_hi - o->f_lo, 1e-6 * fmax(1, fabs(o->f_hi)));
}

/* NLopt objective on the unit box. */
static double objective(unsigned n, const double* u, double* grad, void* data) {
  mbo_optimizer* o = data;
  const int failed = evaluate(o, u, grad != NULL);

  /* an algorithm asking again and again for the point it has just had is stuck */
  o->repeats = o->cache_hit ? o->repeats + 1 : 0;
  if (o->repeats >= MAX_CONSECUTIVE_REPEATS) stop(o, STOP_STALLED);

  if (grad)
    for (unsigned j = 0; j < n; j++) grad[j] = failed ? 0 : o->cache_df[j] * o->cache_dxdu[j];
  return failed ? failed_objective(o) : o->cache_f;
}

/* The sides [first, first + m) of the constraints on the unit box, gradients m x n row-major.
   A failed point reads as violating every side by +inf, or, for the algorithms that need finite
   values, as the worst value the side has had in the run (at least 0, active). */
static void sides(mbo_optimizer* o, int first, unsigned m, double* result, unsigned n,
                  const double* u, double* grad) {
  const int failed = evaluate(o, u, grad != NULL);
  for (unsigned k = 0; k < m; k++) {
    const int s = first + (int)k, i = o->side_con[s];
    const double w = o->side_sign[s] / o->side_scale[s];
    if (failed)
      result[k] = o->alg->finite && o->have_range ? fmax(o->side_worst[s], 0) : HUGE_VAL;
    else
      result[k] = w * (o->cache_c[i] - o->side_bound[s]);
    if (!grad) continue;
    for (unsigned j = 0; j < n; j++)
      grad[k * n + j] = failed ? 0 : w * o->cache_dc[(size_t)i * n + j] * o->cache_dxdu[j];
  }
}

static void inequalities(unsigned m, double* result, unsigned n, const double* u, double* grad,
                         void* data) {
  sides(data, 0, m, result, n, u, grad);
}

static void equalities(unsigned m, double* result, unsigned n, const double* u, double* grad,
                       void* data) {
  mbo_optimizer* o = data;
  sides(o, o->nineq, m, result, n, u, grad);
}

/* Whether a callback's return code is one of the mb_status codes. */
static int is_status(int code) {
  switch (code) {
#define MBO_STATUS_CASE(name, value, text) \
  case value:                              \
    return 1;
    MB_STATUS_LIST(MBO_STATUS_CASE)
#undef MBO_STATUS_CASE
  }
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Configures a fresh NLopt handle for a run; returns NLopt's first error, or NLOPT_SUCCESS. */
static nlopt_result configure(mbo_optimizer* o, nlopt_opt nl) {
  const mbo_settings* s = &o->settings;
  nlopt_result r = nlopt_set_lower_bounds1(nl, 0);
  if (r > 0) r = nlopt_set_upper_bounds1(nl, 1);
  if (r > 0) r = nlopt_set_min_objective(nl, objective, o);
  if (r > 0 && o->nineq)
    r = nlopt_add_inequality_mconstraint(nl, (unsigned)o->nineq, inequalities, o, o->side_tol);
  if (r > 0 && o->neq)
    r = nlopt_add_equality_mconstraint(nl, (unsigned)o->neq, equalities, o, o->side_tol + o->nineq);
  if (r > 0) r = nlopt_set_ftol_rel(nl, s->ftol_rel > 0 ? s->ftol_rel : 0);
  if (r > 0) r = nlopt_set_ftol_abs(nl, s->ftol_abs > 0 ? s->ftol_abs : 0);
  /* u lies in the unit box, so xtol_rel is also the absolute step tolerance */
  if (r > 0) r = nlopt_set_xtol_rel(nl, s->xtol_rel > 0 ? s->xtol_rel : 0);
  if (r > 0) r = nlopt_set_xtol_abs1(nl, s->xtol_rel > 0 ? s->xtol_rel : 0);
  if (r > 0) r = nlopt_set_maxtime(nl, s->maxtime > 0 ? s->maxtime : 0);
  /* maxeval is counted by the wrapper, in calls of the callback rather than NLopt's requests */
  return r;
}

/* Status and message of a finished run from NLopt's result and the wrapper's own stop reason. */
static void describe(const mbo_optimizer* o, nlopt_result r, nlopt_opt nl, mbo_result* res) {
  const char* status = "failed";
  char msg[sizeof res->message];
  char point[88];
  if (o->reason != STOP_NONE) {
    switch (o->reason) {
      case STOP_INTERRUPTED:
        status = "interrupted";
        snprintf(msg, sizeof msg, "interrupted after %d evaluations", o->evaluations);
        break;
      case STOP_MAXEVAL:
        status = "max_evaluations";
        snprintf(msg, sizeof msg, "maxeval = %d evaluations spent", o->settings.maxeval);
        break;
      case STOP_FAILURES:
        status = "evaluation_failed";
        snprintf(msg, sizeof msg, "%s", o->message);
        break;
      case STOP_FATAL:
        snprintf(msg, sizeof msg, "%s", o->message);
        break;
      case STOP_NO_PROGRESS:
        status = "converged";
        snprintf(msg, sizeof msg,
                 "%d evaluations in a row improved the objective by less than ftol_rel = %g "
                 "or ftol_abs = %g",
                 MAX_EVALUATIONS_WITHOUT_PROGRESS, o->settings.ftol_rel, o->settings.ftol_abs);
        break;
      case STOP_STALLED:
        status = "roundoff_limited";
        snprintf(msg, sizeof msg,
                 "%s asked %d times in a row for the point it had just evaluated: no progress",
                 o->alg->name, MAX_CONSECUTIVE_REPEATS);
        break;
      default:
        snprintf(msg, sizeof msg, "%s proposed a non-finite point", o->alg->name);
        break;
    }
  } else if (!o->have_best && o->failed_evaluations > 0) {
    /* the algorithm gave up on its own, but never saw a point that worked */
    status = "evaluation_failed";
    format_point(point, sizeof point, o->cache_x, o->n);
    snprintf(msg, sizeof msg, "none of the %d evaluations succeeded; the last failed at x = %s",
             o->evaluations, point);
  } else {
    switch (r) {
      case NLOPT_SUCCESS:
        status = "converged";
        snprintf(msg, sizeof msg, "%s reported success", o->alg->name);
        break;
      case NLOPT_STOPVAL_REACHED:
        status = "converged";
        snprintf(msg, sizeof msg, "the objective reached stopval");
        break;
      case NLOPT_FTOL_REACHED:
        status = "converged";
        snprintf(msg, sizeof msg,
                 "the objective changed by less than ftol_rel = %g or ftol_abs = %g",
                 o->settings.ftol_rel, o->settings.ftol_abs);
        break;
      case NLOPT_XTOL_REACHED:
        status = "converged";
        snprintf(msg, sizeof msg, "the step in the unit box was below xtol_rel = %g",
                 o->settings.xtol_rel);
        break;
      case NLOPT_MAXEVAL_REACHED:
        status = "max_evaluations";
        snprintf(msg, sizeof msg, "%s spent its budget of %d requests", o->alg->name,
                 nlopt_get_numevals(nl));
        break;
      case NLOPT_MAXTIME_REACHED:
        status = "max_time";
        snprintf(msg, sizeof msg, "maxtime = %g s spent", o->settings.maxtime);
        break;
      case NLOPT_ROUNDOFF_LIMITED:
        status = "roundoff_limited";
        snprintf(msg, sizeof msg, "%s could make no further progress because of roundoff",
                 o->alg->name);
        break;
      default: {
        const char* why = nl ? nlopt_get_errmsg(nl) : NULL;
        snprintf(msg, sizeof msg, "%s failed (NLopt %s)%s%s", o->alg->name,
                 nlopt_result_to_string(r), why ? ": " : "", why ? why : "");
        break;
      }
    }
  }
  snprintf(res->status, sizeof res->status, "%s", status);
  snprintf(res->message, sizeof res->message, "%s", msg);
}

mb_status mbo_run(mbo_optimizer* opt, double* x, mbo_result* result, mb_error* err) {
  mbo_result local;
  if (!result) result = &local;
  memset(result, 0, sizeof *result);
  result->f = result->violation = NAN;
  snprintf(result->status, sizeof result->status, "failed");
  if (!opt || !x) return mb_error_set(err, MB_ERR_ARGUMENT, "run: optimizer and x must be given");
  if (!opt->have_bounds)
    return mb_error_set(err, MB_ERR_ARGUMENT, "run: no bounds; call mbo_set_bounds first");
  if (!opt->eval)
    return mb_error_set(err, MB_ERR_ARGUMENT, "run: no problem; call mbo_set_eval first");
  for (int j = 0; j < opt->n; j++)
    if (isnan(x[j])) return mb_error_set(err, MB_ERR_ARGUMENT, "run: start x[%d] is NaN", j);

  const double start = now();
  mb_status st = MB_OK;
  mb_error_clear(err);

  /* fresh counts, cache and best point */
  opt->evaluations = opt->gradient_evaluations = opt->failed_evaluations = 0;
  opt->improvements = opt->consecutive_failures = opt->repeats = 0;
  opt->have_progress = opt->since_progress = 0;
  opt->have_range = 0;
  opt->reason = STOP_NONE;
  opt->fatal_code = 0;
  opt->message[0] = '\0';
  opt->cache_valid = opt->cache_hit = 0;
  opt->have_best = 0;

  /* the start, clamped into the box, in the unit box */
  double* u = opt->run_u;
  for (int j = 0; j < opt->n; j++) {
    x[j] = fmin(fmax(x[j], opt->lower[j]), opt->upper[j]);
    u[j] = to_unit(opt, j, x[j]);
  }

  nlopt_result r = NLOPT_OUT_OF_MEMORY;
  nlopt_opt nl = nlopt_create(opt->alg->nlopt, (unsigned)opt->n);
  if (!nl) {
    st = mb_error_set(err, MB_ERR_MEMORY, "run: out of memory for NLopt");
    goto cleanup;
  }
  opt->nlopt = nl;
  r = configure(opt, nl);
  if (r > 0) {
    double fmin = HUGE_VAL;
    r = nlopt_optimize(nl, u, &fmin);
  }
  describe(opt, r, nl, result);

  /* errors: a fatal callback, or NLopt refusing its arguments or memory */
  if (opt->reason == STOP_FATAL) {
    st = is_status(opt->fatal_code) ? (mb_status)opt->fatal_code : MB_ERR_ARGUMENT;
    mb_error_set(err, st, "run: %s", opt->message);
  } else if (opt->reason == STOP_NONE && (r == NLOPT_INVALID_ARGS || r == NLOPT_OUT_OF_MEMORY)) {
    st = mb_error_set(err, r == NLOPT_OUT_OF_MEMORY ? MB_ERR_MEMORY : MB_ERR_ARGUMENT, "run: %s",
                      result->message);
  }

cleanup:
  /* the best point evaluated, else the clamped start */
  if (opt->have_best) {
    memcpy(x, opt->best_x, (size_t)opt->n * sizeof *x);
    result->f = opt->best_f;
    result->feasible = opt->best_feasible, result->violation = opt->best_violation;
  }
  result->evaluations = opt->evaluations;
  result->gradient_evaluations = opt->gradient_evaluations;
  result->iterations = opt->improvements;
  result->failed_evaluations = opt->failed_evaluations;
  result->seconds = now() - start;
  nlopt_destroy(nl);
  opt->nlopt = NULL;
  opt->interrupt = 0;
  return st;
}

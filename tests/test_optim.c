/* The optimiser layer, like NLopt's own test suite: a table of problems with known optima run over
   the grid of algorithms that take them, then failed evaluations, the observer, interruption,
   the evaluation cache, fatal callbacks, budgets (maxeval, maxtime, stalls) and invalid
   arguments.

   The error of a solution is max_j |x_j - x*_j| / max(1, |x*_j|). Gradient-based algorithms are
   held to 1e-6. Gradient-free ones are held to looser bounds, per algorithm: they stop on the
   size of their trust region or simplex, which is not the distance to the optimum, and their
   last digits cost many evaluations (see tolerance[] below). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mbopt/optim.h"
#include "testing.h"

#define NMAX 5
#define NALG 9

/* ---------------------------------------------------------------- problems with known optima */

static int rosenbrock(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                      void* user) {
  const double a = x[1] - x[0] * x[0], b = 1 - x[0];
  *f = 100 * a * a + b * b;
  if (want_grad) {
    df[0] = -400 * x[0] * a - 2 * b;
    df[1] = 200 * a;
  }
  return 0;
}

static const double shift[5] = {1, -2, 3, 0.5, -0.25}, weight[5] = {1, 2, 5, 10, 0.5};

static int quadratic(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                     void* user) {
  *f = 0;
  for (int j = 0; j < 5; j++) {
    *f += weight[j] * (x[j] - shift[j]) * (x[j] - shift[j]);
    if (want_grad) df[j] = 2 * weight[j] * (x[j] - shift[j]);
  }
  return 0;
}

/* the quadratic's gradient, but every evaluation returns a slightly higher value than the one
   before: no point ever improves on the start, so line searches backtrack without end */
static int worse_every_time(const double* x, int want_grad, double* f, double* df, double* c,
                            double* dc, void* user) {
  int* calls = user;
  quadratic(x, want_grad, f, df, c, dc, NULL);
  *f = 100 + 1e-3 * ++*calls;
  return 0;
}

/* (log10 x - 2)^2 on [1e-3, 1e6]: the optimum x = 100 sits at 5/9 of the log scale */
static int logquad(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                   void* user) {
  const double e = log10(x[0]) - 2;
  *f = e * e;
  if (want_grad) df[0] = 2 * e / (x[0] * log(10.0));
  return 0;
}

/* NLopt's tutorial: sqrt(x2) subject to x2 >= (2 x1)^3 and x2 >= (1 - x1)^3 */
static int tutorial(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                    void* user) {
  *f = sqrt(x[1]);
  c[0] = x[1] - pow(2 * x[0], 3);
  c[1] = x[1] - pow(1 - x[0], 3);
  if (want_grad) {
    df[0] = 0, df[1] = 0.5 / sqrt(x[1]);
    dc[0] = -6 * pow(2 * x[0], 2), dc[1] = 1;
    dc[2] = 3 * pow(1 - x[0], 2), dc[3] = 1;
  }
  return 0;
}

/* x1 + x2 on the circle x1^2 + x2^2 = 2, with x1 - x2 <= 0.5 (inactive at the optimum) */
static int circle(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                  void* user) {
  *f = x[0] + x[1];
  c[0] = x[0] * x[0] + x[1] * x[1];
  c[1] = x[0] - x[1];
  if (want_grad) {
    df[0] = df[1] = 1;
    dc[0] = 2 * x[0], dc[1] = 2 * x[1];
    dc[2] = 1, dc[3] = -1;
  }
  return 0;
}

/* x1^2 + 2 x2^2 + 3 x3^2 on the plane x1 + x2 + x3 = 1, with the band -1 <= x1 - x2 <= 0.2
   (active: without it x = (6, 3, 2) / 11; with it the multipliers give x = (38, 23, 14) / 75) */
static int plane(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                 void* user) {
  *f = x[0] * x[0] + 2 * x[1] * x[1] + 3 * x[2] * x[2];
  c[0] = x[0] + x[1] + x[2];
  c[1] = x[0] - x[1];
  if (want_grad) {
    df[0] = 2 * x[0], df[1] = 4 * x[1], df[2] = 6 * x[2];
    dc[0] = dc[1] = dc[2] = 1;
    dc[3] = 1, dc[4] = -1, dc[5] = 0;
  }
  return 0;
}

/* error bound on x per algorithm, in the order of mbo_algorithm */
static const double tolerance[NALG] = {
    1e-6, 1e-6, 1e-6, 1e-6, 1e-6, /* lbfgs slsqp mma ccsaq tnewton */
    1e-5,                         /* bobyqa: quadratic models, stops on its trust radius */
    1e-4,                         /* cobyla: linear models converge slowly near the optimum */
    1e-4, 1e-4                    /* neldermead, sbplx: simplex size is not the error */
};

typedef struct problem {
  const char* name;
  mbo_eval eval;
  int n, ncon, maxeval;
  double xtol_rel;    /* 0 for the default */
  double loose[NALG]; /* nonzero: a looser bound than tolerance[] for this problem */
  double lower[NMAX], upper[NMAX];
  int log_scale[NMAX];
  double c_lower[2], c_upper[2];
  double start[NMAX], xopt[NMAX];
} problem;

/* Rosenbrock: mma, ccsaq and cobyla crawl along the curved valley (NLopt's MMA stops at 3e-5
   after 5800 evaluations without our layer too); mma and ccsaq are held to 1e-4 there. The
   tutorial: MMA and CCSAQ approach the active constraints in ever shorter steps, and xtol_rel =
   1e-8 stops them at 4e-6; xtol_rel = 1e-10 lets them reach 1e-8. */
static const problem problems[] = {
    {.name = "rosenbrock",
     .eval = rosenbrock,
     .n = 2,
     .maxeval = 10000,
     .loose = {[MBO_MMA] = 1e-4, [MBO_CCSAQ] = 1e-4},
     .lower = {-2, -2},
     .upper = {2, 2},
     .start = {-1.2, 1},
     .xopt = {1, 1}},
    {.name = "quadratic5",
     .eval = quadratic,
     .n = 5,
     .maxeval = 3000,
     .lower = {-5, -5, -5, -5, -5},
     .upper = {5, 5, 5, 5, 5},
     .start = {4, 4, 4, 4, 4},
     .xopt = {1, -2, 3, 0.5, -0.25}},
    {.name = "logscale",
     .eval = logquad,
     .n = 1,
     .maxeval = 500,
     .lower = {1e-3},
     .upper = {1e6},
     .log_scale = {1},
     .start = {1},
     .xopt = {100}},
    {.name = "tutorial",
     .eval = tutorial,
     .n = 2,
     .ncon = 2,
     .maxeval = 2000,
     .xtol_rel = 1e-10,
     .lower = {-1, 1e-6},
     .upper = {2, 8},
     .c_lower = {0, 0},
     .c_upper = {INFINITY, INFINITY},
     .start = {1.234, 5.678},
     .xopt = {1.0 / 3, 8.0 / 27}},
    {.name = "circle",
     .eval = circle,
     .n = 2,
     .ncon = 2,
     .maxeval = 2000,
     .lower = {-3, -3},
     .upper = {3, 3},
     .c_lower = {2, -INFINITY},
     .c_upper = {2, 0.5},
     .start = {-0.5, 1.2},
     .xopt = {-1, -1}},
    {.name = "plane",
     .eval = plane,
     .n = 3,
     .ncon = 2,
     .maxeval = 2000,
     .lower = {-2, -2, -2},
     .upper = {2, 2, 2},
     .c_lower = {1, -1},
     .c_upper = {1, 0.2},
     .start = {0, 0, 0},
     .xopt = {38.0 / 75, 23.0 / 75, 14.0 / 75}},
};
enum { NPROBLEM = sizeof problems / sizeof problems[0] };

/* Whether the algorithm takes the problem's constraints. */
static int applies(const problem* p, mbo_algorithm alg) {
  int need = 0;
  for (int i = 0; i < p->ncon; i++) {
    int kind = p->c_lower[i] == p->c_upper[i] ? 2 : 1;
    if (kind > need) need = kind;
  }
  return mbo_algorithm_constraints(alg) >= need;
}

static double x_error(const double* x, const double* xopt, int n) {
  double e = 0;
  for (int j = 0; j < n; j++) e = fmax(e, fabs(x[j] - xopt[j]) / fmax(1, fabs(xopt[j])));
  return e;
}

/* Sets up an optimiser on a problem; NULL (with a FAIL line) when that fails. */
static mbo_optimizer* setup(const problem* p, mbo_algorithm alg, mbo_eval eval, void* user,
                            int maxeval) {
  mb_error err;
  mbo_optimizer* o = mbo_create(alg, p->n, &err);
  if (o && mbo_set_bounds(o, p->lower, p->upper, p->log_scale, &err) == MB_OK &&
      mbo_set_constraints(o, p->ncon, p->c_lower, p->c_upper, &err) == MB_OK) {
    mbo_settings s;
    mbo_settings_default(&s);
    s.maxeval = maxeval;
    if (p->xtol_rel > 0) s.xtol_rel = p->xtol_rel;
    mbo_set_settings(o, &s);
    mbo_set_eval(o, eval, user);
    return o;
  }
  printf("FAIL setup %s / %s: %s\n", p->name, mbo_algorithm_name(alg), err.message);
  mbo_destroy(o);
  return NULL;
}

static void test_grid(mbt_tally* t) {
  char what[160];
  printf("\n%-11s %-11s %10s %6s %6s %6s  %s\n", "problem", "algorithm", "error", "evals", "grads",
         "iters", "status");
  for (int ip = 0; ip < NPROBLEM; ip++) {
    const problem* p = &problems[ip];
    for (int a = 0; a < NALG; a++) {
      if (!applies(p, (mbo_algorithm)a)) continue;
      mbo_optimizer* o = setup(p, (mbo_algorithm)a, p->eval, NULL, p->maxeval);
      if (!o) {
        t->failed++;
        continue;
      }
      double x[NMAX];
      memcpy(x, p->start, sizeof x);
      mbo_result r;
      mb_error err;
      mb_status st = mbo_run(o, x, &r, &err);
      double e = st == MB_OK ? x_error(x, p->xopt, p->n) : INFINITY;
      printf("%-11s %-11s %10.2e %6d %6d %6d  %s: %s\n", p->name, mbo_algorithm_name(a), e,
             r.evaluations, r.gradient_evaluations, r.iterations, r.status, r.message);
      snprintf(what, sizeof what, "%s / %s: x error (%s)", p->name, mbo_algorithm_name(a),
               r.status);
      const double limit = p->loose[a] > 0 ? p->loose[a] : tolerance[a];
      mbt_check(t, e <= limit, what, e, limit);
      mbo_destroy(o);
    }
  }
}

/* The returned point's feasibility: the starts of circle and plane violate their equality by
   (2 - 1.69) / 2 = 0.155 and (1 - 0) / 1 = 1 (relative to max(1, |bound|)); one evaluation
   returns the start, a whole run a feasible optimum. */
static void test_feasibility(mbt_tally* t) {
  const struct {
    int problem;
    double start_violation;
  } cases[] = {{4, 0.155}, {5, 1.0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const problem* p = &problems[cases[k].problem];
    const int budgets[2] = {1, p->maxeval};
    for (int b = 0; b < 2; b++) {
      mbo_optimizer* o = setup(p, MBO_SLSQP, p->eval, NULL, budgets[b]);
      double x[NMAX];
      memcpy(x, p->start, sizeof x);
      mbo_result r;
      mb_error err;
      const int ran = o && mbo_run(o, x, &r, &err) == MB_OK;
      mbo_destroy(o);
      char what[96];
      snprintf(what, sizeof what, "%s, maxeval %d: violation", p->name, budgets[b]);
      if (b == 0)
        mbt_check(t, ran && !r.feasible && fabs(r.violation - cases[k].start_violation) < 1e-12,
                  what, ran ? r.violation : NAN, cases[k].start_violation);
      else
        mbt_check(t, ran && r.feasible && r.violation <= 1e-8, what, ran ? r.violation : NAN, 1e-8);
    }
  }
  /* the rule alone, on the plane's constraints: x1 + x2 + x3 = 1 and -1 <= x1 - x2 <= 0.2 */
  mbo_optimizer* rule = setup(&problems[5], MBO_SLSQP, problems[5].eval, NULL, 1);
  const double at_optimum[2] = {1, 0.2}, within[2] = {1 + 5e-9, 0.2}, off[2] = {1 + 2e-8, 0.2};
  mbt_check(t,
            rule && mbo_feasible(rule, at_optimum) && mbo_feasible(rule, within) &&
                !mbo_feasible(rule, off),
            "mbo_feasible: on the bounds, 5e-9 off, not 2e-8 off", 0, 0);
  mbo_destroy(rule);

  /* without constraints every point is feasible */
  mbo_optimizer* o = setup(&problems[0], MBO_LBFGS, problems[0].eval, NULL, 1);
  double x[NMAX];
  memcpy(x, problems[0].start, sizeof x);
  mbo_result r;
  mb_error err;
  const int ran = o && mbo_run(o, x, &r, &err) == MB_OK;
  mbt_check(t, ran && r.feasible && r.violation == 0, "rosenbrock: feasible",
            ran ? r.violation : NAN, 0);
  mbo_destroy(o);
}

/* -------------------------------------------------------- a probe counting and failing calls */

typedef struct probe {
  mbo_eval inner;
  int mode; /* 0 pass through, 1 fail in the region, 2 always fail, 3 NaN f in the region
               (a "success"), 4 fatal from call fatal_at on */
  double ok_lo[2], ok_hi[2]; /* the region is outside the box ok_lo <= x <= ok_hi */
  int fatal_at;
  int calls, grad_calls;
  /* the points seen, for the cache test */
  int npoint, repeats;
  double point[4096][NMAX];
  int point_grad[4096];
  int n;
} probe;

static int inside(const double* x, const double* lo, const double* hi) {
  return x[0] >= lo[0] && x[0] <= hi[0] && x[1] >= lo[1] && x[1] <= hi[1];
}

static int probed(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                  void* user) {
  probe* pr = user;
  pr->calls++;
  pr->grad_calls += want_grad != 0;

  /* a call at a point already evaluated is a repeat unless it adds the gradient */
  for (int k = 0; k < pr->npoint; k++) {
    if (memcmp(pr->point[k], x, (size_t)pr->n * sizeof *x)) continue;
    if (!want_grad || pr->point_grad[k]) pr->repeats++;
    pr->point_grad[k] |= want_grad;
    k = pr->npoint;
    goto evaluate;
  }
  if (pr->npoint < 4096) {
    memcpy(pr->point[pr->npoint], x, (size_t)pr->n * sizeof *x);
    pr->point_grad[pr->npoint++] = want_grad;
  }
evaluate:
  if (pr->mode == 2) return 1;
  if (pr->mode == 4 && pr->calls >= pr->fatal_at) return MB_ERR_SINGULAR;
  if ((pr->mode == 1 || pr->mode == 3) && !inside(x, pr->ok_lo, pr->ok_hi)) {
    if (pr->mode == 1) return 1;
    *f = NAN;
    return 0;
  }
  return pr->inner(x, want_grad, f, df, c, dc, NULL);
}

static int valid_status(const char* s) {
  static const char* all[] = {
      "converged",         "max_evaluations", "max_time", "roundoff_limited",
      "evaluation_failed", "interrupted",     "failed"};
  for (int i = 0; i < 7; i++)
    if (!strcmp(s, all[i])) return 1;
  return 0;
}

/* A problem failing outside the box ok_lo <= x <= ok_hi, which holds the optimum: every algorithm
   ends cleanly with a status and returns a point that worked. Rosenbrock fails above x1 = 1.25 or
   x2 = 1.6, the tutorial below x2 = 0.1 (where the first steps of slsqp and cobyla go). */
static void test_failed_region(mbt_tally* t, int ip, int mode, double lo0, double lo1, double hi0,
                               double hi1) {
  char what[160];
  const problem* p = &problems[ip];
  for (int a = 0; a < NALG; a++) {
    if (!applies(p, (mbo_algorithm)a)) continue;
    probe pr = {
        .inner = p->eval, .mode = mode, .ok_lo = {lo0, lo1}, .ok_hi = {hi0, hi1}, .n = p->n};
    mbo_optimizer* o = setup(p, (mbo_algorithm)a, probed, &pr, p->maxeval);
    double x[NMAX];
    memcpy(x, p->start, sizeof x);
    mbo_result r;
    mb_error err;
    mb_status st = mbo_run(o, x, &r, &err);
    const int returned_ok = inside(x, pr.ok_lo, pr.ok_hi) && isfinite(r.f);
    const double e = x_error(x, p->xopt, p->n);
    printf("     %-11s error %.2e, %d evaluations, %d failed: %s: %s\n", mbo_algorithm_name(a), e,
           r.evaluations, r.failed_evaluations, r.status, r.message);
    snprintf(what, sizeof what, "%s %s / %s: ends with a status, good x (%s)", p->name,
             mode == 1 ? "failing" : "NaN", mbo_algorithm_name(a), r.status);
    mbt_check(t, st == MB_OK && valid_status(r.status) && returned_ok, what, r.failed_evaluations,
              r.evaluations);
    mbo_destroy(o);
  }
}

/* A callback that always fails: every algorithm stops after 3 with "evaluation_failed", the start
   returned and f NaN. */
static void test_always_failing(mbt_tally* t) {
  char what[160];
  const problem* p = &problems[0];
  for (int a = 0; a < NALG; a++) {
    probe pr = {.inner = p->eval, .mode = 2, .n = p->n};
    mbo_optimizer* o = setup(p, (mbo_algorithm)a, probed, &pr, p->maxeval);
    double x[NMAX] = {-1.2, 1};
    mbo_result r;
    mb_status st = mbo_run(o, x, &r, NULL);
    const int ok = st == MB_OK && !strcmp(r.status, "evaluation_failed") && r.evaluations <= 3 &&
                   r.failed_evaluations == r.evaluations && isnan(r.f) && x[0] == -1.2 &&
                   x[1] == 1 && strstr(r.message, "x = (");
    snprintf(what, sizeof what, "always failing / %s: evaluation_failed after 3 or fewer",
             mbo_algorithm_name(a));
    mbt_check(t, ok, what, r.evaluations, 3);
    if (!ok) printf("     %s: %s\n", r.status, r.message);
    mbo_destroy(o);
  }
}

/* ------------------------------------------------------------------------------ interruption */

typedef struct watcher {
  mbo_optimizer* o;
  int stop_at, seen;
  double best_f, best_x[NMAX];
  int n;
} watcher;

static void watch(int evaluation, const double* x, double f, const double* c, int with_gradient,
                  int failed, void* user) {
  watcher* w = user;
  w->seen = evaluation;
  if (!failed && f < w->best_f) {
    w->best_f = f;
    memcpy(w->best_x, x, (size_t)w->n * sizeof *x);
  }
  if (evaluation == w->stop_at) mbo_interrupt(w->o);
}

static void test_interrupt(mbt_tally* t) {
  char what[160];
  const problem* p = &problems[0];
  const mbo_algorithm algs[] = {MBO_LBFGS, MBO_SLSQP, MBO_BOBYQA, MBO_NELDERMEAD};
  for (int i = 0; i < 4; i++) {
    mbo_optimizer* o = setup(p, algs[i], p->eval, NULL, p->maxeval);
    watcher w = {.o = o, .stop_at = 5, .best_f = INFINITY, .n = p->n};
    mbo_set_observer(o, watch, &w);
    double x[NMAX] = {-1.2, 1};
    mbo_result r;
    mb_status st = mbo_run(o, x, &r, NULL);
    const int ok = st == MB_OK && !strcmp(r.status, "interrupted") && r.evaluations == 5 &&
                   w.seen == 5 && r.f == w.best_f && !memcmp(x, w.best_x, 2 * sizeof *x);
    snprintf(what, sizeof what, "interrupt at evaluation 5 / %s: best of 5 returned (%s)",
             mbo_algorithm_name(algs[i]), r.status);
    mbt_check(t, ok, what, r.evaluations, 5);

    /* the flag is cleared: a second run goes to the end */
    w.stop_at = -1;
    st = mbo_run(o, x, &r, NULL);
    snprintf(what, sizeof what, "after an interrupt / %s: next run not interrupted (%s)",
             mbo_algorithm_name(algs[i]), r.status);
    mbt_check(t, st == MB_OK && strcmp(r.status, "interrupted"), what, r.evaluations, 0);
    mbo_destroy(o);
  }

  /* a request before the run stops it before the first evaluation */
  mbo_optimizer* o = setup(p, MBO_LBFGS, p->eval, NULL, p->maxeval);
  double x[NMAX] = {-1.2, 1};
  mbo_result r;
  mbo_interrupt(o);
  mb_status st = mbo_run(o, x, &r, NULL);
  mbt_check(t, st == MB_OK && !strcmp(r.status, "interrupted") && r.evaluations == 0,
            "interrupt before the run: no evaluation, status interrupted", r.evaluations, 0);
  mbo_destroy(o);
  mbo_interrupt(NULL);
}

/* ----------------------------------------------------------------------------------- cache */

/* NLopt calls the objective and the constraints separately at each point; the cache makes one
   callback serve both, and a point is evaluated again only to add the gradient. The best point
   serves values too (BOBYQA asks for it again at the end). COBYLA sometimes returns to an
   earlier vertex that is neither the last point nor the best: those few repeats are counted,
   not refused. */
static void test_cache(mbt_tally* t) {
  char what[160];
  const mbo_algorithm algs[] = {MBO_SLSQP, MBO_MMA,    MBO_CCSAQ,      MBO_BOBYQA,
                                MBO_SBPLX, MBO_COBYLA, MBO_NELDERMEAD, MBO_COBYLA};
  const int problem_of[] = {3, 3, 3, 0, 0, 3, 0, 4};
  for (int i = 0; i < 8; i++) {
    const problem* p = &problems[problem_of[i]];
    static probe pr;
    memset(&pr, 0, sizeof pr);
    pr.inner = p->eval, pr.n = p->n;
    mbo_optimizer* o = setup(p, algs[i], probed, &pr, p->maxeval);
    double x[NMAX];
    memcpy(x, p->start, sizeof x);
    mbo_result r;
    mbo_run(o, x, &r, NULL);
    const char* name = mbo_algorithm_name(algs[i]);
    printf("     %s on %s: %d callbacks (%d with gradient) at %d distinct points, %d repeats\n",
           name, p->name, pr.calls, pr.grad_calls, pr.npoint, pr.repeats);
    const int allowed = algs[i] == MBO_COBYLA ? pr.calls / 30 : 0;
    snprintf(what, sizeof what, "cache / %s on %s: repeated evaluations", name, p->name);
    mbt_check(t, pr.repeats <= allowed && pr.npoint < 4096, what, pr.repeats, allowed);
    snprintf(what, sizeof what, "cache / %s on %s: result counts = callback counts", name, p->name);
    mbt_check(t, r.evaluations == pr.calls && r.gradient_evaluations == pr.grad_calls, what,
              r.evaluations - pr.calls, 0);
    mbo_destroy(o);
  }
}

/* ----------------------------------------------------------------- fatal errors and budgets */

/* Rosenbrock taking 1 ms of wall-clock time. */
static int slow_rosenbrock(const double* x, int want_grad, double* f, double* df, double* c,
                           double* dc, void* user) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do clock_gettime(CLOCK_MONOTONIC, &now);
  while ((now.tv_sec - start.tv_sec) + 1e-9 * (now.tv_nsec - start.tv_nsec) < 1e-3);
  return rosenbrock(x, want_grad, f, df, c, dc, user);
}

static void test_fatal_and_budget(mbt_tally* t) {
  const problem* p = &problems[0];
  mb_error err;

  /* a fatal callback stops the run with its code, and the best point so far */
  probe pr = {.inner = p->eval, .mode = 4, .fatal_at = 6, .n = p->n};
  mbo_optimizer* o = setup(p, MBO_SLSQP, probed, &pr, p->maxeval);
  double x[NMAX] = {-1.2, 1};
  mbo_result r;
  mb_status st = mbo_run(o, x, &r, &err);
  printf("     fatal: %s (%s: %s)\n", err.message, r.status, r.message);
  mbt_check(t,
            st == MB_ERR_SINGULAR && r.evaluations == 6 && !strcmp(r.status, "failed") &&
                isfinite(r.f) && strstr(err.message, "fatal"),
            "fatal callback: its code returned, run stopped at once", r.evaluations, 6);
  mbo_destroy(o);

  /* maxeval counts callbacks */
  for (int a = 0; a < NALG; a++) {
    char what[160];
    o = setup(p, (mbo_algorithm)a, p->eval, NULL, 17);
    x[0] = -1.2, x[1] = 1;
    st = mbo_run(o, x, &r, NULL);
    snprintf(what, sizeof what, "maxeval 17 / %s: max_evaluations after 17", mbo_algorithm_name(a));
    mbt_check(t, st == MB_OK && !strcmp(r.status, "max_evaluations") && r.evaluations == 17, what,
              r.evaluations, 17);
    mbo_destroy(o);
  }

  /* a gradient-based run ends once 5 evaluations in a row fail to improve on the best
     objective by ftol_rel, instead of backtracking through its budget */
  const problem* q = &problems[1];
  for (int a = 0; a < NALG; a++) {
    if (!mbo_algorithm_uses_gradient((mbo_algorithm)a)) continue;
    char what[160];
    int calls = 0;
    o = setup(q, (mbo_algorithm)a, worse_every_time, &calls, 200);
    double xq[NMAX] = {0};
    st = mbo_run(o, xq, &r, NULL);
    printf("     no progress / %-8s %d evaluations: %s: %s\n", mbo_algorithm_name(a), r.evaluations,
           r.status, r.message);
    snprintf(what, sizeof what, "no progress / %s: converged after 1 + 5 evaluations",
             mbo_algorithm_name(a));
    mbt_check(t, st == MB_OK && !strcmp(r.status, "converged") && r.evaluations == 6, what,
              r.evaluations, 6);
    mbo_destroy(o);
  }

  /* the start is clamped into the bounds */
  o = setup(p, MBO_NELDERMEAD, p->eval, NULL, 1);
  x[0] = -10, x[1] = 10;
  st = mbo_run(o, x, &r, NULL);
  mbt_check(t, st == MB_OK && x[0] == -2 && x[1] == 2 && r.evaluations == 1,
            "start (-10, 10) clamped to (-2, 2)", fabs(x[0] + 2) + fabs(x[1] - 2), 0);
  mbo_destroy(o);

  /* maxtime: NLopt checks the clock after each evaluation, which here takes 1 ms */
  o = setup(p, MBO_SBPLX, slow_rosenbrock, NULL, 0);
  mbo_settings s;
  mbo_settings_default(&s);
  s.maxeval = 0, s.maxtime = 2.5e-3;
  mbo_set_settings(o, &s);
  x[0] = -1.2, x[1] = 1;
  st = mbo_run(o, x, &r, NULL);
  /* (3 when the machine is idle, fewer when the process is descheduled) */
  mbt_check(
      t, st == MB_OK && !strcmp(r.status, "max_time") && r.evaluations >= 1 && r.evaluations <= 6,
      "maxtime 2.5 ms, 1 ms per evaluation: max_time after 6 or fewer", r.evaluations, 6);
  mbo_destroy(o);

  /* without tolerances CCSAQ ends up asking for its current point forever: the repeats stop it */
  const problem* tut = &problems[3];
  o = setup(tut, MBO_CCSAQ, tut->eval, NULL, 0);
  s.maxtime = 0, s.ftol_rel = 0, s.xtol_rel = 0;
  mbo_set_settings(o, &s);
  memcpy(x, tut->start, sizeof x);
  st = mbo_run(o, x, &r, NULL);
  printf("     ccsaq without tolerances: %s: %s\n", r.status, r.message);
  mbt_check(
      t, st == MB_OK && !strcmp(r.status, "roundoff_limited") && x_error(x, tut->xopt, 2) < 1e-6,
      "ccsaq without tolerances: stops on repeats, at the optimum", x_error(x, tut->xopt, 2), 1e-6);
  mbo_destroy(o);
}

/* The observer sees every evaluation in order, the constraints, and the gradient flag. */
typedef struct recorder {
  int count, in_order, with_c, grads;
} recorder;

static void record(int evaluation, const double* x, double f, const double* c, int with_gradient,
                   int failed, void* user) {
  recorder* rec = user;
  rec->in_order &= evaluation == ++rec->count;
  rec->with_c += c != NULL && isfinite(c[0]) && isfinite(c[1]);
  rec->grads += with_gradient != 0;
}

static void test_observer(mbt_tally* t) {
  const problem* p = &problems[3];
  const mbo_algorithm algs[2] = {MBO_SLSQP, MBO_COBYLA};
  for (int i = 0; i < 2; i++) {
    recorder rec = {.in_order = 1};
    mbo_optimizer* o = setup(p, algs[i], p->eval, NULL, p->maxeval);
    mbo_set_observer(o, record, &rec);
    double x[NMAX];
    memcpy(x, p->start, sizeof x);
    mbo_result r;
    mbo_run(o, x, &r, NULL);
    char what[160];
    snprintf(what, sizeof what, "observer / %s: every evaluation, in order, with c and flags",
             mbo_algorithm_name(algs[i]));
    mbt_check(t,
              rec.in_order && rec.count == r.evaluations && rec.with_c == r.evaluations &&
                  rec.grads == r.gradient_evaluations,
              what, rec.count, r.evaluations);
    mbo_destroy(o);
  }
}

/* ------------------------------------------------------------------------- invalid arguments */

static void expect_error(mbt_tally* t, const char* what, mb_status st, const mb_error* err,
                         const char* word1, const char* word2) {
  const int ok = st == MB_ERR_ARGUMENT && strstr(err->message, word1) &&
                 (!word2 || strstr(err->message, word2));
  printf("     %s -> %s\n", what, err->message);
  mbt_check(t, ok, what, st, MB_ERR_ARGUMENT);
}

static void test_invalid(mbt_tally* t) {
  mb_error err;
  const double lo2[2] = {0, 0}, hi2[2] = {1, 1}, inf2[2] = {INFINITY, INFINITY};

  /* names */
  int names_ok = 1;
  for (int a = 0; a < NALG; a++) names_ok &= mbo_algorithm_parse(mbo_algorithm_name(a)) == a;
  names_ok &= mbo_algorithm_parse("newuoa") == -1 && mbo_algorithm_parse(NULL) == -1 &&
              !strcmp(mbo_algorithm_name((mbo_algorithm)42), "?");
  names_ok &= mbo_algorithm_uses_gradient(MBO_TNEWTON) && !mbo_algorithm_uses_gradient(MBO_SBPLX);
  names_ok &=
      mbo_algorithm_constraints(MBO_SLSQP) == 2 && mbo_algorithm_constraints(MBO_MMA) == 1 &&
      mbo_algorithm_constraints(MBO_COBYLA) == 2 && mbo_algorithm_constraints(MBO_LBFGS) == 0;
  mbt_check(t, names_ok, "algorithm names, parse, gradient and constraint support", names_ok, 1);

  /* create */
  mbo_optimizer* o = mbo_create(MBO_LBFGS, 0, &err);
  expect_error(t, "create with n = 0", o ? MB_OK : err.status, &err, "n = 0", NULL);
  o = mbo_create((mbo_algorithm)99, 2, &err);
  expect_error(t, "create with algorithm 99", o ? MB_OK : err.status, &err, "99", NULL);
  mbo_destroy(NULL);

  /* constraints the algorithm does not take */
  o = mbo_create(MBO_MMA, 2, &err);
  expect_error(t, "equality for mma", mbo_set_constraints(o, 2, lo2, (double[]){INFINITY, 0}, &err),
               &err, "mma", "equality");
  mbo_destroy(o);
  o = mbo_create(MBO_LBFGS, 2, &err);
  expect_error(t, "inequality for lbfgs", mbo_set_constraints(o, 2, lo2, inf2, &err), &err, "lbfgs",
               "no constraints");
  mbo_destroy(o);
  o = mbo_create(MBO_SBPLX, 2, &err);
  expect_error(t, "equality for sbplx", mbo_set_constraints(o, 1, lo2, lo2, &err), &err, "sbplx",
               "no constraints");
  mbo_destroy(o);
  o = mbo_create(MBO_SLSQP, 2, &err);
  expect_error(t, "constraint lower > upper", mbo_set_constraints(o, 2, hi2, lo2, &err), &err,
               "constraints[0]", "lower <= upper");
  expect_error(t, "constraint lower = +inf", mbo_set_constraints(o, 2, inf2, inf2, &err), &err,
               "constraints[0]", NULL);
  expect_error(t, "constraints without bounds", mbo_set_constraints(o, 2, NULL, NULL, &err), &err,
               "must be given", NULL);
  const double free_lo[1] = {-INFINITY}, free_hi[1] = {INFINITY};
  mbo_optimizer* l = mbo_create(MBO_LBFGS, 2, &err);
  mbt_check(t, mbo_set_constraints(l, 1, free_lo, free_hi, &err) == MB_OK,
            "lbfgs accepts a monitored constraint with no finite bound", 0, 0);
  mbo_destroy(l);

  /* bounds */
  expect_error(t, "bounds lower == upper", mbo_set_bounds(o, lo2, lo2, NULL, &err), &err,
               "bounds[0]", "< upper");
  expect_error(t, "bounds infinite", mbo_set_bounds(o, lo2, inf2, NULL, &err), &err, "bounds[0]",
               "finite");
  expect_error(t, "log scale with lower 0", mbo_set_bounds(o, lo2, hi2, (int[]){0, 1}, &err), &err,
               "bounds[1]", "log scale");
  expect_error(t, "bounds NULL", mbo_set_bounds(o, NULL, hi2, NULL, &err), &err, "bounds", NULL);

  /* run without bounds, without a callback, with a NaN start */
  double x[2] = {0.5, 0.5};
  mbo_result r;
  expect_error(t, "run without bounds", mbo_run(o, x, &r, &err), &err, "mbo_set_bounds", NULL);
  mbo_set_bounds(o, lo2, hi2, NULL, &err);
  expect_error(t, "run without callback", mbo_run(o, x, &r, &err), &err, "mbo_set_eval", NULL);
  mbo_set_eval(o, rosenbrock, NULL);
  x[1] = NAN;
  expect_error(t, "run from NaN", mbo_run(o, x, &r, &err), &err, "x[1]", "NaN");
  mbo_destroy(o);
}

int main(void) {
  mbt_tally t = {0};
  test_grid(&t);
  printf("\nfailed evaluations\n");
  test_failed_region(&t, 0, 1, -INFINITY, -INFINITY, 1.25, 1.6);
  test_failed_region(&t, 0, 3, -INFINITY, -INFINITY, 1.25, 1.6);
  test_failed_region(&t, 3, 1, -INFINITY, 0.1, INFINITY, INFINITY);
  test_always_failing(&t);
  test_observer(&t);
  printf("\nfeasibility\n");
  test_feasibility(&t);
  printf("\ninterruption\n");
  test_interrupt(&t);
  printf("\ncache\n");
  test_cache(&t);
  printf("\nfatal errors and budgets\n");
  test_fatal_and_budget(&t);
  printf("\ninvalid arguments\n");
  test_invalid(&t);
  return mbt_finish(&t);
}

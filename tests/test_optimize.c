/* Design optimisation end to end: the five-bar springs that hold the mechanism at rest (seed 001;
   the optimum follows from statics), a driven bar reaching for a target above a floor (an active
   inequality constraint with an analytic optimum), a chain whose assembly fails in part of the
   design space, and an interrupted run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/optimize.h"
#include "testing.h"

/* Natural lengths for which the initial configuration is a static equilibrium: the spring
   tensions balance gravity (solved by hand from the nodal loads of the bars, independent of the
   simulator): Ls = l - f / k with f1 = -19.5855596957794, f2 = 21.6683926003442. */
static const double springs_optimum[2] = {2.431923574458, 1.844868886805};

static int optimize(const char* path, const char* algorithm, volatile sig_atomic_t* stop, double* x,
                    mb_opt_result* r) {
  mb_desc d;
  mb_error err;
  if (mb_desc_load_json(path, &d, &err) != MB_OK) {
    printf("     %s\n", err.message);
    return 0;
  }
  mb_status st = mb_optimize(&d, algorithm, NULL, NULL, stop, x, r, &err);
  if (st != MB_OK) printf("     %s\n", err.message);
  mb_desc_free(&d);
  return st == MB_OK;
}

static void springs(mbt_tally* t, const char* algorithm) {
  double x[2];
  mb_opt_result r;
  char what[160];
  int ok = optimize("problems/fivebar_springs.json", algorithm, NULL, x, &r);
  snprintf(what, sizeof what, "fivebar_springs %s: psi1 below 1e-10 (%s)", algorithm, r.status);
  mbt_check(t, ok && r.objective < 1e-10, what, r.objective, 1e-10);
  double e = fmax(fabs(x[0] - springs_optimum[0]), fabs(x[1] - springs_optimum[1]));
  snprintf(what, sizeof what, "fivebar_springs %s: Ls1, Ls2 at the static optimum", algorithm);
  mbt_check(t, ok && e < 1e-5, what, e, 1e-5);
  snprintf(what, sizeof what, "fivebar_springs %s: at most 60 evaluations", algorithm);
  mbt_check(t, ok && r.evaluations <= 60, what, r.evaluations, 60);
}

static void reach(mbt_tally* t, const char* algorithm) {
  /* minimise |tip - (2, 0)|^2 with tip = L (cos th, sin th), L <= 1.5, tip y >= 0.5: the tip
     ends where the circle of radius 1.5 meets y = 0.5 */
  const double L = 1.5, th = asin(1.0 / 3), f = pow(sqrt(2) - 2, 2) + 0.25;
  double x[2];
  mb_opt_result r;
  char what[160];
  int ok = optimize("tests/models/opt/reach_above_floor.json", algorithm, NULL, x, &r);
  double e = fmax(fabs(x[0] - L), fabs(x[1] - th));
  snprintf(what, sizeof what, "reach_above_floor %s: (L, th) at the constrained optimum (%s)",
           algorithm, r.status);
  mbt_check(t, ok && e < 1e-6, what, e, 1e-6);
  snprintf(what, sizeof what, "reach_above_floor %s: objective", algorithm);
  mbt_check(t, ok && fabs(r.objective - f) < 1e-6, what, fabs(r.objective - f), 1e-6);
}

int main(void) {
  mbt_tally t = {0};
  springs(&t, "lbfgs");
  springs(&t, "slsqp");
  springs(&t, "mma");
  reach(&t, "slsqp");
  reach(&t, "mma");
  reach(&t, "ccsaq");

  /* failed points: the chain cannot close for L < 0.5, where the objective pulls */
  double x[2];
  mb_opt_result r;
  int ok = optimize("tests/models/opt/chain_fails_below.json", "lbfgs", NULL, x, &r);
  mbt_check(&t, ok && r.failed_evaluations > 0, "chain: some evaluations fail",
            r.failed_evaluations, 1);
  mbt_check(&t, ok && (!strcmp(r.status, "evaluation_failed") || !strcmp(r.status, "converged")),
            "chain: the run ends cleanly with a status", ok, 1);
  mbt_check(&t, ok && x[0] >= 0.5 && isfinite(r.objective), "chain: the best point assembles", x[0],
            0.5);

  /* an interrupt before the start: the run stops at once with the start point */
  volatile sig_atomic_t stop = 1;
  ok = optimize("problems/fivebar_springs.json", "lbfgs", &stop, x, &r);
  mbt_check(&t, ok && !strcmp(r.status, "interrupted") && r.evaluations <= 1,
            "interrupt: status interrupted", r.evaluations, 1);
  return mbt_finish(&t);
}

/* PID control of the spatial inverted pendulum on a cart (problems/control/pendulum_pid.json):
   a short gain optimisation lowers the cost and keeps the pendulum upright over the whole run,
   while the same pendulum without control falls; so the uprightness check can tell the two apart.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/optimize.h"
#include "mbopt/simulate.h"
#include "testing.h"

#define SPEC "problems/control/pendulum_pid.json"

typedef struct motion {
  int z_col, ex_col, ey_col;
  double lowest, last_error; /* lowest height of the pendulum's centre, |e| at the end */
} motion;

static int observe(const mb_model* m, const mb_data* d, void* user) {
  motion* mo = user;
  (void)m;
  mo->lowest = fmin(mo->lowest, d->out[mo->z_col]);
  mo->last_error = hypot(d->out[mo->ex_col], d->out[mo->ey_col]);
  return 0;
}

/* simulates desc as it stands; returns the motion (lowest = -inf when the run failed) */
static motion simulate(const mb_desc* desc) {
  motion mo = {.lowest = INFINITY, .last_error = INFINITY};
  mb_model* m = NULL;
  mb_error err;
  if (mb_compile(desc, &m, &err) != MB_OK) {
    printf("     %s\n", err.message);
    mo.lowest = -INFINITY;
    return mo;
  }
  mo.z_col = mb_model_output(m, "z2"), mo.ex_col = mb_model_output(m, "ex"), mo.ey_col = mb_model_output(m, "ey");
  mb_data* d = mb_data_create(m);
  if (mo.z_col < 0 || mo.ex_col < 0 || mo.ey_col < 0 || !d ||
      mb_simulate(m, d, observe, &mo, &err) != MB_OK)
    mo.lowest = -INFINITY;
  mb_data_free(d);
  mb_model_free(m);
  return mo;
}

static void first_objective(const mb_opt_evaluation* e, void* user) {
  if (e->index == 1) *(double*)user = e->failed ? NAN : e->objective;
}

int main(void) {
  mbt_tally t = {0};
  mb_desc desc;
  mb_error err;
  if (mb_desc_load_json(SPEC, &desc, &err) != MB_OK) {
    printf("     %s\n", err.message);
    return 1;
  }
  /* upright: the centre (0.5 m up the pendulum, its base 0.05 m up) never lower than at a tilt
     of 0.2 rad, 0.05 + 0.5 cos 0.2 = 0.540 m; the run starts at a tilt of 0.128 rad */
  const double upright = 0.05 + 0.5 * cos(0.2);
  const int kp = mb_desc_param_index(&desc, "Kp"), ki = mb_desc_param_index(&desc, "Ki"),
            kd = mb_desc_param_index(&desc, "Kd");
  const double start[3] = {desc.param_value[kp], desc.param_value[ki], desc.param_value[kd]};

  /* without control the pendulum falls */
  mb_desc_set_param(&desc, kp, 0), mb_desc_set_param(&desc, ki, 0), mb_desc_set_param(&desc, kd, 0);
  motion free_fall = simulate(&desc);
  mbt_check(&t, free_fall.lowest < 0.3, "without control the pendulum falls (lowest centre height)",
            free_fall.lowest, 0.3);
  mb_desc_set_param(&desc, kp, start[0]), mb_desc_set_param(&desc, ki, start[1]);
  mb_desc_set_param(&desc, kd, start[2]);

  /* a short optimisation from the spec's start; its first evaluation is the initial cost */
  double x[3], before = NAN;
  mb_opt_result r;
  desc.optimization.maxeval = 12;
  mb_status st = mb_optimize(&desc, "lbfgs", first_objective, &before, NULL, x, &r, &err);
  if (st != MB_OK) printf("     %s\n", err.message);
  mbt_check(&t, st == MB_OK && r.objective < 0.5 * before,
            "optimised gains at least halve the cost of the initial gains", r.objective,
            0.5 * before);

  motion tuned = simulate(&desc);
  mbt_check(&t, tuned.lowest > upright, "with the optimised gains the pendulum stays upright",
            tuned.lowest, upright);
  mbt_check(&t, tuned.last_error < 1e-3, "and its tilt error is below 1 mm at the end",
            tuned.last_error, 1e-3);
  mb_desc_free(&desc);
  return mbt_finish(&t);
}

/* Simulation in joint coordinates (core/joint/joint_ali3p.c) against the five-bar's published
   converged objectives (shared benchmarks: psi = [0.726877, 7.34229, 304.921]) and against the
   natural formulation on the same models, controllers included: both are second order, so their
   difference falls about four times when the step halves, and RTdyn0 and RTdyn1 give the same
   motion to round-off; the joints' reactions too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "joint/joint_model.h"
#include "testing.h"

typedef struct run_result {
  int ok;
  double psi[8];
  double energy_error;
  long newton;
} run_result;

/* psi of the description d, in natural coordinates (ref < 0) or joint coordinates with reference
   point ref, at step h over t_end (0: the model's). */
static run_result run(const mb_desc* desc, int ref, double h, double t_end) {
  run_result r = {0};
  mb_desc d = *desc;
  d.settings.step = h;
  if (t_end > 0) d.settings.t_end = t_end;
  mb_error err;
  mb_status st;
  if (ref < 0) {
    mb_model* m = NULL;
    if (mb_compile(&d, &m, &err) != MB_OK) return printf("  %s\n", err.message), r;
    mb_data* dn = mb_data_create(m);
    st = mb_simulate(m, dn, NULL, NULL, &err);
    memcpy(r.psi, dn->psi, (size_t)m->nfunctional * sizeof(double));
    r.energy_error = dn->report.max_energy_error, r.newton = dn->report.newton_iterations;
    mb_data_free(dn);
    mb_model_free(m);
  } else {
    mb_joint_model* jm = NULL;
    if (mb_joint_model_create(&d, (mb_reference)ref, &jm, &err) != MB_OK)
      return printf("  %s\n", err.message), r;
    mb_data* da = mb_data_create(jm->aux);
    mb_joint_data* jd = mb_joint_data_create(jm, da);
    st = mb_joint_simulate(jm, jd, NULL, NULL, &err);
    memcpy(r.psi, da->psi, (size_t)jm->aux->nfunctional * sizeof(double));
    r.energy_error = da->report.max_energy_error, r.newton = da->report.newton_iterations;
    mb_joint_data_free(jd);
    mb_data_free(da);
    mb_joint_model_free(jm);
  }
  if (st != MB_OK) printf("  %s\n", err.message);
  r.ok = st == MB_OK;
  return r;
}

static double rel_diff(int n, const double* a, const double* b) {
  double e = 0;
  for (int i = 0; i < n; i++) e = fmax(e, fabs(a[i] - b[i]) / fmax(fabs(b[i]), 1e-300));
  return e;
}

static int load(const char* path, mb_desc* d) {
  mb_error err;
  if (mb_desc_load_json(path, d, &err) == MB_OK) return 1;
  printf("FAIL cannot load %s: %s\n", path, err.message);
  return 0;
}

/* The five-bar against its published objectives, and the order of the difference between the
   formulations. */
static void fivebar(mbt_tally* t) {
  mb_desc d;
  if (!load("problems/fivebar.json", &d)) return t->failed++, (void)0;
  static const double published[3] = {0.726877, 7.34229, 304.921};
  const run_result j0 = run(&d, MB_REFERENCE_CENTRE_OF_MASS, 1e-3, 0),
                   j1 = run(&d, MB_REFERENCE_GLOBAL_ORIGIN, 1e-3, 0);
  const run_result n1 = run(&d, -1, 1e-3, 0), n2 = run(&d, -1, 5e-4, 0);
  const run_result j2 = run(&d, MB_REFERENCE_CENTRE_OF_MASS, 5e-4, 0);
  const int ok = j0.ok && j1.ok && n1.ok && n2.ok && j2.ok;
  const double e_pub = rel_diff(3, j0.psi, published);
  mbt_check(t, ok && e_pub < 1e-5, "five-bar in joint coordinates: psi as published (h = 1e-3)",
            e_pub, 1e-5);
  const double e_ref = rel_diff(3, j1.psi, j0.psi);
  mbt_check(t, ok && e_ref < 1e-9, "five-bar: RTdyn1 gives RTdyn0's psi", e_ref, 1e-9);
  const double d1 = rel_diff(3, j0.psi, n1.psi), d2 = rel_diff(3, j2.psi, n2.psi);
  mbt_check(t, ok && d1 < 1e-5, "five-bar: joint and natural psi at h = 1e-3", d1, 1e-5);
  mbt_check(t, ok && d2 < 0.35 * d1, "five-bar: their difference at h = 5e-4 over that at 1e-3",
            d2 / d1, 0.35);
  mbt_check(t, ok && j0.energy_error < 2e-5, "five-bar: energy balance in joint coordinates (J)",
            j0.energy_error, 2e-5);
  mb_desc_free(&d);
}

/* A model in both formulations: psi within tol relative at the model's step. */
static void agree(mbt_tally* t, const char* path, double t_end, double tol) {
  mb_desc d;
  if (!load(path, &d)) return t->failed++, (void)0;
  const run_result n = run(&d, -1, d.settings.step, t_end);
  const run_result j = run(&d, MB_REFERENCE_GLOBAL_ORIGIN, d.settings.step, t_end);
  mb_model* m = NULL;
  mb_error err;
  int nf = 0;
  if (mb_compile(&d, &m, &err) == MB_OK) nf = m->nfunctional;
  mb_model_free(m);
  const double e = rel_diff(nf, j.psi, n.psi);
  char what[200];
  snprintf(what, sizeof what, "%s: joint and natural psi (%ld and %ld Newton iterations)", path,
           j.newton, n.newton);
  mbt_check(t, n.ok && j.ok && nf > 0 && e < tol, what, e, tol);
  mb_desc_free(&d);
}

/* Reaction forces and torques and multipliers, recovered in joint coordinates body by body from
   the leaves (joint_reactions.c): the models' functionals, integrals of those outputs alone,
   agree with the natural formulation's (its own multipliers) within tol at the model's step, and
   about four times closer at half of it. */
static void reactions(mbt_tally* t, const char* path, double tol) {
  mb_desc d;
  if (!load(path, &d)) return t->failed++, (void)0;
  const double h = d.settings.step;
  const run_result n1 = run(&d, -1, h, 0), j1 = run(&d, MB_REFERENCE_CENTRE_OF_MASS, h, 0);
  const run_result n2 = run(&d, -1, h / 2, 0), j2 = run(&d, MB_REFERENCE_CENTRE_OF_MASS, h / 2, 0);
  const int ok = n1.ok && j1.ok && n2.ok && j2.ok;
  const double d1 = rel_diff(1, j1.psi, n1.psi), d2 = rel_diff(1, j2.psi, n2.psi);
  char what[200];
  snprintf(what, sizeof what, "%s: the reactions' functional, joint against natural", path);
  mbt_check(t, ok && d1 < tol, what, d1, tol);
  snprintf(what, sizeof what, "%s: their gap at h/2 over that at h", path);
  mbt_check(t, ok && d2 < 0.35 * d1, what, d2 / d1, 0.35);
  mb_desc_free(&d);
}

/* A step whose Newton iteration fails (the five-bar at h = 0.05 with 6 iterations) is taken
   again on sub-steps, as in natural coordinates; without the retry the run stops there. */
static void substeps(mbt_tally* t) {
  mb_desc d;
  if (!load("problems/fivebar.json", &d)) return t->failed++, (void)0;
  d.settings.step = 0.05, d.settings.max_newton = 6, d.settings.formulation = MB_FORMULATION_JOINT;
  int retried = -1, stopped = 0;
  for (int pass = 0; pass < 2; pass++) {
    d.settings.max_substeps = pass == 0 ? 8 : 1;
    mb_model* m = NULL;
    mb_error err;
    if (mb_compile(&d, &m, &err) != MB_OK) break;
    mb_data* dd = mb_data_create(m);
    const mb_status st = mb_simulate(m, dd, NULL, NULL, &err);
    if (pass == 0 && st == MB_OK) retried = dd->report.substepped_steps;
    if (pass == 1) stopped = st == MB_NEWTON_FAILED && strstr(err.message, "t = ") != NULL;
    mb_data_free(dd);
    mb_model_free(m);
  }
  mbt_check(t, retried > 0, "five-bar at h = 0.05, 6 Newton iterations: steps retried on sub-steps",
            retried, 1);
  mbt_check(t, stopped, "the same without the retry stops, naming the time", stopped, 1);
  mb_desc_free(&d);
}

/* The joint formulation keeps its Newton matrix from step to step (ali3p_step.c): its motion
   equals that of a new matrix at every iteration (full Newton) to well within the tolerances. */
static void kept_matrix(mbt_tally* t, const char* path, double t_end, double tol) {
  mb_desc d;
  if (!load(path, &d)) return t->failed++, (void)0;
  const run_result kept = run(&d, MB_REFERENCE_CENTRE_OF_MASS, d.settings.step, t_end);
  d.settings.refresh_each_iteration = 1;
  const run_result newton = run(&d, MB_REFERENCE_CENTRE_OF_MASS, d.settings.step, t_end);
  const double e = rel_diff(d.nfunctional, kept.psi, newton.psi);
  char what[160];
  snprintf(what, sizeof what, "%s: psi with the kept Newton matrix against full Newton", path);
  mbt_check(t, kept.ok && newton.ok && e < tol, what, e, tol);
  mb_desc_free(&d);
}

/* A model of every joint type, its spherical joint at a relative rotation of 1e-17 from the
   identity (its Euler parameters' first column the massless radial direction, with a diagonal
   mass of 1e-34): runs in both reference points, which give the same motion (the
   normalisation's penalty scale once came out at 1e-33 and the projections' matrix was singular
   at t = 0). */
static void every_joint_type(mbt_tally* t, const char* path, double tol) {
  mb_desc d;
  if (!load(path, &d)) return t->failed++, (void)0;
  const run_result j0 = run(&d, MB_REFERENCE_CENTRE_OF_MASS, d.settings.step, 0.3),
                   j1 = run(&d, MB_REFERENCE_GLOBAL_ORIGIN, d.settings.step, 0.3);
  const double e = rel_diff(d.nfunctional, j1.psi, j0.psi);
  char what[160];
  snprintf(what, sizeof what, "%s: runs in joint coordinates, RTdyn1 against RTdyn0", path);
  mbt_check(t, j0.ok && j1.ok && e < tol, what, e, tol);
  mb_desc_free(&d);
}

/* A block on a level guide (one prismatic coordinate, no constraint row) pushed by F: its travel
   x(t) = x0 + F t^2 / (2 m), which the trapezoidal rule integrates exactly. Unpushed, its
   residual vanishes exactly at every step, and a kept Newton matrix once never converged on it
   (no correction to measure a contraction by). */
static void free_slider(mbt_tally* t) {
  const char* path = "tests/models/ok/free_slider.json";
  mb_desc d;
  if (!load(path, &d)) return t->failed++, (void)0;
  mb_error err;
  for (int pushed = 0; pushed < 2; pushed++) {
    const double F = pushed ? 2 : 0, m = 2, x0 = 0.5;
    if (mb_desc_set_named(&d, "F", F, &err) != MB_OK) {
      printf("FAIL %s: %s\n", path, err.message);
      t->failed++;
      break;
    }
    d.settings.equilibrium = !pushed; /* pushed, it has none: it starts at rest where it is */
    const run_result j = run(&d, MB_REFERENCE_CENTRE_OF_MASS, d.settings.step, 0);
    const double exact = x0 + F * d.settings.t_end * d.settings.t_end / (2 * m);
    char what[160];
    snprintf(what, sizeof what, "%s in joint coordinates, F = %g: travel against x0 + F t^2 / 2m",
             path, F);
    mbt_check(t, j.ok && fabs(j.psi[0] - exact) < 1e-12, what, fabs(j.psi[0] - exact), 1e-12);
  }
  mb_desc_free(&d);
}

int main(void) {
  mbt_tally t = {0, 0};
  fivebar(&t);
  agree(&t, "problems/slider_crank.json", 0, 1e-4);
  agree(&t, "problems/fivebar_springs.json", 0, 1e-4); /* at h = 0.01 */
  agree(&t, "tests/models/iftomm/a04_bricard.json", 2, 1e-5);
  agree(&t, "problems/vehicle/step_descent.json", 1.5, 1e-4);
  /* controllers: their states are coordinates of the joint formulation too */
  agree(&t, "problems/control/pendulum_pid.json", 0, 1e-5);
  agree(&t, "problems/control/governor_design.json", 0, 2e-4);
  agree(&t, "problems/control/slider_crank_codesign.json", 0, 1e-4);
  reactions(&t, "tests/models/ok/reactions_planar.json", 1e-6);
  reactions(&t, "tests/models/ok/reactions_spatial.json", 1e-4);
  substeps(&t);
  kept_matrix(&t, "problems/fivebar.json", 0, 1e-9);
  kept_matrix(&t, "problems/vehicle/step_descent.json", 2.3, 1e-9);
  kept_matrix(&t, "problems/control/pendulum_pid.json", 0, 1e-9);
  every_joint_type(&t, "tests/models/ok/features_spatial.json", 1e-8);
  every_joint_type(&t, "tests/models/ok/params_spatial.json", 1e-8);
  free_slider(&t);
  return mbt_finish(&t);
}

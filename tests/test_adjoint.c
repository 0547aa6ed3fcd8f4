/* Adjoint against forward sensitivity: both differentiate the same discrete scheme, so their
   gradients agree to the convergence of the solvers (1e-8 relative in the norm of each
   functional's gradient), with and without checkpointing, on the five-bar benchmark, the spatial
   slider-crank, the B-spline-driven five-bar with 100 parameters, PID-controlled pendulums
   (controller states and gains), a wheel dropping onto a road step (tyre contact), the slider-crank
   co-design, the first 0.3 s of the flyball governor and the first 0.05 s of the buggy (the sparse
   path), a rotor whose integrated angle turns several times, the five-bar at a step some of
   whose steps are retried on sub-steps; the threaded backward sweep against one thread; and in
   joint coordinates the checkpointed adjoint against the one keeping every state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/sensitivity.h"
#include "testing.h"

/* The model at path into d, with t_end > 0 its time span and step > 0 its step, in joint
   coordinates (joint) or natural ones with the buggy's bounce; NULL (counted a failure) when it
   does not load. */
static mb_model* load(mbt_tally* t, const char* path, double t_end, double step, int joint,
                      mb_desc* d) {
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json(path, d, &err) == MB_OK) {
    if (t_end > 0) d->settings.t_end = t_end;
    if (step > 0) d->settings.step = step;
    if (joint)
      d->settings.formulation = MB_FORMULATION_JOINT;
    else
      mbt_buggy_bounce(d, 0.1); /* the buggy (no other model has its chassis.G) */
    if (mb_compile(d, &m, &err) != MB_OK) mb_desc_free(d);
  }
  if (!m) {
    printf("FAIL cannot load %s%s: %s\n", path, joint ? " in joint coordinates" : "", err.message);
    t->failed++;
  }
  return m;
}

/* t_end > 0 shortens the spec's time span (large models); step > 0 sets the step, large enough
   that some steps are retried on sub-steps, which the test asserts */
static void compare(mbt_tally* t, const char* path, int checkpoint, double t_end, double step) {
  mb_desc d;
  mb_error err;
  char what[200];
  mb_model* m = load(t, path, t_end, step, 0, &d);
  if (!m) return;
  const int nf = m->nfunctional, p = d.nparam;
  double* psi_f = calloc(nf, sizeof(double));
  double* psi_a = calloc(nf, sizeof(double));
  double* grad_f = calloc((size_t)nf * p, sizeof(double));
  double* grad_a = calloc((size_t)nf * p, sizeof(double));
  mb_data* data = mb_data_create(m);
  size_t memory = 0;
  mb_status sf = mbd_forward(&d, m, data, psi_f, grad_f, &err);
  mb_status sa =
      sf == MB_OK ? mbd_adjoint(&d, m, data, checkpoint, psi_a, grad_a, &memory, &err) : sf;
  if (sa != MB_OK) printf("     %s\n", err.message);
  const char* name = strrchr(path, '/') + 1;
  if (step > 0) {
    snprintf(what, sizeof what, "%s at h = %g: steps retried on sub-steps", name, step);
    mbt_check(t, sa == MB_OK && data->report.substepped_steps > 0, what,
              data->report.substepped_steps, 1);
  }
  for (int f = 0; f < nf && sa == MB_OK; f++) {
    double norm = 0, diff = 0;
    for (int k = 0; k < p; k++) {
      const double a = grad_f[(size_t)f * p + k], b = grad_a[(size_t)f * p + k];
      norm += a * a, diff += (a - b) * (a - b);
    }
    const double rel = sqrt(diff / fmax(norm, 1e-300));
    snprintf(what, sizeof what, "%s (%d parameters, checkpoint %d): adjoint = forward for %s", name,
             p, checkpoint, m->functional_name + MB_NAME_LEN * f);
    mbt_check(t, rel < 1e-8, what, rel, 1e-8);
    snprintf(what, sizeof what, "%s: the same %s", name, m->functional_name + MB_NAME_LEN * f);
    const double dpsi = fabs(psi_f[f] - psi_a[f]) / fmax(fabs(psi_f[f]), 1e-300);
    mbt_check(t, dpsi < 1e-14, what, dpsi, 1e-14);
  }
  if (sa != MB_OK) t->failed++;
  mb_data_free(data);
  free(psi_f), free(psi_a), free(grad_f), free(grad_a);
  mb_model_free(m);
  mb_desc_free(&d);
}

/* Gradients with respect to some parameters only (desc.gradient_param, in a different order, as an
   optimisation asks for its design variables): the same columns as the full forward gradient,
   by both methods. */
static void compare_selected(mbt_tally* t, const char* path) {
  mb_desc d;
  mb_error err;
  char what[200];
  mb_model* m = mbt_load(path, &d);
  if (!m) {
    t->failed++;
    return;
  }
  const int nf = m->nfunctional, p = d.nparam;
  const int select[3] = {p - 1, 0, p / 2};
  double* psi = calloc(nf, sizeof(double));
  double* full = calloc((size_t)nf * p, sizeof(double));
  double* part = calloc((size_t)nf * 3, sizeof(double));
  mb_data* data = mb_data_create(m);
  mb_status st = mbd_forward(&d, m, data, psi, full, &err);
  d.gradient_param = select, d.ngradient_param = 3;
  const char* name = strrchr(path, '/') + 1;
  for (int method = 0; method < 2 && st == MB_OK; method++) {
    st = method ? mbd_adjoint(&d, m, data, 0, psi, part, NULL, &err)
                : mbd_forward(&d, m, data, psi, part, &err);
    double worst = 0;
    for (int f = 0; f < nf && st == MB_OK; f++) {
      double norm = 0;
      for (int k = 0; k < p; k++) norm += full[(size_t)f * p + k] * full[(size_t)f * p + k];
      for (int j = 0; j < 3; j++) {
        const double diff = fabs(part[(size_t)f * 3 + j] - full[(size_t)f * p + select[j]]);
        worst = fmax(worst, diff / fmax(sqrt(norm), 1e-300));
      }
    }
    snprintf(what, sizeof what, "%s: %s gradient of parameters %d, 0, %d = the full one's columns",
             name, method ? "adjoint" : "forward", p - 1, p / 2);
    mbt_check(t, st == MB_OK && worst < 1e-8, what, worst, 1e-8);
  }
  if (st != MB_OK) printf("     %s\n", err.message);
  mb_data_free(data);
  free(psi), free(full), free(part);
  mb_model_free(m);
  d.gradient_param = NULL;
  mb_desc_free(&d);
}

/* The threaded backward sweep (the next step prepared beside the solves of this one) against one
   thread: the same gradients to the last bit, with and without checkpointing (step > 0: at that
   step, with sub-steps). */
static void threads_agree(mbt_tally* t, const char* path, double t_end, int checkpoint,
                          double step) {
  mb_desc d;
  char what[200];
  mb_model* m = step > 0 ? mbt_load_at_step(path, &d, step) : mbt_load(path, &d);
  if (!m) {
    t->failed++;
    return;
  }
  if (t_end > 0) m->opt.t_end = t_end;
  const int nf = m->nfunctional, p = d.nparam;
  double* psi = calloc(nf, sizeof(double));
  double* grad[2] = {calloc((size_t)nf * p, sizeof(double)),
                     calloc((size_t)nf * p, sizeof(double))};
  mb_data* data = mb_data_create(m);
  mb_status st = MB_OK;
  mb_error err;
  for (int k = 0; k < 2 && st == MB_OK; k++) {
    m->opt.threads = k + 1;
    st = mbd_adjoint(&d, m, data, checkpoint, psi, grad[k], NULL, &err);
  }
  if (st != MB_OK) printf("     %s\n", err.message);
  const int same = st == MB_OK && memcmp(grad[0], grad[1], sizeof(double) * nf * p) == 0;
  snprintf(what, sizeof what, "%s (checkpoint %d): adjoint on two threads = on one, bitwise",
           strrchr(path, '/') + 1, checkpoint);
  mbt_check(t, same, what, same ? 0 : 1, 0);
  mb_data_free(data);
  free(psi), free(grad[0]), free(grad[1]);
  mb_model_free(m);
  mb_desc_free(&d);
}

/* The joint formulation's checkpointed adjoint against its adjoint keeping every state: each
   segment taken again from its mark repeats the forward sweep's steps, so the gradients agree to
   the last bit, in less memory over runs of many steps (step > 0: at that step, some steps
   retried on sub-steps; a short run, whose marks outweigh the states they spare). */
static void joint_checkpoints_agree(mbt_tally* t, const char* path, double t_end, double step,
                                    int checkpoint) {
  mb_desc d;
  mb_error err;
  char what[200];
  mb_model* m = load(t, path, t_end, step, 1, &d);
  if (!m) return;
  const int nf = m->nfunctional, p = d.nparam;
  double* psi[2] = {calloc(nf, sizeof(double)), calloc(nf, sizeof(double))};
  double* grad[2] = {calloc((size_t)nf * p, sizeof(double)),
                     calloc((size_t)nf * p, sizeof(double))};
  size_t memory[2] = {0, 0};
  mb_data* data = mb_data_create(m);
  mb_status st = MB_OK;
  int substepped = 0;
  for (int k = 0; k < 2 && st == MB_OK; k++) {
    st = mbd_adjoint(&d, m, data, k ? checkpoint : 0, psi[k], grad[k], &memory[k], &err);
    if (k == 0) substepped = data->report.substepped_steps;
  }
  if (st != MB_OK) printf("     %s\n", err.message);
  const char* name = strrchr(path, '/') + 1;
  if (step > 0) {
    snprintf(what, sizeof what, "%s in joint coordinates at h = %g: steps retried on sub-steps",
             name, step);
    mbt_check(t, st == MB_OK && substepped > 0, what, substepped, 1);
  }
  const int same = st == MB_OK && memcmp(grad[0], grad[1], sizeof(double) * nf * p) == 0 &&
                   memcmp(psi[0], psi[1], sizeof(double) * nf) == 0;
  snprintf(what, sizeof what,
           "%s in joint coordinates (%d parameters): adjoint with checkpoint %d = without, bitwise",
           name, p, checkpoint);
  mbt_check(t, same, what, same ? 0 : 1, 0);
  snprintf(what, sizeof what,
           "%s in joint coordinates: checkpoint %d keeps less (%zu of %zu bytes)", name, checkpoint,
           memory[1], memory[0]);
  if (step == 0)
    mbt_check(t, st == MB_OK && memory[1] < memory[0], what, (double)memory[1], (double)memory[0]);
  mb_data_free(data);
  free(psi[0]), free(psi[1]), free(grad[0]), free(grad[1]);
  mb_model_free(m);
  mb_desc_free(&d);
}

int main(void) {
  mbt_tally t = {0};
  compare_selected(&t, "problems/slider_crank.json");
  compare_selected(&t, "problems/fivebar_spline.json");
  compare(&t, "problems/fivebar.json", 0, 0, 0);
  compare(&t, "problems/fivebar.json", 97, 0, 0);
  /* steps retried on sub-steps: each sub-step differentiated, recomputed the same way */
  compare(&t, "problems/fivebar.json", 0, 0, 0.05);
  compare(&t, "problems/fivebar.json", 7, 0, 0.05);
  compare(&t, "problems/slider_crank.json", 0, 0, 0);
  compare(&t, "problems/slider_crank.json", 250, 0, 0);
  compare(&t, "problems/fivebar_spline.json", 0, 0, 0);
  compare(&t, "tests/models/ok/controller_planar.json", 0, 0, 0);
  compare(&t, "tests/models/ok/tyre_wheel.json", 0, 0, 0);
  compare(&t, "tests/models/ok/tyre_wheel.json", 40, 0, 0);
  compare(&t, "problems/control/pendulum_pid.json", 0, 0, 0);
  compare(&t, "problems/control/pendulum_pid.json", 300, 0, 0);
  compare(&t, "problems/control/slider_crank_codesign.json", 0, 0, 0);
  compare(&t, "problems/control/governor_design.json", 0, 0.3, 0);
  compare(&t, "tests/models/iftomm/a04_bricard.json", 0, 2, 0); /* a redundant constraint */
  compare(&t, "tests/models/iftomm/a04_bricard.json", 300, 2, 0);
  compare(&t, "problems/vehicle/step_descent.json", 0, 0.05, 0);
  compare(&t, "problems/vehicle/step_descent.json", 7, 0.05, 0);
  threads_agree(&t, "problems/vehicle/step_descent.json", 0.05, 0, 0);
  threads_agree(&t, "problems/vehicle/step_descent.json", 0.05, 7, 0);
  threads_agree(&t, "problems/fivebar.json", 0.5, 0, 0);
  threads_agree(&t, "problems/fivebar.json", 0, 7, 0.05);
  /* an integral of an angle that turns four times: its branch unwrapped backward as forward */
  compare(&t, "tests/models/ok/spinning_rotor.json", 0, 0, 0);
  compare(&t, "tests/models/ok/spinning_rotor.json", 91, 0, 0);
  threads_agree(&t, "tests/models/ok/spinning_rotor.json", 0, 0, 0);
  /* a controller reading that angle: segments taken again read it on the forward sweep's branch */
  compare(&t, "tests/models/ok/spinning_pid.json", 0, 0, 0);
  compare(&t, "tests/models/ok/spinning_pid.json", 200, 0, 0);
  /* joint coordinates: tyres, controllers, joint friction, reactions read by the functionals, a
     redundant constraint, an angle that turns, steps retried on sub-steps */
  joint_checkpoints_agree(&t, "problems/vehicle/step_descent.json", 0.3, 0, 37);
  joint_checkpoints_agree(&t, "problems/control/pendulum_pid.json", 0, 0, 300);
  joint_checkpoints_agree(&t, "problems/control/pendulum_pid_friction.json", 1, 0, 97);
  joint_checkpoints_agree(&t, "tests/models/ok/reactions_spatial.json", 1, 0, 50);
  joint_checkpoints_agree(&t, "tests/models/iftomm/a04_bricard.json", 2, 0, 300);
  joint_checkpoints_agree(&t, "tests/models/ok/spinning_rotor.json", 0, 0, 91);
  joint_checkpoints_agree(&t, "tests/models/ok/spinning_pid.json", 0, 0, 200);
  joint_checkpoints_agree(&t, "problems/slider_crank.json", 0.8, 0.05, 8);
  return mbt_finish(&t);
}

/* Choosing between forward and adjoint sensitivity, and running the choice. The cost model:
   forward costs a simulation plus a part per parameter and step; adjoint costs a simulation, a
   backward sweep with a part per functional and step, and the initial sensitivities of every
   parameter. Rather than guess the constants, both methods run on the first few steps of the
   model itself with the real p and m, and the measured per-step times are extrapolated. */
#include "mbopt/gradient.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mbopt/sensitivity.h"
#include "mbopt/simulate.h"

static const char* method_names[] = {"auto", "forward", "adjoint"};

const char* mb_method_name(mb_method method) {
  return method >= MB_METHOD_AUTO && method <= MB_METHOD_ADJOINT ? method_names[method] : "?";
}

int mb_method_parse(const char* name) {
  for (int i = 0; i < 3; i++)
    if (name && !strcmp(name, method_names[i])) return i;
  return -1;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Seconds of one method on the model cut to `steps` steps, fastest of two runs (0 on failure). */
static double trial(const mb_desc* desc, const mb_model* m, mb_method method, long steps,
                    double* psi, double* grad) {
  mb_model cut = *m; /* shares the arrays, which are read-only */
  cut.opt.t_end = steps * m->opt.step;
  mb_data* d = mb_data_create(&cut);
  if (!d) return 0;
  mb_error err;
  double best = INFINITY;
  for (int r = 0; r < 2; r++) {
    double start = seconds();
    mb_status st = method == MB_METHOD_ADJOINT
                       ? mbd_adjoint(desc, &cut, d, 0, psi, grad, NULL, &err)
                       : mbd_forward(desc, &cut, d, psi, grad, &err);
    if (st != MB_OK)
      best = 0, r = 2;
    else
      best = fmin(best, seconds() - start);
  }
  mb_data_free(d);
  return best;
}

/* Predicted seconds of a whole run: the per-step cost from the difference of two lengths, the
   fixed cost (assembly, tangent models, initial sensitivities) from what is left. */
static double predict(const mb_desc* desc, const mb_model* m, mb_method method, long n1, long n2,
                      long nstep, double* psi, double* grad) {
  double t1 = trial(desc, m, method, n1, psi, grad);
  double t2 = trial(desc, m, method, n2, psi, grad);
  double per_step = n2 > n1 ? fmax(t2 - t1, 0) / (n2 - n1) : t2 / (n2 > 0 ? n2 : 1);
  double fixed = fmax(t1 - per_step * n1, 0);
  return fixed + per_step * nstep;
}

static void choose(const mb_desc* desc, const mb_model* m, double* psi, double* grad,
                   mb_gradient_info* info) {
  const long nstep = mb_step_count(m);
  const long n2 = nstep < 80 ? nstep : 80, n1 = n2 / 4 > 0 ? n2 / 4 : 1;
  trial(desc, m, MB_METHOD_FORWARD, 1, psi, grad); /* warm the caches */
  info->predicted_forward = predict(desc, m, MB_METHOD_FORWARD, n1, n2, nstep, psi, grad);
  info->predicted_adjoint = predict(desc, m, MB_METHOD_ADJOINT, n1, n2, nstep, psi, grad);
  info->method =
      info->predicted_adjoint < info->predicted_forward ? MB_METHOD_ADJOINT : MB_METHOD_FORWARD;
  snprintf(info->reason, sizeof info->reason,
           "p = %d parameters, m = %d functionals: predicted %.3g s for adjoint against %.3g s "
           "for forward (per-step costs measured on %ld and %ld steps)",
           mb_desc_gradient_count(desc), m->nfunctional, info->predicted_adjoint,
           info->predicted_forward, n1, n2);
}

static int stop_after(const mb_model* m, const mb_data* d, void* user) {
  (void)m;
  return d->t >= *(const double*)user;
}

/* After a gradient's step failed at t_fail: whether simulate's retry on sub-steps passes it. Then
   the message says so, and which fixed step gets the gradient through (the sensitivities
   differentiate one grid of steps, so they cannot retry). */
static void sub_step_remedy(const mb_model* m, double t_fail, mb_error* err) {
  mb_model probe = *m; /* settings by value, the arrays shared and only read */
  probe.opt.max_substeps = m->opt.max_substeps > 8 ? m->opt.max_substeps : 8;
  probe.opt.output_interval = 0;
  mb_data* d = mb_data_create(m);
  mb_error probe_err;
  if (d && mb_simulate(&probe, d, stop_after, &t_fail, &probe_err) == MB_OK &&
      d->report.finest_substeps > 1 && d->t >= t_fail) {
    const int n = d->report.finest_substeps;
    mb_error_set(err, MB_NEWTON_FAILED,
                 "t = %g: the Newton iteration fails at h = %g but passes on %d sub-steps (which "
                 "simulate retries on its own); a gradient takes every step at one size: --step %g "
                 "gets it through",
                 t_fail, m->opt.step, n, m->opt.step / n);
  }
  mb_data_free(d);
}

mb_status mb_gradient(const mb_desc* desc, const mb_model* m, mb_method method, int checkpoint,
                      double* psi, double* grad, mb_gradient_info* info, mb_error* err) {
  mb_gradient_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  if (method == MB_METHOD_AUTO) {
    choose(desc, m, psi, grad, info);
  } else {
    info->method = method;
    snprintf(info->reason, sizeof info->reason, "requested");
  }
  mb_data* d = mb_data_create(m);
  if (!d) return mb_error_set(err, MB_ERR_MEMORY, "gradient: out of memory");
  mb_status st = info->method == MB_METHOD_ADJOINT
                     ? mbd_adjoint(desc, m, d, checkpoint, psi, grad, &info->memory_bytes, err)
                     : mbd_forward(desc, m, d, psi, grad, err);
  const double t_fail = d->t;
  mb_data_free(d);
  if (st == MB_NEWTON_FAILED) sub_step_remedy(m, t_fail, err);
  return st;
}

/* Choosing between forward and adjoint sensitivity, and running the choice. The choice counts
   the linear systems each method solves per step, so that the same spec always picks the same
   method: the forward method solves the step's three linearised systems (positions, velocities,
   accelerations) for each of the p parameters; the adjoint solves their transposes for each of
   the m functionals and factorises the step's matrices again, about one set more. Both evaluate
   the parameter partials of every step, so those cancel. The adjoint runs when p > m.
   scripts/results-auto.sh compares the choice with both methods timed on every bundled spec
   (results/adjoint/auto_choice.md). */
#include "mbopt/gradient.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void choose(const mb_desc* desc, const mb_model* m, mb_gradient_info* info) {
  const int p = mb_desc_gradient_count(desc), nf = m->nfunctional;
  info->method = p > nf ? MB_METHOD_ADJOINT : MB_METHOD_FORWARD;
  snprintf(info->reason, sizeof info->reason,
           "p = %d parameters %s m = %d functionals: per step the forward method solves p sets of "
           "linearised systems, the adjoint m transposed sets and one refactorisation",
           p, p > nf ? ">" : "<=", nf);
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
    choose(desc, m, info);
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

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

/* stops a probe once it has completed the step given */
static int stop_after(const mb_model* m, const mb_data* d, void* user) {
  (void)m;
  return d->report.steps >= *(const int*)user;
}

/* The most sub-steps a failed gradient's probe tries: a step that needs more is better served
   by a smaller step. */
#define MB_PROBE_SUBSTEPS 64

/* After a gradient failed on step `failed` with its retry on max_substeps sub-steps: whether more
   sub-steps pass it. Then the message says how many, and which fixed step gets it through. */
static void sub_step_remedy(const mb_model* m, int failed, mb_error* err) {
  if (m->opt.max_substeps >= MB_PROBE_SUBSTEPS) return;
  mb_model probe = *m; /* settings by value, the arrays shared and only read */
  probe.opt.max_substeps = MB_PROBE_SUBSTEPS;
  probe.opt.output_interval = 0;
  mb_data* d = mb_data_create(m);
  mb_error probe_err;
  if (d && mb_simulate(&probe, d, stop_after, &failed, &probe_err) == MB_OK &&
      d->report.steps >= failed && d->report.finest_substeps > m->opt.max_substeps) {
    const int n = d->report.finest_substeps;
    char retried[48] = "";
    if (m->opt.max_substeps > 1)
      snprintf(retried, sizeof retried, ", also on %d sub-steps,", m->opt.max_substeps);
    mb_error_set(err, MB_NEWTON_FAILED,
                 "t = %g: the Newton iteration fails at h = %g%s but passes on %d sub-steps: "
                 "simulation.max_substeps = %d (or --step %g) gets it through",
                 failed * m->opt.step, m->opt.step, retried, n, n, m->opt.step / n);
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
  const int failed = d->report.steps + 1;
  info->substepped_steps = d->report.substepped_steps;
  mb_data_free(d);
  if (st == MB_NEWTON_FAILED) sub_step_remedy(m, failed, err);
  return st;
}

/* The bridge between a spec's "optimization" section and the optimiser layer: every evaluation
   sets the design variables in the description, compiles, simulates and, when asked, computes
   the gradients of the objective and constraint functionals. A simulation that fails (assembly,
   Newton divergence, non-finite values) is a failed point for the optimiser, not an error. */
#include "mbopt/optimize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mbopt/gradient.h"
#include "mbopt/optim.h"
#include "mbopt/simulate.h"

typedef struct bridge {
  mb_desc* desc;
  mbo_optimizer* opt;
  mb_method method; /* chosen at the first gradient, then kept */
  volatile sig_atomic_t* interrupt;
  mb_opt_observer observer;
  void* user;
  double* psi;     /* (nfunctional) */
  double* grad;    /* (nfunctional x nvar): gradients with respect to the design variables only */
  double *df, *dc; /* the last evaluation's gradients, for the observer: (nvar), (ncon x nvar) */
  char last_failure[MB_MESSAGE_LEN];
  double start; /* of the run; for a resumed one, as if it had never stopped */
  /* a resumed run: the record, how much of it was replayed, and whether the evaluation the
     observer is told about came from it */
  const mb_opt_evaluation* done;
  int ndone, replayed, left_record_at, live, current_replayed;
} bridge;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Takes the next evaluation of a resumed run's record when it is the one asked for (the same
   point bitwise, with gradients exactly when they are asked for): 1 then, with the outputs and
   the return value of evaluate() in *rc. The first request the record does not hold ends the
   replay; from there the run evaluates, its clock continuing the record's. */
static int replay(bridge* b, const double* x, int want_grad, double* f, double* c, int* rc) {
  const mb_optim_desc* o = &b->desc->optimization;
  const int nv = o->nvar, nc = o->ncon;
  b->current_replayed = 0;
  if (b->replayed < b->ndone) {
    const mb_opt_evaluation* r = &b->done[b->replayed];
    if (!memcmp(r->x, x, sizeof(double) * nv) && !r->with_gradient == !want_grad) {
      b->replayed++;
      b->current_replayed = 1;
      if (r->failed) {
        snprintf(b->last_failure, sizeof b->last_failure, "evaluation %d failed in the record",
                 r->index);
        *rc = 1;
        return 1;
      }
      *f = r->objective;
      if (nc) memcpy(c, r->c, sizeof(double) * nc);
      if (want_grad) {
        memcpy(b->df, r->df, sizeof(double) * nv);
        if (nc) memcpy(b->dc, r->dc, sizeof(double) * nc * nv);
      }
      *rc = 0;
      return 1;
    }
    b->left_record_at = b->replayed + 1;
    b->ndone = b->replayed;
  }
  /* a resumed run's clock continues the record's; a fresh run's runs from its start */
  if (!b->live) {
    b->live = 1;
    if (b->replayed > 0) b->start = now() - b->done[b->replayed - 1].seconds;
  }
  return 0;
}

static int evaluate(const double* x, int want_grad, double* f, double* df, double* c, double* dc,
                    void* user) {
  bridge* b = user;
  mb_desc* d = b->desc;
  const mb_optim_desc* o = &d->optimization;
  int rc;
  if (replay(b, x, want_grad, f, c, &rc)) {
    if (want_grad && rc == 0) {
      memcpy(df, b->df, sizeof(double) * o->nvar);
      if (o->ncon) memcpy(dc, b->dc, sizeof(double) * o->ncon * o->nvar);
    }
    return rc;
  }
  /* a replay runs to the end of its record: a resumed run stopped again keeps all of it */
  if (b->interrupt && *b->interrupt) mbo_interrupt(b->opt);
  for (int v = 0; v < o->nvar; v++) mb_desc_set_param(d, o->var[v].param, x[v]);

  mb_error err;
  mb_model* m = NULL;
  mb_status st = mb_compile(d, &m, &err);
  if (st == MB_OK && want_grad) {
    mb_gradient_info info;
    st = mb_gradient(d, m, b->method, 0, b->psi, b->grad, &info, &err);
    if (st == MB_OK) b->method = info.method;
  } else if (st == MB_OK) {
    /* the value alone: a simulation, in whichever formulation the model was compiled for */
    mb_data* data = mb_data_create(m);
    st = data ? mb_simulate(m, data, NULL, NULL, &err) : MB_ERR_MEMORY;
    if (st == MB_OK) memcpy(b->psi, data->psi, sizeof(double) * m->nfunctional);
    mb_data_free(data);
  }
  mb_model_free(m);
  if (st == MB_ERR_MEMORY) return -1;
  if (st == MB_INTERRUPTED) mbo_interrupt(b->opt);
  if (st != MB_OK) {
    snprintf(b->last_failure, sizeof b->last_failure, "%s", err.message);
    return 1;
  }

  /* objective and constraints; the gradients have one column per design variable */
  const int nv = o->nvar;
  *f = b->psi[o->objective];
  for (int k = 0; k < o->ncon; k++) c[k] = b->psi[o->con[k].functional];
  if (want_grad) {
    for (int v = 0; v < nv; v++) {
      df[v] = b->df[v] = b->grad[(size_t)o->objective * nv + v];
      for (int k = 0; k < o->ncon; k++)
        dc[(size_t)k * nv + v] = b->dc[(size_t)k * nv + v] =
            b->grad[(size_t)o->con[k].functional * nv + v];
    }
  }
  return 0;
}

static void observe(int evaluation, const double* x, double f, const double* c, int with_gradient,
                    int failed, void* user) {
  bridge* b = user;
  if (b->interrupt && *b->interrupt && b->replayed == b->ndone) mbo_interrupt(b->opt);
  if (!b->observer) return;
  const mb_optim_desc* o = &b->desc->optimization;
  const int gradients = with_gradient && !failed;
  mb_opt_evaluation e = {
      .index = evaluation,
      .nvar = o->nvar,
      .ncon = o->ncon,
      .x = x,
      .objective = f,
      .c = c,
      .with_gradient = with_gradient,
      .failed = failed,
      .seconds = b->current_replayed ? b->done[b->replayed - 1].seconds : now() - b->start,
      .df = gradients ? b->df : NULL,
      .dc = gradients && o->ncon ? b->dc : NULL,
      .replayed = b->current_replayed,
      .feasible = !failed && mbo_feasible(b->opt, c)};
  b->observer(&e, b->user);
}

/* The optimiser of algorithm for the spec's design variables, bounds and constraints (NULL with
   err set when the spec cannot run with it). */
static mbo_optimizer* create_optimizer(const mb_desc* desc, const char* algorithm, mb_error* err) {
  const mb_optim_desc* o = &desc->optimization;
  if (o->objective < 0 || o->nvar < 1) {
    mb_error_set(
        err, MB_ERR_MODEL,
        "optimization: missing (the spec needs an \"optimization\" section with parameters "
        "and an objective)");
    return NULL;
  }
  if (!algorithm) algorithm = o->algorithm;
  const int alg = mbo_algorithm_parse(algorithm);
  if (alg < 0) {
    mb_error_set(err, MB_ERR_MODEL,
                 "optimization.algorithm: unknown algorithm \"%s\" (lbfgs, slsqp, mma, ccsaq, "
                 "tnewton, bobyqa, cobyla, neldermead, sbplx)",
                 algorithm);
    return NULL;
  }
  const int nv = o->nvar, nc = o->ncon;
  double* bounds = calloc(2 * (size_t)(nv + nc) + 1, sizeof(double));
  int* logs = calloc((size_t)nv + 1, sizeof(int));
  mbo_optimizer* opt = bounds && logs ? mbo_create((mbo_algorithm)alg, nv, err) : NULL;
  if (!bounds || !logs) {
    mb_error_set(err, MB_ERR_MEMORY, "optimization: out of memory");
    free(bounds);
    free(logs);
    return NULL;
  }
  double *lower = bounds, *upper = lower + nv, *clo = upper + nv, *chi = clo + nc;
  for (int v = 0; v < nv; v++)
    lower[v] = o->var[v].lower, upper[v] = o->var[v].upper, logs[v] = o->var[v].log_scale;
  for (int k = 0; k < nc; k++) clo[k] = o->con[k].lower, chi[k] = o->con[k].upper;
  if (opt && mbo_set_bounds(opt, lower, upper, logs, err) != MB_OK) {
    mbo_destroy(opt);
    opt = NULL;
  }
  if (opt && nc > 0 && mbo_set_constraints(opt, nc, clo, chi, err) != MB_OK) {
    char message[sizeof err->message];
    snprintf(message, sizeof message, "%s", err->message);
    mb_error_set(err, err->status, "optimization.constraints: %s", message);
    mbo_destroy(opt);
    opt = NULL;
  }
  free(bounds);
  free(logs);
  return opt;
}

mb_status mb_optimize_check(const mb_desc* desc, const char* algorithm, mb_error* err) {
  mb_error local;
  if (!err) err = &local;
  mbo_optimizer* opt = create_optimizer(desc, algorithm, err);
  mbo_destroy(opt);
  return opt ? MB_OK : err->status;
}

mb_status mb_optimize(mb_desc* desc, const char* algorithm, mb_opt_observer observer, void* user,
                      volatile sig_atomic_t* interrupt, double* x, mb_opt_result* result,
                      mb_error* err) {
  return mb_optimize_resume(desc, algorithm, NULL, 0, observer, user, interrupt, x, result, err);
}

mb_status mb_optimize_resume(mb_desc* desc, const char* algorithm, const mb_opt_evaluation* done,
                             int ndone, mb_opt_observer observer, void* user,
                             volatile sig_atomic_t* interrupt, double* x, mb_opt_result* result,
                             mb_error* err) {
  const mb_optim_desc* o = &desc->optimization;
  mb_error local;
  if (!err) err = &local;
  memset(result, 0, sizeof *result);
  bridge b;
  memset(&b, 0, sizeof b);
  b.opt = create_optimizer(desc, algorithm, err);
  if (!b.opt) return err->status;
  if (!algorithm) algorithm = o->algorithm;
  snprintf(result->algorithm, sizeof result->algorithm, "%s", algorithm);
  b.desc = desc, b.method = (mb_method)desc->sensitivity, b.interrupt = interrupt;
  b.observer = observer, b.user = user, b.start = now();
  b.done = done, b.ndone = done ? ndone : 0;
  const int nv = o->nvar, nc = o->ncon;
  double* buf =
      calloc((size_t)desc->nfunctional * (nv + 1) + (size_t)nv * (nc + 2) + 8, sizeof(double));
  int* design_param = calloc((size_t)nv + 1, sizeof(int));
  mb_status st = MB_ERR_MEMORY;
  if (!buf || !design_param) {
    mb_error_set(err, st, "optimization: out of memory");
    goto done;
  }
  b.psi = buf;
  b.grad = buf + desc->nfunctional;
  double* x0 = b.grad + (size_t)desc->nfunctional * nv;
  b.df = x0 + nv;
  b.dc = b.df + nv;
  for (int v = 0; v < nv; v++) {
    x0[v] = desc->param_value[o->var[v].param];
    design_param[v] = o->var[v].param;
  }
  /* the sensitivities of the other parameters would be work for nothing */
  desc->gradient_param = design_param, desc->ngradient_param = nv;

  mbo_settings settings;
  mbo_settings_default(&settings);
  settings.ftol_rel = o->ftol_rel, settings.ftol_abs = o->ftol_abs;
  settings.xtol_rel = o->xtol_rel, settings.maxtime = o->maxtime, settings.maxeval = o->maxeval;
  mbo_set_settings(b.opt, &settings);
  mbo_set_eval(b.opt, evaluate, &b);
  mbo_set_observer(b.opt, observe, &b);

  mbo_result r;
  st = mbo_run(b.opt, x0, &r, err);
  if (st != MB_OK) goto done;

  /* the best point stays in the description */
  for (int v = 0; v < nv; v++) mb_desc_set_param(desc, o->var[v].param, x0[v]);
  if (x) memcpy(x, x0, sizeof(double) * nv);
  snprintf(result->status, sizeof result->status, "%s", r.status);
  if (!strcmp(r.status, "evaluation_failed") && b.last_failure[0])
    snprintf(result->message, sizeof result->message, "%.150s; last failure: %s", r.message,
             b.last_failure);
  else
    snprintf(result->message, sizeof result->message, "%s", r.message);
  result->objective = r.f;
  result->evaluations = r.evaluations, result->gradient_evaluations = r.gradient_evaluations;
  result->iterations = r.iterations, result->failed_evaluations = r.failed_evaluations;
  result->seconds = r.seconds;
  result->replayed = b.replayed, result->left_record_at = b.left_record_at;
  result->feasible = r.feasible, result->violation = r.violation;
  if (r.gradient_evaluations > 0)
    snprintf(result->sensitivity_method, sizeof result->sensitivity_method, "%s",
             mb_method_name(b.method));

done:
  desc->gradient_param = NULL, desc->ngradient_param = 0;
  mbo_destroy(b.opt);
  free(buf);
  free(design_param);
  return st;
}

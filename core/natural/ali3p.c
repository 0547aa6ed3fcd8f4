/* ALI3-P in natural coordinates: the formulation's half of the step (stepper.h, whose step
   ali3p_step.c takes), with the tangent M + gamma h C + beta h^2 (Phi_q^T alpha Phi_q + K
   [+ Phi_qq^T (lambda + alpha Phi)]) (eq. 5) and the projections of the velocities and
   accelerations onto the constraint manifolds with P = M, zeta = 1 (eqs. 6, 7) (seed 001, section
   2); then steps on sub-steps, and simulation with its energy balance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/simulate.h"
#include "stepper.h"

/* The model and workspace the natural formulation's functions of the ALI3-P step and of the
   projections (stepper.h) take as their context. */
typedef struct natural_step {
  const mb_model* m;
  mb_data* d;
} natural_step;

/* Penalty of the projections (times m->con_scale per constraint), mbu_projection_penalty of the
   model's mass and constraints. */
double mb_projection_penalty(const mb_model* m, mb_data* d) {
  return mbu_projection_penalty(m->opt.penalty, m->structure->mass_diag_max,
                                mb_constraints_metric(m, d->phiq, d->work));
}

/* out = M + penalty Phi_q^T S Phi_q on the system pattern: from the Gram product `gram` when it is
   given, else from d->phiq */
static void mass_plus_gram(const mb_model* m, const mb_data* d, const double* gram, double penalty,
                           double* out) {
  const mb_structure* st = m->structure;
  if (gram) {
    for (int k = 0; k < st->sys->nnz; k++) out[k] = st->mass[k] + penalty * gram[k];
  } else {
    memcpy(out, st->mass, sizeof(double) * st->sys->nnz);
    mb_constraints_add_gram(m, d->phiq, NULL, penalty, out);
  }
}

mb_status mb_factor_projection(const mb_model* m, mb_data* d, const double* gram, mb_error* err) {
  const double penalty = mb_projection_penalty(m, d);
  mass_plus_gram(m, d, gram, penalty, d->proj);
  d->proj_penalty = penalty;
  if (mb_factor_compute(d->projection, d->proj) != 0)
    return mb_error_set(err, MB_ERR_SINGULAR,
                        "t = %g: the projection matrix M + alpha Phi_q^T Phi_q is singular: some "
                        "motion has no mass and no constraint",
                        d->t);
  return MB_OK;
}

/* the natural formulation's products and solve of the projections */
static void natural_phi_mul(void* ctx, const double* x, double* y) {
  const natural_step* c = ctx;
  mb_rows_mul(&c->m->structure->phiq, c->d->phiq, x, 1, y);
}

static void natural_phi_mul_t(void* ctx, const double* w, double* y) {
  const natural_step* c = ctx;
  mb_rows_mul_t(&c->m->structure->phiq, c->d->phiq, w, -1, y);
}

static void natural_projection_solve(void* ctx, double* b) {
  const natural_step* c = ctx;
  mb_factor_solve(c->d->projection, 0, 1, b);
}

/* Projects x onto Phi_q x + rhs = 0 mass-orthogonally (mb_project_iterate with x_star = x). */
static double project(const mb_model* m, mb_data* d, double* x, const double* rhs, double* mult) {
  natural_step c = {m, d};
  const mb_projection p = {m->nq,
                           m->ncon,
                           m->con_scale,
                           d->proj_penalty,
                           m->opt.projection_iterations,
                           m->opt.tol_projection,
                           &c,
                           natural_phi_mul,
                           natural_phi_mul_t,
                           natural_projection_solve,
                           0};
  double* mx_star = d->work + m->nq + m->ncon;
  memset(mx_star, 0, sizeof(double) * m->nq);
  mb_mass_mul(m, x, 1, mx_star);
  return mb_project_iterate(&p, mx_star, x, rhs, mult, d->work);
}

/* The projections of mb_project_state with Phi and Phi_q already evaluated at d->q. */
static mb_status project_state(const mb_model* m, mb_data* d, mb_error* err) {
  /* velocities first: the acceleration remainder depends on them */
  mb_status st = mb_factor_projection(m, d, NULL, err);
  if (st != MB_OK) return st;
  mb_constraints_time(m, d);
  double phid = project(m, d, d->qd, d->phit, d->sigma);
  mb_constraints_rates(m, d);
  double phidd = project(m, d, d->qdd, d->phidd_rhs, d->kappa);
  d->report.max_phi = fmax(d->report.max_phi, mbu_norm_inf(m->ncon, d->phi));
  d->report.max_phid = fmax(d->report.max_phid, phid);
  d->report.max_phidd = fmax(d->report.max_phidd, phidd);
  if (!mbu_all_finite(m->nq, d->qd) || !mbu_all_finite(m->nq, d->qdd))
    return mb_error_set(err, MB_ERR_NONFINITE, "t = %g: non-finite velocities or accelerations",
                        d->t);
  return MB_OK;
}

mb_status mb_project_state(const mb_model* m, mb_data* d, mb_error* err) {
  mb_constraints_positions(m, d);
  return project_state(m, d, err);
}

void mb_newton_matrix(const mb_model* m, mb_data* d, double alpha, const double* mult, int exact,
                      const double* gram, double* T, double* damp) {
  const int nnz = m->structure->sys->nnz;
  const double h = m->opt.step, gh = m->opt.gamma * h, bh2 = m->opt.beta * h * h;
  mass_plus_gram(m, d, gram, bh2 * alpha, T);
  if (exact) mb_constraints_add_hessian(m, d, mult, bh2, T);
  /* the forces' beta h^2 K straight into T, and gamma h C too unless C is wanted apart */
  if (damp) memset(damp, 0, sizeof(double) * nnz);
  const mb_jacobian jac = {T, bh2, damp ? damp : T, damp ? 1 : gh};
  /* joint friction reads the multipliers: those of the residual (mult) */
  double* lambda = d->lambda;
  d->lambda = (double*)mult;
  mb_forces_into(m, d, &jac);
  mb_friction_tangent(m, d, alpha, m->con_scale, bh2, T);
  d->lambda = lambda;
  if (damp)
    for (int k = 0; k < nnz; k++) T[k] += gh * damp[k];
}

/* The Newton residual r = beta h^2 (M qdd + Phi_q^T (lambda + alpha Phi) - Q) at the current q,
   whose constraints are evaluated; with tangent, also the Newton matrix into d->tangent. */
static void newton_system(const mb_model* m, mb_data* d, double alpha, double* r, int tangent) {
  const int nq = m->nq, nc = m->ncon;
  const double h = m->opt.step, beta = m->opt.beta, bh2 = beta * h * h;
  double* mult = d->work + 3 * nq; /* lambda + alpha Phi, (nc) */
  for (int i = 0; i < nc; i++) mult[i] = d->lambda[i] + alpha * m->con_scale[i] * d->phi[i];
  if (tangent) {
    mb_newton_matrix(m, d, alpha, mult, m->opt.exact_tangent, NULL, d->tangent, NULL);
  } else {
    double* lambda = d->lambda; /* joint friction reads the residual's multipliers */
    d->lambda = mult;
    mb_forces_into(m, d, NULL);
    d->lambda = lambda;
  }
  memset(r, 0, sizeof(double) * nq);
  mb_mass_mul(m, d->qdd, 1, r);
  mb_rows_mul_t(&m->structure->phiq, d->phiq, mult, 1, r);
  for (int i = 0; i < nq; i++) r[i] = bh2 * (r[i] - d->force[i]);
}

double mb_model_penalty_remedy(const mb_model* m) {
  return m->penalty_at_cap > 2 * m->opt.penalty ? m->penalty_at_cap : 0;
}

static void natural_positions(const mb_stepper* s) {
  const natural_step* c = s->ctx;
  mb_constraints_positions(c->m, c->d);
}

static int natural_residual(const mb_stepper* s, double alpha, double* r, int tangent) {
  const natural_step* c = s->ctx;
  newton_system(c->m, c->d, alpha, r, tangent);
  return tangent && mb_factor_compute(c->d->newton, c->d->tangent) != 0;
}

static void natural_solve(const mb_stepper* s, double* r) {
  const natural_step* c = s->ctx;
  mb_factor_solve(c->d->newton, 0, 1, r);
}

static mb_status natural_project(const mb_stepper* s, mb_error* err) {
  const natural_step* c = s->ctx;
  return project_state(c->m, c->d, err);
}

static const char* natural_label(const mb_stepper* s, int i) {
  const natural_step* c = s->ctx;
  return c->m->con_label + MB_LABEL_LEN * i;
}

static const mb_stepper_ops natural_ops = {natural_positions, natural_residual, natural_solve,
                                           natural_project, natural_label};

/* The natural formulation's stepper over m and d (c its context, filled). */
static mb_stepper natural_stepper(const mb_model* m, mb_data* d, natural_step* c) {
  *c = (natural_step){m, d};
  return (mb_stepper){.ops = &natural_ops,
                      .ctx = c,
                      .opt = &m->opt,
                      .n = m->nq,
                      .nc = m->ncon,
                      .q = d->q,
                      .qd = d->qd,
                      .qdd = d->qdd,
                      .qd_star = d->qd_star,
                      .qdd_star = d->qdd_star,
                      .qhat_v = d->qhat_v,
                      .qhat_a = d->qhat_a,
                      .lambda = d->lambda,
                      .phi = d->phi,
                      .scale = m->con_scale,
                      .r = d->work + 2 * m->nq,
                      .t = &d->t,
                      .report = &d->report,
                      .penalty_remedy = mb_model_penalty_remedy(m),
                      .lock_hint = mb_friction_lock_hint(m)};
}

/* One step of m->opt.step from d->t to t_new. */
static mb_status ali3p_step(const mb_model* m, mb_data* d, double t_new, mb_error* err) {
  natural_step c;
  const mb_stepper s = natural_stepper(m, d, &c);
  return mb_ali3p_step(&s, t_new, err);
}

mb_status mb_step(const mb_model* m, mb_data* d, mb_error* err) {
  natural_step c;
  const mb_stepper s = natural_stepper(m, d, &c);
  return mb_ali3p_full_step(&s, err);
}

static void state_copy(const mb_model* m, mb_data* d, double* x, int save) {
  mb_state_copy(d->q, d->qd, d->qdd, m->nq, d->lambda, m->ncon, x, save);
}

int mb_step_start_init(const mb_model* m, mb_step_start* start) {
  memset(start, 0, sizeof *start);
  if (m->opt.max_substeps < 2) return 0;
  start->x = malloc(sizeof(double) * (3 * (size_t)m->nq + m->ncon + 1));
  return start->x ? 0 : -1;
}

void mb_step_start_free(mb_step_start* start) {
  free(start->x);
  start->x = NULL;
}

void mb_step_start_save(const mb_model* m, mb_data* d, mb_step_start* start) {
  start->t = d->t;
  start->steps = d->report.steps;
  state_copy(m, d, start->x, 1);
}

mb_model mb_substep_model(const mb_model* m, int n) {
  mb_model sub = *m; /* settings by value, the arrays shared and only read */
  sub.opt = mb_substep_settings(&m->opt, n);
  return sub;
}

mb_status mb_substeps(const mb_model* m, mb_data* d, const mb_step_start* start, int n,
                      mb_substep_hook after, void* user, mb_error* err) {
  const mb_model sub = mb_substep_model(m, n);
  const double t_next = (start->steps + 1) * m->opt.step;
  d->t = start->t;
  state_copy(m, d, start->x, 0);
  mb_status st = MB_OK;
  for (int j = 1; j <= n && st == MB_OK; j++) {
    st = ali3p_step(&sub, d, start->t + (t_next - start->t) * j / n, err);
    if (st == MB_OK && after) st = after(&sub, d, user, err);
  }
  if (st == MB_OK) d->report.steps = start->steps + 1;
  return st;
}

/* the natural formulation's retry (stepper.h) */
typedef struct natural_retry {
  const mb_model* m;
  mb_data* d;
  mb_step_start* start;
} natural_retry;

static mb_status retry_step(void* ctx, mb_error* err) {
  natural_retry* c = ctx;
  return mb_step(c->m, c->d, err);
}

static mb_status retry_substeps(void* ctx, int n, mb_error* err) {
  natural_retry* c = ctx;
  return mb_substeps(c->m, c->d, c->start, n, NULL, NULL, err);
}

static void retry_save(void* ctx) {
  natural_retry* c = ctx;
  mb_step_start_save(c->m, c->d, c->start);
}

static void retry_restore(void* ctx) {
  natural_retry* c = ctx;
  c->d->t = c->start->t;
  state_copy(c->m, c->d, c->start->x, 0);
}

mb_status mb_step_or_substeps(const mb_model* m, mb_data* d, mb_step_start* start, int* count,
                              mb_error* err) {
  natural_retry c = {m, d, start};
  const mb_retry r = {&c,         &m->opt,      &d->report, retry_step, retry_substeps,
                      retry_save, retry_restore};
  return mb_step_retrying(&r, count, err);
}

/* Energy balance bookkeeping: E(t) - E(0) - W_nc(t), with the work of non-conservative forces
   and of the drivers (the run's lambda^T Phi_t) integrated by the trapezoidal rule. */
static void energy_balance(const mb_model* m, mb_data* d, const mb_run* run, int first) {
  double T, Vg, Ve;
  mb_energy(m, d, run->kinetic_energy ? NULL : &T, &Vg, &Ve);
  if (run->kinetic_energy) T = run->kinetic_energy(run->ctx);
  double E = T + Vg + Ve;
  double power = mb_nonconservative_power(m, d) + run->driver_power(run->ctx);
  mb_report* rep = &d->report;
  if (first) {
    rep->energy_initial = E;
    rep->work_nonconservative = 0;
    rep->max_energy_error = 0;
    rep->energy_scale = 0;
  } else {
    rep->work_nonconservative += 0.5 * m->opt.step * (d->power_prev + power);
  }
  d->power_prev = power;
  rep->energy_final = E;
  rep->energy_scale = fmax(rep->energy_scale, fmax(T, Ve));
  rep->max_energy_error =
      fmax(rep->max_energy_error, fabs(E - rep->energy_initial - rep->work_nonconservative));
}

mb_status mb_run_simulation(const mb_model* m, mb_data* d, const mb_run* run, mb_observer obs,
                            void* user, mb_error* err) {
  memset(&d->report, 0, sizeof d->report);
  memset(d->psi, 0, sizeof(double) * m->nfunctional);
  mb_status st = run->assemble(run->ctx, err);
  if (st != MB_OK) return st;
  d->report.assembled = 1;
  const double h = m->opt.step;
  const long nstep = mb_step_count(m);
  (obs ? mb_sensors : mb_sensors_angles)(m, d);
  energy_balance(m, d, run, 1);
  mb_functionals_accumulate(m, d, 0, nstep, d->psi);
  if (obs && obs(m, d, user)) return MB_OK;

  const double interval = m->opt.output_interval > h ? m->opt.output_interval : h;
  /* the k-th output at the step nearest k * interval: counted, not accumulated, so that rounding
     does not shift the output times by a step over a long run */
  long outputs = 1;
  for (long n = 1; n <= nstep; n++) {
    if ((st = run->step(run->ctx, err)) != MB_OK) break;
    const int output = obs && (d->t >= outputs * interval - 0.5 * h || n == nstep);
    (output ? mb_sensors : mb_sensors_angles)(m, d);
    energy_balance(m, d, run, 0);
    mb_functionals_accumulate(m, d, n, nstep, d->psi);
    if (output) {
      outputs++;
      if (obs(m, d, user)) break;
    }
  }
  return st;
}

/* The natural formulation's run: its assembly, its steps (retried on sub-steps), the power of its
   drivers. */
typedef struct natural_run {
  const mb_model* m;
  mb_data* d;
  mb_step_start start;
} natural_run;

static mb_status natural_assemble(void* ctx, mb_error* err) {
  natural_run* c = ctx;
  return mb_assemble_with(c->m, c->d, NULL, NULL, err);
}

static mb_status natural_run_step(void* ctx, mb_error* err) {
  natural_run* c = ctx;
  return mb_step_or_substeps(c->m, c->d, &c->start, NULL, err);
}

static double natural_driver_power(void* ctx) {
  const natural_run* c = ctx;
  double p = 0;
  for (int i = 0; i < c->m->ncon; i++) p += c->d->lambda[i] * c->d->phit[i];
  return p;
}

mb_status mb_simulate_natural(const mb_model* m, mb_data* d, mb_observer obs, void* user,
                              mb_error* err) {
  natural_run c = {.m = m, .d = d};
  if (mb_step_start_init(m, &c.start) != 0)
    return mb_error_set(err, MB_ERR_MEMORY, "simulation: out of memory");
  const mb_run run = {&c, natural_assemble, natural_run_step, natural_driver_power, NULL};
  const mb_status st = mb_run_simulation(m, d, &run, obs, user, err);
  mb_step_start_free(&c.start);
  return st;
}

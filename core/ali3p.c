/* ALI3-P: index-3 augmented Lagrangian formulation with mass-orthogonal projections, integrated
   with the Newmark family (seed 001, section 2, eqs. 1-7).

   Per step: Newmark prediction; Newton iteration on the positions of
     g(q) = beta h^2 [M qdd + Phi_q^T (lambda + alpha Phi) - Q] = 0            (eq. 3)
   with the tangent M + gamma h C + beta h^2 (Phi_q^T alpha Phi_q + K [+ Phi_qq^T (lambda + alpha
   Phi)]) (eq. 5) and the multiplier update lambda += alpha Phi (eq. 1b); then the projections of
   the velocities and accelerations onto the constraint manifolds with P = M, zeta = 1 (eqs. 6, 7).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/simulate.h"

/* Newmark velocities and accelerations of the current positions (eqs. 2). */
static void newmark_rates(const mb_model* m, mb_data* d) {
  const double h = m->opt.step, beta = m->opt.beta, gamma = m->opt.gamma;
  const double cv = gamma / (beta * h), ca = 1 / (beta * h * h);
  for (int i = 0; i < m->nq; i++) {
    d->qd[i] = cv * d->q[i] - d->qhat_v[i];
    d->qdd[i] = ca * d->q[i] - d->qhat_a[i];
  }
}

/* Penalty of the projections (times m->con_scale per constraint). Their converged result, the
   exact mass-orthogonal projection, does not depend on it; a penalty of about 1e4 times the mass
   scale (instead of alpha = 1e9, which would round M away in M + alpha Phi_q^T Phi_q) keeps the
   factorisation accurate and still converges in a few iterations. */
double mb_projection_penalty(const mb_model* m, mb_data* d) {
  const double metric = mb_constraints_metric(m, d->phiq, d->work);
  const double auto_penalty =
      metric > 0 ? 1e4 * m->structure->mass_diag_max / metric : m->opt.penalty;
  return fmin(m->opt.penalty, auto_penalty);
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

/* Solves (M + alpha_p Phi_q^T Phi_q) x = M x_star - Phi_q^T (mult + alpha_p rhs) in x, iterating
   the projection multipliers mult (eqs. 6, 7); rhs is Phi_t (velocities) or the acceleration
   remainder. Returns the largest final violation |Phi_q x + rhs|. */
static double project(const mb_model* m, mb_data* d, double* x, const double* rhs, double* mult) {
  const int nq = m->nq, nc = m->ncon;
  const mb_rows* rows = &m->structure->phiq;
  const double penalty = d->proj_penalty;
  double* b = d->work;
  double* viol = d->work + nq;
  double* mx_star = d->work + nq + nc;
  memset(mx_star, 0, sizeof(double) * nq);
  mb_mass_mul(m, x, 1, mx_star);
  memset(mult, 0, sizeof(double) * nc);
  double worst = 0;
  for (int it = 0; it < m->opt.projection_iterations; it++) {
    memcpy(b, mx_star, sizeof(double) * nq);
    for (int i = 0; i < nc; i++) viol[i] = mult[i] + penalty * m->con_scale[i] * rhs[i];
    mb_rows_mul_t(rows, d->phiq, viol, -1, b);
    mb_factor_solve(d->projection, 0, 1, b);
    memcpy(x, b, sizeof(double) * nq);
    memcpy(viol, rhs, sizeof(double) * nc);
    mb_rows_mul(rows, d->phiq, x, 1, viol);
    worst = mbu_norm_inf(nc, viol);
    double scale = 1 + mbu_norm_inf(nc, rhs) + mbu_norm_inf(nq, x);
    if (worst <= m->opt.tol_projection * scale) break;
    for (int i = 0; i < nc; i++) mult[i] += penalty * m->con_scale[i] * viol[i];
  }
  return worst;
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
  mb_friction_tangent(m, d, alpha, bh2, T);
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

/* After the first Newton iteration of a step, the factorised Newton matrix is kept (chord
   iterations) while the iteration contracts at least this fast; a converged chord iteration is
   then at most rate / (1 - rate) of its last correction from the solution. Slower contraction
   turns the rest of the step into Newton iterations. The matrix is not kept from one step to
   the next: the penalty term dominates it, and the rotation of the bodies between steps turns
   its directions enough to stall the iteration. */
#define MB_CHORD_RATE 0.1

/* Near a singular position Phi_q loses rank: along its vanishing singular value sigma the
   multiplier update contracts only by 1 / (1 + c sigma^2) per iteration (c the scaled penalty,
   compile.c), and Newton iterations slower than MB_SLOW_RATE, MB_SLOW_ITERATIONS in a row, show
   it. Then either the positions have stopped moving (|dq| within tolerance): no small motion
   reduces the constraints left, and up to MB_STALL_PHI times the constraint tolerance they are
   the singular position's own (of the order sigma times the tolerance on q); the step is
   accepted as passed. Or, when the iteration would need more than MB_SLOW_REMAINING further
   iterations at its rate, the step's penalty is raised by MB_PENALTY_BOOST, at most to
   MB_PENALTY_BOOST_MAX times the model's: round-off in q grows with it, so only these steps
   pay. A stall with larger constraints is a mechanism that cannot follow (it locks). */
#define MB_SLOW_RATE 0.5
#define MB_SLOW_ITERATIONS 3
#define MB_SLOW_REMAINING 10
#define MB_STALL_PHI 100
#define MB_PENALTY_BOOST 100
#define MB_PENALTY_BOOST_MAX 1e4
/* Constraints above MB_STALL_PHI times the tolerance that decrease by less than
   MB_STUCK_PHI_RATE per slow iteration once the penalty is raised in full: the mechanism
   cannot follow (it locks) */
#define MB_STUCK_PHI_RATE 0.99
/* Newton corrections growing this many iterations in a row: the iteration diverges */
#define MB_DIVERGING_ITERATIONS 4

double mb_model_penalty_remedy(const mb_model* m) {
  return m->penalty_at_cap > 2 * m->opt.penalty ? m->penalty_at_cap : 0;
}

/* The error of a step whose Newton iteration did not converge: what failed and what helps. */
static mb_status newton_failure(const mb_model* m, const mb_data* d, int it, double dq_norm,
                                double rate, int locked, int growing, mb_error* err) {
  const int worst = mbu_index_max_abs(m->ncon, d->phi);
  const double phi = m->ncon ? fabs(d->phi[worst]) : 0;
  const char* label = m->ncon ? m->con_label + MB_LABEL_LEN * worst : "";
  if (growing >= MB_DIVERGING_ITERATIONS)
    return mb_error_set(err, MB_NEWTON_FAILED,
                        "t = %g: Newton iteration diverges (|dq| grew to %.3g in %d iterations): "
                        "the motion changes too much in one step; a smaller step (--step %g) "
                        "follows it%s",
                        d->t, dq_norm, it, m->opt.step / 4, mb_friction_lock_hint(m));
  if (locked)
    return mb_error_set(err, MB_NEWTON_FAILED,
                        "t = %g: the constraints cannot be satisfied: |Phi| stays at %.3g (%s) "
                        "whatever the positions; the mechanism locks (a driver or a "
                        "prescribed motion takes it where its joints cannot follow, or the "
                        "geometry is wrong); a smaller step does not help: check the drivers' "
                        "functions and the joint positions%s",
                        d->t, phi, label, mb_friction_lock_hint(m));
  char remedy[320];
  if (rate > MB_SLOW_RATE) {
    /* a penalty that puts every constraint at the cap contracts fastest where Phi_q nearly loses
       rank (docs/model-format.md, "The penalty"); where the penalty is already about that, more
       iterations help */
    char what_helps[96];
    const double penalty = mb_model_penalty_remedy(m);
    if (penalty > 0)
      snprintf(what_helps, sizeof what_helps,
               "simulation.penalty = %.2g passes it (every constraint's penalty at its cap)",
               penalty);
    else
      snprintf(what_helps, sizeof what_helps, "raise simulation.max_newton above %d",
               m->opt.max_newton);
    snprintf(remedy, sizeof remedy,
             ", contracting only by %.2f per iteration: the constraints are nearly singular here "
             "(a dead point, or the mechanism locking); if it locks, check the drivers' "
             "functions and the joint positions, else %s",
             rate, what_helps);
  } else
    snprintf(remedy, sizeof remedy,
             "; simulation.max_newton above %d, or a smaller step (--step %g), gives it more room",
             m->opt.max_newton, m->opt.step / 4);
  return mb_error_set(err, MB_NEWTON_FAILED,
                      "t = %g: Newton iteration did not converge in %d iterations (|dq| = %.3g "
                      "m, |Phi| = %.3g at %s)%s%s",
                      d->t, it, dq_norm, phi, label, remedy, mb_friction_lock_hint(m));
}

/* One step of m->opt.step from d->t to t_new. */
static mb_status ali3p_step(const mb_model* m, mb_data* d, double t_new, mb_error* err) {
  const int nq = m->nq, nc = m->ncon;
  const double h = m->opt.step, beta = m->opt.beta, gamma = m->opt.gamma;
  double alpha = m->opt.penalty; /* raised for this step only near singular positions */

  /* Newmark history terms of the previous step (eqs. 2), then the prediction */
  for (int i = 0; i < nq; i++) {
    d->qhat_v[i] = gamma / (beta * h) * d->q[i] + (gamma / beta - 1) * d->qd[i] +
                   h * (gamma / (2 * beta) - 1) * d->qdd[i];
    d->qhat_a[i] =
        d->q[i] / (beta * h * h) + d->qd[i] / (beta * h) + (1 / (2 * beta) - 1) * d->qdd[i];
    d->q[i] += h * d->qd[i] + 0.5 * h * h * d->qdd[i];
  }
  d->t = t_new;

  /* Newton iteration on positions with the multiplier update (eqs. 1b, 3-5) */
  double* r = d->work + 2 * nq;
  double dq_norm = INFINITY, dq_last = INFINITY, phi_norm = INFINITY, rate = 0;
  int it = 0, converged = 0, refresh = 1, newton = 0, slow = 0, growing = 0, stuck = 0, locked = 0,
      raised = 0;
  newmark_rates(m, d);
  mb_constraints_positions(m, d);
  while (!converged && it < m->opt.max_newton && growing < MB_DIVERGING_ITERATIONS) {
    newton_system(m, d, alpha, r, refresh);
    if (!mbu_all_finite(nq, r))
      return mb_error_set(err, MB_ERR_NONFINITE, "t = %g: non-finite forces or constraints%s", d->t,
                          mb_friction_lock_hint(m));
    if (refresh && mb_factor_compute(d->newton, d->tangent) != 0)
      return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular Newton matrix%s", d->t,
                          mb_friction_lock_hint(m));
    mb_factor_solve(d->newton, 0, 1, r);
    for (int i = 0; i < nq; i++) d->q[i] -= r[i];
    /* lambda^(i+1) = lambda^(i) + alpha Phi(q^(i+1)) (eq. 1b) */
    newmark_rates(m, d);
    mb_constraints_positions(m, d);
    for (int i = 0; i < nc; i++) d->lambda[i] += alpha * m->con_scale[i] * d->phi[i];
    dq_norm = mbu_norm_inf(nq, r);
    const double phi_last = phi_norm;
    phi_norm = mbu_norm_inf(nc, d->phi);
    it++;
    rate = dq_norm / dq_last;
    dq_last = dq_norm;
    converged = dq_norm <= m->opt.tol_newton && phi_norm <= m->opt.tol_constraint &&
                (refresh || rate <= MB_CHORD_RATE);
    if (!refresh && rate > MB_CHORD_RATE) newton = 1;
    if (!converged && refresh) {
      /* a raised penalty first makes larger corrections */
      growing = rate > 1 && dq_norm > m->opt.tol_newton && !raised ? growing + 1 : 0;
      raised = 0;
      slow = rate > MB_SLOW_RATE ? slow + 1 : 0;
      /* constraints beyond round-off that no longer decrease: stalled */
      stuck =
          phi_norm > MB_STALL_PHI * m->opt.tol_constraint && phi_norm > MB_STUCK_PHI_RATE * phi_last
              ? stuck + 1
              : 0;
      const int still = slow >= MB_SLOW_ITERATIONS && dq_norm <= m->opt.tol_newton;
      if (still && phi_norm <= MB_STALL_PHI * m->opt.tol_constraint) {
        converged = 1;
        d->report.stalled_steps++;
      } else if (slow >= MB_SLOW_ITERATIONS &&
                 (still || log(m->opt.tol_newton / dq_norm) < MB_SLOW_REMAINING * log(rate)) &&
                 alpha < MB_PENALTY_BOOST_MAX * m->opt.penalty) {
        alpha *= MB_PENALTY_BOOST;
        slow = stuck = 0;
        raised = 1;
      } else if (alpha >= MB_PENALTY_BOOST_MAX * m->opt.penalty &&
                 (still || stuck >= MB_SLOW_ITERATIONS)) {
        locked = 1;
        break;
      }
    }
    refresh = newton || m->opt.refresh_each_iteration;
  }
  d->report.newton_iterations += it;
  if (it > d->report.max_newton_per_step) d->report.max_newton_per_step = it;
  if (!mbu_all_finite(nq, d->q))
    return mb_error_set(err, MB_ERR_NONFINITE, "t = %g: Newton iteration produced NaN", d->t);
  if (!converged) return newton_failure(m, d, it, dq_norm, rate, locked, growing, err);
  memcpy(d->qd_star, d->qd, sizeof(double) * nq);
  memcpy(d->qdd_star, d->qdd, sizeof(double) * nq);

  /* projections of velocities and accelerations (eqs. 6, 7), at the positions whose constraints
     the last iteration evaluated */
  return project_state(m, d, err);
}

mb_status mb_step(const mb_model* m, mb_data* d, mb_error* err) {
  if (m->opt.interrupt && *m->opt.interrupt)
    return mb_error_set(err, MB_INTERRUPTED, "interrupted at t = %g", d->t);
  /* the time counted, not accumulated, so that t_end is hit exactly */
  mb_status st = ali3p_step(m, d, (d->report.steps + 1) * m->opt.step, err);
  if (st == MB_OK) d->report.steps++;
  return st;
}

static void state_copy(const mb_model* m, mb_data* d, double* x, int save) {
  double* parts[4] = {d->q, d->qd, d->qdd, d->lambda};
  const int sizes[4] = {m->nq, m->nq, m->nq, m->ncon};
  for (int k = 0; k < 4; x += sizes[k], k++)
    if (save)
      memcpy(x, parts[k], sizeof(double) * sizes[k]);
    else
      memcpy(parts[k], x, sizeof(double) * sizes[k]);
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
  sub.opt.step = m->opt.step / n;
  sub.opt.penalty = m->opt.penalty * n * n;
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

mb_status mb_step_or_substeps(const mb_model* m, mb_data* d, mb_step_start* start, int* count,
                              mb_error* err) {
  if (count) *count = 1;
  if (m->opt.max_substeps < 2) return mb_step(m, d, err);
  mb_step_start_save(m, d, start);
  mb_status st = mb_step(m, d, err);
  if (st != MB_NEWTON_FAILED) return st;
  int n = 2;
  for (; n <= m->opt.max_substeps; n *= 2) {
    mb_error sub_err;
    const mb_status sub_st = mb_substeps(m, d, start, n, NULL, NULL, &sub_err);
    if (sub_st == MB_OK) {
      d->report.substepped_steps++;
      if (n > d->report.finest_substeps) d->report.finest_substeps = n;
      if (count) *count = n;
      return MB_OK;
    }
    if (sub_st != MB_NEWTON_FAILED) {
      *err = sub_err;
      return sub_st;
    }
  }
  /* the state stays at the last completed step */
  d->t = start->t;
  state_copy(m, d, start->x, 0);
  const size_t len = strlen(err->message);
  snprintf(err->message + len, sizeof err->message - len, " (also on %d sub-steps)", n / 2);
  return st;
}

/* Energy balance bookkeeping: E(t) - E(0) - W_nc(t), with the work of non-conservative forces
   and of the drivers (lambda^T Phi_t) integrated by the trapezoidal rule. */
static double total_power(const mb_model* m, mb_data* d) {
  double p = mb_nonconservative_power(m, d);
  for (int i = 0; i < m->ncon; i++) p += d->lambda[i] * d->phit[i];
  return p;
}

static void energy_balance(const mb_model* m, mb_data* d, int first) {
  double T, Vg, Ve;
  mb_energy(m, d, &T, &Vg, &Ve);
  double E = T + Vg + Ve;
  double power = total_power(m, d);
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

mb_status mb_simulate(const mb_model* m, mb_data* d, mb_observer obs, void* user, mb_error* err) {
  memset(&d->report, 0, sizeof d->report);
  memset(d->psi, 0, sizeof(double) * m->nfunctional);
  mb_status st = mb_assemble(m, d, err);
  if (st != MB_OK) return st;
  d->report.assembled = 1;
  const double h = m->opt.step;
  const long nstep = mb_step_count(m);
  (obs ? mb_sensors : mb_sensors_angles)(m, d);
  energy_balance(m, d, 1);
  mb_functionals_accumulate(m, d, 0, nstep, d->psi);
  if (obs && obs(m, d, user)) return MB_OK;

  mb_step_start start;
  if (mb_step_start_init(m, &start) != 0)
    return mb_error_set(err, MB_ERR_MEMORY, "simulation: out of memory");
  const double interval = m->opt.output_interval > h ? m->opt.output_interval : h;
  /* the k-th output at the step nearest k * interval: counted, not accumulated, so that rounding
     does not shift the output times by a step over a long run */
  long outputs = 1;
  for (long n = 1; n <= nstep; n++) {
    if ((st = mb_step_or_substeps(m, d, &start, NULL, err)) != MB_OK) break;
    const int output = obs && (d->t >= outputs * interval - 0.5 * h || n == nstep);
    (output ? mb_sensors : mb_sensors_angles)(m, d);
    energy_balance(m, d, 0);
    mb_functionals_accumulate(m, d, n, nstep, d->psi);
    if (output) {
      outputs++;
      if (obs(m, d, user)) break;
    }
  }
  mb_step_start_free(&start);
  return st;
}

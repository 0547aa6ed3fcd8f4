/* The ALI3-P step, the same for every formulation (stepper.h): Newmark prediction; Newton
   iteration on the positions of
     g(q) = beta h^2 [M qdd + Phi_q^T (lambda + alpha Phi) - Q] = 0            (eq. 3)
   with the formulation's Newton matrix (eq. 5) and the multiplier update lambda += alpha Phi
   (eq. 1b); then the formulation's projections of the velocities and accelerations (eqs. 6, 7)
   (seed 001, section 2). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "stepper.h"

void mb_newmark_coefficients(const mb_settings* opt, double a[3], double b[3]) {
  const double h = opt->step, beta = opt->beta, gamma = opt->gamma;
  a[0] = gamma / (beta * h), a[1] = gamma / beta - 1, a[2] = h * (gamma / (2 * beta) - 1);
  b[0] = 1 / (beta * h * h), b[1] = 1 / (beta * h), b[2] = 1 / (2 * beta) - 1;
}

void mb_newmark_history(const mb_settings* opt, size_t n, const double* q, const double* qd,
                        const double* qdd, double* hat_v, double* hat_a) {
  const double h = opt->step, beta = opt->beta, gamma = opt->gamma;
  /* divided rather than multiplied by the coefficients, as the results have always been */
  for (size_t i = 0; i < n; i++) {
    hat_v[i] = gamma / (beta * h) * q[i] + (gamma / beta - 1) * qd[i] +
               h * (gamma / (2 * beta) - 1) * qdd[i];
    hat_a[i] = q[i] / (beta * h * h) + qd[i] / (beta * h) + (1 / (2 * beta) - 1) * qdd[i];
  }
}

/* Newmark velocities and accelerations of the current positions (eqs. 2). */
static void newmark_rates(const mb_stepper* s) {
  const double h = s->opt->step, beta = s->opt->beta, gamma = s->opt->gamma;
  const double cv = gamma / (beta * h), ca = 1 / (beta * h * h);
  for (int i = 0; i < s->n; i++) {
    s->qd[i] = cv * s->q[i] - s->qhat_v[i];
    s->qdd[i] = ca * s->q[i] - s->qhat_a[i];
  }
}

/* After the first Newton iteration of a step, the factorised Newton matrix is kept (chord
   iterations) while the iteration contracts at least this fast; a converged chord iteration is
   then at most rate / (1 - rate) of its last correction from the solution. Slower contraction
   turns the rest of the step into Newton iterations. */
#define MB_CHORD_RATE 0.1
/* A formulation that keeps its matrix (s->kept) starts the next step with it when it contracted
   by MB_KEPT_RATE or better and the step converged in one iteration with a new matrix (the
   prediction was within the tolerance: the motion is smooth at this step size), or in at most
   MB_KEPT_ITERATIONS with a kept one; otherwise a new matrix costs less than the iterations it
   saves (the five-bar, whose steps nearly all need two Newton iterations, keeps few). Iterations
   with an earlier step's matrix converge linearly from the prediction, so they stop only when their
   estimated distance to the solution, rate |dq| (the step's first iteration: the matrix's last
   measured rate), is MB_KEPT_ERROR of the tolerance: the accelerations, q / (beta h^2) - hat_a,
   amplify what is left in q by 4 / h^2 (stopped at the tolerance itself, the step descent's and
   the five-bar's psi lie 7e-9 and 8e-9 from full Newton's; at 1e-4 of it, 4e-10 and 8e-11:
   test_joint_simulate). */
#define MB_KEPT_RATE 0.01
#define MB_KEPT_ITERATIONS 2
#define MB_KEPT_ERROR 1e-4

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

/* The error of a step whose Newton iteration did not converge: what failed and what helps. */
static mb_status newton_failure(const mb_stepper* s, int it, double dq_norm, double rate,
                                int locked, int growing, mb_error* err) {
  const int worst = mbu_index_max_abs(s->nc, s->phi);
  const double phi = s->nc ? fabs(s->phi[worst]) : 0;
  const char* label = s->nc ? s->ops->label(s, worst) : "";
  const double t = *s->t, step = s->opt->step;
  if (growing >= MB_DIVERGING_ITERATIONS)
    return mb_error_set(err, MB_NEWTON_FAILED,
                        "t = %g: Newton iteration diverges (|dq| grew to %.3g in %d iterations): "
                        "the motion changes too much in one step; a smaller step (--step %g) "
                        "follows it%s",
                        t, dq_norm, it, step / 4, s->lock_hint);
  if (locked)
    return mb_error_set(err, MB_NEWTON_FAILED,
                        "t = %g: the constraints cannot be satisfied: |Phi| stays at %.3g (%s) "
                        "whatever the positions; the mechanism locks (a driver or a "
                        "prescribed motion takes it where its joints cannot follow, or the "
                        "geometry is wrong); a smaller step does not help: check the drivers' "
                        "functions and the joint positions%s",
                        t, phi, label, s->lock_hint);
  char remedy[320];
  if (rate > MB_SLOW_RATE) {
    /* a penalty that puts every constraint at the cap contracts fastest where Phi_q nearly loses
       rank (docs/model-format.md, "The penalty"); where the penalty is already about that, more
       iterations help */
    char what_helps[96];
    const double penalty = s->penalty_remedy;
    if (penalty > 0)
      snprintf(what_helps, sizeof what_helps,
               "simulation.penalty = %.2g passes it (every constraint's penalty at its cap)",
               penalty);
    else
      snprintf(what_helps, sizeof what_helps, "raise simulation.max_newton above %d",
               s->opt->max_newton);
    snprintf(remedy, sizeof remedy,
             ", contracting only by %.2f per iteration: the constraints are nearly singular here "
             "(a dead point, or the mechanism locking); if it locks, check the drivers' "
             "functions and the joint positions, else %s",
             rate, what_helps);
  } else
    snprintf(remedy, sizeof remedy,
             "; simulation.max_newton above %d, or a smaller step (--step %g), gives it more room",
             s->opt->max_newton, step / 4);
  char worst_row[MB_LABEL_LEN + 32] = ""; /* a model without constraint rows has none to name */
  if (s->nc) snprintf(worst_row, sizeof worst_row, ", |Phi| = %.3g at %s", phi, label);
  return mb_error_set(err, MB_NEWTON_FAILED,
                      "t = %g: Newton iteration did not converge in %d iterations (|dq| = %.3g "
                      "m%s)%s%s",
                      t, it, dq_norm, worst_row, remedy, s->lock_hint);
}

mb_status mb_ali3p_step(const mb_stepper* s, double t_new, mb_error* err) {
  const mb_settings* opt = s->opt;
  const int nq = s->n, nc = s->nc;
  const double h = opt->step;
  double alpha = opt->penalty; /* raised for this step only near singular positions */
  double *q = s->q, *qd = s->qd, *qdd = s->qdd;

  /* Newmark history terms of the previous step (eqs. 2), then the prediction */
  mb_newmark_history(opt, (size_t)nq, q, qd, qdd, s->qhat_v, s->qhat_a);
  for (int i = 0; i < nq; i++) q[i] += h * qd[i] + 0.5 * h * h * qdd[i];
  *s->t = t_new;

  /* Newton iteration on positions with the multiplier update (eqs. 1b, 3-5) */
  double* r = s->r;
  double dq_norm = INFINITY, dq_last = INFINITY, phi_norm = INFINITY, rate = 0;
  mb_kept_matrix* kept = opt->refresh_each_iteration ? NULL : s->kept;
  const int earlier = kept && kept->valid && kept->step == h && kept->penalty == alpha;
  /* the matrix in use: its penalty, and its contraction in chord iterations (< 0: unknown) */
  double matrix_penalty = alpha, chord_rate = earlier ? kept->rate : -1;
  int it = 0, converged = 0, refresh = !earlier, newton = 0, slow = 0, growing = 0, stuck = 0,
      locked = 0, raised = 0;
  newmark_rates(s);
  s->ops->positions(s);
  while (!converged && it < opt->max_newton && growing < MB_DIVERGING_ITERATIONS) {
    const int singular = s->ops->residual(s, alpha, r, refresh);
    if (refresh) matrix_penalty = alpha, chord_rate = -1;
    /* at the prediction, the model's own fault; after corrections, iterates thrown out of range
       by a step too long for the motion, which sub-steps may follow */
    if (!mbu_all_finite(nq, r) && it == 0)
      return mb_error_set(err, MB_ERR_NONFINITE, "t = %g: non-finite forces or constraints%s",
                          *s->t, s->lock_hint);
    if (!mbu_all_finite(nq, r))
      return mb_error_set(err, MB_NEWTON_FAILED,
                          "t = %g: Newton iteration diverges (non-finite forces or constraints "
                          "after %d iterations): the motion changes too much in one step; a "
                          "smaller step (--step %g) follows it%s",
                          *s->t, it, opt->step / 4, s->lock_hint);
    if (singular)
      return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular Newton matrix%s", *s->t,
                          s->lock_hint);
    s->ops->solve(s, r);
    for (int i = 0; i < nq; i++) q[i] -= r[i];
    /* lambda^(i+1) = lambda^(i) + alpha Phi(q^(i+1)) (eq. 1b) */
    newmark_rates(s);
    s->ops->positions(s);
    for (int i = 0; i < nc; i++) s->lambda[i] += alpha * s->scale[i] * s->phi[i];
    dq_norm = mbu_norm_inf(nq, r);
    const double phi_last = phi_norm;
    phi_norm = mbu_norm_inf(nc, s->phi);
    it++;
    /* a zero correction: the residual vanished exactly, whatever the matrix (a coordinate that no
       force moves: a block on a level guide in joint coordinates, where no row is left) */
    const int exact = dq_norm == 0;
    rate = exact ? 0 : dq_norm / dq_last;
    dq_last = dq_norm;
    if (!refresh && it > 1) chord_rate = rate;
    const int chord_converged =
        chord_rate >= 0 && chord_rate <= MB_CHORD_RATE &&
        (!earlier || chord_rate * dq_norm <= MB_KEPT_ERROR * opt->tol_newton);
    converged = dq_norm <= opt->tol_newton && phi_norm <= opt->tol_constraint &&
                (refresh || chord_converged || exact);
    if (!refresh && chord_rate > MB_CHORD_RATE) newton = 1;
    if (!converged && refresh) {
      /* a raised penalty first makes larger corrections */
      growing = rate > 1 && dq_norm > opt->tol_newton && !raised ? growing + 1 : 0;
      raised = 0;
      slow = rate > MB_SLOW_RATE ? slow + 1 : 0;
      /* constraints beyond round-off that no longer decrease: stalled */
      stuck =
          phi_norm > MB_STALL_PHI * opt->tol_constraint && phi_norm > MB_STUCK_PHI_RATE * phi_last
              ? stuck + 1
              : 0;
      const int still = slow >= MB_SLOW_ITERATIONS && dq_norm <= opt->tol_newton;
      if (still && phi_norm <= MB_STALL_PHI * opt->tol_constraint) {
        converged = 1;
        s->report->stalled_steps++;
      } else if (slow >= MB_SLOW_ITERATIONS &&
                 (still || log(opt->tol_newton / dq_norm) < MB_SLOW_REMAINING * log(rate)) &&
                 alpha < MB_PENALTY_BOOST_MAX * opt->penalty) {
        alpha *= MB_PENALTY_BOOST;
        slow = stuck = 0;
        raised = 1;
      } else if (alpha >= MB_PENALTY_BOOST_MAX * opt->penalty &&
                 (still || stuck >= MB_SLOW_ITERATIONS)) {
        locked = 1;
        break;
      }
    }
    refresh = newton || opt->refresh_each_iteration;
  }
  s->report->newton_iterations += it;
  if (kept)
    *kept = (mb_kept_matrix){
        converged && (earlier ? it <= MB_KEPT_ITERATIONS : it == 1) && chord_rate <= MB_KEPT_RATE,
        h, matrix_penalty, chord_rate};
  if (it > s->report->max_newton_per_step) s->report->max_newton_per_step = it;
  if (!mbu_all_finite(nq, q))
    return mb_error_set(err, MB_ERR_NONFINITE, "t = %g: Newton iteration produced NaN", *s->t);
  if (!converged) return newton_failure(s, it, dq_norm, rate, locked, growing, err);
  memcpy(s->qd_star, qd, sizeof(double) * nq);
  memcpy(s->qdd_star, qdd, sizeof(double) * nq);

  /* projections of velocities and accelerations (eqs. 6, 7), at the positions whose constraints
     the last iteration evaluated */
  return s->ops->project(s, err);
}

double mb_project_iterate(const mb_projection* p, const double* b0, double* x, const double* rhs,
                          double* mult, double* work) {
  const int n = p->n, nc = p->nc;
  double *b = work, *viol = work + n;
  memset(mult, 0, sizeof(double) * nc);
  double worst = 0;
  for (int it = 0; it < p->iterations; it++) {
    memcpy(b, b0, sizeof(double) * n);
    for (int i = 0; i < nc; i++) viol[i] = mult[i] + p->penalty * p->scale[i] * rhs[i];
    p->phi_mul_t(p->ctx, viol, b);
    p->solve(p->ctx, b);
    memcpy(x, b, sizeof(double) * n);
    memcpy(viol, rhs, sizeof(double) * nc);
    p->phi_mul(p->ctx, x, viol);
    worst = mbu_norm_inf(nc, viol);
    double scale = (p->relative ? 0 : 1) + mbu_norm_inf(nc, rhs) + mbu_norm_inf(n, x);
    if (worst <= p->tol * scale || worst < 1e-300) break;
    for (int i = 0; i < nc; i++) mult[i] += p->penalty * p->scale[i] * viol[i];
  }
  return worst;
}

mb_status mb_step_retrying(const mb_retry* r, int* count, mb_error* err) {
  if (count) *count = 1;
  if (r->opt->max_substeps < 2) return r->step(r->ctx, err);
  r->save(r->ctx);
  mb_status st = r->step(r->ctx, err);
  if (st != MB_NEWTON_FAILED) return st;
  int n = 2;
  for (; n <= r->opt->max_substeps; n *= 2) {
    mb_error sub_err;
    const mb_status sub_st = r->substeps(r->ctx, n, &sub_err);
    if (sub_st == MB_OK) {
      r->report->substepped_steps++;
      if (n > r->report->finest_substeps) r->report->finest_substeps = n;
      if (count) *count = n;
      return MB_OK;
    }
    if (sub_st != MB_NEWTON_FAILED) {
      *err = sub_err;
      return sub_st;
    }
  }
  /* the state stays at the last completed step */
  r->restore(r->ctx);
  const size_t len = strlen(err->message);
  snprintf(err->message + len, sizeof err->message - len, " (also on %d sub-steps)", n / 2);
  return st;
}

mb_settings mb_substep_settings(const mb_settings* opt, int n) {
  mb_settings sub = *opt;
  sub.step = opt->step / n;
  sub.penalty = opt->penalty * n * n;
  return sub;
}

void mb_state_copy(double* q, double* qd, double* qdd, int n, double* lambda, int nc, double* x,
                   int save) {
  double* parts[4] = {q, qd, qdd, lambda};
  const int sizes[4] = {n, n, n, nc};
  for (int k = 0; k < 4; x += sizes[k], k++)
    if (save)
      memcpy(x, parts[k], sizeof(double) * sizes[k]);
    else
      memcpy(parts[k], x, sizeof(double) * sizes[k]);
}

mb_status mb_ali3p_full_step(const mb_stepper* s, mb_error* err) {
  if (s->opt->interrupt && *s->opt->interrupt)
    return mb_error_set(err, MB_INTERRUPTED, "interrupted at t = %g", *s->t);
  const mb_status st = mb_ali3p_step(s, (s->report->steps + 1) * s->opt->step, err);
  if (st == MB_OK) s->report->steps++;
  return st;
}

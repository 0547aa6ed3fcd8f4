/* Every analytic derivative of the core against its finite-difference twin, at random states of
   models that use every joint, force element, time function and driver: the constraint Jacobian
   Phi_q, Phi_t, the acceleration remainder, the Hessian product Phi_qq^T w, the stiffness
   K = -dQ/dq and damping C = -dQ/dqd, conservative forces against their potentials, joint rates,
   and the mass matrix against the rigid-body kinetic energy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testing.h"

static const char* models[] = {"problems/fivebar.json",
                               "problems/slider_crank.json",
                               "tests/models/ok/features_planar.json",
                               "tests/models/ok/features_spatial.json",
                               "tests/models/ok/controller_planar.json",
                               "tests/models/ok/tyre_wheel.json",
                               "problems/control/pendulum_pid.json"};

/* relative difference of two arrays, scaled by the larger magnitude (at least 1) */
static double rel_diff(int n, const double* a, const double* b) {
  double diff = 0, scale = 1;
  for (int i = 0; i < n; i++) {
    diff = fmax(diff, fabs(a[i] - b[i]));
    scale = fmax(scale, fmax(fabs(a[i]), fabs(b[i])));
  }
  return diff / scale;
}

static void check_constraints(mbt_tally* t, const char* name, const mb_model* m, mb_data* d,
                              unsigned* seed) {
  const int nq = m->nq, nc = m->ncon;
  const double eps = 1e-6;
  char what[160];
  double* fd = calloc((size_t)nc * nq + 1, sizeof(double));
  double* phip = calloc(nc + 1, sizeof(double));
  double* phim = calloc(nc + 1, sizeof(double));
  double* w = calloc(nc + 1, sizeof(double));
  double* H = calloc((size_t)nq * nq + 1, sizeof(double));
  double* Hfd = calloc((size_t)nq * nq + 1, sizeof(double));
  double* gp = calloc(nq + 1, sizeof(double));
  double* gm = calloc(nq + 1, sizeof(double));
  double* q0 = calloc(nq + 1, sizeof(double));
  mb_constraints(m, d);
  memcpy(q0, d->q, sizeof(double) * nq);

  /* Phi_q: central differences of Phi */
  for (int j = 0; j < nq; j++) {
    d->q[j] = q0[j] + eps;
    mb_constraint_values(m, d->q, d->t, phip);
    d->q[j] = q0[j] - eps;
    mb_constraint_values(m, d->q, d->t, phim);
    d->q[j] = q0[j];
    for (int i = 0; i < nc; i++) fd[(size_t)i * nq + j] = (phip[i] - phim[i]) / (2 * eps);
  }
  double* phiq = calloc((size_t)nc * nq + 1, sizeof(double)); /* Phi_q, dense */
  mb_rows_to_dense(&m->structure->phiq, d->phiq, phiq);
  double e = rel_diff(nc * nq, phiq, fd);
  snprintf(what, sizeof what, "%s: Phi_q vs finite differences", name);
  mbt_check(t, e < 1e-8, what, e, 1e-8);

  /* Phi_t: central differences in time */
  mb_constraint_values(m, d->q, d->t + eps, phip);
  mb_constraint_values(m, d->q, d->t - eps, phim);
  for (int i = 0; i < nc; i++) fd[i] = (phip[i] - phim[i]) / (2 * eps);
  e = rel_diff(nc, d->phit, fd);
  snprintf(what, sizeof what, "%s: Phi_t vs finite differences", name);
  mbt_check(t, e < 1e-8, what, e, 1e-8);

  /* acceleration remainder: d2/ds2 Phi(q + s qd + s^2/2 qdd, t + s) = Phi_q qdd + remainder */
  const double s = 1e-4;
  double* qs = H; /* scratch */
  for (int k = 0; k < nq; k++) qs[k] = q0[k] + s * d->qd[k] + 0.5 * s * s * d->qdd[k];
  mb_constraint_values(m, qs, d->t + s, phip);
  for (int k = 0; k < nq; k++) qs[k] = q0[k] - s * d->qd[k] + 0.5 * s * s * d->qdd[k];
  mb_constraint_values(m, qs, d->t - s, phim);
  double* phi0 = w;
  mb_constraint_values(m, q0, d->t, phi0);
  for (int i = 0; i < nc; i++) {
    fd[i] = (phip[i] - 2 * phi0[i] + phim[i]) / (s * s);
    double a = d->phidd_rhs[i];
    for (int k = 0; k < nq; k++) a += phiq[(size_t)i * nq + k] * d->qdd[k];
    phi0[i] = a;
  }
  e = rel_diff(nc, phi0, fd);
  snprintf(what, sizeof what, "%s: acceleration remainder vs finite differences", name);
  mbt_check(t, e < 1e-5, what, e, 1e-5);

  /* Hessian product: d/dq (Phi_q^T w) */
  for (int i = 0; i < nc; i++) w[i] = mbt_uniform(seed);
  const mb_pattern* sys = m->structure->sys;
  double* Hs = calloc((size_t)sys->nnz + 1, sizeof(double));
  mb_constraints_add_hessian(m, d, w, 1, Hs);
  mb_pattern_to_dense(sys, Hs, H);
  free(Hs);
  for (int j = 0; j < nq; j++) {
    memset(gp, 0, sizeof(double) * nq);
    memset(gm, 0, sizeof(double) * nq);
    d->q[j] = q0[j] + eps;
    mb_constraints(m, d);
    mb_rows_mul_t(&m->structure->phiq, d->phiq, w, 1, gp);
    d->q[j] = q0[j] - eps;
    mb_constraints(m, d);
    mb_rows_mul_t(&m->structure->phiq, d->phiq, w, 1, gm);
    d->q[j] = q0[j];
    for (int i = 0; i < nq; i++) Hfd[(size_t)i * nq + j] = (gp[i] - gm[i]) / (2 * eps);
  }
  e = rel_diff(nq * nq, H, Hfd);
  snprintf(what, sizeof what, "%s: Phi_qq^T w vs finite differences", name);
  mbt_check(t, e < 1e-7, what, e, 1e-7);
  mb_constraints(m, d);

  free(fd), free(phip), free(phim), free(w), free(H), free(Hfd), free(gp), free(gm), free(q0);
  free(phiq);
}

static void check_forces(mbt_tally* t, const char* name, const mb_model* m, mb_data* d) {
  const int nq = m->nq;
  const double eps = 1e-6;
  char what[160];
  double* K = calloc((size_t)nq * nq + 1, sizeof(double));
  double* C = calloc((size_t)nq * nq + 1, sizeof(double));
  double* Kfd = calloc((size_t)nq * nq + 1, sizeof(double));
  double* Cfd = calloc((size_t)nq * nq + 1, sizeof(double));
  double* Qp = calloc(nq + 1, sizeof(double));
  mb_forces(m, d, 1);
  mb_pattern_to_dense(m->structure->sys, d->stiff, K);
  mb_pattern_to_dense(m->structure->sys, d->damp, C);
  for (int pass = 0; pass < 2; pass++) {
    double* x = pass == 0 ? d->q : d->qd;
    double* out = pass == 0 ? Kfd : Cfd;
    for (int j = 0; j < nq; j++) {
      double x0 = x[j];
      x[j] = x0 + eps;
      mb_forces(m, d, 0);
      memcpy(Qp, d->force, sizeof(double) * nq);
      x[j] = x0 - eps;
      mb_forces(m, d, 0);
      x[j] = x0;
      for (int i = 0; i < nq; i++) out[(size_t)i * nq + j] = -(Qp[i] - d->force[i]) / (2 * eps);
    }
  }
  double e = rel_diff(nq * nq, K, Kfd);
  snprintf(what, sizeof what, "%s: K = -dQ/dq vs finite differences", name);
  mbt_check(t, e < 1e-7, what, e, 1e-7);
  e = rel_diff(nq * nq, C, Cfd);
  snprintf(what, sizeof what, "%s: C = -dQ/dqd vs finite differences", name);
  mbt_check(t, e < 1e-7, what, e, 1e-7);
  free(K), free(C), free(Kfd), free(Cfd), free(Qp);
}

/* The residual of the Newton iteration at q, the rates following q by the Newmark rule
   (qd = cv q - hat_v, qdd = ca q - hat_a): beta h^2 (M qdd + Phi_q^T (lambda + alpha S Phi) - Q),
   from the model's pieces (mass blocks, Phi_q rows, forces), into r. */
static void newton_residual(const mb_model* m, mb_data* d, const double* hat_v, const double* hat_a,
                            double* r) {
  const int nq = m->nq, nc = m->ncon;
  const double h = m->opt.step, beta = m->opt.beta, gamma = m->opt.gamma;
  const double bh2 = beta * h * h;
  double* mult = calloc(nc + 1, sizeof(double));
  for (int i = 0; i < nq; i++) {
    d->qd[i] = gamma / (beta * h) * d->q[i] - hat_v[i];
    d->qdd[i] = d->q[i] / bh2 - hat_a[i];
  }
  mb_constraints(m, d);
  mb_forces(m, d, 0);
  for (int i = 0; i < nc; i++)
    mult[i] = d->lambda[i] + m->opt.penalty * m->con_scale[i] * d->phi[i];
  memset(r, 0, sizeof(double) * nq);
  mb_mass_mul(m, d->qdd, 1, r);
  mb_rows_mul_t(&m->structure->phiq, d->phiq, mult, 1, r);
  for (int i = 0; i < nq; i++) r[i] = bh2 * (r[i] - d->force[i]);
  free(mult);
}

/* The matrices assembled on the sparsity pattern: the exact Newton matrix against the Jacobian
   of the Newton residual by central differences, and the projection matrix against
   M + pen Phi_q^T S Phi_q formed densely from the rows of Phi_q and the mass blocks. */
static void check_assembled(mbt_tally* t, const char* name, const mb_model* m, mb_data* d,
                            unsigned* seed) {
  const int nq = m->nq, nc = m->ncon;
  const mb_pattern* sys = m->structure->sys;
  const double h = m->opt.step, beta = m->opt.beta, gamma = m->opt.gamma, eps = 1e-7;
  char what[160];
  double* T = calloc((size_t)nq * nq + 1, sizeof(double));
  double* Tfd = calloc((size_t)nq * nq + 1, sizeof(double));
  double* hat = calloc(2 * (size_t)nq + 1, sizeof(double));
  double* rp = calloc(nq + 1, sizeof(double));
  double* rm = calloc(nq + 1, sizeof(double));
  double* mult = calloc(nc + 1, sizeof(double));
  double* q0 = calloc(nq + 1, sizeof(double));
  double *hat_v = hat, *hat_a = hat + nq;
  memcpy(q0, d->q, sizeof(double) * nq);
  for (int i = 0; i < nc; i++) d->lambda[i] = mbt_uniform(seed);
  for (int i = 0; i < nq; i++) {
    hat_v[i] = gamma / (beta * h) * q0[i] - d->qd[i];
    hat_a[i] = q0[i] / (beta * h * h) - d->qdd[i];
  }
  /* the analytic matrix at q0, both assemblies: C straight into it (the integrator's) and C
     apart (the sensitivities') */
  newton_residual(m, d, hat_v, hat_a, rp);
  for (int i = 0; i < nc; i++)
    mult[i] = d->lambda[i] + m->opt.penalty * m->con_scale[i] * d->phi[i];
  mb_newton_matrix(m, d, m->opt.penalty, mult, 1, NULL, d->tangent, d->damp);
  mb_pattern_to_dense(sys, d->tangent, Tfd);
  mb_newton_matrix(m, d, m->opt.penalty, mult, 1, NULL, d->tangent, NULL);
  mb_pattern_to_dense(sys, d->tangent, T);
  double e = rel_diff(nq * nq, T, Tfd);
  snprintf(what, sizeof what, "%s: Newton matrix with C apart vs C inside", name);
  mbt_check(t, e < 1e-13, what, e, 1e-13);
  for (int j = 0; j < nq; j++) {
    d->q[j] = q0[j] + eps;
    newton_residual(m, d, hat_v, hat_a, rp);
    d->q[j] = q0[j] - eps;
    newton_residual(m, d, hat_v, hat_a, rm);
    d->q[j] = q0[j];
    for (int i = 0; i < nq; i++) Tfd[(size_t)i * nq + j] = (rp[i] - rm[i]) / (2 * eps);
  }
  newton_residual(m, d, hat_v, hat_a, rp);
  e = rel_diff(nq * nq, T, Tfd);
  snprintf(what, sizeof what, "%s: Newton matrix on the pattern vs Jacobian of the residual", name);
  mbt_check(t, e < 1e-6, what, e, 1e-6);

  /* projection matrix */
  mb_error err;
  mb_constraints(m, d);
  if (mb_factor_projection(m, d, NULL, &err) == MB_OK) {
    double* phiq = calloc((size_t)nc * nq + 1, sizeof(double));
    double* col = calloc(nq + 1, sizeof(double));
    mb_rows_to_dense(&m->structure->phiq, d->phiq, phiq);
    for (int j = 0; j < nq; j++) {
      memset(col, 0, sizeof(double) * nq);
      col[j] = 1;
      memset(rp, 0, sizeof(double) * nq);
      mb_mass_mul(m, col, 1, rp);
      for (int i = 0; i < nq; i++) {
        double g = 0;
        for (int k = 0; k < nc; k++)
          g += m->con_scale[k] * phiq[(size_t)k * nq + i] * phiq[(size_t)k * nq + j];
        Tfd[(size_t)i * nq + j] = rp[i] + d->proj_penalty * g;
      }
    }
    mb_pattern_to_dense(sys, d->proj, T);
    e = rel_diff(nq * nq, T, Tfd);
    snprintf(what, sizeof what, "%s: projection matrix on the pattern vs dense formula", name);
    mbt_check(t, e < 1e-14, what, e, 1e-14);
    free(phiq), free(col);
  } else {
    snprintf(what, sizeof what, "%s: projection matrix factorises", name);
    mbt_check(t, 0, what, 1, 0);
  }
  free(T), free(Tfd), free(hat), free(rp), free(rm), free(mult), free(q0);
}

/* Conservative models: Q = -d(Vg + Ve)/dq. */
static void check_potential(mbt_tally* t, const char* name, const mb_model* m, mb_data* d) {
  const int nq = m->nq;
  const double eps = 1e-6;
  char what[160];
  double* fd = calloc(nq + 1, sizeof(double));
  mb_forces(m, d, 0);
  for (int j = 0; j < nq; j++) {
    double q0 = d->q[j], vg, ve, vp, vm;
    d->q[j] = q0 + eps;
    mb_energy(m, d, NULL, &vg, &ve);
    vp = vg + ve;
    d->q[j] = q0 - eps;
    mb_energy(m, d, NULL, &vg, &ve);
    vm = vg + ve;
    d->q[j] = q0;
    fd[j] = -(vp - vm) / (2 * eps);
  }
  double e = rel_diff(nq, d->force, fd);
  snprintf(what, sizeof what, "%s: Q vs -dV/dq (gravity and springs)", name);
  mbt_check(t, e < 1e-7, what, e, 1e-7);
  free(fd);
}

/* At an assembled state with random consistent velocities: joint rates against differences of
   joint coordinates, and 1/2 qd^T M qd against the rigid-body kinetic energy
   sum 1/2 m |v_G|^2 + 1/2 w_b^T I w_b. */
static void check_consistent_state(mbt_tally* t, const char* name, const mb_desc* desc,
                                   const mb_model* m, mb_data* d, unsigned* seed) {
  char what[160];
  mb_error err;
  if (mb_assemble(m, d, &err) != MB_OK) {
    printf("     %s\n", err.message);
    snprintf(what, sizeof what, "%s: assembles", name);
    mbt_check(t, 0, what, 1, 0);
    return;
  }
  for (int i = 0; i < m->nq; i++) d->qd[i] = mbt_uniform(seed);
  mb_project_state(m, d, &err);

  double T_rigid = 0;
  for (int b = 0; b < m->nbody; b++) {
    const mb_body_desc* bd = &desc->body[b];
    double v[3], w[3], wb[3] = {0, 0, 0};
    mb_lvec_rate(m, m->body_com[b], d->qd, v);
    mb_body_angular_velocity(m, b, d->q, d->qd, w);
    double I[3][3] = {{bd->inertia[0].value, bd->inertia[3].value, bd->inertia[4].value},
                      {bd->inertia[3].value, bd->inertia[1].value, bd->inertia[5].value},
                      {bd->inertia[4].value, bd->inertia[5].value, bd->inertia[2].value}};
    if (m->dim == 2) {
      wb[2] = w[2];
      memset(I, 0, sizeof I);
      I[2][2] = bd->inertia[2].value;
    } else {
      for (int k = 0; k < 3; k++) {
        double e[3];
        mb_lvec_eval(m, m->body_axes[3 * b + k], d->q, e);
        wb[k] = mbu_dot3(e, w);
      }
    }
    double Iw[3];
    for (int r = 0; r < 3; r++) Iw[r] = I[r][0] * wb[0] + I[r][1] * wb[1] + I[r][2] * wb[2];
    T_rigid += 0.5 * bd->mass.value * mbu_dot3(v, v) + 0.5 * mbu_dot3(wb, Iw);
  }
  double T;
  mb_energy(m, d, &T, NULL, NULL);
  double e = fabs(T - T_rigid) / fmax(1e-12, fabs(T_rigid));
  snprintf(what, sizeof what, "%s: 1/2 qd^T M qd vs rigid-body kinetic energy", name);
  mbt_check(t, e < 1e-9, what, e, 1e-9);
}

/* The sensor of type `type` with the same references as sensor i, or -1. */
static int partner(const mb_model* m, int i, int type) {
  for (int j = 0; j < m->nsensor; j++)
    if (m->sensor_type[j] == type && m->sensor_ref[2 * j] == m->sensor_ref[2 * i] &&
        m->sensor_ref[2 * j + 1] == m->sensor_ref[2 * i + 1] &&
        m->sensor_component[j] == m->sensor_component[i])
      return j;
  return -1;
}

/* At a consistent state: rates of sensors against central differences of their values along
   q + s qd (joint coordinates, point positions, planar angles), and the spatial angular velocity
   against dE_k/dt = w x E_k for the body axes. */
static void check_sensor_rates(mbt_tally* t, const char* name, const mb_model* m, mb_data* d) {
  const int nq = m->nq;
  const double s = 1e-6;
  char what[160];
  double* q0 = calloc(nq + 1, sizeof(double));
  double* plus = calloc(m->nout + 1, sizeof(double));
  double* minus = calloc(m->nout + 1, sizeof(double));
  double* rate = calloc(m->nout + 1, sizeof(double));
  memcpy(q0, d->q, sizeof(double) * nq);
  d->have_unwrap = 0;
  mb_sensors(m, d);
  memcpy(rate, d->out, sizeof(double) * m->nout);
  for (int k = 0; k < nq; k++) d->q[k] = q0[k] + s * d->qd[k];
  d->have_unwrap = 0;
  mb_sensors(m, d);
  memcpy(plus, d->out, sizeof(double) * m->nout);
  for (int k = 0; k < nq; k++) d->q[k] = q0[k] - s * d->qd[k];
  d->have_unwrap = 0;
  mb_sensors(m, d);
  memcpy(minus, d->out, sizeof(double) * m->nout);
  memcpy(d->q, q0, sizeof(double) * nq);

  double worst = 0;
  int pairs = 0;
  for (int i = 0; i < m->nsensor; i++) {
    int type = m->sensor_type[i], j = -1;
    if (type == MB_SENSOR_JOINT_COORDINATE) j = partner(m, i, MB_SENSOR_JOINT_RATE);
    if (type == MB_SENSOR_POINT_POSITION) j = partner(m, i, MB_SENSOR_POINT_VELOCITY);
    if (type == MB_SENSOR_BODY_ANGLES && m->dim == 2)
      j = partner(m, i, MB_SENSOR_BODY_ANGULAR_VELOCITY);
    if (j < 0) continue;
    pairs++;
    for (int c = 0; c < m->sensor_outnum[i]; c++) {
      int a = m->sensor_outadr[i] + c, b = m->sensor_outadr[j] + c;
      double fd = (plus[a] - minus[a]) / (2 * s);
      worst = fmax(worst, fabs(fd - rate[b]) / fmax(1, fabs(rate[b])));
    }
  }
  if (pairs > 0) {
    snprintf(what, sizeof what, "%s: %d sensor rates vs differences of values", name, pairs);
    mbt_check(t, worst < 1e-7, what, worst, 1e-7);
  }

  if (m->dim == 3) {
    double err = 0;
    for (int b = 0; b < m->nbody; b++) {
      double w[3];
      mb_body_angular_velocity(m, b, d->q, d->qd, w);
      for (int k = 0; k < 3; k++) {
        double e[3], ed[3], wxe[3];
        mb_lvec_eval(m, m->body_axes[3 * b + k], d->q, e);
        mb_lvec_rate(m, m->body_axes[3 * b + k], d->qd, ed);
        mbu_cross3(w, e, wxe);
        for (int r = 0; r < 3; r++) err = fmax(err, fabs(wxe[r] - ed[r]));
      }
    }
    snprintf(what, sizeof what, "%s: angular velocity reproduces dE/dt = w x E", name);
    mbt_check(t, err < 1e-9, what, err, 1e-9);

    /* along the body's axes: w_k = w . E_k, against the global output of the same body */
    err = 0;
    pairs = 0;
    for (int i = 0; i < m->nsensor; i++) {
      if (m->sensor_type[i] != MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY) continue;
      const int j = partner(m, i, MB_SENSOR_BODY_ANGULAR_VELOCITY);
      if (j < 0 || m->sensor_component[i] >= 0) continue;
      pairs++;
      const double* w = rate + m->sensor_outadr[j]; /* the outputs at the state */
      for (int k = 0; k < 3; k++) {
        double e[3];
        mb_lvec_eval(m, m->body_axes[3 * m->sensor_ref[2 * i] + k], d->q, e);
        err = fmax(err, fabs(rate[m->sensor_outadr[i] + k] - mbu_dot3(w, e)));
      }
    }
    if (pairs > 0) {
      snprintf(what, sizeof what, "%s: angular velocity along the body axes = w . E_k", name);
      mbt_check(t, err < 1e-9, what, err, 1e-9);
    }
  }
  free(q0), free(plus), free(minus), free(rate);
}

int main(void) {
  mbt_tally t = {0};
  unsigned seed = 12345;
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    mb_desc desc;
    mb_model* m = mbt_load(models[k], &desc);
    if (!m) {
      t.failed++;
      continue;
    }
    mb_data* d = mb_data_create(m);
    const char* name = strrchr(models[k], '/') + 1;
    mbt_random_state(m, d, &seed);
    check_constraints(&t, name, m, d, &seed);
    check_forces(&t, name, m, d);
    check_assembled(&t, name, m, d, &seed);
    mbt_random_state(m, d, &seed);
    if (k < 2) check_potential(&t, name, m, d);
    check_consistent_state(&t, name, &desc, m, d, &seed);
    check_sensor_rates(&t, name, m, d);
    mb_data_free(d);
    mb_model_free(m);
    mb_desc_free(&desc);
  }
  return mbt_finish(&t);
}

/* Partial derivatives of constraints and forces for the sensitivity analysis (seed 001, eqs.
   14-20): the q-Jacobians of dPhi/dt and d2Phi/dt2, and the explicit parameter derivatives of Phi,
   its time derivatives, Phi_q^T w and Q, through tangent models.

   Every constraint-like expression is  Phi = sum_j c_j(t) P_j(q) - e(t) [MB_CON_DOT only], with
   P_j = a_j . b_j a product of linear vectors: MB_CON_DOT has c_0 = 1; MB_CON_ANGLE has
   c_0 = cos e, c_1 = -sin e. Then dPhi/dt = sum c'_j P_j + c_j P'_j - e', and so on. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"

/* coefficients c_j with two time derivatives (cc[j][0..2]) and the target term e, e', e'' */
typedef struct expr_coef {
  int nterm;
  double c[2][3];
  double e[3]; /* only MB_CON_DOT subtracts e */
} expr_coef;

static expr_coef coefficients(int kind, const double* e) {
  expr_coef k;
  memset(&k, 0, sizeof k);
  if (kind == MB_CON_DOT) {
    k.nterm = 1;
    k.c[0][0] = 1;
    memcpy(k.e, e, sizeof k.e);
    return k;
  }
  const double C = cos(e[0]), S = sin(e[0]), v = e[1], a = e[2];
  k.nterm = 2;
  k.c[0][0] = C, k.c[0][1] = -S * v, k.c[0][2] = -C * v * v - S * a;
  k.c[1][0] = -S, k.c[1][1] = -C * v, k.c[1][2] = S * v * v - C * a;
  return k;
}

/* derivatives of the coefficients and the target with respect to a parameter that moves e by
   de = (de, de', de'') */
static expr_coef coefficients_param(int kind, const double* e, const double* de) {
  expr_coef k;
  memset(&k, 0, sizeof k);
  if (kind == MB_CON_DOT) {
    k.nterm = 1;
    memcpy(k.e, de, sizeof k.e);
    return k;
  }
  const double C = cos(e[0]), S = sin(e[0]), v = e[1], a = e[2];
  k.nterm = 2;
  k.c[0][0] = -S * de[0];
  k.c[0][1] = -C * de[0] * v - S * de[1];
  k.c[0][2] = S * de[0] * v * v - 2 * C * v * de[1] - C * de[0] * a - S * de[2];
  k.c[1][0] = -C * de[0];
  k.c[1][1] = S * de[0] * v - C * de[1];
  k.c[1][2] = C * de[0] * v * v + 2 * S * v * de[1] + S * de[0] * a - C * de[2];
  return k;
}

/* P = a . b with its first two time derivatives at (q, qd, qdd); with dm, the explicit parameter
   derivatives of the three instead */
static void pair_values(const mb_model* m, const mb_model* dm, int a, int b, const double* q,
                        const double* qd, const double* qdd, double* P) {
  double va[3], vb[3], ra[3], rb[3], aa[3], ab[3];
  mb_lvec_eval(m, a, q, va), mb_lvec_eval(m, b, q, vb);
  mb_lvec_rate(m, a, qd, ra), mb_lvec_rate(m, b, qd, rb);
  mb_lvec_rate(m, a, qdd, aa), mb_lvec_rate(m, b, qdd, ab);
  if (!dm) {
    P[0] = mbu_dot3(va, vb);
    P[1] = mbu_dot3(ra, vb) + mbu_dot3(va, rb);
    P[2] = mbu_dot3(aa, vb) + 2 * mbu_dot3(ra, rb) + mbu_dot3(va, ab);
    return;
  }
  double dva[3], dvb[3], dra[3], drb[3], daa[3], dab[3];
  mb_lvec_eval(dm, a, q, dva), mb_lvec_eval(dm, b, q, dvb);
  mb_lvec_rate(dm, a, qd, dra), mb_lvec_rate(dm, b, qd, drb);
  mb_lvec_rate(dm, a, qdd, daa), mb_lvec_rate(dm, b, qdd, dab);
  P[0] = mbu_dot3(dva, vb) + mbu_dot3(va, dvb);
  P[1] = mbu_dot3(dra, vb) + mbu_dot3(ra, dvb) + mbu_dot3(dva, rb) + mbu_dot3(va, drb);
  P[2] = mbu_dot3(daa, vb) + mbu_dot3(aa, dvb) + 2 * (mbu_dot3(dra, rb) + mbu_dot3(ra, drb)) +
         mbu_dot3(dva, ab) + mbu_dot3(va, dab);
}

/* row += s0 dP/dq + s1 dP'/dq + s2 dP''/dq, with dP/dq = b^T J_a + a^T J_b,
   dP'/dq = b'^T J_a + a'^T J_b, dP''/dq = b''^T J_a + a''^T J_b; A and B hold the value, rate
   and acceleration of lvecs a and b (MB_LVCACHE doubles each) */
static void pair_rows(const mb_model* m, int a, int b, const double* A, const double* B,
                      const double* s, double* row) {
  double wa[3], wb[3];
  for (int k = 0; k < 3; k++) {
    wa[k] = s[0] * B[k] + s[1] * B[3 + k] + s[2] * B[6 + k];
    wb[k] = s[0] * A[k] + s[1] * A[3 + k] + s[2] * A[6 + k];
  }
  mb_lvec_add_jtw(m, a, 1, wa, row);
  mb_lvec_add_jtw(m, b, 1, wb, row);
}

/* the value, rate and acceleration of linear vector lv at the state of d */
static void lvec_state(const mb_model* m, const mb_data* d, int lv, double* x) {
  mb_lvec_eval(m, lv, d->q, x);
  mb_lvec_rate(m, lv, d->qd, x + 3);
  mb_lvec_rate(m, lv, d->qdd, x + 6);
}

/* out += s d(dP/dq)^T / drho = s (J_a^T db + dJ_a^T b + J_b^T da + dJ_b^T a) */
static void pair_rows_param(const mb_model* m, const mb_model* dm, int a, int b, const double* q,
                            double s, double* out) {
  double va[3], vb[3], dva[3], dvb[3];
  mb_lvec_eval(m, a, q, va), mb_lvec_eval(m, b, q, vb);
  mb_lvec_eval(dm, a, q, dva), mb_lvec_eval(dm, b, q, dvb);
  mb_lvec_add_jtw(m, a, s, dvb, out);
  mb_lvec_add_jtw(dm, a, s, vb, out);
  mb_lvec_add_jtw(m, b, s, dva, out);
  mb_lvec_add_jtw(dm, b, s, va, out);
}

/* the (kind, lvecs, target) of constraint i, or of prescription i - ncon */
typedef struct expr {
  int kind;
  const int* lv;
  double value, dvalue;
  int func;
} expr;

static expr expression(const mb_model* m, const mb_model* dm, const mb_data* d, int i) {
  expr x;
  if (i < m->ncon) {
    x.kind = m->con_kind[i], x.lv = m->con_lvec + 4 * i, x.value = m->con_value[i];
    x.dvalue = dm ? dm->con_value[i] : 0, x.func = m->con_func[i];
    return x;
  }
  int p = i - m->ncon;
  x.kind = m->pres_kind[p], x.lv = m->pres_lvec + 4 * p, x.value = m->pres_value[p];
  x.dvalue = dm ? dm->pres_value[p] : 0, x.func = -1;
  if (x.kind == MB_CON_ANGLE) {
    /* about the current angle: sin(theta - theta) has the angle's gradient and Hessian */
    double a[3], b[3], c[3];
    mb_lvec_eval(m, x.lv[0], d->q, a);
    mb_lvec_eval(m, x.lv[1], d->q, b);
    mb_lvec_eval(m, x.lv[3], d->q, c);
    x.value = atan2(mbu_dot3(a, b), mbu_dot3(a, c));
  }
  return x;
}

/* the value of an expression of kind and target e from its vectors X[j] (value, rate and
   acceleration of each linear vector) */
static double expr_value(int kind, const double* const* X, const double* e) {
  const expr_coef k = coefficients(kind, e);
  double phi = -k.e[0];
  for (int j = 0; j < k.nterm; j++) phi += k.c[j][0] * mbu_dot3(X[2 * j], X[2 * j + 1]);
  return phi;
}

/* rows of an expression of kind and target e from its vectors X[j] (value, rate, acceleration of
   lvec lv[j]); see mbd_expr_rows */
static void expr_rows(const mb_model* m, int kind, const int* lv, const double* const* X,
                      const double* e, double* phiq, double* phid_q, double* phidd_q) {
  expr_coef k = coefficients(kind, e);
  for (int j = 0; j < k.nterm; j++) {
    const int a = lv[2 * j], b = lv[2 * j + 1];
    const double *A = X[2 * j], *B = X[2 * j + 1], *c = k.c[j];
    const double s0[3] = {c[0], 0, 0}, s1[3] = {c[1], c[0], 0}, s2[3] = {c[2], 2 * c[1], c[0]};
    if (phiq) pair_rows(m, a, b, A, B, s0, phiq);
    if (phid_q) pair_rows(m, a, b, A, B, s1, phid_q);
    if (phidd_q) pair_rows(m, a, b, A, B, s2, phidd_q);
  }
}

void mbd_expr_rows(const mb_model* m, const mb_data* d, int i, double* phiq, double* phid_q,
                   double* phidd_q) {
  const expr x = expression(m, NULL, d, i);
  double e[3], state[4][MB_LVCACHE];
  const double* X[4];
  mb_con_target(m, x.value, x.func, d->t, e);
  for (int j = 0; j < mb_con_nlvec(x.kind); j++)
    lvec_state(m, d, x.lv[j], state[j]), X[j] = state[j];
  expr_rows(m, x.kind, x.lv, X, e, phiq, phid_q, phidd_q);
}

void mbd_constraints_rows(const mb_model* m, mb_data* d, double* phid_q, double* phidd_q) {
  const mb_structure* st = m->structure;
  const int* rowptr = st->phiq.rowptr;
  mb_constraints_cache(m, d, 2);
  for (int i = 0; i < m->ncon; i++) {
    const int kind = m->con_kind[i];
    const int* lv = m->con_lvec + 4 * i;
    const double* X[4];
    double e[3];
    for (int j = 0; j < mb_con_nlvec(kind); j++)
      X[j] = d->lvcache + MB_LVCACHE * st->con_slot[4 * i + j];
    mb_con_target(m, m->con_value[i], m->con_func[i], d->t, e);
    d->phi[i] = expr_value(kind, X, e);
    /* the three rows at once, straight into their places (see expr_rows) */
    double* const rows[3] = {d->phiq + rowptr[i], phid_q + rowptr[i], phidd_q + rowptr[i]};
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < rowptr[i + 1] - rowptr[i]; k++) rows[r][k] = 0;
    const expr_coef k = coefficients(kind, e);
    for (int j = 0; j < k.nterm; j++) {
      const double *A = X[2 * j], *B = X[2 * j + 1], *c = k.c[j];
      const double s[3][3] = {{c[0], 0, 0}, {c[1], c[0], 0}, {c[2], 2 * c[1], c[0]}};
      double wa[3][3], wb[3][3];
      for (int r = 0; r < 3; r++)
        for (int l = 0; l < 3; l++) {
          wa[r][l] = s[r][0] * B[l] + s[r][1] * B[3 + l] + s[r][2] * B[6 + l];
          wb[r][l] = s[r][0] * A[l] + s[r][1] * A[3 + l] + s[r][2] * A[6 + l];
        }
      const int* toff = st->con_toff + st->con_toff_adr[4 * i + 2 * j];
      mb_lvec_add_jtw_rows(m, lv[2 * j], 1, 3, wa, rows, toff);
      toff = st->con_toff + st->con_toff_adr[4 * i + 2 * j + 1];
      mb_lvec_add_jtw_rows(m, lv[2 * j + 1], 1, 3, wb, rows, toff);
    }
  }
}

void mbd_expr_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* out) {
  const expr x = expression(m, dm, d, i);
  double e[3], de[3];
  mb_con_target(m, x.value, x.func, d->t, e);
  de[0] = x.dvalue, de[1] = de[2] = 0;
  if (x.func >= 0) mbd_func_param(m, dm, x.func, d->t, &de[0], &de[1], &de[2]);
  expr_coef k = coefficients(x.kind, e), dk = coefficients_param(x.kind, e, de);
  out[0] = -dk.e[0], out[1] = -dk.e[1], out[2] = -dk.e[2];
  for (int j = 0; j < k.nterm; j++) {
    double P[3], dP[3];
    pair_values(m, NULL, x.lv[2 * j], x.lv[2 * j + 1], d->q, d->qd, d->qdd, P);
    pair_values(m, dm, x.lv[2 * j], x.lv[2 * j + 1], d->q, d->qd, d->qdd, dP);
    const double *c = k.c[j], *dc = dk.c[j];
    out[0] += dc[0] * P[0] + c[0] * dP[0];
    out[1] += dc[1] * P[0] + c[1] * dP[0] + dc[0] * P[1] + c[0] * dP[1];
    out[2] += dc[2] * P[0] + c[2] * dP[0] + 2 * (dc[1] * P[1] + c[1] * dP[1]) + dc[0] * P[2] +
              c[0] * dP[2];
  }
}

void mbd_expr_rows_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double w,
                         double* out) {
  if (w == 0) return;
  const expr x = expression(m, dm, d, i);
  double e[3], de[3];
  mb_con_target(m, x.value, x.func, d->t, e);
  de[0] = x.dvalue, de[1] = de[2] = 0;
  if (x.func >= 0) mbd_func_param(m, dm, x.func, d->t, &de[0], &de[1], &de[2]);
  expr_coef k = coefficients(x.kind, e), dk = coefficients_param(x.kind, e, de);
  for (int j = 0; j < k.nterm; j++) {
    const int a = x.lv[2 * j], b = x.lv[2 * j + 1];
    double va[3], vb[3];
    mb_lvec_eval(m, a, d->q, va), mb_lvec_eval(m, b, d->q, vb);
    mb_lvec_add_jtw(m, a, w * dk.c[j][0], vb, out);
    mb_lvec_add_jtw(m, b, w * dk.c[j][0], va, out);
    pair_rows_param(m, dm, a, b, d->q, w * k.c[j][0], out);
  }
}

void mbd_expr_hessian(const mb_model* m, const mb_data* d, int i, double w, double* A,
                      const int* map) {
  if (w == 0) return;
  const mb_structure* st = m->structure;
  if (!map) map = st->hess_entry;
  double e[3];
  mb_con_target(m, m->con_value[i], m->con_func[i], d->t, e);
  expr_coef k = coefficients(m->con_kind[i], e);
  for (int j = 0; j < k.nterm; j++) {
    const double s = w * k.c[j][0];
    for (int h = st->hess_adr[2 * i + j]; h < st->hess_adr[2 * i + j + 1]; h++)
      A[map[h]] += s * st->hess_value[h];
  }
}

/* ---------------------------------------------------------------------------------------------
   forces */

static void load_param(const mb_model* m, const mb_model* dm, int i, double t, double* v) {
  for (int k = 0; k < 3; k++) {
    int f = m->force_func[3 * i + k];
    v[k] = 0;
    if (f >= 0) mbd_func_param(m, dm, f, t, &v[k], NULL, NULL);
  }
}

static void spring_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ) {
  const int a = m->force_lvec[2 * i], b = m->force_lvec[2 * i + 1];
  double ra[3], rb[3], va[3], vb[3], dra[3], drb[3], dva[3], dvb[3];
  mb_lvec_eval(m, a, d->q, ra), mb_lvec_eval(m, b, d->q, rb);
  mb_lvec_rate(m, a, d->qd, va), mb_lvec_rate(m, b, d->qd, vb);
  mb_lvec_eval(dm, a, d->q, dra), mb_lvec_eval(dm, b, d->q, drb);
  mb_lvec_rate(dm, a, d->qd, dva), mb_lvec_rate(dm, b, d->qd, dvb);
  double dd[3], ddot[3], u[3], du[3], ddd[3], dddot[3];
  for (int k = 0; k < 3; k++)
    dd[k] = rb[k] - ra[k], ddot[k] = vb[k] - va[k], ddd[k] = drb[k] - dra[k],
    dddot[k] = dvb[k] - dva[k];
  const double l = mbu_norm3(dd);
  if (l <= 1e-12) return;
  for (int k = 0; k < 3; k++) u[k] = dd[k] / l;
  const double rate = mbu_dot3(u, ddot), dl = mbu_dot3(u, ddd);
  for (int k = 0; k < 3; k++) du[k] = (ddd[k] - u[k] * dl) / l;
  const double drate = mbu_dot3(du, ddot) + mbu_dot3(u, dddot);
  const double k = m->force_k[i], c = m->force_c[i];
  const double f = k * (l - m->force_l0[i]) + c * rate + m->force_f0[i];
  const double df = dm->force_k[i] * (l - m->force_l0[i]) + k * (dl - dm->force_l0[i]) +
                    dm->force_c[i] * rate + c * drate + dm->force_f0[i];
  /* Q = -f J_d^T u with J_d = J_b - J_a */
  double w[3];
  for (int r = 0; r < 3; r++) w[r] = -df * u[r] - f * du[r];
  mb_lvec_add_jtw(m, b, 1, w, dQ);
  mb_lvec_add_jtw(m, a, -1, w, dQ);
  mb_lvec_add_jtw(dm, b, -f, u, dQ);
  mb_lvec_add_jtw(dm, a, f, u, dQ);
}

void mbd_body_torque_param(const mb_model* m, const mb_model* dm, const mb_data* d, int body,
                           const double* tau, const double* dtau, double* dQ) {
  static const double zero[3] = {0, 0, 0};
  const int* E = m->body_axes + 3 * body;
  if (!dtau) dtau = zero;
  if (m->dim == 2) {
    /* Q = tau J_x^T R90 E_x */
    double ex[3], dex[3];
    mb_lvec_eval(m, E[0], d->q, ex);
    mb_lvec_eval(dm, E[0], d->q, dex);
    double w[3] = {-dtau[2] * ex[1] - tau[2] * dex[1], dtau[2] * ex[0] + tau[2] * dex[0], 0};
    double w0[3] = {-tau[2] * ex[1], tau[2] * ex[0], 0};
    mb_lvec_add_jtw(m, E[0], 1, w, dQ);
    mb_lvec_add_jtw(dm, E[0], 1, w0, dQ);
    return;
  }
  /* Q = 1/2 sum_k J_k^T (tau x E_k) */
  for (int k = 0; k < 3; k++) {
    double e[3], de[3], w[3], t1[3], t2[3];
    mb_lvec_eval(m, E[k], d->q, e);
    mb_lvec_eval(dm, E[k], d->q, de);
    mbu_cross3(tau, e, w);
    mbu_cross3(dtau, e, t1);
    mbu_cross3(tau, de, t2);
    for (int r = 0; r < 3; r++) t1[r] += t2[r];
    mb_lvec_add_jtw(dm, E[k], 0.5, w, dQ);
    mb_lvec_add_jtw(m, E[k], 0.5, t1, dQ);
  }
}

static void torque_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ) {
  double tau[3], dtau[3];
  for (int k = 0; k < 3; k++) {
    int f = m->force_func[3 * i + k];
    tau[k] = 0;
    if (f >= 0) mb_func_eval(m, f, d->t, &tau[k], NULL, NULL);
  }
  load_param(m, dm, i, d->t, dtau);
  if (m->dim == 2) tau[2] = tau[0], dtau[2] = dtau[0], tau[0] = dtau[0] = 0;
  mbd_body_torque_param(m, dm, d, m->force_body[i], tau, dtau, dQ);
}

/* Q = J^T e_z Fz(k, c, R, p, v) */
static void tyre_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* dQ) {
  const int a = m->force_lvec[2 * i];
  double p[3], v[3], dp[3], dv[3];
  mb_tyre_force t;
  mb_lvec_eval(m, a, d->q, p), mb_lvec_rate(m, a, d->qd, v);
  mb_lvec_eval(dm, a, d->q, dp), mb_lvec_rate(dm, a, d->qd, dv);
  mb_tyre_eval(m, i, p, v, &t);
  double dF = t.dkcr[0] * dm->force_k[i] + t.dkcr[1] * dm->force_c[i] +
              t.dkcr[2] * dm->force_l0[i] + mbu_dot3(t.dp, dp) + mbu_dot3(t.dv, dv);
  const double w[3] = {0, 0, dF}, F[3] = {0, 0, t.Fz};
  mb_lvec_add_jtw(m, a, 1, w, dQ);
  mb_lvec_add_jtw(dm, a, 1, F, dQ);
}

void mbd_forces_param(const mb_model* m, const mb_model* dm, const mb_data* d,
                      const unsigned char* active, double* dQ) {
  memcpy(dQ, dm->gravity_force, sizeof(double) * m->nq);
  for (int i = 0; i < m->nforce; i++) {
    if (active && !active[i]) continue;
    switch ((mb_force_type)m->force_type[i]) {
      case MB_FORCE_SPRING:
        spring_param(m, dm, d, i, dQ);
        break;
      case MB_FORCE_POINT: {
        /* Q = J_p^T F */
        double F[3], dF[3];
        for (int k = 0; k < 3; k++) {
          int f = m->force_func[3 * i + k];
          F[k] = 0;
          if (f >= 0) mb_func_eval(m, f, d->t, &F[k], NULL, NULL);
        }
        load_param(m, dm, i, d->t, dF);
        mb_lvec_add_jtw(m, m->force_lvec[2 * i], 1, dF, dQ);
        mb_lvec_add_jtw(dm, m->force_lvec[2 * i], 1, F, dQ);
        break;
      }
      case MB_FORCE_TORQUE:
        torque_param(m, dm, d, i, dQ);
        break;
      case MB_FORCE_TYRE:
        tyre_param(m, dm, d, i, dQ);
        if (mb_tyre_has_slip(m, i)) mbd_tyre_slip_param(m, dm, d, i, dQ);
        break;
    }
  }
  mbd_controllers_param(m, dm, d, dQ);
}

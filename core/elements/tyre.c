/* The tyre element: its vertical contact force (at the end of the file) and its slip forces,
   the longitudinal and lateral friction forces at its contact point. The slip forces are written
   once in forward-mode dual numbers so that the same code gives the force, the exact
   stiffness and damping matrices and the explicit parameter derivatives.

   With the wheel centre p, the spin axis s, the wheel frame axes E_k and their rates, the wheel's
   angular velocity is w = 1/2 sum_k E_k x dE_k/dt, the contact point sits at r = -R e_z from the
   centre and moves with v_c = v + w x r. The forward direction is f = (s x e_z)/|s x e_z| (the
   spin axis must not be vertical), the lateral one l = e_z x f, the slip velocities v_x = v_c . f
   and v_y = v_c . l. With the normal load N = k e softplus(delta/e) (the elastic part of the
   vertical force, never negative) the friction forces saturate smoothly at mu N:

     F_x = -mu N tanh(C_x v_x / (mu N + eta)),  F_y = -mu N tanh(C_y v_y / (mu N + eta)),

   with eta = 1 mN, so that for small slip F_x = -C_x v_x. The force F = F_x f + F_y l acts at the
   contact point: Q = J_p^T F + sum_k J_k^T (R/2) E_k x (e_z x F). */
#include <math.h>
#include <string.h>

#include "internal.h"

#define TYRE_SMOOTH 1e-4 /* m, the smoothing length e of the contact (below) */
#define TYRE_ETA 1e-3    /* N */

/* inputs: positions p, s, E0, E1, E2 (x[0..14]), velocities v, dE0, dE1, dE2 (x[15..26]);
   parameters k, R, C_x, C_y, mu; outputs W = (F, W_E0, W_E1, W_E2), Q = sum J_row^T W_row */
enum { NPOS = 15, NX = 27 };

/* A value with its derivatives along the first n of NX directions (forward mode, all directions
   at once, so that each transcendental function is computed once): n = 0 for values, 1 for one
   directional derivative, NX for the Jacobian. Results may alias their arguments. */
typedef struct dn {
  double v, d[NX];
} dn;

static inline void dconst(int n, dn* r, double v) {
  r->v = v;
  for (int k = 0; k < n; k++) r->d[k] = 0;
}
static inline void dadd(int n, dn* r, const dn* a, const dn* b) {
  for (int k = 0; k < n; k++) r->d[k] = a->d[k] + b->d[k];
  r->v = a->v + b->v;
}
static inline void dsub(int n, dn* r, const dn* a, const dn* b) {
  for (int k = 0; k < n; k++) r->d[k] = a->d[k] - b->d[k];
  r->v = a->v - b->v;
}
static inline void dmul(int n, dn* r, const dn* a, const dn* b) {
  const double av = a->v, bv = b->v;
  for (int k = 0; k < n; k++) r->d[k] = a->d[k] * bv + av * b->d[k];
  r->v = av * bv;
}
static inline void ddiv(int n, dn* r, const dn* a, const dn* b) {
  const double av = a->v, bv = b->v, inv = 1 / (bv * bv);
  for (int k = 0; k < n; k++) r->d[k] = (a->d[k] * bv - av * b->d[k]) * inv;
  r->v = av / bv;
}
/* r = f(a), with f(a) = value and f'(a) = slope */
static inline void dchain(int n, dn* r, double value, double slope, const dn* a) {
  for (int k = 0; k < n; k++) r->d[k] = slope * a->d[k];
  r->v = value;
}
static inline void dscale(int n, dn* r, double s, const dn* a) {
  dchain(n, r, s * a->v, s, a);
}
static inline void dshift(int n, dn* r, const dn* a, double c) {
  dchain(n, r, a->v + c, 1, a);
}
static inline void dtanh(int n, dn* r, const dn* a) {
  const double t = tanh(a->v);
  dchain(n, r, t, 1 - t * t, a);
}
static inline void dsqrt(int n, dn* r, const dn* a) {
  const double v = sqrt(a->v);
  dchain(n, r, v, 1 / (2 * v), a);
}
static inline void dsoftplus(int n, dn* r, const dn* a) {
  const double u = a->v, sp = u > 0 ? u + log1p(exp(-u)) : log1p(exp(u));
  const double sg = u > 0 ? 1 / (1 + exp(-u)) : exp(u) / (1 + exp(u));
  dchain(n, r, sp, sg, a);
}
/* c = a x b (c apart from a and b) */
static inline void dcross(int n, dn* c, const dn* a, const dn* b) {
  dn t;
  dmul(n, &c[0], &a[1], &b[2]), dmul(n, &t, &a[2], &b[1]), dsub(n, &c[0], &c[0], &t);
  dmul(n, &c[1], &a[2], &b[0]), dmul(n, &t, &a[0], &b[2]), dsub(n, &c[1], &c[1], &t);
  dmul(n, &c[2], &a[0], &b[1]), dmul(n, &t, &a[1], &b[0]), dsub(n, &c[2], &c[2], &t);
}

static inline void slip_eval(int n, const double* road, const dn* x, const dn* prm, dn* W) {
  const dn *p = x, *s = x + 3, *E = x + 6, *v = x + 15, *Ed = x + 18;
  const dn *k = prm, *R = prm + 1, *Cx = prm + 2, *Cy = prm + 3, *mu = prm + 4;
  dn t, u, delta, N, w[3], c[3], vc[2], norm, f[2], vx, vy, muN, den, Fx, Fy, zF[3];
  /* penetration delta = R - p_z + h(p_x), h = H (1 + tanh((p_x - x0) / w)) / 2 */
  dsub(n, &delta, R, &p[2]);
  if (road[2] > 0) {
    dshift(n, &t, &p[0], -road[0]);
    dscale(n, &t, 1 / road[2], &t);
    dtanh(n, &t, &t);
    dshift(n, &t, &t, 1);
    dscale(n, &t, road[1] / 2, &t);
    dadd(n, &delta, &delta, &t);
  }
  /* N = k e softplus(delta / e) */
  dscale(n, &t, 1 / TYRE_SMOOTH, &delta);
  dsoftplus(n, &t, &t);
  dmul(n, &N, k, &t);
  dscale(n, &N, TYRE_SMOOTH, &N);
  /* w = 1/2 sum E_j x dE_j */
  for (int r = 0; r < 3; r++) dconst(n, &w[r], 0);
  for (int j = 0; j < 3; j++) {
    dcross(n, c, E + 3 * j, Ed + 3 * j);
    for (int r = 0; r < 3; r++) dscale(n, &t, 0.5, &c[r]), dadd(n, &w[r], &w[r], &t);
  }
  /* v_c = v + R e_z x w (horizontal part); f = (s x e_z)/|.| = (s_y, -s_x)/|.|, l = e_z x f */
  dmul(n, &t, R, &w[1]), dsub(n, &vc[0], &v[0], &t);
  dmul(n, &t, R, &w[0]), dadd(n, &vc[1], &v[1], &t);
  dmul(n, &t, &s[0], &s[0]), dmul(n, &u, &s[1], &s[1]), dadd(n, &t, &t, &u);
  dsqrt(n, &norm, &t);
  ddiv(n, &f[0], &s[1], &norm);
  ddiv(n, &f[1], &s[0], &norm), dscale(n, &f[1], -1, &f[1]);
  /* slip velocities v_x = v_c . f, v_y = v_c . l with l = (-f_y, f_x) */
  dmul(n, &vx, &vc[0], &f[0]), dmul(n, &t, &vc[1], &f[1]), dadd(n, &vx, &vx, &t);
  dmul(n, &vy, &vc[1], &f[0]), dmul(n, &t, &vc[0], &f[1]), dsub(n, &vy, &vy, &t);
  /* F_x = -mu N tanh(C_x v_x / (mu N + eta)), F_y likewise */
  dmul(n, &muN, mu, &N);
  dshift(n, &den, &muN, TYRE_ETA);
  dmul(n, &t, Cx, &vx), ddiv(n, &t, &t, &den), dtanh(n, &t, &t), dmul(n, &Fx, &muN, &t);
  dscale(n, &Fx, -1, &Fx);
  dmul(n, &t, Cy, &vy), ddiv(n, &t, &t, &den), dtanh(n, &t, &t), dmul(n, &Fy, &muN, &t);
  dscale(n, &Fy, -1, &Fy);
  /* F = F_x f + F_y l, then W_Ej = R/2 E_j x (e_z x F) */
  dmul(n, &W[0], &Fx, &f[0]), dmul(n, &t, &Fy, &f[1]), dsub(n, &W[0], &W[0], &t);
  dmul(n, &W[1], &Fx, &f[1]), dmul(n, &t, &Fy, &f[0]), dadd(n, &W[1], &W[1], &t);
  dconst(n, &W[2], 0);
  dscale(n, &zF[0], -1, &W[1]), zF[1] = W[0], dconst(n, &zF[2], 0);
  for (int j = 0; j < 3; j++) {
    dcross(n, c, E + 3 * j, zF);
    for (int r = 0; r < 3; r++) dmul(n, &t, R, &c[r]), dscale(n, &W[3 + 3 * j + r], 0.5, &t);
  }
}

/* the lvecs of the inputs and of the output rows */
typedef struct slip_lvecs {
  int pos[5], row[4];
} slip_lvecs;

static slip_lvecs slip_setup(const mb_model* m, int i) {
  const int* E = m->body_axes + 3 * m->force_body[i];
  const int a = m->force_lvec[2 * i];
  return (slip_lvecs){{a, m->force_lvec[2 * i + 1], E[0], E[1], E[2]}, {a, E[0], E[1], E[2]}};
}

/* x (values, derivatives zero) at the state q, qd of model mm (m or the tangent model) */
static void slip_inputs(const mb_model* mm, const slip_lvecs* L, const double* q, const double* qd,
                        double* x) {
  for (int j = 0; j < 5; j++) mb_lvec_eval(mm, L->pos[j], q, x + 3 * j);
  for (int j = 0; j < 4; j++) mb_lvec_rate(mm, L->row[j], qd, x + NPOS + 3 * j);
}

static void slip_params(const mb_model* mm, int i, double* prm) {
  prm[0] = mm->force_k[i], prm[1] = mm->force_l0[i];
  for (int k = 0; k < 3; k++) prm[2 + k] = mm->force_slip[3 * i + k];
}

/* W at (x, prm) and, with D (12 x NX, may be NULL), its Jacobian dW/dx; or, with dx and dprm,
   its derivative dW (may be NULL) in the direction (dx, dprm) */
static void slip_eval_at(const mb_model* m, int i, const double* x, const double* prm,
                         const double* dx, const double* dprm, double* W, double (*D)[NX],
                         double* dW) {
  const int n = D ? NX : dx ? 1 : 0;
  dn X[NX], P[5], Wd[12];
  for (int j = 0; j < NX; j++) {
    dconst(n, &X[j], x[j]);
    if (D) X[j].d[j] = 1;
    if (dx) X[j].d[0] = dx[j];
  }
  for (int j = 0; j < 5; j++) {
    dconst(n, &P[j], prm[j]);
    if (dx) P[j].d[0] = dprm ? dprm[j] : 0;
  }
  /* one copy for each n, so that the derivative loops have a constant length */
  const double* road = m->force_road + 3 * i;
  if (n == NX)
    slip_eval(NX, road, X, P, Wd);
  else if (n == 1)
    slip_eval(1, road, X, P, Wd);
  else
    slip_eval(0, road, X, P, Wd);
  for (int r = 0; r < 12; r++) {
    if (W) W[r] = Wd[r].v;
    if (D) memcpy(D[r], Wd[r].d, sizeof Wd[r].d);
    if (dW) dW[r] = Wd[r].d[0];
  }
}

int mb_tyre_has_slip(const mb_model* m, int i) {
  return m->force_type[i] == MB_FORCE_TYRE && m->force_slip[3 * i + 2] > 0;
}

void mb_tyre_slip(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac) {
  const slip_lvecs L = slip_setup(m, i);
  double x[NX], prm[5], W[12];
  slip_inputs(m, &L, d->q, d->qd, x);
  slip_params(m, i, prm);
  double D[12][NX];
  slip_eval_at(m, i, x, prm, NULL, NULL, W, jac ? D : NULL, NULL);
  for (int r = 0; r < 4; r++) mb_lvec_add_jtw(m, L.row[r], 1, W + 3 * r, d->force);
  if (!jac) return;

  /* on the wheel's coordinate blocks: Jacobians of the inputs (positions: the 5 linear vectors;
     rates: the 4 row vectors) and of the rows, with D = dW/dx, then
     K = -J_rows^T D_pos J_pos and C = -J_rows^T D_vel J_rows */
  const mb_local B = mb_force_local(m, i);
  const int n = 3 * B.nb;
  /* row-major with n columns */
  double Jpos[NPOS * MB_LOCAL_COORDS], Jrow[12 * MB_LOCAL_COORDS];
  double DJ[12 * MB_LOCAL_COORDS];
  for (int j = 0; j < 5; j++) mb_local_jacobian(m, &B, L.pos[j], Jpos + 3 * j * n);
  for (int r = 0; r < 4; r++) mb_local_jacobian(m, &B, L.row[r], Jrow + 3 * r * n);
  for (int vel = 0; vel < 2; vel++) {
    /* DJ = D_pos J_pos or D_vel J_rows (12 x n), then -J_rows^T DJ */
    const int k0 = vel ? NPOS : 0;
    mb_local_premul(n, &D[0][k0], NX, 12, vel ? Jrow : Jpos, vel ? 12 : NPOS, DJ);
    mb_local_add_ptq(m, &B, vel ? jac->C : jac->K, vel ? -jac->cs : -jac->ks, Jrow, DJ, 12);
  }
}

double mb_tyre_slip_power(const mb_model* m, const mb_data* d, int i) {
  const slip_lvecs L = slip_setup(m, i);
  double x[NX], prm[5], W[12], power = 0;
  slip_inputs(m, &L, d->q, d->qd, x);
  slip_params(m, i, prm);
  slip_eval_at(m, i, x, prm, NULL, NULL, W, NULL, NULL);
  for (int r = 0; r < 12; r++) power += W[r] * x[NPOS + r];
  return power;
}

void mbd_tyre_slip_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ) {
  const slip_lvecs L = slip_setup(m, i);
  double x[NX], dx[NX], prm[5], dprm[5], W[12], dW[12];
  slip_inputs(m, &L, d->q, d->qd, x);
  slip_inputs(dm, &L, d->q, d->qd, dx);
  slip_params(m, i, prm);
  slip_params(dm, i, dprm);
  slip_eval_at(m, i, x, prm, dx, dprm, W, NULL, dW);
  for (int r = 0; r < 4; r++) {
    mb_lvec_add_jtw(m, L.row[r], 1, dW + 3 * r, dQ);
    mb_lvec_add_jtw(dm, L.row[r], 1, W + 3 * r, dQ);
  }
}

/* ---------------------------------------------------------------------------------------------
   the vertical contact force */

/* Tyre-road contact. The road height is h(x) = H (1 + tanh((x - x0)/w)) / 2 (flat at 0 for
   w = 0), its normal the global z. The penetration of the wheel of radius R with centre p is
   delta = R - (p_z - h(p_x)), its rate delta' = -(v_z - h'(p_x) v_x). The vertical force

     Fz = k e softplus(delta/e) + c delta' sigmoid(delta/e),  e = TYRE_SMOOTH,

   is smooth in all arguments, vanishes out of contact and tends to k delta + c delta' in it. It
   acts at the contact point below the centre; being vertical, it exerts no moment about it. */

void mb_tyre_eval(const mb_model* m, int i, const double* p, const double* v, mb_tyre_force* o) {
  const double* road = m->force_road + 3 * i;
  const double k = m->force_k[i], c = m->force_c[i], e = TYRE_SMOOTH;
  double h = 0, h1 = 0, h2 = 0;
  if (road[2] > 0) {
    double th = tanh((p[0] - road[0]) / road[2]), se2 = 1 - th * th;
    h = road[1] * (1 + th) / 2;
    h1 = road[1] * se2 / (2 * road[2]);
    h2 = -road[1] * th * se2 / (road[2] * road[2]);
  }
  const double delta = m->force_l0[i] - p[2] + h, rate = -v[2] + h1 * v[0], u = delta / e;
  const double sp = u > 0 ? u + log1p(exp(-u)) : log1p(exp(u));
  const double sg = u > 0 ? 1 / (1 + exp(-u)) : exp(u) / (1 + exp(u));
  const double fd = k * sg + c * rate * sg * (1 - sg) / e, fr = c * sg;
  o->Fz = k * e * sp + c * rate * sg;
  o->dp[0] = fd * h1 + fr * h2 * v[0], o->dp[1] = 0, o->dp[2] = -fd;
  o->dv[0] = fr * h1, o->dv[1] = 0, o->dv[2] = -fr;
  o->dkcr[0] = e * sp, o->dkcr[1] = rate * sg, o->dkcr[2] = fd;
}

void mb_tyre_contact(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac) {
  const int a = m->force_lvec[2 * i];
  double p[3], v[3];
  mb_tyre_force t;
  mb_lvec_eval(m, a, d->q, p);
  mb_lvec_rate(m, a, d->qd, v);
  mb_tyre_eval(m, i, p, v, &t);
  const double F[3] = {0, 0, t.Fz};
  mb_lvec_add_jtw(m, a, 1, F, d->force);
  if (!jac) return;
  /* Q = J^T e_z Fz: K = -J^T e_z (dFz/dp)^T J, C = -J^T e_z (dFz/dv)^T J, on the element's
     blocks: outer products of the rows J^T e_z and J^T dFz/dp, J^T dFz/dv */
  const mb_local L = mb_force_local(m, i);
  const int n = 3 * L.nb;
  double J[3 * MB_LOCAL_COORDS], w[2 * MB_LOCAL_COORDS];
  const double dpv[6] = {t.dp[0], t.dp[1], t.dp[2], t.dv[0], t.dv[1], t.dv[2]};
  mb_local_jacobian(m, &L, a, J);
  mb_local_premul(n, dpv, 3, 2, J, 3, w); /* dFz/dp^T J, then dFz/dv^T J */
  mb_local_add_ptq(m, &L, jac->K, -jac->ks, J + 2 * n, w, 1);
  mb_local_add_ptq(m, &L, jac->C, -jac->cs, J + 2 * n, w + n, 1);
}

/* Q = J^T e_z Fz(k, c, R, p, v) */
void mbd_tyre_contact_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                            double* dQ) {
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

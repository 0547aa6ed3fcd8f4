/* Tyre slip forces: the longitudinal and lateral friction forces of a tyre at its contact point,
   written once in forward-mode dual numbers so that the same code gives the force, the exact
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

#define TYRE_SMOOTH 1e-4 /* m, as MB_TYRE_SMOOTH of the vertical force */
#define TYRE_ETA 1e-3    /* N */

typedef struct dn {
  double v, d;
} dn;

static dn dadd(dn a, dn b) {
  return (dn){a.v + b.v, a.d + b.d};
}
static dn dsub(dn a, dn b) {
  return (dn){a.v - b.v, a.d - b.d};
}
static dn dmul(dn a, dn b) {
  return (dn){a.v * b.v, a.d * b.v + a.v * b.d};
}
static dn ddiv(dn a, dn b) {
  return (dn){a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)};
}
static dn dscale(double s, dn a) {
  return (dn){s * a.v, s * a.d};
}
static dn dconst(double v) {
  return (dn){v, 0};
}
static dn dtanh(dn a) {
  double t = tanh(a.v);
  return (dn){t, (1 - t * t) * a.d};
}
static dn dsqrt(dn a) {
  double r = sqrt(a.v);
  return (dn){r, a.d / (2 * r)};
}
static dn dsoftplus(dn a) {
  double u = a.v, sp = u > 0 ? u + log1p(exp(-u)) : log1p(exp(u));
  double sg = u > 0 ? 1 / (1 + exp(-u)) : exp(u) / (1 + exp(u));
  return (dn){sp, sg * a.d};
}
static void dcross(const dn* a, const dn* b, dn* c) {
  c[0] = dsub(dmul(a[1], b[2]), dmul(a[2], b[1]));
  c[1] = dsub(dmul(a[2], b[0]), dmul(a[0], b[2]));
  c[2] = dsub(dmul(a[0], b[1]), dmul(a[1], b[0]));
}

/* inputs: positions p, s, E0, E1, E2 (x[0..14]), velocities v, dE0, dE1, dE2 (x[15..26]);
   parameters k, R, C_x, C_y, mu; outputs W = (F, W_E0, W_E1, W_E2), Q = sum J_row^T W_row */
enum { NPOS = 15, NX = 27 };

static void slip_eval(const double* road, const dn* x, const dn* prm, dn* W) {
  const dn *p = x, *s = x + 3, *E = x + 6, *v = x + 15, *Ed = x + 18;
  const dn k = prm[0], R = prm[1], Cx = prm[2], Cy = prm[3], mu = prm[4];
  dn h = dconst(0);
  if (road[2] > 0)
    h = dscale(road[1] / 2,
               dadd(dconst(1), dtanh(dscale(1 / road[2], dsub(p[0], dconst(road[0]))))));
  const dn delta = dadd(dsub(R, p[2]), h);
  const dn N = dscale(TYRE_SMOOTH, dmul(k, dsoftplus(dscale(1 / TYRE_SMOOTH, delta))));
  dn w[3] = {dconst(0), dconst(0), dconst(0)};
  for (int j = 0; j < 3; j++) {
    dn c[3];
    dcross(E + 3 * j, Ed + 3 * j, c);
    for (int r = 0; r < 3; r++) w[r] = dadd(w[r], dscale(0.5, c[r]));
  }
  /* v_c = v + R e_z x w; f = (s x e_z)/|.|, l = e_z x f */
  const dn vc[3] = {dsub(v[0], dmul(R, w[1])), dadd(v[1], dmul(R, w[0])), v[2]};
  const dn norm = dsqrt(dadd(dmul(s[0], s[0]), dmul(s[1], s[1])));
  const dn f[3] = {ddiv(s[1], norm), dscale(-1, ddiv(s[0], norm)), dconst(0)};
  const dn l[3] = {dscale(-1, f[1]), f[0], dconst(0)};
  const dn vx = dadd(dmul(vc[0], f[0]), dmul(vc[1], f[1]));
  const dn vy = dadd(dmul(vc[0], l[0]), dmul(vc[1], l[1]));
  const dn muN = dmul(mu, N), den = dadd(muN, dconst(TYRE_ETA));
  const dn Fx = dscale(-1, dmul(muN, dtanh(ddiv(dmul(Cx, vx), den))));
  const dn Fy = dscale(-1, dmul(muN, dtanh(ddiv(dmul(Cy, vy), den))));
  for (int r = 0; r < 3; r++) W[r] = dadd(dmul(Fx, f[r]), dmul(Fy, l[r]));
  const dn zF[3] = {dscale(-1, W[1]), W[0], dconst(0)};
  for (int j = 0; j < 3; j++) {
    dn c[3];
    dcross(E + 3 * j, zF, c);
    for (int r = 0; r < 3; r++) W[3 + 3 * j + r] = dscale(0.5, dmul(R, c[r]));
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

/* W and its derivative in the direction (dx, dprm) */
static void slip_dir(const mb_model* m, int i, const double* x, const double* dx, const double* prm,
                     const double* dprm, double* W, double* dW) {
  dn X[NX], P[5], Wd[12];
  for (int j = 0; j < NX; j++) X[j] = (dn){x[j], dx ? dx[j] : 0};
  for (int j = 0; j < 5; j++) P[j] = (dn){prm[j], dprm ? dprm[j] : 0};
  slip_eval(m->force_road + 3 * i, X, P, Wd);
  for (int j = 0; j < 12; j++) {
    if (W) W[j] = Wd[j].v;
    if (dW) dW[j] = Wd[j].d;
  }
}

int mb_tyre_has_slip(const mb_model* m, int i) {
  return m->force_type[i] == MB_FORCE_TYRE && m->force_slip[3 * i + 2] > 0;
}

void mb_tyre_slip(const mb_model* m, mb_data* d, int i, int want_jac) {
  const slip_lvecs L = slip_setup(m, i);
  double x[NX], prm[5], W[12];
  slip_inputs(m, &L, d->q, d->qd, x);
  slip_params(m, i, prm);
  slip_dir(m, i, x, NULL, prm, NULL, W, NULL);
  for (int r = 0; r < 4; r++) mb_lvec_add_jtw(m, L.row[r], 1, W + 3 * r, d->force);
  if (!want_jac) return;
  /* K = -sum J_row^T dW_row/dx_j J_j over positions, C likewise over velocities */
  for (int j = 0; j < 9; j++) {
    const int vel = j >= 5, lv = vel ? L.row[j - 5] : L.pos[j],
              x0 = vel ? NPOS + 3 * (j - 5) : 3 * j;
    double G[4][9];
    for (int c = 0; c < 3; c++) {
      double dx[NX] = {0}, dW[12];
      dx[x0 + c] = 1;
      slip_dir(m, i, x, dx, prm, NULL, NULL, dW);
      for (int r = 0; r < 4; r++)
        for (int rr = 0; rr < 3; rr++) G[r][3 * rr + c] = dW[3 * r + rr];
    }
    for (int r = 0; r < 4; r++)
      mb_lvec_add_jtgj(m, L.row[r], lv, -1, G[r], vel ? d->damp : d->stiff);
  }
}

double mb_tyre_slip_power(const mb_model* m, const mb_data* d, int i) {
  const slip_lvecs L = slip_setup(m, i);
  double x[NX], prm[5], W[12], power = 0;
  slip_inputs(m, &L, d->q, d->qd, x);
  slip_params(m, i, prm);
  slip_dir(m, i, x, NULL, prm, NULL, W, NULL);
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
  slip_dir(m, i, x, dx, prm, dprm, W, dW);
  for (int r = 0; r < 4; r++) {
    mb_lvec_add_jtw(m, L.row[r], 1, dW + 3 * r, dQ);
    mb_lvec_add_jtw(dm, L.row[r], 1, W + 3 * r, dQ);
  }
}

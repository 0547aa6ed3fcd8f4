/* Recursive kinematics of the joint tree (tree.h): poses, the twists of the reference points,
   V_i = B_i V_parent + b_i zdot_i, and their derivatives, Vdot_i = B_i Vdot_parent + b_i zddot_i
   + d_i (A. Lopez Varela, D. Dopico, A. Luaces, "Augmented Lagrangian index-3 semi-recursive
   formulations with projections: direct sensitivity analysis", eq. 4). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "internal.h"
#include "tree.h"

/* The most coordinates of one joint (a free spatial body). */
#define MB_TREE_JOINT_MAX 7

/* The motion of a joint's outboard frame F2 relative to its inboard frame F1, in F1: F2 = F1 X
   with X the rotation Q and offset d; the relative angular velocity sum_k Sw[k] zdot_k and the
   velocity of F2's point sum_k Sp[k] zdot_k, and the derivatives of both at zddot = 0 (aw, ap). */
typedef struct joint_motion {
  int n;
  double Q[9], d[3];
  double Sw[MB_TREE_JOINT_MAX][3], Sp[MB_TREE_JOINT_MAX][3];
  double aw[3], ap[3];
} joint_motion;

static void rot_z(double a, double* Q) {
  const double c = cos(a), s = sin(a);
  const double R[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
  memcpy(Q, R, sizeof R);
}

/* C = A B^T */
static void mat3_mul_t(const double* A, const double* B, double* C) {
  double T[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      T[3 * i + j] =
          A[3 * i] * B[3 * j] + A[3 * i + 1] * B[3 * j + 1] + A[3 * i + 2] * B[3 * j + 2];
  memcpy(C, T, sizeof T);
}

void mb_euler_column(const double* e, int k, int reversed, double* out) {
  const double E[3][4] = {
      {-e[1], e[0], -e[3], e[2]}, {-e[2], e[3], e[0], -e[1]}, {-e[3], -e[2], e[1], e[0]}};
  const double G[3][4] = {
      {-e[1], e[0], e[3], -e[2]}, {-e[2], -e[3], e[0], e[1]}, {-e[3], e[2], -e[1], e[0]}};
  for (int r = 0; r < 3; r++) out[r] = reversed ? -2 * G[r][k] : 2 * E[r][k];
}

/* The rotation of Euler parameters e (e0 the scalar part) taken at unit length, u = e / |e|:
   (u0^2 - u.u) I + 2 u u^T + 2 u0 [u]; with the columns of its angular velocity 2 E(u) edot / |e|
   (E 3 x 4) into Sw[0..3] and, with rates ed (may be NULL), their derivative at zero edd,
   -4 (u . ed) / |e|^2 E(u) ed, into aw. At unit length and rates tangent to it these are the
   usual 2 E(e) edot and 0; off it the pose does not move along e (R e = 0 exactly, the
   normalisation constraint holding |e|). */
static void euler_motion(const double* e, const double* ed, double* Q, double (*Sw)[3],
                         double* aw) {
  const double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
  const double u0 = e[0] / n, u1 = e[1] / n, u2 = e[2] / n, u3 = e[3] / n;
  const double s = u0 * u0 - u1 * u1 - u2 * u2 - u3 * u3;
  const double R[9] = {s + 2 * u1 * u1,         2 * (u1 * u2 - u0 * u3), 2 * (u1 * u3 + u0 * u2),
                       2 * (u1 * u2 + u0 * u3), s + 2 * u2 * u2,         2 * (u2 * u3 - u0 * u1),
                       2 * (u1 * u3 - u0 * u2), 2 * (u2 * u3 + u0 * u1), s + 2 * u3 * u3};
  memcpy(Q, R, sizeof R);
  const double u[4] = {u0, u1, u2, u3};
  for (int k = 0; k < 4; k++) {
    mb_euler_column(u, k, 0, Sw[k]);
    for (int r = 0; r < 3; r++) Sw[k][r] /= n;
  }
  if (!ed) return;
  const double c = -2 * (u0 * ed[0] + u1 * ed[1] + u2 * ed[2] + u3 * ed[3]) / n;
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 4; k++) aw[r] += c * Sw[k][r] * ed[k];
}

/* The motion of a tree joint of kind `kind` at z, zd (zd may be NULL: no rates, no biases). The
   biases vanish but for the universal joint and Euler parameters off unit length: the other
   columns are constant in F1. */
static void joint_relative(int kind, int dim, const double* z, const double* zd, joint_motion* m) {
  memset(m, 0, sizeof *m);
  m->Q[0] = m->Q[4] = m->Q[8] = 1;
  switch (kind) {
    case MB_TREE_REVOLUTE:
      m->n = 1;
      rot_z(z[0], m->Q);
      m->Sw[0][2] = 1;
      break;
    case MB_TREE_PRISMATIC: {
      const int axis = dim == 2 ? 0 : 2; /* planar markers slide along their axis x */
      m->n = 1;
      m->d[axis] = z[0];
      m->Sp[0][axis] = 1;
      break;
    }
    case MB_TREE_CYLINDRICAL:
      m->n = 2;
      rot_z(z[0], m->Q);
      m->d[2] = z[1];
      m->Sw[0][2] = 1, m->Sp[1][2] = 1;
      break;
    case MB_TREE_PLANAR:
      m->n = 3;
      m->d[0] = z[0], m->d[1] = z[1];
      rot_z(z[2], m->Q);
      m->Sp[0][0] = 1, m->Sp[1][1] = 1, m->Sw[2][2] = 1;
      break;
    case MB_TREE_UNIVERSAL: {
      /* Q = Rz(theta1) C Rz(theta2), C = Ry(pi/2) taking z to x: z2 = Rz(theta1) x1 */
      static const double C[9] = {0, 0, 1, 0, 1, 0, -1, 0, 0};
      double R1[9], R2[9];
      rot_z(z[0], R1), rot_z(z[1], R2);
      mbu_mat3_mul(R1, C, m->Q);
      mbu_mat3_mul(m->Q, R2, m->Q);
      m->n = 2;
      const double c1 = cos(z[0]), s1 = sin(z[0]);
      m->Sw[0][2] = 1;
      m->Sw[1][0] = c1, m->Sw[1][1] = s1;
      if (zd) m->aw[0] = -s1 * zd[0] * zd[1], m->aw[1] = c1 * zd[0] * zd[1];
      break;
    }
    case MB_TREE_SPHERICAL:
      m->n = 4;
      euler_motion(z, zd, m->Q, m->Sw, m->aw);
      break;
    case MB_TREE_FREE:
      if (dim == 2) {
        m->n = 3;
        m->d[0] = z[0], m->d[1] = z[1];
        rot_z(z[2], m->Q);
        m->Sp[0][0] = 1, m->Sp[1][1] = 1, m->Sw[2][2] = 1;
        break;
      }
      m->n = 7;
      for (int k = 0; k < 3; k++) m->d[k] = z[k], m->Sp[k][k] = 1;
      euler_motion(z + 3, zd ? zd + 3 : NULL, m->Q, m->Sw + 3, m->aw);
      break;
    default: /* fixed */
      break;
  }
}

/* The same motion seen from F2 (F1 = F2 X^-1), for a joint the tree runs from marker 2 to marker
   1: Q^T, -Q^T d, angular velocity -Q^T u and point velocity Q^T (u x d - w) with u, w the
   joint's own, and their derivatives -Q^T udot and Q^T (udot x d + 2 u x w - u x (u x d) -
   wdot). */
static void joint_reverse(const double* zd, joint_motion* m) {
  double u[3] = {0, 0, 0}, w[3] = {0, 0, 0}, t[3], s[3], v[3];
  for (int k = 0; zd && k < m->n; k++)
    for (int r = 0; r < 3; r++) u[r] += m->Sw[k][r] * zd[k], w[r] += m->Sp[k][r] * zd[k];
  for (int k = 0; k < m->n; k++) {
    mbu_cross3(m->Sw[k], m->d, t);
    for (int r = 0; r < 3; r++) t[r] -= m->Sp[k][r], s[r] = -m->Sw[k][r];
    mbu_mat3_tvec(m->Q, t, m->Sp[k]);
    mbu_mat3_tvec(m->Q, s, m->Sw[k]);
  }
  /* biases */
  double ud[3], uw[3], uud[3];
  mbu_cross3(m->aw, m->d, ud);
  mbu_cross3(u, w, uw);
  mbu_cross3(u, m->d, t);
  mbu_cross3(u, t, uud);
  for (int r = 0; r < 3; r++) v[r] = ud[r] + 2 * uw[r] - uud[r] - m->ap[r], s[r] = -m->aw[r];
  mbu_mat3_tvec(m->Q, v, m->ap);
  mbu_mat3_tvec(m->Q, s, m->aw);
  /* pose */
  double d[3];
  mbu_mat3_tvec(m->Q, m->d, d);
  for (int r = 0; r < 3; r++) m->d[r] = -d[r];
  double Qt[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) Qt[3 * i + j] = m->Q[3 * j + i];
  memcpy(m->Q, Qt, sizeof Qt);
}

/* The motion of body b's joint as the tree runs it (inboard frame on the parent). */
static void tree_joint_motion(const mb_tree* t, int b, const double* z, const double* zd,
                              joint_motion* m) {
  const double* zb = z + t->zadr[b];
  const double* zdb = zd ? zd + t->zadr[b] : NULL;
  joint_relative(t->kind[b], t->dim, zb, zdb, m);
  if (t->reversed[b]) joint_reverse(zdb, m);
}

mb_tree_state* mb_tree_state_create(const mb_tree* t, mb_reference ref) {
  mb_tree_state* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  const size_t nb = (size_t)t->nbody;
  s->A = calloc(91 * nb + 6 * (size_t)t->nz + 1, sizeof(double));
  if (!s->A) {
    free(s);
    return NULL;
  }
  s->ref = ref;
  s->o = s->A + 9 * nb;
  s->r = s->o + 3 * nb;
  s->F = s->r + 3 * nb;
  s->P = s->F + 9 * nb;
  s->V = s->P + 3 * nb;
  s->Vd = s->V + 6 * nb;
  s->c = s->Vd + 6 * nb;
  s->Mb = s->c + 3 * nb;
  s->JG = s->Mb + 36 * nb;
  s->b = s->JG + 9 * nb;
  return s;
}

void mb_tree_state_free(mb_tree_state* s) {
  if (!s) return;
  free(s->A);
  free(s);
}

/* The columns b of body b's joint coordinates from its joint's motion m, at the poses of s:
   [F Sp_k + Omega_k x (r_b - P); Omega_k], Omega_k = F Sw_k. */
static void body_columns(const mb_tree* t, int b, const joint_motion* m, mb_tree_state* s) {
  const double *F = s->F + 9 * b, *P = s->P + 3 * b, *rb = s->r + 3 * b;
  double arm[3], wx[3];
  for (int r = 0; r < 3; r++) arm[r] = rb[r] - P[r];
  for (int i = 0; i < m->n; i++) {
    double* col = s->b + 6 * (t->zadr[b] + i);
    mbu_mat3_vec(F, m->Sw[i], col + 3);
    mbu_mat3_vec(F, m->Sp[i], col);
    mbu_cross3(col + 3, arm, wx);
    for (int r = 0; r < 3; r++) col[r] += wx[r];
  }
}

void mb_tree_positions(const mb_tree* t, const double* z, mb_tree_state* s) {
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zero[3] = {0, 0, 0};
  s->inertia_valid = 0;
  for (int k = 0; k < t->nbody; k++) {
    const int b = t->order[k], p = t->parent[b];
    const double *Ap = p < 0 ? I3 : s->A + 9 * p, *op = p < 0 ? zero : s->o + 3 * p;
    const double *in = t->inboard + 12 * b, *out = t->outboard + 12 * b;
    joint_motion m;
    tree_joint_motion(t, b, z, NULL, &m);
    /* inboard frame and point, then the outboard ones, then the body frame */
    double *F = s->F + 9 * b, *P = s->P + 3 * b, *A = s->A + 9 * b, *o = s->o + 3 * b, v[3];
    mbu_mat3_mul(Ap, in, F);
    mbu_mat3_vec(Ap, in + 9, v);
    for (int r = 0; r < 3; r++) P[r] = op[r] + v[r];
    mbu_mat3_vec(F, m.d, v);
    for (int r = 0; r < 3; r++) P[r] += v[r];
    double Fout[9];
    mbu_mat3_mul(F, m.Q, Fout);
    mat3_mul_t(Fout, out, A);
    mbu_mat3_vec(A, out + 9, v);
    for (int r = 0; r < 3; r++) o[r] = P[r] - v[r];
    /* centre of mass, and the reference point */
    double g[3];
    mbu_mat3_vec(A, t->com + 3 * b, g);
    for (int r = 0; r < 3; r++) g[r] += o[r];
    for (int r = 0; r < 3; r++) {
      s->r[3 * b + r] = s->ref == MB_REFERENCE_CENTRE_OF_MASS ? g[r] : 0;
      s->c[3 * b + r] = g[r] - s->r[3 * b + r];
    }
    body_columns(t, b, &m, s);
  }
}

/* The velocity of the reference point itself (not of the body's point there): the centre of
   mass's for RTdyn0, zero for RTdyn1 (the origin is fixed). */
static const double* reference_motion(const mb_tree_state* s, int b) {
  static const double zero[3] = {0, 0, 0};
  return b >= 0 && s->ref == MB_REFERENCE_CENTRE_OF_MASS ? s->V + 6 * b : zero;
}

void mb_tree_velocities(const mb_tree* t, const double* zd, mb_tree_state* s) {
  static const double zero[6] = {0, 0, 0, 0, 0, 0};
  for (int k = 0; k < t->nbody; k++) {
    const int b = t->order[k], p = t->parent[b];
    const double *Vp = p < 0 ? zero : s->V + 6 * p, *rp = p < 0 ? zero : s->r + 3 * p;
    /* V_b = B_b V_p + b_b zd_b: the parent's motion carried to r_b, and the joint's */
    double *V = s->V + 6 * b, arm[3], wx[3];
    for (int r = 0; r < 3; r++) arm[r] = s->r[3 * b + r] - rp[r];
    mbu_cross3(Vp + 3, arm, wx);
    for (int r = 0; r < 3; r++) V[r] = Vp[r] + wx[r], V[3 + r] = Vp[3 + r];
    for (int i = t->zadr[b]; i < t->zadr[b] + t->znum[b]; i++)
      for (int r = 0; r < 6; r++) V[r] += s->b[6 * i + r] * zd[i];
  }
}

void mb_tree_accelerations(const mb_tree* t, const double* z, const double* zd, const double* zdd,
                           mb_tree_state* s) {
  static const double zero[6] = {0, 0, 0, 0, 0, 0};
  for (int k = 0; k < t->nbody; k++) {
    const int b = t->order[k], p = t->parent[b];
    const double *Vp = p < 0 ? zero : s->V + 6 * p, *Vdp = p < 0 ? zero : s->Vd + 6 * p;
    const double *rp = p < 0 ? zero : s->r + 3 * p, *F = s->F + 9 * b, *P = s->P + 3 * b;
    const double *rb = s->r + 3 * b, *wp = Vp + 3;
    joint_motion m;
    tree_joint_motion(t, b, z, zd, &m);
    /* the joint's relative angular velocity u and point velocity w (global), and their
       derivatives relative to the parent's frame, F (S zdd + a) */
    double u[3] = {0, 0, 0}, w[3] = {0, 0, 0}, ua[3], wa[3], tmp[3];
    for (int r = 0; r < 3; r++) ua[r] = m.aw[r], wa[r] = m.ap[r];
    for (int i = 0; i < m.n; i++) {
      const double rate = zd[t->zadr[b] + i], acc = zdd ? zdd[t->zadr[b] + i] : 0;
      for (int r = 0; r < 3; r++) {
        u[r] += m.Sw[i][r] * rate, w[r] += m.Sp[i][r] * rate;
        ua[r] += m.Sw[i][r] * acc, wa[r] += m.Sp[i][r] * acc;
      }
    }
    mbu_mat3_vec(F, u, u), mbu_mat3_vec(F, w, w);
    mbu_mat3_vec(F, ua, ua), mbu_mat3_vec(F, wa, wa);
    /* relative angular acceleration: omega_p x u + F (Sw zdd + aw) */
    double ud[3];
    mbu_cross3(wp, u, ud);
    for (int r = 0; r < 3; r++) ud[r] += ua[r];
    /* the joint point's own velocity: the parent's field at P plus w */
    double Pd[3], arm[3];
    for (int r = 0; r < 3; r++) arm[r] = P[r] - rp[r];
    mbu_cross3(wp, arm, Pd);
    for (int r = 0; r < 3; r++) Pd[r] += Vp[r] + w[r];
    /* rdd_b = rdd_p + wd_p x (r_b - r_p) + w_p x (rdot_b - rdot_p) + w_p x w + F (Sp zdd + ap)
               + ud x (r_b - P) + u x (rdot_b - Pdot), rdot the reference points' own motion */
    const double *gb = reference_motion(s, b), *gp = reference_motion(s, p);
    double* Vd = s->Vd + 6 * b;
    for (int r = 0; r < 3; r++) arm[r] = rb[r] - rp[r], Vd[r] = Vdp[r] + wa[r];
    mbu_cross3(Vdp + 3, arm, tmp);
    for (int r = 0; r < 3; r++) Vd[r] += tmp[r], arm[r] = gb[r] - gp[r];
    mbu_cross3(wp, arm, tmp);
    for (int r = 0; r < 3; r++) Vd[r] += tmp[r];
    mbu_cross3(wp, w, tmp);
    for (int r = 0; r < 3; r++) Vd[r] += tmp[r], arm[r] = rb[r] - P[r];
    mbu_cross3(ud, arm, tmp);
    for (int r = 0; r < 3; r++) Vd[r] += tmp[r], arm[r] = gb[r] - Pd[r];
    mbu_cross3(u, arm, tmp);
    for (int r = 0; r < 3; r++) Vd[r] += tmp[r], Vd[3 + r] = Vdp[3 + r] + ud[r];
  }
}

/* Euler parameters e (e0 the scalar part, e0 >= 0) of a rotation Q (row-major), by the largest of
   the four squares (Shepperd's method). */
static void euler_from_rotation(const double* Q, double* e) {
  const double tr = Q[0] + Q[4] + Q[8];
  const double sq[4] = {1 + tr, 1 + 2 * Q[0] - tr, 1 + 2 * Q[4] - tr, 1 + 2 * Q[8] - tr};
  int k = 0;
  for (int i = 1; i < 4; i++)
    if (sq[i] > sq[k]) k = i;
  const double v = 0.5 * sqrt(sq[k]), f = 0.25 / v;
  switch (k) {
    case 0:
      e[0] = v, e[1] = (Q[7] - Q[5]) * f, e[2] = (Q[2] - Q[6]) * f, e[3] = (Q[3] - Q[1]) * f;
      break;
    case 1:
      e[1] = v, e[0] = (Q[7] - Q[5]) * f, e[2] = (Q[1] + Q[3]) * f, e[3] = (Q[2] + Q[6]) * f;
      break;
    case 2:
      e[2] = v, e[0] = (Q[2] - Q[6]) * f, e[1] = (Q[1] + Q[3]) * f, e[3] = (Q[5] + Q[7]) * f;
      break;
    default:
      e[3] = v, e[0] = (Q[3] - Q[1]) * f, e[1] = (Q[2] + Q[6]) * f, e[2] = (Q[5] + Q[7]) * f;
  }
  if (e[0] < 0)
    for (int i = 0; i < 4; i++) e[i] = -e[i];
}

/* The joint coordinates of a relative motion Q, d (F2 = F1 X, in F1) of a joint of kind `kind`:
   the inverse of joint_relative at the configurations the joint allows. */
static void joint_coordinates(int kind, int dim, const double* Q, const double* d, double* z) {
  const double angle = atan2(Q[3], Q[0]); /* about z1 */
  switch (kind) {
    case MB_TREE_REVOLUTE:
      z[0] = angle;
      break;
    case MB_TREE_PRISMATIC:
      z[0] = d[dim == 2 ? 0 : 2];
      break;
    case MB_TREE_CYLINDRICAL:
      z[0] = angle, z[1] = d[2];
      break;
    case MB_TREE_PLANAR:
      z[0] = d[0], z[1] = d[1], z[2] = angle;
      break;
    case MB_TREE_UNIVERSAL: {
      /* z2 = Q e_z = Rz(theta1) x1; then Rz(theta2) = C^T Rz(theta1)^T Q */
      z[0] = atan2(Q[5], Q[2]);
      const double c = cos(z[0]), s = sin(z[0]);
      /* row 1 of Rz(-theta1) Q = C Rz(theta2) is (sin theta2, cos theta2, 0) */
      z[1] = atan2(-s * Q[0] + c * Q[3], -s * Q[1] + c * Q[4]);
      break;
    }
    case MB_TREE_SPHERICAL:
      euler_from_rotation(Q, z);
      break;
    case MB_TREE_FREE:
      if (dim == 2) {
        z[0] = d[0], z[1] = d[1], z[2] = angle;
        break;
      }
      z[0] = d[0], z[1] = d[1], z[2] = d[2];
      euler_from_rotation(Q, z + 3);
      break;
    default:
      break;
  }
}

void mb_tree_coordinates(const mb_tree* t, const double* A, const double* o, double* z) {
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zero[3] = {0, 0, 0};
  for (int b = 0; b < t->nbody; b++) {
    const int p = t->parent[b];
    const double *Ap = p < 0 ? I3 : A + 9 * p, *op = p < 0 ? zero : o + 3 * p;
    const double *in = t->inboard + 12 * b, *out = t->outboard + 12 * b;
    double Fin[9], Fout[9], Pin[3], Pout[3], rel[3], X[9], d[3];
    mbu_mat3_mul(Ap, in, Fin);
    mbu_mat3_mul(A + 9 * b, out, Fout);
    mbu_mat3_vec(Ap, in + 9, Pin);
    mbu_mat3_vec(A + 9 * b, out + 9, Pout);
    for (int k = 0; k < 3; k++) rel[k] = (o[3 * b + k] + Pout[k]) - (op[k] + Pin[k]);
    /* X = Fin^T Fout, d = Fin^T rel; a reversed joint's own motion is X^-1 */
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        X[3 * i + j] = Fin[i] * Fout[j] + Fin[3 + i] * Fout[3 + j] + Fin[6 + i] * Fout[6 + j];
    mbu_mat3_tvec(Fin, rel, d);
    if (t->reversed[b]) {
      double Xt[9], dt[3];
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Xt[3 * i + j] = X[3 * j + i];
      mbu_mat3_vec(Xt, d, dt);
      memcpy(X, Xt, sizeof X);
      for (int k = 0; k < 3; k++) d[k] = -dt[k];
    }
    joint_coordinates(t->kind[b], t->dim, X, d, z + t->zadr[b]);
  }
}

mb_status mb_tree_rates(const mb_tree* t, const double* z, const mb_tree_state* s, const double* w,
                        const double* v, double* zd) {
  static const double zero[3] = {0, 0, 0};
  for (int b = 0; b < t->nbody; b++) {
    const int p = t->parent[b], n = t->znum[b];
    if (n == 0) continue;
    const double *wp = p < 0 ? zero : w + 3 * p, *vp = p < 0 ? zero : v + 3 * p;
    const double *op = p < 0 ? zero : s->o + 3 * p, *P = s->P + 3 * b, *F = s->F + 9 * b;
    /* the joint point's velocity on the body and in the parent's frame, and the relative
       angular velocity, in the inboard frame */
    double rel[6], arm[3], tb[3], tp[3], g[3];
    for (int k = 0; k < 3; k++) arm[k] = P[k] - s->o[3 * b + k];
    mbu_cross3(w + 3 * b, arm, tb);
    for (int k = 0; k < 3; k++) arm[k] = P[k] - op[k];
    mbu_cross3(wp, arm, tp);
    for (int k = 0; k < 3; k++) g[k] = w[3 * b + k] - wp[k];
    mbu_mat3_tvec(F, g, rel);
    for (int k = 0; k < 3; k++) g[k] = (v[3 * b + k] + tb[k]) - (vp[k] + tp[k]);
    mbu_mat3_tvec(F, g, rel + 3);
    /* the rates whose columns give it: least squares of minimum norm (Euler parameters: the
       rate orthogonal to e) */
    joint_motion m;
    tree_joint_motion(t, b, z, NULL, &m);
    double S[6 * MB_TREE_JOINT_MAX], B[MB_TREE_JOINT_MAX];
    for (int k = 0; k < n; k++)
      for (int r = 0; r < 3; r++) S[6 * k + r] = m.Sw[k][r], S[6 * k + 3 + r] = m.Sp[k][r];
    memset(B, 0, sizeof B);
    memcpy(B, rel, sizeof rel);
    mb_status st = mbu_least_squares(6, n, 1, S, B, n > 6 ? n : 6, NULL);
    if (st != MB_OK) return st;
    memcpy(zd + t->zadr[b], B, (size_t)n * sizeof(double));
  }
  return MB_OK;
}

/* The joint tree's recursive kinematics and dynamics (core/joint/), and the derivatives of its
   natural coordinates, against references computed here from the bodies' poses alone: the joints'
   definitions (docs/model-format.md) read on the markers' global frames, velocities and
   accelerations by central differences of poses along a path z(s) = z + s zd + s^2/2 zdd, the
   kinetic energy from those velocities, and the virtual power of each body's Newton-Euler
   equations. Every joint type, forward and reversed (marker 1 on the child), planar and spatial,
   both reference points (RTdyn0, RTdyn1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "internal.h"
#include "joint/tree.h"
#include "structure.h"
#include "testing.h"

static const double gravity[3] = {0, -9.81, -4.0};

/* uniform in [-1, 1] from a fixed sequence */
static double rnd(unsigned* seed) {
  *seed = *seed * 1103515245u + 12345u;
  return ((*seed >> 8) & 0xffff) / 32767.5 - 1.0;
}

/* A random state: z (Euler parameters of unit length), zd tangent to |e| = 1 and zdd keeping
   |e| = 1 to second order. */
static void random_state(const mb_tree* t, unsigned* seed, double* z, double* zd, double* zdd) {
  for (int i = 0; i < t->nz; i++) z[i] = rnd(seed), zd[i] = rnd(seed), zdd[i] = rnd(seed);
  for (int q = 0; q < t->nnorm; q++) {
    double *e = z + t->normadr[q], *ed = zd + t->normadr[q], *edd = zdd + t->normadr[q];
    double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
    for (int k = 0; k < 4; k++) e[k] /= n;
    double p = 0, v = 0, a = 0;
    for (int k = 0; k < 4; k++) p += e[k] * ed[k];
    for (int k = 0; k < 4; k++) ed[k] -= p * e[k], v += ed[k] * ed[k];
    for (int k = 0; k < 4; k++) a += e[k] * edd[k];
    for (int k = 0; k < 4; k++) edd[k] -= (a + v) * e[k];
  }
}

/* v made tangent to |e| = 1 at z: its Euler-parameter parts orthogonal to e. */
static void make_tangent(const mb_tree* t, const double* z, double* v) {
  for (int q = 0; q < t->nnorm; q++) {
    const double* e = z + t->normadr[q];
    double* ve = v + t->normadr[q];
    double p = 0;
    for (int k = 0; k < 4; k++) p += e[k] * ve[k];
    for (int k = 0; k < 4; k++) ve[k] -= p * e[k];
  }
}

/* Poses along the path at parameter s: z + s zd + s^2/2 zdd, with rate zd + s zdd (the rate is
   used only at s = 0). */
static void path_point(const mb_tree* t, const double* z, const double* zd, const double* zdd,
                       double s, double* zs, double* zds) {
  for (int i = 0; i < t->nz; i++)
    zs[i] = z[i] + s * zd[i] + 0.5 * s * s * zdd[i], zds[i] = zd[i] + s * zdd[i];
  /* Euler parameters back to unit length, which changes them at O(s^3) only */
  for (int q = 0; q < t->nnorm; q++) {
    double* e = zs + t->normadr[q];
    const double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
    for (int k = 0; k < 4; k++) e[k] /= n;
  }
}

/* The centre of mass (3) of body b at the poses of st. */
static void body_com(const mb_tree* t, const mb_tree_state* st, int b, double* g) {
  mbu_mat3_vec(st->A + 9 * b, t->com + 3 * b, g);
  for (int k = 0; k < 3; k++) g[k] += st->o[3 * b + k];
}

/* Velocities by central differences of poses along the path at s: the angular velocity of each
   body from A' A^T, its centre of mass's velocity and the velocity of its point at the origin,
   o' - w x o; 9 per body. */
static void fd_velocities(const mb_tree* t, mb_tree_state* st, const double* z, const double* zd,
                          const double* zdd, double s, double* out) {
  const int nb = t->nbody;
  const double h = 1e-5;
  double* zs = malloc(2 * (size_t)t->nz * sizeof(double));
  double *A = malloc(2 * 9 * (size_t)nb * sizeof(double)),
         *o = malloc(6 * (size_t)nb * sizeof(double));
  double* g = malloc(6 * (size_t)nb * sizeof(double));
  for (int side = 0; side < 2; side++) {
    path_point(t, z, zd, zdd, s + (side ? h : -h), zs, zs + t->nz);
    mb_tree_positions(t, zs, st);
    memcpy(A + 9 * nb * side, st->A, 9 * (size_t)nb * sizeof(double));
    memcpy(o + 3 * nb * side, st->o, 3 * (size_t)nb * sizeof(double));
    for (int b = 0; b < nb; b++) body_com(t, st, b, g + 3 * nb * side + 3 * b);
  }
  path_point(t, z, zd, zdd, s, zs, zs + t->nz);
  mb_tree_positions(t, zs, st);
  for (int b = 0; b < nb; b++) {
    double Ad[9], W[9], *w = out + 9 * b;
    for (int k = 0; k < 9; k++) Ad[k] = (A[9 * nb + 9 * b + k] - A[9 * b + k]) / (2 * h);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        W[3 * i + j] = 0;
        for (int k = 0; k < 3; k++) W[3 * i + j] += Ad[3 * i + k] * st->A[9 * b + 3 * j + k];
      }
    w[0] = 0.5 * (W[7] - W[5]), w[1] = 0.5 * (W[2] - W[6]), w[2] = 0.5 * (W[3] - W[1]);
    double od[3], wo[3];
    for (int k = 0; k < 3; k++) {
      w[3 + k] = (g[3 * nb + 3 * b + k] - g[3 * b + k]) / (2 * h);
      od[k] = (o[3 * nb + 3 * b + k] - o[3 * b + k]) / (2 * h);
    }
    mbu_cross3(w, st->o + 3 * b, wo);
    for (int k = 0; k < 3; k++) w[6 + k] = od[k] - wo[k];
  }
  free(zs), free(A), free(o), free(g);
}

static double max_abs_diff(int n, const double* a, const double* b, double* scale) {
  double d = 0;
  for (int i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), *scale = fmax(*scale, fabs(b[i]));
  return d;
}

/* Each tree joint as docs/model-format.md defines it, on the markers' global frames. */
static void check_joint_definitions(mbt_tally* tally, const mb_desc* d, const mb_tree* t,
                                    const mb_tree_state* st, const double* z, const char* name) {
  int* adr = calloc((size_t)d->nbody + 1, sizeof(int));
  const int nmk = mb_marker_count(d, adr);
  mb_local_frame* mk = calloc((size_t)nmk + 1, sizeof *mk);
  double(*R)[9] = calloc((size_t)d->nbody, sizeof *R);
  for (int b = 0; b < d->nbody; b++) mb_pose_rotation(d->dim, d->body[b].orientation, R[b]);
  mb_local_frames(d, -1, adr, (const double(*)[9])R, mk);
  double worst = 0;
  for (int b = 0; b < t->nbody; b++) {
    const int j = t->joint[b];
    if (j < 0) continue;
    const mb_joint_desc* jd = &d->joint[j];
    double P[2][3], X[2][3], Y[2][3], Z[2][3];
    for (int s = 0; s < 2; s++) {
      const mb_local_frame* f = &mk[mb_marker_index(adr, jd->body[s], jd->marker[s])];
      static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zero[3] = {0, 0, 0};
      const int body = jd->body[s];
      const double *A = body < 0 ? I3 : st->A + 9 * body, *o = body < 0 ? zero : st->o + 3 * body;
      mbu_mat3_vec(A, f->p, P[s]);
      for (int k = 0; k < 3; k++) P[s][k] += o[k];
      mbu_mat3_vec(A, f->x, X[s]), mbu_mat3_vec(A, f->y, Y[s]), mbu_mat3_vec(A, f->z, Z[s]);
    }
    double rel[3], err = 0;
    for (int k = 0; k < 3; k++) rel[k] = P[1][k] - P[0][k];
    const double* zj = z + t->zadr[b];
    const double angle = atan2(mbu_dot3(X[1], Y[0]), mbu_dot3(X[1], X[0]));
    const int spatial = d->dim == 3;
    double axis_gap = 0, ref_gap = 0;
    for (int k = 0; k < 3; k++)
      axis_gap = fmax(axis_gap, fabs(Z[1][k] - Z[0][k])),
      ref_gap = fmax(ref_gap, fabs(X[1][k] - X[0][k]));
    switch (jd->type) {
      case MB_JOINT_REVOLUTE:
        err = fmax(mbu_norm3(rel), fabs(remainder(angle - zj[0], 2 * MB_PI)));
        if (spatial) err = fmax(err, axis_gap);
        break;
      case MB_JOINT_PRISMATIC:
        if (spatial)
          err = fmax(fmax(axis_gap, ref_gap),
                     fmax(fabs(mbu_dot3(rel, X[0])), fabs(mbu_dot3(rel, Y[0]))));
        else
          err = fmax(ref_gap, fabs(mbu_dot3(rel, Y[0])));
        err = fmax(err, fabs(mbu_dot3(rel, spatial ? Z[0] : X[0]) - zj[0]));
        break;
      case MB_JOINT_CYLINDRICAL:
        err = fmax(axis_gap, fmax(fabs(mbu_dot3(rel, X[0])), fabs(mbu_dot3(rel, Y[0]))));
        err = fmax(err, fmax(fabs(remainder(angle - zj[0], 2 * MB_PI)),
                             fabs(mbu_dot3(rel, Z[0]) - zj[1])));
        break;
      case MB_JOINT_UNIVERSAL:
        err = fmax(mbu_norm3(rel), fabs(mbu_dot3(Z[0], Z[1])));
        break;
      case MB_JOINT_SPHERICAL:
        err = mbu_norm3(rel);
        break;
      case MB_JOINT_PLANAR:
        err = fmax(axis_gap, fabs(mbu_dot3(rel, Z[0])));
        break;
      default: /* fixed */
        err = fmax(fmax(mbu_norm3(rel), axis_gap), ref_gap);
        break;
    }
    worst = fmax(worst, err);
  }
  char what[256];
  snprintf(what, sizeof what, "%s: joints hold and coordinates measure as defined", name);
  mbt_check(tally, worst < 1e-12, what, worst, 1e-12);
  free(adr), free(mk), free(R);
}

/* Kinematics, mass matrix and forces of tree t at random states, both reference points. */
static void check_tree(mbt_tally* tally, const mb_desc* d, const mb_tree* t, const char* name) {
  const int nz = t->nz, nb = t->nbody;
  double* z = calloc(4 * (size_t)nz + 1, sizeof(double));
  double *zd = z + nz, *zdd = zd + nz, *tau = zdd + nz;
  double* M = calloc((size_t)nz * nz + 1, sizeof(double));
  double* M1 = calloc((size_t)nz * nz + 1, sizeof(double));
  double* Q = calloc((size_t)nz + 1, sizeof(double));
  double* W = calloc(6 * (size_t)nb + 1, sizeof(double));
  double* work = calloc(36 * (size_t)nb + 1, sizeof(double));
  double* v0 = calloc(9 * (size_t)nb, sizeof(double));
  double* vp = calloc(9 * (size_t)nb, sizeof(double));
  double* vm = calloc(9 * (size_t)nb, sizeof(double));
  double* vt = calloc(9 * (size_t)nb, sizeof(double));
  double* v2p = calloc(9 * (size_t)nb, sizeof(double));
  double* v2m = calloc(9 * (size_t)nb, sizeof(double));
  unsigned seed = 12345u + (unsigned)nz;
  double e_vel = 0, s_vel = 0, e_acc = 0, s_acc = 0, e_ke = 0, s_ke = 0, e_same = 0;
  double s_same = 0, e_dyn = 0, s_dyn = 0, e_null = 0;
  for (int trial = 0; trial < 3; trial++) {
    random_state(t, &seed, z, zd, zdd);
    for (int i = 0; i < nz; i++) tau[i] = rnd(&seed); /* a virtual velocity */
    make_tangent(t, z, tau);
    const double hs = 2e-3;
    for (int ref = 0; ref < 2; ref++) {
      mb_tree_state* st = mb_tree_state_create(t, (mb_reference)ref);
      fd_velocities(t, st, z, zd, zdd, 0, v0);
      /* twist rates by Richardson's extrapolation of central differences at hs and 2 hs:
         vp - vm = (4 (v(hs) - v(-hs)) - (v(2 hs) - v(-2 hs)) / 2) / 3, over 2 hs */
      fd_velocities(t, st, z, zd, zdd, hs, vp);
      fd_velocities(t, st, z, zd, zdd, -hs, vm);
      fd_velocities(t, st, z, zd, zdd, 2 * hs, v2p);
      fd_velocities(t, st, z, zd, zdd, -2 * hs, v2m);
      for (int i = 0; i < 9 * nb; i++) {
        const double diff = (4 * (vp[i] - vm[i]) - 0.5 * (v2p[i] - v2m[i])) / 3;
        vp[i] = 0.5 * diff, vm[i] = -0.5 * diff;
      }
      fd_velocities(t, st, z, tau, zdd, 0, vt);
      mb_tree_positions(t, z, st);
      if (trial == 0 && ref == 0) check_joint_definitions(tally, d, t, st, z, name);
      mb_tree_velocities(t, zd, st);
      /* twists against the differences: [centre of mass or origin point velocity; w] */
      for (int b = 0; b < nb; b++) {
        const double* fd = v0 + 9 * b;
        double expect[6];
        for (int k = 0; k < 3; k++) expect[k] = fd[(ref == 0 ? 3 : 6) + k], expect[3 + k] = fd[k];
        e_vel = fmax(e_vel, max_abs_diff(6, st->V + 6 * b, expect, &s_vel));
      }
      mb_tree_accelerations(t, z, zd, zdd, st);
      /* accelerations: differences of the twists along the path */
      for (int b = 0; b < nb; b++) {
        double expect[6];
        for (int k = 0; k < 3; k++) {
          const int lin = (ref == 0 ? 3 : 6) + k;
          expect[k] = (vp[9 * b + lin] - vm[9 * b + lin]) / (2 * hs);
          expect[3 + k] = (vp[9 * b + k] - vm[9 * b + k]) / (2 * hs);
        }
        e_acc = fmax(e_acc, max_abs_diff(6, st->Vd + 6 * b, expect, &s_acc));
      }
      /* kinetic energy 1/2 zd^T M zd against that of the differenced velocities */
      mb_tree_mass(t, st, ref == 0 ? M : M1, work);
      const double* Mr = ref == 0 ? M : M1;
      double ke = 0, ke_fd = 0;
      for (int i = 0; i < nz; i++)
        for (int j = 0; j < nz; j++) ke += 0.5 * zd[i] * Mr[(size_t)i * nz + j] * zd[j];
      for (int b = 0; b < nb; b++) {
        const double *w = v0 + 9 * b, *vg = w + 3, *J = t->inertia + 9 * b, *A = st->A + 9 * b;
        double wl[3], Jw[3];
        mbu_mat3_tvec(A, w, wl);
        for (int i = 0; i < 3; i++)
          Jw[i] = J[3 * i] * wl[0] + J[3 * i + 1] * wl[1] + J[3 * i + 2] * wl[2];
        ke_fd += 0.5 * t->mass[b] * mbu_dot3(vg, vg) + 0.5 * mbu_dot3(wl, Jw);
      }
      e_ke = fmax(e_ke, fabs(ke - ke_fd)), s_ke = fmax(s_ke, fabs(ke_fd));
      /* forces: gravity on every body; the virtual power of the Newton-Euler equations */
      memset(W, 0, 6 * (size_t)nb * sizeof(double));
      for (int b = 0; b < nb; b++) {
        double g[3], f[3];
        body_com(t, st, b, g);
        for (int k = 0; k < 3; k++) f[k] = t->mass[b] * (d->dim == 2 && k == 2 ? 0 : gravity[k]);
        mb_wrench_add_force(st->r + 3 * b, g, f, W + 6 * b);
      }
      mb_tree_accelerations(t, z, zd, NULL, st);
      mb_tree_inertial_wrenches(t, st, W);
      mb_tree_project(t, st, W, Q, work);
      double res = 0, scale = 0;
      for (int i = 0; i < nz; i++) {
        double r = -Q[i];
        for (int j = 0; j < nz; j++) r += Mr[(size_t)i * nz + j] * zdd[j];
        res += tau[i] * r;
      }
      double power = 0;
      for (int b = 0; b < nb; b++) {
        const double *w = v0 + 9 * b, *wv = vt + 9 * b, *A = st->A + 9 * b;
        double aG[3], wd[3], JG[9], Jw[3], Jwd[3], wJw[3], f[3];
        for (int k = 0; k < 3; k++) {
          aG[k] = (vp[9 * b + 3 + k] - vm[9 * b + 3 + k]) / (2 * hs);
          wd[k] = (vp[9 * b + k] - vm[9 * b + k]) / (2 * hs);
          f[k] = t->mass[b] * aG[k] - t->mass[b] * (d->dim == 2 && k == 2 ? 0 : gravity[k]);
        }
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++) {
            JG[3 * i + j] = 0;
            for (int k = 0; k < 3; k++)
              for (int l = 0; l < 3; l++)
                JG[3 * i + j] += A[3 * i + k] * t->inertia[9 * b + 3 * k + l] * A[3 * j + l];
          }
        for (int i = 0; i < 3; i++) {
          Jw[i] = JG[3 * i] * w[0] + JG[3 * i + 1] * w[1] + JG[3 * i + 2] * w[2];
          Jwd[i] = JG[3 * i] * wd[0] + JG[3 * i + 1] * wd[1] + JG[3 * i + 2] * wd[2];
        }
        mbu_cross3(w, Jw, wJw);
        for (int k = 0; k < 3; k++) Jwd[k] += wJw[k];
        power += mbu_dot3(wv + 3, f) + mbu_dot3(wv, Jwd);
        scale = fmax(scale, fmax(mbu_norm3(f), mbu_norm3(Jwd)) + t->mass[b] * 9.81);
      }
      e_dyn = fmax(e_dyn, fabs(res - power)), s_dyn = fmax(s_dyn, scale);
      /* Euler parameters leave the motion unchanged along e: M e = 0, Q . e = 0 */
      for (int q = 0; q < t->nnorm; q++) {
        const double* e = z + t->normadr[q];
        double qe = 0;
        for (int i = 0; i < nz; i++) {
          double me = 0;
          for (int k = 0; k < 4; k++) me += Mr[(size_t)i * nz + t->normadr[q] + k] * e[k];
          e_null = fmax(e_null, fabs(me));
        }
        for (int k = 0; k < 4; k++) qe += Q[t->normadr[q] + k] * e[k];
        e_null = fmax(e_null, fabs(qe));
      }
      mb_tree_state_free(st);
    }
    for (int i = 0; i < nz * nz; i++)
      e_same = fmax(e_same, fabs(M[i] - M1[i])), s_same = fmax(s_same, fabs(M[i]));
  }
  mbt_check_scaled(tally, e_vel, fmax(1, s_vel), 1e-7, "%s: twists against differences of poses",
                   name);
  mbt_check_scaled(tally, e_acc, fmax(1, s_acc), 1e-7,
                   "%s: twist rates against differences of twists", name);
  mbt_check_scaled(tally, e_ke, fmax(1, s_ke), 1e-8, "%s: 1/2 zd^T M zd is the kinetic energy",
                   name);
  mbt_check_scaled(tally, e_same, fmax(1, s_same), 1e-12,
                   "%s: RTdyn0 and RTdyn1 mass matrices agree", name);
  mbt_check_scaled(tally, e_dyn, fmax(1, s_dyn), 1e-7,
                   "%s: M zdd - Q has the Newton-Euler virtual power", name);
  if (t->nnorm)
    mbt_check_scaled(tally, e_null, fmax(1, s_same), 1e-10,
                     "%s: Euler parameters: M e = 0 and Q . e = 0", name);
  free(z), free(M), free(M1), free(Q), free(W), free(work), free(v0), free(vp), free(vm), free(vt);
  free(v2p), free(v2m);
}

/* q(z) of the auxiliary natural model along the path at s. */
static void natural_at(const mb_tree* t, mb_tree_state* st, const mb_model* aux, const double* z,
                       const double* zd, const double* zdd, double s, double* q) {
  double* zs = malloc(2 * (size_t)t->nz * sizeof(double) + 1);
  path_point(t, z, zd, zdd, s, zs, zs + t->nz);
  mb_tree_positions(t, zs, st);
  mb_tree_natural_positions(st, aux, q);
  free(zs);
}

/* The exploded natural model's coordinates placed by the tree: its rigid-body rows and the rows
   of the tree's joints vanish; rates against differences; its constant mass matrix gives the
   tree's kinetic energy; forces on it map to the tree's generalised forces by virtual power. */
static void check_natural_map(mbt_tally* tally, const mb_desc* d, const mb_tree* t,
                              const mb_model* aux, const char* name) {
  const int nz = t->nz, nq = aux->nq, nc = aux->ncon, nb = t->nbody;
  double* z = calloc(4 * (size_t)nz + 1, sizeof(double));
  double *zd = z + nz, *zdd = zd + nz, *tau = zdd + nz;
  double* q = calloc(10 * (size_t)nq + 1, sizeof(double));
  double *qd = q + nq, *qdd = qd + nq, *fd = qdd + nq, *qp = fd + nq, *qm = qp + nq;
  double *q2p = qm + nq, *q2m = q2p + nq, *Qq = q2m + nq, *Mqd = Qq + nq;
  double* phi = calloc((size_t)nc + 1, sizeof(double));
  double* M = calloc((size_t)nz * nz + 1, sizeof(double));
  double* Qz = calloc((size_t)nz + 1, sizeof(double));
  double* W = calloc(6 * (size_t)nb + 1, sizeof(double));
  double* work = calloc(36 * (size_t)nb + 1, sizeof(double));
  int* cut = calloc((size_t)d->njoint + 1, sizeof(int));
  for (int k = 0; k < t->ncut; k++) cut[t->cut[k]] = 1;
  unsigned seed = 777u + (unsigned)nq;
  double e_phi = 0, e_vel = 0, s_vel = 0, e_acc = 0, s_acc = 0, e_ke = 0, s_ke = 0, e_pow = 0;
  double s_pow = 0;
  for (int ref = 0; ref < 2; ref++) {
    mb_tree_state* st = mb_tree_state_create(t, (mb_reference)ref);
    random_state(t, &seed, z, zd, zdd);
    for (int i = 0; i < nz; i++) tau[i] = rnd(&seed);
    make_tangent(t, z, tau);
    /* rows that the tree holds by construction */
    mb_tree_positions(t, z, st);
    mb_tree_natural_positions(st, aux, q);
    mb_constraint_values(aux, q, 0, phi);
    for (int i = 0; i < nc; i++) {
      const int j = aux->con_joint[i];
      if (aux->con_body[i] >= 0 || (j >= 0 && !cut[j])) e_phi = fmax(e_phi, fabs(phi[i]));
    }
    /* velocities and accelerations against differences along the path */
    mb_tree_velocities(t, zd, st);
    mb_tree_natural_velocities(st, aux, 0, NULL, qd);
    mb_tree_accelerations(t, z, zd, zdd, st);
    mb_tree_natural_accelerations(st, aux, 0, NULL, qdd);
    const double h = 1e-5, hs = 2e-3;
    natural_at(t, st, aux, z, zd, zdd, h, qp);
    natural_at(t, st, aux, z, zd, zdd, -h, qm);
    for (int i = 0; i < nq; i++) fd[i] = (qp[i] - qm[i]) / (2 * h);
    for (int i = 0; i < nq; i++)
      e_vel = fmax(e_vel, fabs(qd[i] - fd[i])), s_vel = fmax(s_vel, fabs(fd[i]));
    /* second differences, Richardson-extrapolated */
    natural_at(t, st, aux, z, zd, zdd, hs, qp);
    natural_at(t, st, aux, z, zd, zdd, -hs, qm);
    natural_at(t, st, aux, z, zd, zdd, 2 * hs, q2p);
    natural_at(t, st, aux, z, zd, zdd, -2 * hs, q2m);
    natural_at(t, st, aux, z, zd, zdd, 0, fd);
    for (int i = 0; i < nq; i++) {
      const double d1 = (qp[i] - 2 * fd[i] + qm[i]) / (hs * hs);
      const double d2 = (q2p[i] - 2 * fd[i] + q2m[i]) / (4 * hs * hs);
      const double acc = (4 * d1 - d2) / 3;
      e_acc = fmax(e_acc, fabs(qdd[i] - acc)), s_acc = fmax(s_acc, fabs(acc));
    }
    /* kinetic energy: 1/2 qd^T M_q qd (the natural model's constant mass) = 1/2 zd^T M zd */
    mb_tree_positions(t, z, st);
    mb_tree_velocities(t, zd, st);
    mb_tree_natural_velocities(st, aux, 0, NULL, qd);
    memset(Mqd, 0, (size_t)nq * sizeof(double));
    mb_mass_mul(aux, qd, 1, Mqd);
    mb_tree_mass(t, st, M, work);
    double ke_q = 0.5 * mbu_dot(nq, qd, Mqd), ke_z = 0;
    for (int i = 0; i < nz; i++)
      for (int j = 0; j < nz; j++) ke_z += 0.5 * zd[i] * M[(size_t)i * nz + j] * zd[j];
    e_ke = fmax(e_ke, fabs(ke_q - ke_z)), s_ke = fmax(s_ke, fabs(ke_z));
    /* virtual power of natural forces: tau . (dq/dz)^T Q = (dq/dz tau) . Q */
    for (int i = 0; i < nq; i++) Qq[i] = rnd(&seed);
    memset(W, 0, 6 * (size_t)nb * sizeof(double));
    mb_tree_natural_wrenches(st, aux, 0, NULL, Qq, W);
    mb_tree_project(t, st, W, Qz, work);
    double* zero = calloc((size_t)nz + 1, sizeof(double));
    natural_at(t, st, aux, z, tau, zero, h, qp);
    natural_at(t, st, aux, z, tau, zero, -h, qm);
    free(zero);
    double pz = mbu_dot(nz, tau, Qz), pq = 0;
    for (int e = 0; e < aux->nelem; e++) {
      const int a = aux->elem_qadr[e];
      if (a < 0 || aux->elem_kind[e] == MB_ELEM_STATE) continue;
      for (int k = 0; k < aux->dim; k++) pq += (qp[a + k] - qm[a + k]) / (2 * h) * Qq[a + k];
    }
    e_pow = fmax(e_pow, fabs(pz - pq)), s_pow = fmax(s_pow, fabs(pq) + 1);
    mb_tree_state_free(st);
  }
  char what[256];
  snprintf(what, sizeof what, "%s: natural rigid-body and tree-joint rows vanish", name);
  mbt_check(tally, e_phi <= 1e-12, what, e_phi, 1e-12);
  mbt_check_scaled(tally, e_vel, fmax(1, s_vel), 1e-8, "%s: natural velocities against differences",
                   name);
  mbt_check_scaled(tally, e_acc, fmax(1, s_acc), 1e-8,
                   "%s: natural accelerations against differences", name);
  mbt_check_scaled(tally, e_ke, fmax(1, s_ke), 1e-12,
                   "%s: 1/2 qd^T M_q qd of the natural model = 1/2 zd^T M zd", name);
  mbt_check_scaled(tally, e_pow, s_pow, 1e-8, "%s: natural forces map by virtual power", name);
  free(z), free(q), free(phi), free(M), free(Qz), free(W), free(work), free(cut);
}

/* Coordinates and rates read back from poses and body velocities. */
static void check_inverse(mbt_tally* tally, const mb_tree* t, const char* name) {
  const int nz = t->nz, nb = t->nbody;
  double* z = calloc(6 * (size_t)nz + 1, sizeof(double));
  double *zd = z + nz, *zdd = zd + nz, *z2 = zdd + nz, *zd2 = z2 + nz;
  double* pose = calloc(24 * (size_t)nb + 1, sizeof(double));
  double *A = pose, *o = A + 9 * nb, *w = o + 3 * nb, *v = w + 3 * nb;
  mb_tree_state* st = mb_tree_state_create(t, MB_REFERENCE_GLOBAL_ORIGIN);
  unsigned seed = 4242u + (unsigned)nz;
  random_state(t, &seed, z, zd, zdd);
  /* angles within (-pi, pi] (they are within [-1, 1]) read back as themselves */
  mb_tree_positions(t, z, st);
  mb_tree_velocities(t, zd, st);
  memcpy(A, st->A, 9 * (size_t)nb * sizeof(double));
  memcpy(o, st->o, 3 * (size_t)nb * sizeof(double));
  for (int b = 0; b < nb; b++) {
    const double* V = st->V + 6 * b;
    double arm[3], t3[3];
    for (int k = 0; k < 3; k++) arm[k] = st->o[3 * b + k] - st->r[3 * b + k];
    mbu_cross3(V + 3, arm, t3);
    for (int k = 0; k < 3; k++) w[3 * b + k] = V[3 + k], v[3 * b + k] = V[k] + t3[k];
  }
  mb_tree_coordinates(t, A, o, z2);
  const int st_rates = mb_tree_rates(t, z2, st, w, v, zd2);
  /* Euler parameters read back with e0 >= 0: -e is the same rotation */
  for (int q = 0; q < t->nnorm; q++) {
    const int a = t->normadr[q], flip = z[a] < 0;
    for (int k = 0; flip && k < 4; k++) z[a + k] = -z[a + k], zd[a + k] = -zd[a + k];
  }
  double ez = 0, ezd = 0;
  for (int i = 0; i < nz; i++)
    ez = fmax(ez, fabs(z2[i] - z[i])), ezd = fmax(ezd, fabs(zd2[i] - zd[i]));
  char what[256];
  snprintf(what, sizeof what, "%s: coordinates read back from the poses", name);
  mbt_check(tally, ez <= 1e-12, what, ez, 1e-12);
  snprintf(what, sizeof what, "%s: rates read back from the body velocities", name);
  mbt_check(tally, st_rates == MB_OK && ezd <= 1e-12, what, ezd, 1e-12);
  mb_tree_state_free(st);
  free(z), free(pose);
}

/* The natural state at z, zd, zdd into q, qd, qdd (aux nq each) and R^T w into rtw (nz). */
static void natural_state(const mb_tree* t, mb_tree_state* st, const mb_model* aux, const double* z,
                          const double* zd, const double* zdd, const double* w, double* q,
                          double* rtw) {
  const int nq = aux->nq;
  double* W = calloc(6 * (size_t)t->nbody + 1, sizeof(double));
  double* work = calloc(6 * (size_t)t->nbody + 1, sizeof(double));
  mb_tree_positions(t, z, st);
  mb_tree_velocities(t, zd, st);
  mb_tree_accelerations(t, z, zd, zdd, st);
  mb_tree_natural_positions(st, aux, q);
  mb_tree_natural_velocities(st, aux, 0, NULL, q + nq);
  mb_tree_natural_accelerations(st, aux, 0, NULL, q + 2 * nq);
  mb_tree_natural_wrenches(st, aux, 0, NULL, w, W);
  mb_tree_project(t, st, W, rtw, work);
  free(W), free(work);
}

/* The derivatives of the natural map (tree_tangent.c) against central differences: along every
   coordinate, rate and acceleration, along each joint frame moved (inboard and outboard) and
   along the elements' local values; with those of R^T w for fixed natural forces w. */
static void check_tangent(mbt_tally* tally, const mb_tree* t, mb_model* aux, const char* name) {
  const int nz = t->nz, nq = aux->nq, nb = t->nbody;
  const double h = 1e-6;
  double* z = calloc(3 * (size_t)nz + 1, sizeof(double));
  double *zd = z + nz, *zdd = zd + nz;
  double* zp = calloc(3 * (size_t)nz + 1, sizeof(double));
  double* along = calloc(3 * (size_t)nz + 1, sizeof(double));
  double* v = calloc(16 * (size_t)nq + 4 * (size_t)nz + 3 * (size_t)aux->nelem + 1, sizeof(double));
  double *w = v, *x0 = w + nq, *xp = x0 + 3 * nq, *xm = xp + 3 * nq, *dx = xm + 3 * nq;
  double *rt = dx + 3 * nq, *rp = rt + nz, *rm = rp + nz, *dr = rm + nz;
  double* dlocal = dr + nz;
  unsigned seed = 777u + (unsigned)nz;
  random_state(t, &seed, z, zd, zdd);
  for (int i = 0; i < nq; i++) w[i] = rnd(&seed);
  for (int ref = 0; ref < 2; ref++) {
    mb_tree_state* st = mb_tree_state_create(t, (mb_reference)ref);
    mb_tree_spatial* sp = mb_tree_spatial_create(t);
    double err[4] = {0, 0, 0, 0}, scale[4] = {0, 0, 0, 0};
    /* directions: each coordinate's position, rate and acceleration, then each body's inboard
       and outboard frame along a random shift, then the elements' local values, then every
       coordinate, rate and acceleration at once along random vectors */
    const int ndir = 3 * nz + 2 * nb + 2;
    for (int k = 0; k < ndir; k++) {
      mb_tree_direction dir = {.coord = -1, .body = -1};
      double* frame = NULL;
      double shift_local[3] = {0, 0, 0};
      int local = 0;
      if (k < 3 * nz) {
        dir.coord = k % nz;
        *(k < nz ? &dir.cz : k < 2 * nz ? &dir.cv : &dir.ca) = 1;
      } else if (k < 3 * nz + 2 * nb) {
        const int b = (k - 3 * nz) / 2, out = (k - 3 * nz) % 2;
        if (t->marker[2 * b] < 0) continue;
        dir.body = b, dir.outboard = out;
        frame = (out ? t->outboard : t->inboard) + 12 * b + 9;
        for (int r = 0; r < t->dim; r++) shift_local[r] = rnd(&seed);
      } else if (k < 3 * nz + 2 * nb + 1) {
        local = 1;
        for (int i = 0; i < 3 * aux->nelem; i++) dlocal[i] = rnd(&seed);
      } else {
        for (int i = 0; i < 3 * nz; i++) along[i] = rnd(&seed);
        dir.dz = along, dir.dzd = along + nz, dir.dzdd = along + 2 * nz;
      }
      /* the frame's global shift at the state: inboard A_parent u, outboard -A_body u */
      natural_state(t, st, aux, z, zd, zdd, w, x0, rt);
      if (frame) {
        const int p = dir.outboard ? dir.body : t->parent[dir.body];
        static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        mbu_mat3_vec(p < 0 ? I3 : st->A + 9 * p, shift_local, dir.shift);
        for (int r = 0; r < 3 && dir.outboard; r++) dir.shift[r] = -dir.shift[r];
      }
      mb_tree_spatial_motion(t, st, z, zd, zdd, sp);
      memset(dx, 0, 3 * (size_t)nq * sizeof(double));
      mb_tree_natural_tangent(t, st, sp, aux, &dir, local ? dlocal : NULL, dx, dx + nq,
                              dx + 2 * nq);
      mb_tree_wrench_sums(t, st, aux, w, sp);
      mb_tree_column_tangent(t, st, sp, aux, &dir, w, dx, dr);
      for (int side = 0; side < 2; side++) {
        const double e = side ? -h : h;
        memcpy(zp, z, 3 * (size_t)nz * sizeof(double));
        if (dir.coord >= 0) zp[dir.coord + nz * (k / nz)] += e;
        for (int i = 0; dir.dz && i < 3 * nz; i++) zp[i] += e * along[i];
        for (int r = 0; frame && r < 3; r++) frame[r] += e * shift_local[r];
        for (int i = 0; local && i < 3 * aux->nelem; i++) aux->elem_local[i] += e * dlocal[i];
        natural_state(t, st, aux, zp, zp + nz, zp + 2 * nz, w, side ? xm : xp, side ? rm : rp);
        for (int r = 0; frame && r < 3; r++) frame[r] -= e * shift_local[r];
        for (int i = 0; local && i < 3 * aux->nelem; i++) aux->elem_local[i] -= e * dlocal[i];
      }
      for (int i = 0; i < 3 * nq; i++) {
        const int level = i / nq;
        const double fd = (xp[i] - xm[i]) / (2 * h);
        err[level] = fmax(err[level], fabs(dx[i] - fd));
        scale[level] = fmax(scale[level], fabs(fd));
      }
      for (int i = 0; i < nz; i++) {
        const double fd = (rp[i] - rm[i]) / (2 * h);
        err[3] = fmax(err[3], fabs(dr[i] - fd)), scale[3] = fmax(scale[3], fabs(fd));
      }
    }
    static const char* what[4] = {"positions", "velocities", "accelerations", "R^T w"};
    for (int l = 0; l < 4; l++)
      mbt_check_scaled(tally, err[l], fmax(scale[l], 1), 1e-7,
                       "%s (%s): derivatives of the natural %s against differences", name,
                       ref ? "RTdyn1" : "RTdyn0", what[l]);
    mb_tree_spatial_free(sp);
    mb_tree_state_free(st);
  }
  free(z), free(zp), free(along), free(v);
}

/* Loads a model, optionally reverses every joint (marker 1 and 2 swapped), and checks its tree. */
static void check_model(mbt_tally* tally, const char* path, int reverse, int expect_cut,
                        int expect_nz) {
  mb_desc d;
  mb_error err;
  if (mb_desc_load_json(path, &d, &err) != MB_OK) {
    mbt_check(tally, 0, path, 0, 0);
    return;
  }
  for (int j = 0; reverse && j < d.njoint; j++) {
    mb_joint_desc* jd = &d.joint[j];
    int b = jd->body[0], m = jd->marker[0];
    jd->body[0] = jd->body[1], jd->marker[0] = jd->marker[1];
    jd->body[1] = b, jd->marker[1] = m;
  }
  mb_tree* t = NULL;
  char name[128];
  snprintf(name, sizeof name, "%s%s", path, reverse ? " reversed" : "");
  if (mb_tree_compile(&d, &t, &err) != MB_OK) {
    printf("FAIL %s: %s\n", name, err.message);
    tally->failed++;
    mb_desc_free(&d);
    return;
  }
  char what[256];
  snprintf(what, sizeof what, "%s: %d coordinates, %d cut joints", name, t->nz, t->ncut);
  mbt_check(tally, t->nz == expect_nz && t->ncut == expect_cut, what, t->nz, expect_nz);
  check_tree(tally, &d, t, name);
  check_inverse(tally, t, name);
  mb_model* aux = NULL;
  if (mb_compile_exploded(&d, &aux, &err) == MB_OK) {
    check_natural_map(tally, &d, t, aux, name);
    check_tangent(tally, t, aux, name);
  } else
    printf("FAIL %s: exploded natural model: %s\n", name, err.message), tally->failed++;
  mb_model_free(aux);
  mb_tree_free(t);
  mb_desc_free(&d);
}

int main(void) {
  mbt_tally tally = {0, 0};
  /* every spatial joint in a chain, and a free body: 1 + 2 + 1 + 2 + 4 + 3 + 0 + 7 */
  check_model(&tally, "tests/models/ok/features_spatial.json", 0, 0, 20);
  check_model(&tally, "tests/models/ok/features_spatial.json", 1, 0, 20);
  /* planar revolute, prismatic and fixed joints and a free body: 1 + 1 + 1 + 0 + 3 */
  check_model(&tally, "tests/models/ok/features_planar.json", 0, 0, 6);
  check_model(&tally, "tests/models/ok/features_planar.json", 1, 0, 6);
  /* the five-bar: one loop, closed by a cut joint */
  check_model(&tally, "problems/fivebar.json", 0, 1, 4);
  /* the bundled models: the spatial slider-crank's loop, the governor's two, the pendulum on its
     XY table with its controller's state, the buggy (a free chassis, four suspension loops) and
     the Bricard loop (redundant) */
  check_model(&tally, "problems/slider_crank.json", 0, 1, 6);
  check_model(&tally, "problems/control/governor_design.json", 0, 2, 12);
  check_model(&tally, "problems/control/pendulum_pid.json", 0, 0, 6);
  check_model(&tally, "problems/vehicle/step_descent.json", 0, 4, 30);
  check_model(&tally, "tests/models/iftomm/a04_bricard.json", 0, 1, 5);
  return mbt_finish(&tally);
}

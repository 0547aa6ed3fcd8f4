/* The joint formulation's constraints and equations of motion (core/joint/joint_model.c) against
   central differences of Phi(z, t) and against the natural formulation, and their exact
   derivatives (core/joint/joint_tangent.c) against central differences: the virtual power of
   M zdd - Q in any direction tau equals that of the natural model's M_q qdd - Q_q in the natural
   velocities that tau gives, at the natural accelerations that zdd gives; and the parameters'
   explicit derivatives of the equations and constraints against differences of models compiled
   with each parameter moved. Planar and spatial, every joint type, with loops, drivers, springs,
   tyres, controllers and a free body, both reference points. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "joint/joint_model.h"
#include "joint/joint_tangent.h"
#include "sens.h"
#include "structure.h"
#include "testing.h"

static double rnd(unsigned* seed) {
  *seed = *seed * 1103515245u + 12345u;
  return ((*seed >> 8) & 0xffff) / 32767.5 - 1.0;
}

/* d = the description of path: 0, or -1 reported. */
static int load(mbt_tally* tally, const char* path, mb_desc* d) {
  mb_error err;
  if (mb_desc_load_json(path, d, &err) == MB_OK) return 0;
  printf("FAIL %s: %s\n", path, err.message), tally->failed++;
  return -1;
}

/* A joint formulation with its workspaces. */
typedef struct fixture {
  mb_joint_model* jm;
  mb_data* da;
  mb_joint_data* jd;
} fixture;

/* f = the joint formulation of d with reference points ref: 0, or -1 (reported when tally is
   not NULL). */
static int fixture_open(mbt_tally* tally, const char* path, const mb_desc* d, int ref, fixture* f) {
  mb_error err;
  *f = (fixture){NULL, NULL, NULL};
  if (mb_joint_model_create(d, (mb_reference)ref, &f->jm, &err) != MB_OK) {
    if (tally) printf("FAIL %s: %s\n", path, err.message), tally->failed++;
    return -1;
  }
  f->da = mb_data_create(f->jm->aux);
  f->jd = mb_joint_data_create(f->jm, f->da);
  return 0;
}

static void fixture_close(fixture* f) {
  mb_joint_data_free(f->jd);
  mb_data_free(f->da);
  mb_joint_model_free(f->jm);
}

/* A state near the initial poses: random coordinates z with unit Euler parameters, random
   zd, zdd and tau (nz each). */
static void random_state(const mb_tree* t, int nz, unsigned* seed, double* z, double* zd,
                         double* zdd, double* tau) {
  for (int i = 0; i < nz; i++)
    z[i] = 0.5 * rnd(seed), zd[i] = rnd(seed), zdd[i] = rnd(seed), tau[i] = rnd(seed);
  for (int n = 0; n < t->nnorm; n++) {
    double *e = z + t->normadr[n], norm = 0;
    e[0] += 2;
    for (int k = 0; k < 4; k++) norm += e[k] * e[k];
    for (int k = 0; k < 4; k++) e[k] /= sqrt(norm);
  }
}

/* Phi at z + s v, time t + s tt, into phi (ncon). */
static void phi_at(const mb_joint_model* jm, mb_joint_data* jd, const double* z, const double* v,
                   double t, double tt, double s, double* phi) {
  const int nz = jm->nz;
  double* keep = malloc((size_t)nz * sizeof(double));
  memcpy(keep, jd->z, (size_t)nz * sizeof(double));
  for (int i = 0; i < nz; i++) jd->z[i] = z[i] + s * v[i];
  jd->t = t + s * tt;
  mb_joint_constraints(jm, jd);
  memcpy(phi, jd->phi, (size_t)jm->ncon * sizeof(double));
  memcpy(jd->z, keep, (size_t)nz * sizeof(double));
  free(keep);
}

static void check_model(mbt_tally* tally, const char* path, mb_desc* d, int ref, const fixture* f) {
  const mb_joint_model* jm = f->jm;
  mb_joint_data* jd = f->jd;
  const mb_tree* t = jm->tree;
  const mb_model* aux = jm->aux;
  const int nz = jm->nz, nc = jm->ncon, nq = aux->nq; /* nz with the controllers' states */
  double* v = calloc(5 * (size_t)nz + 6 * (size_t)nc + 4 * (size_t)nq + 1, sizeof(double));
  double *z = v + nz, *zd = z + nz, *zdd = zd + nz, *tau = zdd + nz;
  double *pp = tau + nz, *pm = pp + nc, *p2p = pm + nc, *p2m = p2p + nc, *p0 = p2m + nc;
  double *qt = p0 + nc, *qdd = qt + nq, *Mq = qdd + nq;
  unsigned seed = 99u + (unsigned)nz + 7u * (unsigned)ref;
  random_state(t, nz, &seed, z, zd, zdd, tau);
  const double t0 = 0.3, h = 1e-6, hs = 1e-3;
  /* differences first (they overwrite the workspace): in z along tau (any direction: the
     poses ignore |e|), then on the path z + s zd + s^2/2 zdd, t + s */
  double* fdz = malloc((size_t)nc * sizeof(double) + 1);
  phi_at(jm, jd, z, tau, t0, 0, h, pp);
  phi_at(jm, jd, z, tau, t0, 0, -h, pm);
  for (int i = 0; i < nc; i++) fdz[i] = (pp[i] - pm[i]) / (2 * h);
  double* dir = malloc((size_t)nz * sizeof(double));
  double* pts[5] = {p2m, pm, p0, pp, p2p};
  for (int j = -2; j <= 2; j++) {
    const double s = j * hs;
    for (int i = 0; i < nz; i++) dir[i] = zd[i] + 0.5 * s * zdd[i];
    phi_at(jm, jd, z, dir, t0, 1, s, pts[j + 2]);
  }
  free(dir);
  memcpy(jd->z, z, (size_t)nz * sizeof(double));
  memcpy(jd->zd, zd, (size_t)nz * sizeof(double));
  jd->t = t0;
  mb_joint_constraints(jm, jd);
  mb_joint_constraint_rates(jm, jd);
  double e_z = 0, s_z = 0;
  for (int i = 0; i < nc; i++) {
    double a = 0;
    for (int k = 0; k < nz; k++) a += jd->phiz[(size_t)i * nz + k] * tau[k];
    e_z = fmax(e_z, fabs(a - fdz[i])), s_z = fmax(s_z, fabs(fdz[i]));
  }
  free(fdz);
  /* dPhi/dt = Phi_z zd + Phi_t and d2Phi/dt2 = Phi_z zdd + remainder against the path's
     differences (Richardson-extrapolated) */
  double e_t = 0, s_t = 0, e_tt = 0, s_tt = 0;
  for (int i = 0; i < nc; i++) {
    double rate = jd->phit[i], acc = jd->phidd_rhs[i];
    for (int k = 0; k < nz; k++)
      rate += jd->phiz[(size_t)i * nz + k] * zd[k], acc += jd->phiz[(size_t)i * nz + k] * zdd[k];
    const double d1 = (4 * (pp[i] - pm[i]) / (2 * hs) - (p2p[i] - p2m[i]) / (4 * hs)) / 3;
    const double d2h = (pp[i] - 2 * p0[i] + pm[i]) / (hs * hs);
    const double d2H = (p2p[i] - 2 * p0[i] + p2m[i]) / (4 * hs * hs);
    const double d2 = (4 * d2h - d2H) / 3;
    e_t = fmax(e_t, fabs(rate - d1)), s_t = fmax(s_t, fabs(d1));
    e_tt = fmax(e_tt, fabs(acc - d2)), s_tt = fmax(s_tt, fabs(d2));
  }
  /* the equations of motion against the natural model's */
  memcpy(jd->z, z, (size_t)nz * sizeof(double));
  memcpy(jd->zd, zd, (size_t)nz * sizeof(double));
  jd->t = t0;
  mb_joint_constraints(jm, jd);
  mb_joint_constraint_rates(jm, jd);
  mb_joint_dynamics(jm, jd, 0);
  double lhs = 0;
  for (int i = 0; i < nz; i++) {
    double mz = -jd->Q[i];
    for (int k = 0; k < nz; k++) mz += jd->M[(size_t)i * nz + k] * zdd[k];
    lhs += tau[i] * mz;
  }
  /* natural accelerations of zdd and velocities of tau, at the same state */
  mb_tree_accelerations(t, z, zd, zdd, jd->st);
  memset(qdd, 0, (size_t)nq * sizeof(double));
  mb_tree_natural_accelerations(jd->st, aux, 0, NULL, qdd);
  mb_joint_states_to_natural(jm, zdd, qdd);
  memset(Mq, 0, (size_t)nq * sizeof(double));
  mb_mass_mul(aux, qdd, 1, Mq);
  mb_tree_velocities(t, tau, jd->st);
  memset(qt, 0, (size_t)nq * sizeof(double));
  mb_tree_natural_velocities(jd->st, aux, 0, NULL, qt);
  mb_joint_states_to_natural(jm, tau, qt);
  double rhs = 0, scale = 1;
  for (int i = 0; i < nq; i++) {
    rhs += qt[i] * (Mq[i] - jd->aux->force[i]);
    scale = fmax(scale, fabs(jd->aux->force[i]) + fabs(Mq[i]));
  }
  /* the Newton residual by the tree's inverse dynamics against M zdd + Phi_z^T mult - Q formed
     from the mass matrix and Phi_z, at random multipliers (the forces as evaluated above) */
  double *mult = pp, *F = malloc((size_t)nz * sizeof(double)), e_inv = 0, s_inv = 1;
  for (int i = 0; i < nc; i++) mult[i] = 10 * rnd(&seed);
  for (int i = 0; i < nz; i++) {
    F[i] = -jd->Q[i];
    for (int k = 0; k < nz; k++) F[i] += jd->M[(size_t)i * nz + k] * zdd[k];
    for (int c = 0; c < nc; c++) F[i] += jd->phiz[(size_t)c * nz + i] * mult[c];
  }
  memcpy(jd->zdd, zdd, (size_t)nz * sizeof(double));
  mb_joint_motion(jm, jd, jd->zdd, 1);
  mb_joint_inverse_dynamics(jm, jd, mult, 2, p2p);
  for (int i = 0; i < nz; i++)
    e_inv = fmax(e_inv, fabs(p2p[i] / 2 - F[i])), s_inv = fmax(s_inv, fabs(F[i]));
  free(F);
  char what[256];
  const char* rn = ref == 0 ? "RTdyn0" : "RTdyn1";
  mbt_check_scaled(tally, e_z, fmax(1, s_z), 1e-8,
                   "%s %s: Phi_z against differences (%d constraints)", path, rn, nc);
  mbt_check_scaled(tally, e_t, fmax(1, s_t), 1e-8, "%s %s: Phi_z zd + Phi_t against differences",
                   path, rn);
  mbt_check_scaled(tally, e_tt, fmax(1, s_tt), 1e-8,
                   "%s %s: Phi_z zdd + remainder against differences", path, rn);
  mbt_check_scaled(tally, e_inv, s_inv, 1e-12,
                   "%s %s: inverse dynamics = M zdd + Phi_z^T mult - Q (%d coordinates)", path, rn,
                   nz);
  snprintf(what, sizeof what, "%s %s: M zdd - Q has the natural model's virtual power", path, rn);
  mbt_check(tally, fabs(lhs - rhs) <= 1e-10 * scale, what, fabs(lhs - rhs) / scale, 1e-10);
  free(v);
}

/* F = M zdd + Phi_z^T lambda - Q (nz) at z, zd, zdd, t of jd. */
static void residual_at(const mb_joint_model* jm, mb_joint_data* jd, const double* z,
                        const double* zd, const double* zdd, const double* lambda, double* F) {
  const int nz = jm->nz;
  memcpy(jd->z, z, (size_t)nz * sizeof(double));
  memcpy(jd->zd, zd, (size_t)nz * sizeof(double));
  mb_joint_constraints(jm, jd);
  mb_joint_motion(jm, jd, NULL, 1);
  mb_joint_friction_multipliers(jm, jd->aux, lambda, 0, NULL); /* the friction reads lambda */
  mb_joint_dynamics(jm, jd, 0);
  for (int i = 0; i < nz; i++) {
    double v = -jd->Q[i];
    for (int k = 0; k < nz; k++) v += jd->M[(size_t)i * nz + k] * zdd[k];
    for (int c = 0; c < jm->ncon; c++) v += jd->phiz[(size_t)c * nz + i] * lambda[c];
    F[i] = v;
  }
}

/* The state z, zd, zdd in jd and tg, with the forces and their Jacobians, the friction reading
   the multipliers lambda. */
static void tangent_at(const mb_joint_model* jm, mb_joint_data* jd, mb_joint_tangent* tg,
                       const double* z, const double* zd, const double* zdd, const double* lambda) {
  memcpy(jd->z, z, (size_t)jm->nz * sizeof(double));
  memcpy(jd->zd, zd, (size_t)jm->nz * sizeof(double));
  mb_joint_constraints(jm, jd);
  mb_joint_motion(jm, jd, NULL, 1);
  mb_joint_tangent_state(tg, zd, zdd);
  mb_joint_tangent_forces(tg, lambda);
}

/* G = M y + Phi_z^T mult (nz), a projection's equations at fixed y and mult, at positions z. */
static void projection_at(const mb_joint_model* jm, mb_joint_data* jd, const double* z,
                          const double* y, const double* mult, double* G) {
  const int nz = jm->nz;
  memcpy(jd->z, z, (size_t)nz * sizeof(double));
  mb_joint_constraints(jm, jd);
  mb_joint_mass(jm, jd);
  for (int i = 0; i < nz; i++) {
    G[i] = 0;
    for (int k = 0; k < nz; k++) G[i] += jd->M[(size_t)i * nz + k] * y[k];
    for (int c = 0; c < jm->ncon; c++) G[i] += jd->phiz[(size_t)c * nz + i] * mult[c];
  }
}

/* The forward sensitivity's products along a direction tau against central differences: the
   tangent linear model's (K + cv C + ca M) tau (mb_joint_tangent_newton), C tau
   (mb_joint_tangent_damping_mul), and a projection's d(M y + Phi_z^T mult)/dz tau
   (mb_joint_tangent_projection_mul) at a random y. */
static void products_against_differences(mbt_tally* tally, const char* path,
                                         const mb_joint_model* jm, mb_joint_data* jd,
                                         mb_joint_tangent* tg, const double* z, const double* zd,
                                         const double* zdd, const double* lambda,
                                         const double* tau) {
  const int nz = jm->nz;
  const double h = 1e-6, cv = 0.7, ca = 1.3; /* any: the identity holds for all */
  double* v = calloc((size_t)nz * (nz + 9) + 1, sizeof(double));
  double *A = v, *Fp = A + (size_t)nz * nz, *Fm = Fp + nz, *an = Fm + nz, *fd = an + nz;
  double *x = fd + nz, *xd = x + nz, *xdd = xd + nz, *y = xdd + nz;
  unsigned seed = 99u + (unsigned)nz;
  for (int i = 0; i < nz; i++) y[i] = rnd(&seed);
  for (int which = 0; which < 3; which++) {
    /* the state and its matrices again (the differences moved jd) */
    tangent_at(jm, jd, tg, z, zd, zdd, lambda);
    memset(an, 0, (size_t)nz * sizeof(double));
    if (which == 0) {
      mb_joint_tangent_newton(tg, lambda, cv, ca, A);
      for (int i = 0; i < nz; i++)
        for (int k = 0; k < nz; k++) an[i] += A[(size_t)k * nz + i] * tau[k];
    } else if (which == 1) {
      mb_joint_tangent_newton(tg, lambda, cv, ca, A); /* the products' state */
      mb_joint_tangent_damping_mul(tg, tau, 1, an);
    } else {
      mb_joint_tangent_projection_state(tg, y, lambda);
      mb_joint_tangent_projection_mul(tg, tau, lambda, 1, an);
    }
    /* the transposed products (the adjoint's) against the products: u . (X tau) = (X^T u) . tau */
    if (which > 0) {
      double *u = Fp, *xt = Fm; /* before the differences use them */
      for (int i = 0; i < nz; i++) u[i] = rnd(&seed), xt[i] = 0;
      if (which == 1)
        mb_joint_tangent_damping_mul_t(tg, zd, u, 1, xt);
      else
        mb_joint_tangent_projection_mul_t(tg, y, u, lambda, 1, xt);
      double primal = 0, dual = 0, size = 0;
      for (int i = 0; i < nz; i++)
        primal += u[i] * an[i], dual += xt[i] * tau[i],
            size += fabs(u[i] * an[i]) + fabs(xt[i] * tau[i]);
      mbt_check_scaled(tally, fabs(primal - dual), fmax(size, 1), 1e-12,
                       "%s: the transpose of %s against it", path,
                       which == 1 ? "C tau" : "d(M y + Phi_z^T mult)/dz tau");
    }
    for (int side = 0; side < 2; side++) {
      const double s = side ? -h : h;
      double* F = side ? Fm : Fp;
      for (int i = 0; i < nz; i++)
        x[i] = z[i] + (which == 0   ? s
                       : which == 1 ? 0
                                    : s) *
                          tau[i],
        xd[i] = zd[i] + (which == 0   ? s * cv
                         : which == 1 ? s
                                      : 0) *
                            tau[i],
        xdd[i] = zdd[i] + (which == 0 ? s * ca : 0) * tau[i];
      if (which < 2)
        residual_at(jm, jd, x, xd, xdd, lambda, F);
      else
        projection_at(jm, jd, x, y, lambda, F);
    }
    double e = 0, scale = 0;
    for (int i = 0; i < nz; i++) {
      fd[i] = (Fp[i] - Fm[i]) / (2 * h);
      e = fmax(e, fabs(an[i] - fd[i])), scale = fmax(scale, fabs(fd[i]));
    }
    static const char* name[3] = {"(K + cv C + ca M) tau", "C tau", "d(M y + Phi_z^T mult)/dz tau"};
    mbt_check_scaled(tally, e, fmax(scale, 1), 1e-7, "%s: %s against differences", path,
                     name[which]);
  }
  free(v);
}

/* The exact derivatives of the equations of motion (joint_tangent.c) against central
   differences of F = M zdd + Phi_z^T lambda - Q along a random direction: K = dF/dz, C = dF/dzd,
   M = dF/dzdd, with forces, tyres, controllers' states, loops and Euler parameters. */
/* The joint friction's coupling through the multipliers: dF/dlambda w = B^T w = Phi_z^T w +
   sum_a gz_a (lz_a . w) (mb_joint_tangent_coupling) against central differences in lambda. */
static void coupling_against_differences(mbt_tally* tally, const char* path,
                                         const mb_joint_model* jm, mb_joint_data* jd,
                                         mb_joint_tangent* tg, const double* z, const double* zd,
                                         const double* zdd, const double* lambda) {
  const int nz = jm->nz, nc = jm->ncon;
  int rates;
  mb_friction_count(jm->aux, &rates);
  double* v =
      calloc((size_t)rates * (nz + nc) + 4 * (size_t)nz + 3 * (size_t)nc + 1, sizeof(double));
  double *gz = v, *lz = gz + (size_t)rates * nz, *Fp = lz + (size_t)rates * nc, *Fm = Fp + nz;
  double *an = Fm + nz, *phiz_w = an + nz, *w = phiz_w + nz, *lp = w + nc, *lm = lp + nc;
  unsigned seed = 777u + (unsigned)nz;
  for (int i = 0; i < nc; i++) w[i] = i < jm->nrow ? rnd(&seed) : 0;
  tangent_at(jm, jd, tg, z, zd, zdd, lambda);
  sens_point pt;
  const int linearised = sens_point_init(jm->aux, &pt, jd->aux) == 0;
  if (linearised) {
    sens_friction_linearise(jm->aux, &pt);
    mb_joint_tangent_coupling(tg, &pt.fric, gz, lz);
  }
  sens_point_free(&pt);
  for (int j = 0; j < nz; j++)
    for (int i = 0; i < nc; i++) phiz_w[j] += jd->phiz[(size_t)i * nz + j] * w[i];
  const double h = 1e-4 * (1 + mbu_norm_inf(nc, lambda));
  for (int i = 0; i < nc; i++) lp[i] = lambda[i] + h * w[i], lm[i] = lambda[i] - h * w[i];
  residual_at(jm, jd, z, zd, zdd, lp, Fp);
  residual_at(jm, jd, z, zd, zdd, lm, Fm);
  double e = 0, scale = 0, coupled = 0;
  for (int j = 0; j < nz; j++) {
    an[j] = phiz_w[j];
    for (int a = 0; a < rates; a++)
      an[j] += gz[(size_t)a * nz + j] * mbu_dot(nc, lz + (size_t)a * nc, w);
    const double fd = (Fp[j] - Fm[j]) / (2 * h);
    e = fmax(e, fabs(an[j] - fd)), scale = fmax(scale, fabs(fd));
    coupled = fmax(coupled, fabs(an[j] - phiz_w[j]));
  }
  mbt_check(tally, linearised, "the friction's natural linearisation allocates", linearised, 1);
  mbt_check_scaled(tally, e, fmax(scale, 1), 1e-7,
                   "%s: the friction's coupling dF/dlambda w against differences (its part %.3g)",
                   path, coupled);
  free(v);
}

/* The columns' Rad = dqdd/dzd, taken as 2 Rv (the second derivatives of q(z) symmetric), against
   a pass of the tree along each rate. */
static void rate_columns_against_passes(mbt_tally* tally, const char* path, mb_joint_tangent* tg) {
  const size_t nq = (size_t)tg->nq;
  double* dqdd = calloc(nq + 1, sizeof(double));
  double e = 0, scale = 0;
  for (int j = 0; j < tg->nt; j++) {
    const mb_tree_direction zd = {.coord = j, .cv = 1, .body = -1};
    memset(dqdd, 0, nq * sizeof(double));
    mb_tree_natural_tangent(tg->jm->tree, tg->jd->st, tg->sp, tg->aux, &zd, NULL, NULL, NULL, dqdd);
    for (size_t i = 0; i < nq; i++)
      e = fmax(e, fabs(dqdd[i] - tg->Rad[j * nq + i])), scale = fmax(scale, fabs(dqdd[i]));
  }
  mbt_check_scaled(tally, e, fmax(scale, 1e-300), 1e-12,
                   "%s: the columns' dqdd/dzd = 2 dqd/dz against a pass along each rate", path);
  free(dqdd);
}

/* The Newton matrix K + cv C + ca M (mb_joint_tangent_newton: the inertial and geometric terms
   at body level) against the matrices of mb_joint_tangent_dynamics (element by element, through
   the columns of R and of its rates), at the state of the last mb_joint_tangent_dynamics. */
static void newton_against_matrices(mbt_tally* tally, const char* path, mb_joint_tangent* tg,
                                    const double* lambda) {
  const size_t n = (size_t)tg->nz * tg->nz;
  const double cv = 0.7, ca = 1.3;
  double* v = calloc(2 * n + 1, sizeof(double));
  double *A = v, *B = A + n;
  for (size_t k = 0; k < n; k++) B[k] = tg->K[k] + cv * tg->C[k] + ca * tg->M[k];
  mb_joint_tangent_newton(tg, lambda, cv, ca, A);
  double e = 0, scale = 0;
  for (size_t k = 0; k < n; k++) e = fmax(e, fabs(A[k] - B[k])), scale = fmax(scale, fabs(B[k]));
  mbt_check_scaled(tally, e, fmax(scale, 1e-300), 1e-12,
                   "%s: the Newton matrix against K + cv C + ca M of the columns", path);
  free(v);
}

static void check_tangent_matrices(mbt_tally* tally, const char* path) {
  mb_desc d;
  if (load(tally, path, &d) != 0) return;
  fixture f;
  if (fixture_open(tally, path, &d, MB_REFERENCE_CENTRE_OF_MASS, &f) != 0) {
    mb_desc_free(&d);
    return;
  }
  const mb_joint_model* jm = f.jm;
  mb_joint_data* jd = f.jd;
  mb_joint_tangent* tg = mb_joint_tangent_create(jm, jd);
  const mb_tree* t = jm->tree;
  const int nz = jm->nz, nc = jm->ncon;
  double* v = calloc(9 * (size_t)nz + (size_t)nc + 1, sizeof(double));
  double *z = v, *zd = z + nz, *zdd = zd + nz, *tau = zdd + nz, *Fp = tau + nz, *Fm = Fp + nz;
  double *x = Fm + nz, *fd = x + nz, *an = fd + nz, *lambda = an + nz;
  unsigned seed = 4321u + (unsigned)nz;
  random_state(t, nz, &seed, z, zd, zdd, tau);
  for (int i = 0; i < nc; i++) lambda[i] = 10 * rnd(&seed);
  jd->t = 0.3;
  /* the matrices at the state */
  tangent_at(jm, jd, tg, z, zd, zdd, lambda);
  mb_joint_tangent_columns(tg);
  rate_columns_against_passes(tally, path, tg);
  mb_joint_tangent_dynamics(tg, lambda);
  const double h = 1e-6;
  static const char* name[3] = {"K = dF/dz", "C = dF/dzd", "M = dF/dzdd"};
  const double* A[3] = {tg->K, tg->C, tg->M};
  for (int which = 0; which < 3; which++) {
    for (int side = 0; side < 2; side++) {
      double* F = side ? Fm : Fp;
      const double s = side ? -h : h;
      double* moved = which == 0 ? z : which == 1 ? zd : zdd;
      for (int i = 0; i < nz; i++) x[i] = moved[i] + s * tau[i];
      residual_at(jm, jd, which == 0 ? x : z, which == 1 ? x : zd, which == 2 ? x : zdd, lambda, F);
    }
    double e = 0, scale = 0;
    for (int i = 0; i < nz; i++) {
      fd[i] = (Fp[i] - Fm[i]) / (2 * h), an[i] = 0;
      for (int k = 0; k < nz; k++) an[i] += A[which][(size_t)k * nz + i] * tau[k];
      e = fmax(e, fabs(an[i] - fd[i])), scale = fmax(scale, fabs(fd[i]));
    }
    mbt_check_scaled(tally, e, fmax(scale, 1), 1e-7, "%s: %s against differences", path,
                     name[which]);
  }
  newton_against_matrices(tally, path, tg, lambda);
  products_against_differences(tally, path, jm, jd, tg, z, zd, zdd, lambda, tau);
  if (jm->friction) coupling_against_differences(tally, path, jm, jd, tg, z, zd, zdd, lambda);
  free(v);
  mb_joint_tangent_free(tg);
  fixture_close(&f);
  mb_desc_free(&d);
}

/* A state of the joint coordinates, with multipliers and, for the projections, the change y of
   the projected rates. */
typedef struct state {
  const double *z, *zd, *zdd, *mult, *y;
  double t;
} state;

/* The level's equations and rows of d compiled afresh (its parameters as they are) at s: level 0
   F = M zdd + Phi_z^T mult - Q (nz) and Phi (ncon); level 1 or 2 the projection's M y +
   Phi_z^T mult and d^level Phi/dt^level. 0, or -1 when the model does not compile. */
static int system_of(const mb_desc* d, int ref, int level, const state* s, double* F,
                     double* rows) {
  fixture f;
  if (fixture_open(NULL, NULL, d, ref, &f) != 0) return -1;
  const mb_joint_model* jm = f.jm;
  mb_joint_data* jd = f.jd;
  const int nz = jm->nz, nc = jm->ncon;
  jd->t = s->t;
  if (level == 0) {
    residual_at(jm, jd, s->z, s->zd, s->zdd, s->mult, F);
    memcpy(rows, jd->phi, (size_t)nc * sizeof(double));
  } else {
    memcpy(jd->z, s->z, (size_t)nz * sizeof(double));
    memcpy(jd->zd, s->zd, (size_t)nz * sizeof(double));
    mb_joint_constraints(jm, jd);
    mb_joint_constraint_rates(jm, jd);
    mb_joint_mass(jm, jd);
    const double* x = level == 1 ? s->zd : s->zdd;
    for (int i = 0; i < nz; i++) {
      F[i] = 0;
      for (int k = 0; k < nz; k++) F[i] += jd->M[(size_t)i * nz + k] * s->y[k];
      for (int c = 0; c < nc; c++) F[i] += jd->phiz[(size_t)c * nz + i] * s->mult[c];
    }
    for (int c = 0; c < nc; c++) {
      rows[c] = level == 1 ? jd->phit[c] : jd->phidd_rhs[c];
      for (int k = 0; k < nz; k++) rows[c] += jd->phiz[(size_t)c * nz + k] * x[k];
    }
  }
  fixture_close(&f);
  return 0;
}

/* The parameters' explicit derivatives of the equations of motion and constraints and of both
   projections' equations and rows (mb_joint_explicit_dynamics, mb_joint_explicit_projection: the
   natural model's tangent models carried by R, and the joint frames and elements the parameters
   move) against central differences of models compiled with each parameter moved, at a random
   state and fixed joint coordinates: geometric, inertial, force, driver and controller
   parameters, every joint type, planar and spatial, both reference points. */
static void check_explicit_terms(mbt_tally* tally, const char* path, mb_desc* d, int ref,
                                 const fixture* f) {
  static const char* what[3] = {"F", "the velocity projection", "the acceleration projection"};
  const mb_joint_model* jm = f->jm;
  mb_joint_data* jd = f->jd;
  const int nz = jm->nz, nc = jm->ncon, p = mb_desc_gradient_count(d);
  double* v = calloc(9 * (size_t)nz + 3 * (size_t)nc + (size_t)p * (nz + nc) + 1, sizeof(double));
  double *z = v, *zd = z + nz, *zdd = zd + nz, *y = zdd + nz, *xs = y + nz, *Fp = xs + nz;
  double *Fm = Fp + nz, *mult = Fm + 2 * nz, *rp = mult + nc, *rm = rp + nc, *r = rm + nc;
  double* g = r + (size_t)p * nz;
  unsigned seed = 2468u + (unsigned)nz + 5u * (unsigned)ref;
  random_state(jm->tree, nz, &seed, z, zd, zdd, y);
  for (int i = 0; i < nc; i++) mult[i] = 10 * rnd(&seed);
  const state s = {z, zd, zdd, mult, y, 0.3};
  for (int level = 0; level < 3; level++) {
    memcpy(jd->z, z, (size_t)nz * sizeof(double));
    memcpy(jd->zd, zd, (size_t)nz * sizeof(double));
    memcpy(jd->zdd, zdd, (size_t)nz * sizeof(double));
    double* multipliers[3] = {jd->lambda, jd->sigma, jd->kappa};
    memcpy(multipliers[level], mult, (size_t)nc * sizeof(double));
    jd->t = s.t;
    for (int i = 0; i < nz; i++) xs[i] = (level == 1 ? zd[i] : zdd[i]) - y[i];
    mb_error err;
    const mb_status st = level == 0
                             ? mb_joint_explicit_dynamics(d, jm, jd, zd, zdd, r, g, &err)
                             : mb_joint_explicit_projection(d, jm, jd, level, xs, r, g, &err);
    if (st != MB_OK) {
      printf("FAIL %s: %s\n", path, err.message), tally->failed++;
      break;
    }
    for (int k = 0; k < p; k++) {
      const int par = mb_desc_gradient_param(d, k);
      const double value = d->param_value[par], h = 1e-6 * fmax(fabs(value), 1);
      int failed = 0;
      mb_desc_set_param(d, par, value + h);
      failed |= system_of(d, ref, level, &s, Fp, rp);
      mb_desc_set_param(d, par, value - h);
      failed |= system_of(d, ref, level, &s, Fm, rm);
      mb_desc_set_param(d, par, value);
      double eF = 0, sF = 0, ep = 0, sp = 0;
      for (int i = 0; i < nz && !failed; i++) {
        const double fd = -(Fp[i] - Fm[i]) / (2 * h);
        eF = fmax(eF, fabs(r[(size_t)k * nz + i] - fd)), sF = fmax(sF, fabs(fd));
      }
      for (int i = 0; i < nc && !failed; i++) {
        const double fd = -(rp[i] - rm[i]) / (2 * h);
        ep = fmax(ep, fabs(g[(size_t)k * nc + i] - fd)), sp = fmax(sp, fabs(fd));
      }
      mbt_check(tally, !failed, "the model compiles with the parameter moved", !failed, 1);
      mbt_check_scaled(tally, eF, fmax(sF, 1), 1e-6, "%s (%s): %s, equations' d/d%s", path,
                       ref ? "RTdyn1" : "RTdyn0", what[level], d->param_name[par]);
      mbt_check_scaled(tally, ep, fmax(sp, 1), 1e-6, "%s (%s): %s, rows' d/d%s", path,
                       ref ? "RTdyn1" : "RTdyn0", what[level], d->param_name[par]);
    }
  }
  free(v);
}

/* check at both reference points of the model of path */
static void each_reference(mbt_tally* tally, const char* path,
                           void (*check)(mbt_tally*, const char*, mb_desc*, int, const fixture*)) {
  mb_desc d;
  if (load(tally, path, &d) != 0) return;
  for (int ref = 0; ref < 2; ref++) {
    fixture f;
    if (fixture_open(tally, path, &d, ref, &f) != 0) break;
    check(tally, path, &d, ref, &f);
    fixture_close(&f);
  }
  mb_desc_free(&d);
}

int main(void) {
  mbt_tally tally = {0, 0};
  each_reference(&tally, "tests/models/ok/features_spatial.json", check_model);
  each_reference(&tally, "tests/models/ok/features_planar.json", check_model);
  each_reference(&tally, "problems/fivebar.json", check_model);
  each_reference(&tally, "problems/fivebar_springs.json", check_model);
  each_reference(&tally, "problems/slider_crank.json", check_model);
  each_reference(&tally, "problems/vehicle/step_descent.json", check_model);
  each_reference(&tally, "tests/models/iftomm/a04_bricard.json", check_model);
  each_reference(&tally, "tests/models/ok/friction_planar.json", check_model);
  each_reference(&tally, "tests/models/ok/friction_spatial.json", check_model);
  each_reference(&tally, "tests/models/ok/friction_ball.json", check_model);
  each_reference(&tally, "problems/control/slider_crank_codesign_friction.json", check_model);
  each_reference(&tally, "problems/control/pendulum_pid_friction.json", check_model);
  each_reference(&tally, "problems/control/pendulum_pid.json", check_model);
  each_reference(&tally, "problems/control/slider_crank_codesign.json", check_model);
  const char* tangents[] = {"tests/models/ok/features_spatial.json",
                            "tests/models/ok/features_planar.json",
                            "problems/fivebar.json",
                            "problems/slider_crank.json",
                            "problems/vehicle/step_descent.json",
                            "problems/control/pendulum_pid.json",
                            "problems/control/governor_design.json",
                            "problems/control/pendulum_pid_friction.json",
                            "problems/control/slider_crank_codesign_friction.json",
                            "tests/models/ok/friction_sleeve.json",
                            "tests/models/ok/friction_spatial.json",
                            "tests/models/ok/friction_ball.json"};
  for (size_t i = 0; i < sizeof tangents / sizeof *tangents; i++)
    check_tangent_matrices(&tally, tangents[i]);
  const char* explicit[] = {"tests/models/ok/params_spatial.json",
                            "tests/models/ok/params_planar.json",
                            "problems/fivebar.json",
                            "problems/slider_crank.json",
                            "problems/vehicle/step_descent.json",
                            "problems/control/pendulum_pid.json",
                            "problems/control/governor_design.json",
                            "problems/control/pendulum_pid_friction.json",
                            "problems/control/slider_crank_codesign_friction.json",
                            "tests/models/ok/friction_sleeve.json"};
  for (size_t i = 0; i < sizeof explicit / sizeof *explicit; i++)
    each_reference(&tally, explicit[i], check_explicit_terms);
  return mbt_finish(&tally);
}

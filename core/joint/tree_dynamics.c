/* Recursive dynamics of the joint tree (tree.h): the accumulated mass matrix R^T M R and forces
   R^T (Q - M Rdot zdot) of the semi-recursive equations of motion (A. Lopez Varela, D. Dopico,
   A. Luaces, "Augmented Lagrangian index-3 semi-recursive formulations with projections: direct
   sensitivity analysis", eqs. 7, 8), by composite inertias and wrenches summed from the leaves
   to the root. */
#include <string.h>

#include "internal.h"
#include "tree.h"

/* The body's inertia tensor about its centre of mass in global axes, J_G = A J A^T. */
static void global_inertia(const mb_tree* t, const mb_tree_state* s, int b, double* JG) {
  const double *A = s->A + 9 * b, *J = t->inertia + 9 * b;
  double AJ[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      AJ[3 * i + j] = A[3 * i] * J[j] + A[3 * i + 1] * J[3 + j] + A[3 * i + 2] * J[6 + j];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      JG[3 * i + j] =
          AJ[3 * i] * A[3 * j] + AJ[3 * i + 1] * A[3 * j + 1] + AJ[3 * i + 2] * A[3 * j + 2];
}

static void skew(const double* v, double* S) {
  const double T[9] = {0, -v[2], v[1], v[2], 0, -v[0], -v[1], v[0], 0};
  memcpy(S, T, sizeof T);
}

/* Each body's 6 x 6 mass matrix (row-major) for the twist of its reference point, c the centre
   of mass relative to it, [m I, -m [c]; m [c], J_G - m [c][c]], and J_G, into s once per
   positions. */
static void body_inertia(const mb_tree* t, mb_tree_state* s) {
  if (s->inertia_valid) return;
  for (int b = 0; b < t->nbody; b++) {
    const double m = t->mass[b], *c = s->c + 3 * b;
    double *JG = s->JG + 9 * b, *M = s->Mb + 36 * b, C[9];
    global_inertia(t, s, b, JG);
    skew(c, C);
    memset(M, 0, 36 * sizeof(double));
    for (int i = 0; i < 3; i++) {
      M[6 * i + i] = m;
      for (int j = 0; j < 3; j++) {
        double cc = 0;
        for (int k = 0; k < 3; k++) cc += C[3 * i + k] * C[3 * k + j];
        M[6 * i + 3 + j] = -m * C[3 * i + j];
        M[6 * (3 + i) + j] = m * C[3 * i + j];
        M[6 * (3 + i) + 3 + j] = JG[3 * i + j] - m * cc;
      }
    }
  }
  s->inertia_valid = 1;
}

/* y = M x for a 6 x 6 row-major M. */
static void mul6(const double* M, const double* x, double* y) {
  for (int i = 0; i < 6; i++) {
    double v = 0;
    for (int j = 0; j < 6; j++) v += M[6 * i + j] * x[j];
    y[i] = v;
  }
}

/* A wrench [f; n] about r_child carried to r_parent: [f; n + (r_child - r_parent) x f]. */
static void shift_wrench(const double* r_child, const double* r_parent, double* W) {
  double arm[3], t[3];
  for (int k = 0; k < 3; k++) arm[k] = r_child[k] - r_parent[k];
  mbu_cross3(arm, W, t);
  for (int k = 0; k < 3; k++) W[3 + k] += t[k];
}

/* M_parent += B^T M_child B: a composite inertia about r_child carried to r_parent, with
   B = [I, -[D]; 0, I], D = r_child - r_parent, applied as wrench shifts of its columns. */
static void shift_add_inertia(const double* Mc, const double* r_child, const double* r_parent,
                              double* Mp) {
  double D[3], col[6], cols[6][6];
  for (int k = 0; k < 3; k++) D[k] = r_child[k] - r_parent[k];
  /* columns of M B: column j < 3 of M; column 3 + j: M (-[D] e_j; e_j) */
  for (int j = 0; j < 6; j++) {
    double x[6] = {0, 0, 0, 0, 0, 0};
    x[j] = 1;
    if (j >= 3) {
      double e[3] = {0, 0, 0}, de[3];
      e[j - 3] = 1;
      mbu_cross3(D, e, de);
      for (int k = 0; k < 3; k++) x[k] = -de[k];
    }
    mul6(Mc, x, col);
    shift_wrench(r_child, r_parent, col);
    memcpy(cols[j], col, sizeof col);
  }
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) Mp[6 * i + j] += cols[j][i];
}

static double dot6(const double* a, const double* b) {
  double v = 0;
  for (int k = 0; k < 6; k++) v += a[k] * b[k];
  return v;
}

void mb_tree_mass(const mb_tree* t, mb_tree_state* s, double* M, double* work) {
  const int nb = t->nbody, nz = t->nz;
  body_inertia(t, s);
  memset(M, 0, (size_t)nz * nz * sizeof(double));
  memset(work, 0, 36 * (size_t)nb * sizeof(double));
  /* composite inertias, leaves first */
  for (int k = nb - 1; k >= 0; k--) {
    const int b = t->order[k];
    for (int i = 0; i < 36; i++) work[36 * b + i] += s->Mb[36 * b + i];
    const int p = t->parent[b];
    if (p >= 0) shift_add_inertia(work + 36 * b, s->r + 3 * b, s->r + 3 * p, work + 36 * p);
  }
  /* M_kl = b_k^T (B^T ... MS_b b_l) for coordinate l of body b and k of b or an ancestor */
  for (int l = 0; l < nz; l++) {
    const int b = t->zbody[l];
    double w[6];
    mul6(work + 36 * b, s->b + 6 * l, w);
    for (int a = b;;) {
      for (int k = t->zadr[a]; k < t->zadr[a] + t->znum[a]; k++)
        M[(size_t)k * nz + l] = M[(size_t)l * nz + k] = dot6(s->b + 6 * k, w);
      const int p = t->parent[a];
      if (p < 0) break;
      shift_wrench(s->r + 3 * a, s->r + 3 * p, w);
      a = p;
    }
  }
}

/* Q (6) += the velocity-dependent inertial forces of body b about its reference point: with
   e = v_G - rdot the centre of mass's velocity relative to the reference point's own motion (0
   for RTdyn0; v_G for RTdyn1), [-m w x e; -w x J_G w - m c x (w x e)]. */
static void inertial_wrench(const mb_tree* t, const mb_tree_state* s, int b, double* Q) {
  const double m = t->mass[b], *V = s->V + 6 * b, *w = V + 3, *c = s->c + 3 * b;
  const double* JG = s->JG + 9 * b;
  double e[3] = {0, 0, 0}, wc[3], we[3], cwe[3], Jw[3], wJw[3];
  if (s->ref == MB_REFERENCE_GLOBAL_ORIGIN) {
    mbu_cross3(w, c, wc);
    for (int k = 0; k < 3; k++) e[k] = V[k] + wc[k];
  }
  mbu_cross3(w, e, we);
  mbu_cross3(c, we, cwe);
  for (int i = 0; i < 3; i++)
    Jw[i] = JG[3 * i] * w[0] + JG[3 * i + 1] * w[1] + JG[3 * i + 2] * w[2];
  mbu_cross3(w, Jw, wJw);
  for (int k = 0; k < 3; k++) Q[k] -= m * we[k], Q[3 + k] -= wJw[k] + m * cwe[k];
}

void mb_tree_inertial_wrenches(const mb_tree* t, mb_tree_state* s, double* W) {
  body_inertia(t, s);
  for (int b = 0; b < t->nbody; b++) {
    double MVd[6];
    mul6(s->Mb + 36 * b, s->Vd + 6 * b, MVd);
    for (int i = 0; i < 6; i++) W[6 * b + i] -= MVd[i];
    inertial_wrench(t, s, b, W + 6 * b);
  }
}

/* The derivative of the element velocities (level 1) or accelerations (level 2) of body b along
   the direction of the last mb_tree_body_tangents, as the affine field d = L x + a of the
   elements' positions x (vectors: L x) that mb_tree_natural_tangent evaluates: with dx = p + d x x
   ([p; d] the displacement) and xd = v + w x x,
     dxd:  L1 = [dV_w] + [V_w][d],  a1 = dV_v + V_w x p,
     dxdd: L = [dA_w] + [A_w][d] + [dV_w][V_w] + [V_w] L1,
           a = dA_v + A_w x p + dV_w x V_v + V_w x a1. */
static void tangent_field(const mb_tree_spatial* sp, int b, int level, double* L, double* a) {
  const double *P = sp->sums + 24 * b, *V = sp->V + 6 * b, *A = sp->A + 6 * b;
  const double *dV = sp->dV + 6 * b, *dA = sp->dA + 6 * b;
  double Sd[9], Sv[9], T[9], L1[9], a1[3], u[3];
  skew(P + 3, Sd), skew(V + 3, Sv), skew(dV + 3, T);
  mbu_mat3_mul(Sv, Sd, L1);
  for (int i = 0; i < 9; i++) L1[i] += T[i];
  mbu_cross3(V + 3, P, a1);
  for (int r = 0; r < 3; r++) a1[r] += dV[r];
  if (level == 1) {
    memcpy(L, L1, sizeof L1), memcpy(a, a1, sizeof a1);
    return;
  }
  mbu_mat3_mul(T, Sv, L); /* [dV_w][V_w] */
  mbu_mat3_mul(Sv, L1, T);
  for (int i = 0; i < 9; i++) L[i] += T[i];
  skew(A + 3, Sv);
  mbu_mat3_mul(Sv, Sd, T);
  for (int i = 0; i < 9; i++) L[i] += T[i];
  skew(dA + 3, T);
  for (int i = 0; i < 9; i++) L[i] += T[i];
  mbu_cross3(V + 3, a1, a);
  mbu_cross3(A + 3, P, u);
  for (int r = 0; r < 3; r++) a[r] += u[r] + dA[r];
  mbu_cross3(dV + 3, V, u);
  for (int r = 0; r < 3; r++) a[r] += u[r];
}

void mb_tree_tangent_wrenches(const mb_tree* t, mb_tree_state* s, const mb_tree_spatial* sp,
                              int level, double* W) {
  body_inertia(t, s);
  for (int b = 0; b < t->nbody; b++) {
    if (!sp->moved[b]) continue;
    double L[9], a[3];
    tangent_field(sp, b, level, L, a);
    /* the natural mass integrates the body's density against the field (its points' weights
       sum to one): force m (a + L x_G), moment about the centre of mass vee(L E) with
       E = tr(J_G)/2 I - J_G its second moment, then about the reference point */
    const double m = t->mass[b], *c = s->c + 3 * b, *JG = s->JG + 9 * b;
    const double half = (JG[0] + JG[4] + JG[8]) / 2;
    double E[9], B[9], F[3], xG[3], n[3];
    for (int i = 0; i < 9; i++) E[i] = (i % 4 == 0 ? half : 0) - JG[i];
    for (int r = 0; r < 3; r++) xG[r] = s->r[3 * b + r] + c[r];
    mbu_mat3_vec(L, xG, F);
    for (int r = 0; r < 3; r++) F[r] = m * (F[r] + a[r]);
    mbu_mat3_mul(L, E, B);
    mbu_cross3(c, F, n);
    double* w = W + 6 * b;
    for (int r = 0; r < 3; r++) w[r] += F[r];
    w[3] += B[7] - B[5] + n[0];
    w[4] += B[2] - B[6] + n[1];
    w[5] += B[3] - B[1] + n[2];
  }
}

void mb_tree_project(const mb_tree* t, const mb_tree_state* s, const double* W, double* Q,
                     double* work) {
  const int nb = t->nbody;
  memcpy(work, W, 6 * (size_t)nb * sizeof(double));
  /* composite wrenches, leaves first */
  for (int k = nb - 1; k >= 0; k--) {
    const int b = t->order[k], p = t->parent[b];
    if (p < 0) continue;
    double carried[6];
    memcpy(carried, work + 6 * b, sizeof carried);
    shift_wrench(s->r + 3 * b, s->r + 3 * p, carried);
    for (int i = 0; i < 6; i++) work[6 * p + i] += carried[i];
  }
  for (int i = 0; i < t->nz; i++) Q[i] = dot6(s->b + 6 * i, work + 6 * t->zbody[i]);
}

void mb_wrench_add_force(const double* r, const double* x, const double* f, double* W) {
  double arm[3], n[3];
  for (int k = 0; k < 3; k++) arm[k] = x[k] - r[k], W[k] += f[k];
  mbu_cross3(arm, f, n);
  for (int k = 0; k < 3; k++) W[3 + k] += n[k];
}

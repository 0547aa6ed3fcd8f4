/* Derivatives of the tree's natural coordinates (tree.h): of the positions, velocities and
   accelerations of the elements along coordinates, their rates or accelerations, or a moved joint
   frame, and of the generalised forces R^T w of fixed natural forces w. They are those of
   A. Lopez Varela, D. Dopico, A. Luaces, "Augmented Lagrangian index-3 semi-recursive
   formulations with projections: direct sensitivity analysis" (section 4, the derivatives of R
   and of its rate), written with spatial twists: column S_k is carried rigidly by every
   coordinate j before it on its path, dS_k/dz_j = S_j x S_k, which gives
     dV_b/dz_j = S_j x (V_b - V_j),
     dA_b/dz_j = S_j x (A_b - A_j) + Sdot_j x (V_b - V_j),
   with V_j, A_j the motion of the frame just after coordinate j (Jacobi's identity turns the
   derivative of each carried column's rate into these two terms). A moved joint frame is a
   coordinate of its own, with no rate, between the parent and the joint (inboard) or the joint
   and the body (outboard). A direction that moves several coordinates at once (a vector of
   positions, rates and accelerations) sums these terms over each body's path in one pass. */
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "internal.h"
#include "tree.h"

/* Z = X x Y, the spatial cross product of motions [v; w]: [wx x vy + vx x wy; wx x wy] */
static void motion_cross(const double* X, const double* Y, double* Z) {
  double a[3], b[3];
  mbu_cross3(X + 3, Y, a);
  mbu_cross3(X, Y + 3, b);
  double w[3];
  mbu_cross3(X + 3, Y + 3, w);
  for (int r = 0; r < 3; r++) Z[r] = a[r] + b[r], Z[3 + r] = w[r];
}

/* y += s x (6) */
static void add6(const double* x, double s, double* y) {
  for (int r = 0; r < 6; r++) y[r] += s * x[r];
}

/* The quadruple of Euler parameters coordinate k belongs to, -1 for none. */
static int euler_block(const mb_tree* t, int k) {
  for (int q = 0; q < t->nnorm; q++)
    if (k >= t->normadr[q] && k < t->normadr[q] + 4) return q;
  return -1;
}

/* The derivatives of the local angular-velocity columns g_k = P_k(e) / |e|^2 (P_k of
   mb_euler_column) of Euler parameters e: dg[j][k] = dg_k/de_j and
   ddg[i][j][k] = d2 g_k/de_i de_j. */
static void euler_column_derivatives(const double* e, int reversed, double (*dg)[4][3],
                                     double (*ddg)[4][4][3]) {
  const double n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3];
  const double n4 = n2 * n2, n6 = n4 * n2;
  double P[4][3], Pu[4][4][3]; /* P_k(e), P_k(unit j) */
  for (int k = 0; k < 4; k++) {
    mb_euler_column(e, k, reversed, P[k]);
    for (int j = 0; j < 4; j++) {
      double u[4] = {0, 0, 0, 0};
      u[j] = 1;
      mb_euler_column(u, k, reversed, Pu[j][k]);
    }
  }
  for (int j = 0; j < 4; j++)
    for (int k = 0; k < 4; k++)
      for (int r = 0; r < 3; r++) {
        dg[j][k][r] = Pu[j][k][r] / n2 - 2 * e[j] * P[k][r] / n4;
        for (int i = 0; i < 4; i++)
          ddg[i][j][k][r] =
              -2 * (e[i] * Pu[j][k][r] + e[j] * Pu[i][k][r] + (i == j) * P[k][r]) / n4 +
              8 * e[i] * e[j] * P[k][r] / n6;
      }
}

/* [P x w; w] for the local column derivative g (3) carried to the global frame by F: a rotation
   about the fixed point P. */
static void rotation_twist(const double* F, const double* P, const double* g, double* out) {
  mbu_mat3_vec(F, g, out + 3);
  mbu_cross3(P, out + 3, out);
}

mb_tree_spatial* mb_tree_spatial_create(const mb_tree* t) {
  mb_tree_spatial* sp = calloc(1, sizeof *sp);
  const size_t nz = (size_t)t->nz, nb = (size_t)t->nbody, nn = (size_t)t->nnorm;
  if (!sp) return NULL;
  sp->S = calloc(60 * nz + 96 * nn + 72 * nb + 1, sizeof(double));
  sp->moved = calloc(nb + 1, 1);
  if (!sp->S || !sp->moved) {
    mb_tree_spatial_free(sp);
    return NULL;
  }
  double** fields[] = {&sp->Sd, &sp->Vu, &sp->Au, &sp->X, &sp->Vj, &sp->Aj, &sp->G, &sp->H, &sp->J};
  double* p = sp->S + 6 * nz;
  for (size_t f = 0; f < sizeof fields / sizeof *fields; f++) *fields[f] = p, p += 6 * nz;
  sp->D = p, p += 96 * nn;
  sp->V = p, p += 6 * nb;
  sp->A = p, p += 6 * nb;
  sp->W = p, p += 6 * nb;
  sp->dW = p, p += 6 * nb;
  sp->dV = p, p += 6 * nb;
  sp->dA = p, p += 6 * nb;
  sp->moments = p, p += 12 * nb;
  sp->sums = p;
  return sp;
}

void mb_tree_spatial_free(mb_tree_spatial* sp) {
  if (!sp) return;
  free(sp->S);
  free(sp->moved);
  free(sp);
}

/* S_k (6) of column k from the tree's column at its body's reference point. */
static void spatial_column(const mb_tree_state* s, int b, int k, double* S) {
  const double* col = s->b + 6 * k; /* [velocity at r_b; w] */
  double wr[3];
  mbu_cross3(col + 3, s->r + 3 * b, wr);
  for (int c = 0; c < 3; c++) S[c] = col[c] - wr[c], S[3 + c] = col[3 + c];
}

/* The quadruple q of Euler parameters of body b after the frame motion V, A (6 each), which
   become that after the quadruple. */
static void euler_motion_terms(const mb_tree* t, const mb_tree_state* s, int b, int q,
                               const double* z, const double* zd, const double* zdd,
                               mb_tree_spatial* sp, double* V, double* A) {
  const int a = t->normadr[q];
  const double *F = s->F + 9 * b, *P = s->P + 3 * b;
  double dg[4][4][3], ddg[4][4][4][3], Vp[6], x[6], y[6];
  euler_column_derivatives(z + a, t->reversed[b], dg, ddg);
  memcpy(Vp, V, sizeof Vp);
  double* D = sp->D + 96 * q; /* [j][k] at 6 (4 j + k) */
  for (int j = 0; j < 4; j++)
    for (int k = 0; k < 4; k++) rotation_twist(F, P, dg[j][k], D + 6 * (4 * j + k));
  /* Sd_k = Vp x S_k + sum_i D_ik zd_i; the quadruple's end */
  for (int k = a; k < a + 4; k++) {
    double *S = sp->S + 6 * k, *Sd = sp->Sd + 6 * k;
    spatial_column(s, b, k, S);
    motion_cross(Vp, S, Sd);
    for (int i = 0; i < 4; i++) add6(D + 6 * (4 * i + k - a), zd[a + i], Sd);
    add6(S, zd[k], V);
    add6(S, zdd ? zdd[k] : 0, A);
    add6(Sd, zd[k], A);
  }
  for (int j = 0; j < 4; j++) {
    const int k = a + j;
    double *Vj = sp->Vj + 6 * k, *Aj = sp->Aj + 6 * k;
    memcpy(sp->Vu + 6 * k, V, 6 * sizeof(double));
    memcpy(sp->Au + 6 * k, A, 6 * sizeof(double));
    memset(Vj, 0, 6 * sizeof(double));
    memset(Aj, 0, 6 * sizeof(double));
    for (int m = 0; m < 4; m++) {
      const double* Djm = D + 6 * (4 * j + m);
      /* dV/de_j = sum_m D_jm zd_m; dA/de_j = sum_m D_jm zdd_m + dSd_m/de_j zd_m with
         dSd_m/de_j = Vp x D_jm + sum_i d2S_m/de_i de_j zd_i */
      add6(Djm, zd[a + m], Vj);
      add6(Djm, zdd ? zdd[a + m] : 0, Aj);
      motion_cross(Vp, Djm, x);
      for (int i = 0; i < 4; i++) {
        rotation_twist(F, P, ddg[i][j][m], y);
        add6(y, zd[a + i], x);
      }
      add6(x, zd[a + m], Aj);
    }
    motion_cross(V, sp->S + 6 * k, sp->X + 6 * k);
    add6(Vj, 1, sp->X + 6 * k);
  }
}

void mb_tree_spatial_motion(const mb_tree* t, const mb_tree_state* s, const double* z,
                            const double* zd, const double* zdd, mb_tree_spatial* sp) {
  static const double zero[6] = {0, 0, 0, 0, 0, 0};
  for (int o = 0; o < t->nbody; o++) {
    const int b = t->order[o], p = t->parent[b], n = t->znum[b];
    double V[6], A[6];
    memcpy(V, p < 0 ? zero : sp->V + 6 * p, sizeof V);
    memcpy(A, p < 0 ? zero : sp->A + 6 * p, sizeof A);
    for (int r = 0; r < n; r++) {
      const int k = t->zadr[b] + (t->reversed[b] ? n - 1 - r : r), q = euler_block(t, k);
      if (q >= 0) {
        /* the whole quadruple, where product order first reaches it */
        if (k == (t->reversed[b] ? t->normadr[q] + 3 : t->normadr[q]))
          euler_motion_terms(t, s, b, q, z, zd, zdd, sp, V, A);
        continue;
      }
      double *S = sp->S + 6 * k, *Sd = sp->Sd + 6 * k;
      spatial_column(s, b, k, S);
      motion_cross(V, S, Sd);
      add6(S, zd[k], V);
      add6(S, zdd ? zdd[k] : 0, A);
      add6(Sd, zd[k], A);
      memcpy(sp->Vu + 6 * k, V, sizeof V);
      memcpy(sp->Au + 6 * k, A, sizeof A);
      memcpy(sp->X + 6 * k, Sd, 6 * sizeof(double));
      memset(sp->Vj + 6 * k, 0, 6 * sizeof(double));
      memset(sp->Aj + 6 * k, 0, 6 * sizeof(double));
    }
    memcpy(sp->V + 6 * b, V, sizeof V);
    memcpy(sp->A + 6 * b, A, sizeof A);
  }
  /* what each coordinate's term (add_term) adds per unit of its coefficients, beyond S and X:
     G = Vj - S x Vu, H = Aj - S x Au - X x Vu, J = Sd + G */
  for (int k = 0; k < t->nz; k++) {
    const size_t o = 6 * (size_t)k;
    double sv[6], sa[6], xv[6];
    motion_cross(sp->S + o, sp->Vu + o, sv);
    motion_cross(sp->S + o, sp->Au + o, sa);
    motion_cross(sp->X + o, sp->Vu + o, xv);
    for (int r = 0; r < 6; r++) {
      sp->G[o + r] = sp->Vj[o + r] - sv[r];
      sp->H[o + r] = sp->Aj[o + r] - sa[r] - xv[r];
      sp->J[o + r] = sp->Sd[o + r] + sp->G[o + r];
    }
  }
}

/* One term of a direction: a column S moved by cz, its rate by cv and its acceleration by ca,
   with the terms of the frame it moves with (the fields of mb_tree_spatial at its coordinate:
   X, and the sums G, H, J of mb_tree_spatial_motion). */
typedef struct direction_term {
  const double *S, *X, *G, *H, *J;
  double cz, cv, ca;
} direction_term;

/* The term of coordinate k at the motion sp. */
static direction_term coordinate_term(const mb_tree_spatial* sp, int k, double cz, double cv,
                                      double ca) {
  const size_t o = 6 * (size_t)k;
  return (direction_term){sp->S + o, sp->X + o, sp->G + o, sp->H + o, sp->J + o, cz, cv, ca};
}

/* The moved joint frame's term, with its storage: a translation S carried by the frame of the
   parent (inboard) or of the body (outboard), X = Sd = Vu x S, Vj = Aj = 0. */
typedef struct frame_term {
  double S[6], Sd[6], G[6], H[6], J[6];
} frame_term;

static const double zero6[6] = {0, 0, 0, 0, 0, 0};

static direction_term frame_term_of(const mb_tree* t, const mb_tree_spatial* sp,
                                    const mb_tree_direction* dir, frame_term* f) {
  const int p = dir->outboard ? dir->body : t->parent[dir->body];
  const double *Vu = p < 0 ? zero6 : sp->V + 6 * p, *Au = p < 0 ? zero6 : sp->A + 6 * p;
  double sv[6], sa[6], xv[6];
  memset(f->S, 0, sizeof f->S);
  memcpy(f->S, dir->shift, 3 * sizeof(double));
  motion_cross(Vu, f->S, f->Sd);
  motion_cross(f->S, Vu, sv);
  motion_cross(f->S, Au, sa);
  motion_cross(f->Sd, Vu, xv);
  for (int r = 0; r < 6; r++)
    f->G[r] = -sv[r], f->H[r] = -sa[r] - xv[r], f->J[r] = f->Sd[r] + f->G[r];
  return (direction_term){f->S, f->Sd, f->G, f->H, f->J, 1, 0, 0};
}

/* sum (24) += what the term adds to the derivatives of the motion of every body it carries:
   with body_tangent's dV = P x V + CV and dA = P x A + PX x V + CA,
     P  += cz S,   PX += cz X + cv S,   CV += cz (Vj - S x Vu) + cv S,
     CA += cz (Aj - S x Au - X x Vu) + cv (Sd + Vj - S x Vu) + ca S,
   the derivatives along one coordinate (dV = S x (V - Vu) + Vj, ..., file comment) summed. */
static void add_term(const direction_term* d, double* sum) {
  double *P = sum, *PX = sum + 6, *CV = sum + 12, *CA = sum + 18;
  const double cz = d->cz, cv = d->cv, ca = d->ca;
  for (int r = 0; r < 6; r++) {
    P[r] += cz * d->S[r];
    PX[r] += cz * d->X[r] + cv * d->S[r];
    CV[r] += cz * d->G[r] + cv * d->S[r];
    CA[r] += cz * d->H[r] + cv * d->J[r] + ca * d->S[r];
  }
}

/* The coefficient of coordinate k in dir (its position's when level 0, rate's 1,
   acceleration's 2). */
static double coefficient(const mb_tree_direction* dir, int k, int level) {
  const double* v[3] = {dir->dz, dir->dzd, dir->dzdd};
  const double c[3] = {dir->cz, dir->cv, dir->ca};
  return (v[level] ? v[level][k] : 0) + (k == dir->coord ? c[level] : 0);
}

void mb_tree_body_tangents(const mb_tree* t, mb_tree_spatial* sp, const mb_tree_direction* dir,
                           int rates) {
  frame_term storage;
  direction_term frame;
  if (dir->body >= 0) frame = frame_term_of(t, sp, dir, &storage);
  const int every = dir->dz || dir->dzd || dir->dzdd;
  for (int o = 0; o < t->nbody; o++) {
    const int b = t->order[o], p = t->parent[b];
    double sum[24];
    if (p < 0)
      memset(sum, 0, sizeof sum);
    else
      memcpy(sum, sp->sums + 24 * p, sizeof sum);
    if (b == dir->body) add_term(&frame, sum);
    for (int k = t->zadr[b]; k < t->zadr[b] + t->znum[b]; k++) {
      if (!every && k != dir->coord) continue;
      const direction_term d = coordinate_term(sp, k, coefficient(dir, k, 0),
                                               coefficient(dir, k, 1), coefficient(dir, k, 2));
      add_term(&d, sum);
    }
    memcpy(sp->sums + 24 * b, sum, sizeof sum);
    int moved = 0;
    for (int r = 0; r < 24 && !moved; r++) moved = sum[r] != 0;
    sp->moved[b] = (unsigned char)moved;
    const double *V = sp->V + 6 * b, *A = sp->A + 6 * b;
    double *dV = sp->dV + 6 * b, *dA = sp->dA + 6 * b, x[6];
    if (!moved) {
      memset(dV, 0, 6 * sizeof(double));
      memset(dA, 0, 6 * sizeof(double));
      continue;
    }
    if (rates < 1) continue;
    motion_cross(sum, V, dV);
    add6(sum + 12, 1, dV);
    if (rates < 2) continue;
    motion_cross(sum, A, dA);
    motion_cross(sum + 6, V, x);
    add6(x, 1, dA);
    add6(sum + 18, 1, dA);
  }
}

/* The derivatives of element e (placed by the tree) along the direction of the last
   mb_tree_body_tangents, into dq, dqd, dqdd (each may be NULL; rates: the last one asked). */
static void element_tangent(const mb_tree_state* s, const mb_tree_spatial* sp, const mb_model* aux,
                            int e, const double* dlocal, int rates, double* dq, double* dqd,
                            double* dqdd) {
  const int b = aux->elem_body[e], point = aux->elem_kind[e] == MB_ELEM_POINT;
  const double *V = sp->V + 6 * b, *A = sp->A + 6 * b, *dV = sp->dV + 6 * b, *dA = sp->dA + 6 * b;
  const double* delta = sp->sums + 24 * b;
  double x[3], xd[3], dx[3] = {0, 0, 0}, dxd[3], dxdd[3], u[3];
  mb_tree_element_value(s, aux, e, x);
  if (sp->moved[b]) {
    mbu_cross3(delta + 3, x, dx);
    for (int r = 0; r < 3; r++) dx[r] += point ? delta[r] : 0;
  }
  if (dlocal) {
    mbu_mat3_vec(s->A + 9 * b, dlocal + 3 * e, u);
    for (int r = 0; r < 3; r++) dx[r] += u[r];
  }
  const int a = aux->elem_qadr[e];
  if (dq) mb_tree_copy_element(aux->dim, dx, dq + a);
  if (rates < 1) return;
  /* dxd = dv0 + dw x x + w x dx; dxdd = da0 + dwd x x + wd x dx + dw x xd + w x dxd, with
     xd = v0 + w x x (vectors: no v0, dv0, da0) */
  mbu_cross3(V + 3, x, xd);
  for (int r = 0; r < 3; r++) {
    xd[r] += point ? V[r] : 0;
    dxd[r] = point ? dV[r] : 0;
  }
  mbu_cross3(dV + 3, x, u);
  for (int r = 0; r < 3; r++) dxd[r] += u[r];
  mbu_cross3(V + 3, dx, u);
  for (int r = 0; r < 3; r++) dxd[r] += u[r];
  if (dqd) mb_tree_copy_element(aux->dim, dxd, dqd + a);
  if (rates < 2) return;
  for (int r = 0; r < 3; r++) dxdd[r] = point ? dA[r] : 0;
  const double* terms[4][2] = {{dA + 3, x}, {A + 3, dx}, {dV + 3, xd}, {V + 3, dxd}};
  for (int k = 0; k < 4; k++) {
    mbu_cross3(terms[k][0], terms[k][1], u);
    for (int r = 0; r < 3; r++) dxdd[r] += u[r];
  }
  mb_tree_copy_element(aux->dim, dxdd, dqdd + a);
}

void mb_tree_element_tangents(const mb_tree_state* s, const mb_tree_spatial* sp,
                              const mb_model* aux, int n, const int* elems, const double* dlocal,
                              double* dq, double* dqd, double* dqdd) {
  /* the rates' derivatives only as far as asked for */
  const int rates = dqdd ? 2 : dqd ? 1 : 0;
  for (int i = 0; i < (elems ? n : aux->nelem); i++) {
    const int e = elems ? elems[i] : i;
    /* the elements of bodies the direction leaves, without local values moved: zero */
    if (!mb_tree_places(aux, e) || (!sp->moved[aux->elem_body[e]] && !dlocal)) continue;
    element_tangent(s, sp, aux, e, dlocal, rates, dq, dqd, dqdd);
  }
}

void mb_tree_natural_tangent(const mb_tree* t, const mb_tree_state* s, mb_tree_spatial* sp,
                             const mb_model* aux, const mb_tree_direction* dir,
                             const double* dlocal, double* dq, double* dqd, double* dqdd) {
  mb_tree_body_tangents(t, sp, dir, dqdd ? 2 : dqd ? 1 : 0);
  mb_tree_element_tangents(s, sp, aux, 0, NULL, dlocal, dq, dqd, dqdd);
}

/* W (nbody x 6) = per body [sum over points of f; sum of x x f] of natural forces f (aux nq) at
   element positions x, plus, with dq, the moments dx x f of the position derivatives dq alone;
   then summed over subtrees. Without dq, moments (nbody x 12, may be NULL) = each body's own
   force sum and sum x f^T (mb_tree_spatial's moments). */
static void subtree_wrenches(const mb_tree* t, const mb_tree_state* s, const mb_model* aux,
                             const double* f, const double* dq, double* W, double* moments) {
  memset(W, 0, 6 * (size_t)t->nbody * sizeof(double));
  if (moments) memset(moments, 0, 12 * (size_t)t->nbody * sizeof(double));
  for (int e = 0; e < aux->nelem; e++) {
    if (!mb_tree_places(aux, e)) continue;
    const int b = aux->elem_body[e], a = aux->elem_qadr[e];
    double x[3] = {0, 0, 0}, fe[3] = {0, 0, 0}, m[3];
    mb_tree_copy_element(aux->dim, f + a, fe);
    if (dq) mb_tree_copy_element(aux->dim, dq + a, x);
    /* a direction moves few elements */
    if ((fe[0] == 0 && fe[1] == 0 && fe[2] == 0) || (dq && x[0] == 0 && x[1] == 0 && x[2] == 0))
      continue;
    if (!dq) mb_tree_element_value(s, aux, e, x);
    mbu_cross3(x, fe, m);
    for (int r = 0; r < 3; r++) {
      W[6 * b + r] += !dq && aux->elem_kind[e] == MB_ELEM_POINT ? fe[r] : 0;
      W[6 * b + 3 + r] += m[r];
    }
    if (!moments) continue;
    double* mb = moments + 12 * b;
    for (int r = 0; r < 3; r++) {
      mb[r] += aux->elem_kind[e] == MB_ELEM_POINT ? fe[r] : 0;
      for (int c = 0; c < 3; c++) mb[3 + 3 * r + c] += x[r] * fe[c];
    }
  }
  for (int o = t->nbody - 1; o >= 0; o--) {
    const int b = t->order[o], p = t->parent[b];
    if (p >= 0) add6(W + 6 * b, 1, W + 6 * p);
  }
}

void mb_tree_wrench_sums(const mb_tree* t, const mb_tree_state* s, const mb_model* aux,
                         const double* w, mb_tree_spatial* sp) {
  subtree_wrenches(t, s, aux, w, NULL, sp->W, sp->moments);
}

/* sp->dW = the moments sum dx x w over each body's elements along the direction of the last
   mb_tree_body_tangents, from the moments of mb_tree_wrench_sums: with the body's
   displacement twist [p; d], dx = p (points) + d x x and (d x x) x w = x (d . w) - d (x . w),
   that is P x F + (X - tr(X) I) d, F and X the body's moments; then summed over subtrees. */
static void subtree_moment_tangents(const mb_tree* t, mb_tree_spatial* sp) {
  for (int b = 0; b < t->nbody; b++) {
    double* dW = sp->dW + 6 * b;
    memset(dW, 0, 6 * sizeof(double));
    if (!sp->moved[b]) continue;
    const double *P = sp->sums + 24 * b, *d = P + 3, *F = sp->moments + 12 * b, *X = F + 3;
    const double tr = X[0] + X[4] + X[8];
    mbu_cross3(P, F, dW + 3);
    for (int r = 0; r < 3; r++)
      dW[3 + r] += X[3 * r] * d[0] + X[3 * r + 1] * d[1] + X[3 * r + 2] * d[2] - tr * d[r];
  }
  for (int o = t->nbody - 1; o >= 0; o--) {
    const int b = t->order[o], p = t->parent[b];
    if (p >= 0) add6(sp->dW + 6 * b, 1, sp->dW + 6 * p);
  }
}

void mb_tree_column_tangent(const mb_tree* t, const mb_tree_state* s, mb_tree_spatial* sp,
                            const mb_model* aux, const mb_tree_direction* dir, const double* w,
                            const double* dq, double* out) {
  /* (R^T w)_k = S_k . W_k over the subtree of k's body: its derivative is dS_k . W_k plus
     S_k . (the moments of w about the moved positions), dS_k = P x S_k with P the displacement
     twist of the coordinates before k (and of a frame before it), plus, within a quadruple of
     Euler parameters, its own columns' change; each body's P is kept for its children */
  if (dq)
    subtree_wrenches(t, s, aux, w, dq, sp->dW, NULL);
  else
    subtree_moment_tangents(t, sp);
  for (int o = 0; o < t->nbody; o++) {
    const int b = t->order[o], p = t->parent[b], n = t->znum[b];
    const double *W = sp->W + 6 * b, *dW = sp->dW + 6 * b;
    double P[6], dS[6];
    memcpy(P, p < 0 ? zero6 : sp->sums + 24 * p, sizeof P);
    /* a body the direction neither moves nor reaches through its subtree's moments: zeros */
    int still = b != dir->body;
    for (int r = 0; r < 6 && still; r++) still = P[r] == 0 && dW[r] == 0;
    for (int r = 0; r < n && still; r++) still = coefficient(dir, t->zadr[b] + r, 0) == 0;
    if (still) {
      memset(out + t->zadr[b], 0, (size_t)n * sizeof(double));
      memcpy(sp->sums + 24 * b, P, sizeof P);
      continue;
    }
    for (int r = 0; r < 3 && b == dir->body && !dir->outboard; r++) P[r] += dir->shift[r];
    for (int r = 0; r < n; r++) {
      const int k = t->zadr[b] + (t->reversed[b] ? n - 1 - r : r), q = euler_block(t, k);
      if (q < 0) {
        motion_cross(P, sp->S + 6 * k, dS);
        out[k] = mbu_dot3(sp->S + 6 * k + 3, dW + 3) + mbu_dot3(dS, W) + mbu_dot3(dS + 3, W + 3);
        add6(sp->S + 6 * k, coefficient(dir, k, 0), P);
        continue;
      }
      /* the whole quadruple, where product order first reaches it */
      const int a = t->normadr[q];
      if (k != (t->reversed[b] ? a + 3 : a)) continue;
      for (int m = 0; m < 4; m++) {
        const double* S = sp->S + 6 * (a + m);
        motion_cross(P, S, dS);
        for (int i = 0; i < 4; i++)
          add6(sp->D + 96 * q + 6 * (4 * i + m), coefficient(dir, a + i, 0), dS);
        out[a + m] = mbu_dot3(S + 3, dW + 3) + mbu_dot3(dS, W) + mbu_dot3(dS + 3, W + 3);
      }
      for (int i = 0; i < 4; i++) add6(sp->S + 6 * (a + i), coefficient(dir, a + i, 0), P);
    }
    for (int r = 0; r < 3 && b == dir->body && dir->outboard; r++) P[r] += dir->shift[r];
    memcpy(sp->sums + 24 * b, P, sizeof P);
  }
}

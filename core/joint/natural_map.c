/* The joint formulation's auxiliary natural coordinates (tree.h): the exploded natural model's
   points and unit vectors placed by the tree, with their velocities and accelerations, and its
   generalised forces turned into body wrenches. Forces, constraints and outputs are written once,
   on natural coordinates, and serve both formulations through this map (the derivatives "through
   the natural coordinates" of Lopez Varela, Dopico, Luaces, "Augmented Lagrangian index-3
   semi-recursive formulations with projections: direct sensitivity analysis", section 2). */
#include "frames.h"
#include "internal.h"
#include "tree.h"

void mb_tree_natural_positions(const mb_tree_state* s, const mb_model* aux, double* q) {
  const int dim = aux->dim;
  for (int e = 0; e < aux->nelem; e++) {
    if (!mb_tree_places(aux, e)) continue;
    double x[3];
    mb_tree_element_value(s, aux, e, x);
    mb_tree_copy_element(dim, x, q + aux->elem_qadr[e]);
  }
}

/* The velocity v (3) of element e of body b, and the arm it turns about (point: x - r, from the
   reference point; vector: x itself): point rdot + w x (x - r); vector w x x. */
static void element_velocity(const mb_model* aux, const mb_tree_state* s, int e, int b, double* arm,
                             double* v) {
  const double* V = s->V + 6 * b;
  const int point = aux->elem_kind[e] == MB_ELEM_POINT;
  mb_tree_element_value(s, aux, e, arm);
  for (int k = 0; k < 3; k++) arm[k] -= point ? s->r[3 * b + k] : 0;
  mbu_cross3(V + 3, arm, v);
  for (int k = 0; k < 3; k++) v[k] += point ? V[k] : 0;
}

/* Element i of the map's list: elems[i] (i < n), or element i itself (i < nelem) when elems is
   NULL, -1 when that one is not placed by the tree. */
static int listed(const mb_model* aux, const int* elems, int i) {
  return elems ? elems[i] : mb_tree_places(aux, i) ? i : -1;
}

void mb_tree_natural_velocities(const mb_tree_state* s, const mb_model* aux, int n,
                                const int* elems, double* qd) {
  for (int i = 0, e; i < (elems ? n : aux->nelem); i++) {
    if ((e = listed(aux, elems, i)) < 0) continue;
    double arm[3], v[3];
    element_velocity(aux, s, e, aux->elem_body[e], arm, v);
    mb_tree_copy_element(aux->dim, v, qd + aux->elem_qadr[e]);
  }
}

void mb_tree_natural_accelerations(const mb_tree_state* s, const mb_model* aux, int n,
                                   const int* elems, double* qdd) {
  for (int i = 0, e; i < (elems ? n : aux->nelem); i++) {
    if ((e = listed(aux, elems, i)) < 0) continue;
    const int b = aux->elem_body[e], point = aux->elem_kind[e] == MB_ELEM_POINT;
    const double *V = s->V + 6 * b, *Vd = s->Vd + 6 * b;
    double arm[3], v[3], a[3], wt[3];
    element_velocity(aux, s, e, b, arm, v);
    /* point: rdd + wd x (x - r) + w x (xdot - rdot_ref), rdot_ref the reference point's own
       velocity (the centre of mass's for RTdyn0, zero for RTdyn1); vector: wd x x + w x (w x x) */
    mbu_cross3(Vd + 3, arm, a);
    for (int k = 0; k < 3; k++) {
      a[k] += point ? Vd[k] : 0;
      v[k] -= point && s->ref == MB_REFERENCE_CENTRE_OF_MASS ? V[k] : 0;
    }
    mbu_cross3(V + 3, v, wt);
    for (int k = 0; k < 3; k++) a[k] += wt[k];
    mb_tree_copy_element(aux->dim, a, qdd + aux->elem_qadr[e]);
  }
}

void mb_tree_natural_wrenches(const mb_tree_state* s, const mb_model* aux, int n, const int* elems,
                              const double* Q, double* W) {
  const int dim = aux->dim;
  for (int i = 0, e; i < (elems ? n : aux->nelem); i++) {
    if ((e = listed(aux, elems, i)) < 0) continue;
    const int b = aux->elem_body[e];
    double x[3], f[3] = {0, 0, 0}, n[3];
    mb_tree_copy_element(dim, Q + aux->elem_qadr[e], f);
    /* a product's vectors are mostly zero */
    if (f[0] == 0 && f[1] == 0 && f[2] == 0) continue;
    mb_tree_element_value(s, aux, e, x);
    if (aux->elem_kind[e] == MB_ELEM_POINT) {
      mb_wrench_add_force(s->r + 3 * b, x, f, W + 6 * b);
      continue;
    }
    /* a force f on unit vector x does virtual work f . (dtheta x x) = dtheta . (x x f) */
    mbu_cross3(x, f, n);
    for (int k = 0; k < 3; k++) W[6 * b + 3 + k] += n[k];
  }
}

void mb_tree_natural_jacobian(const mb_tree* t, const mb_tree_state* s, const mb_model* aux, int n,
                              const int* elems, int ld, double* R) {
  const int dim = aux->dim;
  for (int i = 0; i < n; i++) {
    const int e = elems[i], b = aux->elem_body[e], a = aux->elem_qadr[e];
    const int point = aux->elem_kind[e] == MB_ELEM_POINT;
    double x[3];
    mb_tree_element_value(s, aux, e, x);
    /* column k of the joint of body j on the path: point v_k + w_k x (x - r_j); vector w_k x x */
    for (int p = t->path_adr[b]; p < t->path_adr[b + 1]; p++) {
      const int k = t->path[p], j = t->zbody[k];
      const double* col = s->b + 6 * k;
      double arm[3], v[3];
      for (int c = 0; c < 3; c++) arm[c] = point ? x[c] - s->r[3 * j + c] : x[c];
      mbu_cross3(col + 3, arm, v);
      for (int c = 0; c < dim; c++) R[(size_t)(a + c) * ld + k] = v[c] + (point ? col[c] : 0);
    }
  }
}

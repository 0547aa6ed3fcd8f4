/* Compilation of a model description to natural (fully Cartesian) coordinates.

   Joints share basic points and unit vectors between the bodies they connect (a revolute joint
   shares its point and axis, a spherical joint its point, ...); each body then picks a base of
   one point and dim-1 or 3 independent vectors among the elements it touches (adding private ones
   where needed), so that every marker is a linear combination of basic coordinates and the mass
   matrix is constant. Rigid-body constraints are the constant dot products of base vectors; every
   further element of a body is tied to its base by linear constraints; joints add the few
   quadratic constraints that sharing does not express.

   The same pass can carry forward-mode derivatives with respect to one parameter (the "seed"):
   every real quantity derived from the description has a companion derivative, and the real arrays
   of a second, tangent model receive the exact partial derivatives of the model's arrays. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "internal.h"

/* ---------------------------------------------------------------------------------------------
   model storage: one allocation carved into the arrays listed here (capacity counts) */

typedef struct caps {
  int nelem, nlvec, nterm, nbody, nmarker, ncon, npres, njoint, nforce, nfunc, nfuncdata, nsensor,
      nout, nq, nfunctional, nfterm, nctrl, ncterm, nmass;
} caps;

// clang-format off
#define MB_MODEL_ARRAYS(X) \
  X(int, elem_kind, c.nelem) \
  X(int, elem_qadr, c.nelem) \
  X(double, elem_q0, 3 * c.nelem) \
  X(int, elem_body, c.nelem) \
  X(double, elem_local, 3 * c.nelem) \
  X(int, lvec_termadr, c.nlvec) \
  X(int, lvec_termnum, c.nlvec) \
  X(double, lvec_const, 3 * c.nlvec) \
  X(int, term_qadr, c.nterm) \
  X(double, term_W, 9 * c.nterm) \
  X(int, body_origin, c.nbody) \
  X(int, body_axes, 3 * c.nbody) \
  X(int, body_com, c.nbody) \
  X(double, body_mass, c.nbody) \
  X(int, marker_body, c.nmarker) \
  X(int, marker_point, c.nmarker) \
  X(int, marker_axis, c.nmarker) \
  X(int, marker_ref, c.nmarker) \
  X(int, marker_third, c.nmarker) \
  X(int, con_kind, c.ncon) \
  X(int, con_lvec, 4 * c.ncon) \
  X(double, con_value, c.ncon) \
  X(double, con_scale, c.ncon) \
  X(int, con_func, c.ncon) \
  X(char, con_label, MB_LABEL_LEN * c.ncon) \
  X(int, con_body, c.ncon) \
  X(int, con_joint, c.ncon) \
  X(int, con_side, 4 * c.ncon) \
  X(int, pres_kind, c.npres) \
  X(int, pres_lvec, 4 * c.npres) \
  X(double, pres_value, c.npres) \
  X(int, pres_has_value, c.npres) \
  X(int, pres_has_rate, c.npres) \
  X(double, pres_rate, c.npres) \
  X(int, joint_type, c.njoint) \
  X(int, joint_measure, 6 * c.njoint) \
  X(int, joint_body, 2 * c.njoint) \
  X(int, joint_marker, 2 * c.njoint) \
  X(int, joint_rel, c.njoint) \
  X(int, joint_explicit, c.njoint) \
  X(int, joint_rowadr, c.njoint) \
  X(int, joint_rownum, c.njoint) \
  X(int, joint_row, c.ncon) \
  X(int, joint_friction, c.njoint) \
  X(double, joint_fric, 8 * c.njoint) \
  X(int, force_type, c.nforce) \
  X(int, force_lvec, 2 * c.nforce) \
  X(int, force_body, c.nforce) \
  X(double, force_k, c.nforce) \
  X(double, force_c, c.nforce) \
  X(double, force_l0, c.nforce) \
  X(double, force_f0, c.nforce) \
  X(int, force_func, 3 * c.nforce) \
  X(double, force_road, 3 * c.nforce) \
  X(double, force_slip, 3 * c.nforce) \
  X(int, func_type, c.nfunc) \
  X(int, func_adr, c.nfunc) \
  X(int, func_num, c.nfunc) \
  X(double, func_data, c.nfuncdata) \
  X(int, func_param, c.nfuncdata) \
  X(int, sensor_type, c.nsensor) \
  X(int, sensor_ref, 2 * c.nsensor) \
  X(int, sensor_component, c.nsensor) \
  X(int, sensor_outadr, c.nsensor) \
  X(int, sensor_outnum, c.nsensor) \
  X(char, out_name, MB_LABEL_LEN * c.nout) \
  X(int, fterm_functional, c.nfterm) \
  X(int, fterm_column, c.nfterm) \
  X(int, fterm_shape, c.nfterm) \
  X(int, fterm_final, c.nfterm) \
  X(double, fterm_weight, c.nfterm) \
  X(double, fterm_eps, c.nfterm) \
  X(int, fterm_ref, c.nfterm) \
  X(char, functional_name, MB_NAME_LEN * c.nfunctional) \
  X(int, ctrl_qadr, c.nctrl) \
  X(double, ctrl_gain, 4 * c.nctrl) \
  X(int, ctrl_ref, c.nctrl) \
  X(int, ctrl_actuator, c.nctrl) \
  X(int, ctrl_lvec, c.nctrl) \
  X(int, ctrl_body, c.nctrl) \
  X(double, ctrl_dir, 3 * c.nctrl) \
  X(int, ctrl_termadr, c.nctrl) \
  X(int, ctrl_termnum, c.nctrl) \
  X(int, cterm_column, c.ncterm) \
  X(double, cterm_weight, c.ncterm) \
  X(int, cterm_lvec, c.ncterm) \
  X(int, cterm_comp, c.ncterm) \
  X(int, mass_block, 2 * c.nmass) \
  X(double, mass, 9 * c.nmass) \
  X(double, gravity_force, c.nq) \
  X(char, body_name, MB_NAME_LEN * c.nbody) \
  X(char, joint_name, MB_NAME_LEN * c.njoint) \
  X(char, force_name, MB_NAME_LEN * c.nforce)
// clang-format on

static size_t align8(size_t n) {
  return (n + 7) & ~(size_t)7;
}

static mb_model* model_alloc(caps c) {
  size_t total = 0;
#define MB_SIZE(type, name, count) total += align8(sizeof(type) * (size_t)((count) + 1));
  MB_MODEL_ARRAYS(MB_SIZE)
#undef MB_SIZE
  mb_model* m = calloc(1, sizeof *m);
  char* buffer = calloc(1, total);
  if (!m || !buffer) {
    free(m);
    free(buffer);
    return NULL;
  }
  m->buffer = buffer;
  m->buffer_size = total;
#define MB_CARVE(type, name, count) \
  m->name = (type*)(void*)buffer;   \
  buffer += align8(sizeof(type) * (size_t)((count) + 1));
  MB_MODEL_ARRAYS(MB_CARVE)
#undef MB_CARVE
  return m;
}

void mb_model_free_natural(mb_model* m) {
  if (!m) return;
  mb_structure_free(m->structure);
  free(m->buffer);
  free(m);
}

/* ---------------------------------------------------------------------------------------------
   small geometry */

static int invert3(const double* A, double* inv) {
  double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
               A[2] * (A[3] * A[7] - A[4] * A[6]);
  if (fabs(det) < 1e-14) return 0;
  inv[0] = (A[4] * A[8] - A[5] * A[7]) / det;
  inv[1] = (A[2] * A[7] - A[1] * A[8]) / det;
  inv[2] = (A[1] * A[5] - A[2] * A[4]) / det;
  inv[3] = (A[5] * A[6] - A[3] * A[8]) / det;
  inv[4] = (A[0] * A[8] - A[2] * A[6]) / det;
  inv[5] = (A[2] * A[3] - A[0] * A[5]) / det;
  inv[6] = (A[3] * A[7] - A[4] * A[6]) / det;
  inv[7] = (A[1] * A[6] - A[0] * A[7]) / det;
  inv[8] = (A[0] * A[4] - A[1] * A[3]) / det;
  return 1;
}

/* ---------------------------------------------------------------------------------------------
   compiler state */

enum { NODE_POINT, NODE_AXIS, NODE_REF };
enum { BASE_VECTOR, BASE_DIFF }; /* a unit-vector element, or the difference of two points */

typedef struct attach {
  int elem;
  double local[3], dlocal[3];
} attach;

typedef struct base_vec {
  int kind;
  int e, e0;          /* BASE_VECTOR: element e; BASE_DIFF: point e minus point e0 */
  double v[3], dv[3]; /* local value and its derivative */
} base_vec;

typedef struct body_base {
  int natt;
  attach* att;
  int origin;           /* point element */
  double p0[3], dp0[3]; /* its local position */
  int nvec;
  base_vec vec[3];
  double X0inv[9]; /* maps local offsets to base coefficients */
  double dX0inv[9];
} body_base;

typedef struct rigid_key {
  int id[4];
  double value;
} rigid_key;

typedef struct compiler {
  const mb_desc* d;
  mb_model* m;
  mb_model* dm; /* tangent model: derivatives of m's real arrays with respect to the seed */
  int seed;     /* parameter index differentiated, -1 for none */
  mb_error* err;
  int dim, nmk;
  mb_local_frame* mk; /* (nmk) ground markers first */
  int* mk_adr;        /* (nbody + 1) first marker of each body; mk_adr[0] after ground */
  int* parent;        /* (3 nmk) union-find over marker nodes */
  int* active;        /* (3 nmk) node used by a joint */
  int* node_elem;     /* (3 nmk) element of each active node */
  double (*R)[9];     /* (nbody) initial body rotations */
  body_base* base;    /* (nbody) */
  rigid_key* keys;    /* rigid constraints emitted so far */
  int nkeys;
  int ex[3]; /* constant lvecs of the global unit vectors */
  /* element bookkeeping before the model exists */
  int nelem, elem_cap;
  /* vector elements fixed in a body's frame (its base vectors and the vectors its extra-element
     constraints tie to them): the first such body (-1: none) and the local value there */
  int* fixed_by;
  double* fixed_local;
  int* elem_kind;
  int* elem_fixed;
  double* elem_val;
  double* elem_dval;   /* derivative of the value of fixed elements */
  int* ctrl_elem;      /* (ncontroller) the state block of each controller */
  int* explicit_joint; /* (njoint) 1: expressed by rows alone (mb_model.joint_explicit) */
  int* driver_row;     /* (ndriver) the constraint row of each driver */
  int mass_first;      /* first mass block of the body being compiled */
  int exploded;        /* every joint expressed by its rows: each body owns its elements */
} compiler;

/* Derivative of a description scalar with respect to the seed parameter. */
static double dval(const compiler* c, mb_real r) {
  return mb_real_derivative(c->d, r, c->seed);
}

/* stiffness, damping, length (natural length, tyre radius) and force of force element i */
static void force_scalars(compiler* c, int i, mb_real k, mb_real damp, mb_real l0, mb_real f0) {
  mb_model *m = c->m, *dm = c->dm;
  m->force_k[i] = k.value, dm->force_k[i] = dval(c, k);
  m->force_c[i] = damp.value, dm->force_c[i] = dval(c, damp);
  m->force_l0[i] = l0.value, dm->force_l0[i] = dval(c, l0);
  m->force_f0[i] = f0.value, dm->force_f0[i] = dval(c, f0);
}

static int marker_index(const compiler* c, int body, int marker) {
  return mb_marker_index(c->mk_adr, body, marker);
}

static int uf_find(int* parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

static void uf_union(compiler* c, int a, int b) {
  c->active[a] = c->active[b] = 1;
  int ra = uf_find(c->parent, a), rb = uf_find(c->parent, b);
  if (ra != rb) c->parent[rb] = ra;
}

static int new_elem(compiler* c, int kind, int fixed, const double* value, const double* dvalue) {
  if (c->nelem == c->elem_cap) {
    int cap = c->elem_cap ? 2 * c->elem_cap : 32;
    int* k = realloc(c->elem_kind, cap * sizeof(int));
    if (k) c->elem_kind = k;
    int* f = realloc(c->elem_fixed, cap * sizeof(int));
    if (f) c->elem_fixed = f;
    double* v = realloc(c->elem_val, 3 * cap * sizeof(double));
    if (v) c->elem_val = v;
    double* dv = realloc(c->elem_dval, 3 * cap * sizeof(double));
    if (dv) c->elem_dval = dv;
    if (!k || !f || !v || !dv) return -1;
    c->elem_cap = cap;
  }
  int e = c->nelem++;
  c->elem_kind[e] = kind;
  c->elem_fixed[e] = fixed;
  memcpy(c->elem_val + 3 * e, value, 3 * sizeof(double));
  memset(c->elem_dval + 3 * e, 0, 3 * sizeof(double));
  if (dvalue) memcpy(c->elem_dval + 3 * e, dvalue, 3 * sizeof(double));
  return e;
}

/* Global value of a local point or direction of a body at its approximate initial pose. */
static void body_to_global(const compiler* c, int body, int is_point, const double* local,
                           double* out) {
  if (body < 0) {
    memcpy(out, local, 3 * sizeof(double));
    return;
  }
  mbu_mat3_vec(c->R[body], local, out);
  if (is_point)
    for (int k = 0; k < 3; k++) out[k] += c->d->body[body].position[k];
}

/* ---------------------------------------------------------------------------------------------
   step 2: shared elements */

/* 1 for the sensors that read a joint's multipliers (its reaction or the multipliers themselves).
 */
static int reads_multipliers(mb_sensor_type type) {
  return type == MB_SENSOR_REACTION_FORCE || type == MB_SENSOR_REACTION_TORQUE ||
         type == MB_SENSOR_MULTIPLIERS;
}

/* Joints whose multipliers an output or their friction reads are expressed by constraint rows
   alone. */
static void mark_explicit_joints(compiler* c) {
  for (int j = 0; c->exploded && j < c->d->njoint; j++) c->explicit_joint[j] = 1;
  for (int i = 0; i < c->d->nsensor; i++)
    if (reads_multipliers(c->d->sensor[i].type)) c->explicit_joint[c->d->sensor[i].joint] = 1;
  for (int j = 0; j < c->d->njoint; j++)
    if (c->d->joint[j].friction.enabled) c->explicit_joint[j] = 1;
}

/* The elements joint type `type` makes its two markers share: the point, the axis (planar: the
   in-plane direction) and the reference direction. */
static void joint_shares(int type, int dim, int* point, int* axis, int* ref) {
  *point = *axis = *ref = 0;
  switch (type) {
    case MB_JOINT_REVOLUTE:
      *point = 1, *axis = dim == 3;
      break;
    case MB_JOINT_PRISMATIC:
      *axis = 1, *ref = dim == 3;
      break;
    case MB_JOINT_SPHERICAL:
    case MB_JOINT_UNIVERSAL:
      *point = 1;
      break;
    case MB_JOINT_CYLINDRICAL:
    case MB_JOINT_PLANAR:
      *axis = 1;
      break;
    case MB_JOINT_FIXED:
      *point = *axis = 1, *ref = dim == 3;
      break;
  }
}

/* Joints share their elements, except explicit ones (joint_explicit), whose moving bodies keep
   their own elements at the joint, tied by the joint's rows (joint_constraints). */
static void share_joint_nodes(compiler* c) {
  for (int j = 0; j < c->d->njoint; j++) {
    const mb_joint_desc* jd = &c->d->joint[j];
    int n[2] = {3 * marker_index(c, jd->body[0], jd->marker[0]),
                3 * marker_index(c, jd->body[1], jd->marker[1])};
    int use[3];
    joint_shares(jd->type, c->dim, &use[NODE_POINT], &use[NODE_AXIS], &use[NODE_REF]);
    for (int k = 0; k < 3; k++) {
      if (!use[k]) continue;
      if (!c->explicit_joint[j]) {
        uf_union(c, n[0] + k, n[1] + k);
        continue;
      }
      for (int s = 0; s < 2; s++)
        if (jd->body[s] >= 0) c->active[n[s] + k] = 1;
    }
  }
}

static const double zero3[3] = {0, 0, 0};

/* Derivative of a node's local value: points may depend on parameters, directions do not. */
static const double* node_dlocal(const compiler* c, int node) {
  return node % 3 == NODE_POINT ? c->mk[node / 3].dp : zero3;
}

static const double* node_local(const compiler* c, int node) {
  const mb_local_frame* f = &c->mk[node / 3];
  switch (node % 3) {
    case NODE_POINT:
      return f->p;
    case NODE_AXIS:
      return c->dim == 2 ? f->x : f->z;
    default:
      return f->x;
  }
}

/* Markers of one body whose joints use the same direction (two coaxial hinges, say) share one
   vector element: a vector element of the body's own would otherwise carry only what the joined
   bodies' mass distributions give it along that direction, next to nothing for a slim arm, and
   the penalty scaling (constraint_scales) would see a vanishing mass where the body's inertia
   moves. */
static void share_body_directions(compiler* c) {
  for (int b = 0; b < c->d->nbody; b++)
    for (int i = 3 * c->mk_adr[b]; i < 3 * (c->mk_adr[b] + c->d->body[b].nmarker); i++) {
      if (!c->active[i] || i % 3 == NODE_POINT) continue;
      for (int k = 3 * c->mk_adr[b]; k < i; k++) {
        if (!c->active[k] || k % 3 == NODE_POINT) continue;
        double diff[3];
        for (int t = 0; t < 3; t++) diff[t] = node_local(c, i)[t] - node_local(c, k)[t];
        if (mbu_norm3(diff) > 1e-12) continue;
        uf_union(c, k, i);
        break;
      }
    }
}

/* One element per class of joined nodes; fixed when the class holds a ground marker. */
static mb_status create_shared_elements(compiler* c) {
  int nnode = 3 * c->nmk;
  for (int i = 0; i < nnode; i++) c->node_elem[i] = -1;
  for (int i = 0; i < nnode; i++) {
    if (!c->active[i]) continue;
    int root = uf_find(c->parent, i);
    if (c->node_elem[root] >= 0) {
      c->node_elem[i] = c->node_elem[root];
      continue;
    }
    /* first node of the class: find a ground node, which fixes the element */
    int ground_node = -1;
    for (int k = 0; k < nnode; k++)
      if (c->active[k] && uf_find(c->parent, k) == root && c->mk[k / 3].body < 0) {
        if (ground_node >= 0) {
          double diff[3];
          for (int t = 0; t < 3; t++) diff[t] = node_local(c, k)[t] - node_local(c, ground_node)[t];
          if (mbu_norm3(diff) > 1e-9)
            return mb_error_set(c->err, MB_ERR_MODEL,
                                "joints: ground markers %s and %s are joined through bodies but "
                                "do not coincide",
                                c->d->ground_marker[ground_node / 3].name,
                                c->d->ground_marker[k / 3].name);
        } else {
          ground_node = k;
        }
      }
    int kind = i % 3 == NODE_POINT ? MB_ELEM_POINT : MB_ELEM_VECTOR;
    double value[3];
    int src = ground_node >= 0 ? ground_node : i;
    body_to_global(c, c->mk[src / 3].body, kind == MB_ELEM_POINT, node_local(c, src), value);
    int e = new_elem(c, kind, ground_node >= 0, value,
                     ground_node >= 0 ? node_dlocal(c, ground_node) : NULL);
    if (e < 0) return mb_error_set(c->err, MB_ERR_MEMORY, "out of memory");
    c->node_elem[root] = c->node_elem[i] = e;
  }
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   step 3: bases */

static mb_status body_attach(compiler* c, int b, int elem, const double* local,
                             const double* dlocal) {
  body_base* bb = &c->base[b];
  for (int i = 0; i < bb->natt; i++) {
    if (bb->att[i].elem != elem) continue;
    double diff[3];
    for (int k = 0; k < 3; k++) diff[k] = bb->att[i].local[k] - local[k];
    if (mbu_norm3(diff) > 1e-9)
      return mb_error_set(c->err, MB_ERR_MODEL,
                          "bodies[%d] (%s): two of its markers are joined to the same %s but "
                          "differ by %g in local coordinates",
                          b, c->d->body[b].name,
                          c->elem_kind[elem] == MB_ELEM_POINT ? "point" : "axis", mbu_norm3(diff));
    return MB_OK;
  }
  bb->att[bb->natt].elem = elem;
  memcpy(bb->att[bb->natt].local, local, 3 * sizeof(double));
  memcpy(bb->att[bb->natt].dlocal, dlocal, 3 * sizeof(double));
  bb->natt++;
  return MB_OK;
}

/* Distance of a unit vector from the span of the accepted base directions. */
static double independence(const double* v, double (*ortho)[3], int n) {
  double u[3], r[3];
  memcpy(u, v, sizeof u);
  if (!mbu_normalize3(u)) return 0;
  mbu_orthogonal_part(u, ortho, n, r);
  return mbu_norm3(r);
}

static void accept_direction(const double* v, double (*ortho)[3], int* n) {
  double r[3], u[3];
  memcpy(u, v, sizeof u);
  mbu_normalize3(u);
  mbu_orthogonal_part(u, ortho, *n, r);
  mbu_normalize3(r);
  memcpy(ortho[(*n)++], r, sizeof r);
}

static mb_status choose_base(compiler* c, int b) {
  body_base* bb = &c->base[b];
  const mb_body_desc* bd = &c->d->body[b];
  const int need = c->dim == 3 ? 3 : 1;
  const double min_independence = 0.25;
  double value[3];

  /* origin: the first point the joints give, a ground point first (a body welded to the ground
     then has a constant base and no rigidity constraints to repeat), else a private point at
     the centre of mass */
  bb->origin = -1;
  for (int pass = 0; pass < 2 && bb->origin < 0; pass++)
    for (int i = 0; i < bb->natt && bb->origin < 0; i++)
      if (c->elem_kind[bb->att[i].elem] == MB_ELEM_POINT &&
          c->elem_fixed[bb->att[i].elem] == (pass == 0)) {
        bb->origin = bb->att[i].elem;
        memcpy(bb->p0, bb->att[i].local, sizeof bb->p0);
        memcpy(bb->dp0, bb->att[i].dlocal, sizeof bb->dp0);
      }
  if (bb->origin < 0) {
    double com[3] = {bd->com[0].value, bd->com[1].value, bd->com[2].value};
    double dcom[3] = {dval(c, bd->com[0]), dval(c, bd->com[1]), dval(c, bd->com[2])};
    body_to_global(c, b, 1, com, value);
    bb->origin = new_elem(c, MB_ELEM_POINT, 0, value, NULL);
    if (bb->origin < 0) return mb_error_set(c->err, MB_ERR_MEMORY, "out of memory");
    memcpy(bb->p0, com, sizeof com);
    memcpy(bb->dp0, dcom, sizeof dcom);
    mb_status st = body_attach(c, b, bb->origin, com, dcom);
    if (st != MB_OK) return st;
  }

  /* vectors: joint axes first (ground ones before the others), then differences to other joint
     points, greedily independent */
  double ortho[3][3];
  int northo = 0;
  bb->nvec = 0;
  for (int pass = 0; pass < 3 && bb->nvec < need; pass++)
    for (int i = 0; i < bb->natt && bb->nvec < need; i++) {
      const attach* a = &bb->att[i];
      int is_point = c->elem_kind[a->elem] == MB_ELEM_POINT;
      if (a->elem == bb->origin || is_point != (pass == 2)) continue;
      if (pass < 2 && c->elem_fixed[a->elem] != (pass == 0)) continue;
      base_vec v = {is_point ? BASE_DIFF : BASE_VECTOR, a->elem, bb->origin, {0, 0, 0}, {0, 0, 0}};
      for (int k = 0; k < 3; k++) {
        v.v[k] = a->local[k] - (is_point ? bb->p0[k] : 0);
        v.dv[k] = a->dlocal[k] - (is_point ? bb->dp0[k] : 0);
      }
      if (is_point && mbu_norm3(v.v) < 1e-6) continue;
      if (independence(v.v, ortho, northo) < min_independence) continue;
      accept_direction(v.v, ortho, &northo);
      bb->vec[bb->nvec++] = v;
    }
  /* private unit vectors along the local axes most orthogonal to what the base has */
  while (bb->nvec < need) {
    int best = 0;
    double best_ind = -1;
    for (int k = 0; k < c->dim; k++) {
      double e[3] = {0, 0, 0};
      e[k] = 1;
      double ind = independence(e, ortho, northo);
      if (ind > best_ind) best_ind = ind, best = k;
    }
    double e[3] = {0, 0, 0};
    e[best] = 1;
    body_to_global(c, b, 0, e, value);
    int elem = new_elem(c, MB_ELEM_VECTOR, 0, value, NULL);
    if (elem < 0) return mb_error_set(c->err, MB_ERR_MEMORY, "out of memory");
    mb_status st = body_attach(c, b, elem, e, zero3);
    if (st != MB_OK) return st;
    accept_direction(e, ortho, &northo);
    bb->vec[bb->nvec++] = (base_vec){BASE_VECTOR, elem, -1, {e[0], e[1], e[2]}, {0, 0, 0}};
  }

  /* inverse of the local base matrix: spatial [v1 v2 v3], planar [v1, R90 v1]; and its
     derivative d(X0^-1) = -X0^-1 dX0 X0^-1 */
  double X0[9] = {0}, dX0[9] = {0};
  if (c->dim == 3) {
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 3; k++)
        X0[3 * r + k] = bb->vec[k].v[r], dX0[3 * r + k] = bb->vec[k].dv[r];
  } else {
    const double *v = bb->vec[0].v, *dv = bb->vec[0].dv;
    X0[0] = v[0], X0[1] = -v[1], X0[3] = v[1], X0[4] = v[0], X0[8] = 1;
    dX0[0] = dv[0], dX0[1] = -dv[1], dX0[3] = dv[1], dX0[4] = dv[0];
  }
  if (!invert3(X0, bb->X0inv))
    return mb_error_set(c->err, MB_ERR_MODEL, "bodies[%d] (%s): degenerate marker geometry", b,
                        bd->name);
  double T[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      T[3 * i + j] = 0;
      for (int k = 0; k < 3; k++) T[3 * i + j] += dX0[3 * i + k] * bb->X0inv[3 * k + j];
    }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      bb->dX0inv[3 * i + j] = 0;
      for (int k = 0; k < 3; k++) bb->dX0inv[3 * i + j] -= bb->X0inv[3 * i + k] * T[3 * k + j];
    }
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   linear vectors */

static void W_identity(double s, double* W) {
  memset(W, 0, 9 * sizeof(double));
  W[0] = W[4] = W[8] = s;
}

static int lvec_begin(compiler* c) {
  mb_model* m = c->m;
  int lv = m->nlvec++;
  /* the tangent model shares the term layout, which its Jacobian products need while building */
  m->lvec_termadr[lv] = c->dm->lvec_termadr[lv] = m->nterm;
  m->lvec_termnum[lv] = c->dm->lvec_termnum[lv] = 0;
  memset(m->lvec_const + 3 * lv, 0, 3 * sizeof(double));
  memset(c->dm->lvec_const + 3 * lv, 0, 3 * sizeof(double));
  return lv;
}

/* Term of linear vector lv acting on coordinates qadr, created (zero) when missing. */
static int lvec_term(compiler* c, int lv, int qadr) {
  mb_model* m = c->m;
  for (int k = m->lvec_termadr[lv]; k < m->lvec_termadr[lv] + m->lvec_termnum[lv]; k++)
    if (m->term_qadr[k] == qadr) return k;
  int k = m->nterm++;
  m->term_qadr[k] = c->dm->term_qadr[k] = qadr;
  memset(m->term_W + 9 * k, 0, 9 * sizeof(double));
  memset(c->dm->term_W + 9 * k, 0, 9 * sizeof(double));
  m->lvec_termnum[lv]++;
  c->dm->lvec_termnum[lv]++;
  return k;
}

/* Adds W * element (W with derivative dW) to the linear vector being built, which must be the last
   one begun. */
static void lvec_add_elem(compiler* c, int lv, int elem, const double* W, const double* dW) {
  mb_model *m = c->m, *dm = c->dm;
  const int dim = m->dim;
  if (m->elem_qadr[elem] < 0) {
    const double *x = m->elem_q0 + 3 * elem, *dx = dm->elem_q0 + 3 * elem;
    for (int r = 0; r < dim; r++)
      for (int j = 0; j < dim; j++) {
        m->lvec_const[3 * lv + r] += W[3 * r + j] * x[j];
        dm->lvec_const[3 * lv + r] += dW[3 * r + j] * x[j] + W[3 * r + j] * dx[j];
      }
    return;
  }
  int k = lvec_term(c, lv, m->elem_qadr[elem]);
  for (int i = 0; i < 9; i++) m->term_W[9 * k + i] += W[i], dm->term_W[9 * k + i] += dW[i];
}

/* Adds s * (another linear vector) to the one being built. */
static void lvec_add_lvec(compiler* c, int lv, int src, double s) {
  mb_model *m = c->m, *dm = c->dm;
  for (int r = 0; r < 3; r++) {
    m->lvec_const[3 * lv + r] += s * m->lvec_const[3 * src + r];
    dm->lvec_const[3 * lv + r] += s * dm->lvec_const[3 * src + r];
  }
  int end = m->lvec_termadr[src] + m->lvec_termnum[src];
  for (int k = m->lvec_termadr[src]; k < end; k++) {
    int t = lvec_term(c, lv, m->term_qadr[k]);
    for (int i = 0; i < 9; i++) {
      m->term_W[9 * t + i] += s * m->term_W[9 * k + i];
      dm->term_W[9 * t + i] += s * dm->term_W[9 * k + i];
    }
  }
}

static void lvec_add_base(compiler* c, int lv, const base_vec* v, const double* W,
                          const double* dW) {
  lvec_add_elem(c, lv, v->e, W, dW);
  if (v->kind == BASE_DIFF) {
    double negW[9], negdW[9];
    for (int i = 0; i < 9; i++) negW[i] = -W[i], negdW[i] = -dW[i];
    lvec_add_elem(c, lv, v->e0, negW, negdW);
  }
}

/* Adds s * (the body map of a local point or direction, with derivative dlocal) to linear vector
   lv: P0 + sum_k a_k V_k with a = X0^-1 (local - p0). */
static void lvec_add_body_map(compiler* c, int lv, int b, int is_point, const double* local,
                              const double* dlocal, double s) {
  const body_base* bb = &c->base[b];
  double off[3], doff[3], a[3], da[3], t[3], W[9], dW[9];
  for (int k = 0; k < 3; k++) {
    off[k] = local[k] - (is_point ? bb->p0[k] : 0);
    doff[k] = dlocal[k] - (is_point ? bb->dp0[k] : 0);
  }
  mbu_mat3_vec(bb->X0inv, off, a);
  mbu_mat3_vec(bb->dX0inv, off, da);
  mbu_mat3_vec(bb->X0inv, doff, t);
  for (int k = 0; k < 3; k++) da[k] += t[k];
  if (is_point) {
    W_identity(s, W);
    W_identity(0, dW);
    lvec_add_elem(c, lv, bb->origin, W, dW);
  }
  if (c->dim == 3) {
    for (int k = 0; k < 3; k++) {
      W_identity(s * a[k], W);
      W_identity(s * da[k], dW);
      lvec_add_base(c, lv, &bb->vec[k], W, dW);
    }
  } else {
    /* planar: a v1 + b R90 v1 = (a I + b R90) v1 */
    double P[9] = {s * a[0], -s * a[1], 0, s * a[1], s * a[0], 0, 0, 0, 0};
    double dP[9] = {s * da[0], -s * da[1], 0, s * da[1], s * da[0], 0, 0, 0, 0};
    lvec_add_base(c, lv, &bb->vec[0], P, dP);
  }
}

static int lvec_body_map(compiler* c, int b, int is_point, const double* local,
                         const double* dlocal) {
  int lv = lvec_begin(c);
  if (b < 0) {
    memcpy(c->m->lvec_const + 3 * lv, local, 3 * sizeof(double));
    memcpy(c->dm->lvec_const + 3 * lv, dlocal, 3 * sizeof(double));
  } else {
    lvec_add_body_map(c, lv, b, is_point, local, dlocal, 1);
  }
  return lv;
}

static int lvec_constant(compiler* c, const double* v) {
  int lv = lvec_begin(c);
  memcpy(c->m->lvec_const + 3 * lv, v, 3 * sizeof(double));
  return lv;
}

static int lvec_difference(compiler* c, int a, int b) {
  int lv = lvec_begin(c);
  lvec_add_lvec(c, lv, a, 1);
  lvec_add_lvec(c, lv, b, -1);
  return lv;
}

static int lvec_of_base(compiler* c, const base_vec* v) {
  double W[9], dW[9];
  W_identity(1, W);
  W_identity(0, dW);
  int lv = lvec_begin(c);
  lvec_add_base(c, lv, v, W, dW);
  return lv;
}

/* ---------------------------------------------------------------------------------------------
   constraints */

static int add_con(compiler* c, int kind, int a0, int b0, int a1, int b1, double value,
                   double dvalue, int func, const char* label) {
  mb_model* m = c->m;
  int i = m->ncon++;
  m->con_kind[i] = kind;
  int* lv = m->con_lvec + 4 * i;
  lv[0] = a0, lv[1] = b0, lv[2] = a1, lv[3] = b1;
  m->con_value[i] = value;
  c->dm->con_value[i] = dvalue;
  m->con_func[i] = func;
  snprintf(m->con_label + MB_LABEL_LEN * i, MB_LABEL_LEN, "%s", label);
  m->con_body[i] = m->con_joint[i] = -1; /* set by the callers that own it */
  return i;
}

static int lvec_is_constant(const mb_model* m, int lv) {
  return m->lvec_termnum[lv] == 0;
}

/* Identity of a base vector for de-duplicating rigid constraints shared between bodies. */
static void base_identity(const base_vec* v, int* id, double* sign) {
  *sign = 1;
  if (v->kind == BASE_VECTOR) {
    id[0] = v->e, id[1] = -1;
  } else if (v->e < v->e0) {
    id[0] = v->e, id[1] = v->e0;
  } else {
    id[0] = v->e0, id[1] = v->e, *sign = -1;
  }
}

static mb_status rigid_constraints(compiler* c, int b) {
  mb_model* m = c->m;
  const body_base* bb = &c->base[b];
  const char* name = c->d->body[b].name;
  int lv[3];
  for (int k = 0; k < bb->nvec; k++) lv[k] = lvec_of_base(c, &bb->vec[k]);
  for (int i = 0; i < bb->nvec; i++)
    for (int j = i; j < bb->nvec; j++) {
      double value = mbu_dot3(bb->vec[i].v, bb->vec[j].v);
      /* canonical key: the same dot product may come from two bodies sharing elements */
      int idi[2], idj[2];
      double si, sj;
      base_identity(&bb->vec[i], idi, &si);
      base_identity(&bb->vec[j], idj, &sj);
      int key[4];
      if (idi[0] < idj[0] || (idi[0] == idj[0] && idi[1] <= idj[1]))
        key[0] = idi[0], key[1] = idi[1], key[2] = idj[0], key[3] = idj[1];
      else
        key[0] = idj[0], key[1] = idj[1], key[2] = idi[0], key[3] = idi[1];
      double canonical = value * si * sj;
      int seen = 0;
      for (int k = 0; k < c->nkeys && !seen; k++)
        if (!memcmp(c->keys[k].id, key, sizeof key)) {
          seen = 1;
          if (fabs(c->keys[k].value - canonical) > 1e-9 * (1 + fabs(canonical)))
            return mb_error_set(c->err, MB_ERR_MODEL,
                                "bodies[%d] (%s): inconsistent joints: markers shared with "
                                "another body are placed differently on the two bodies",
                                b, name);
        }
      if (seen) continue;
      memcpy(c->keys[c->nkeys].id, key, sizeof key);
      c->keys[c->nkeys++].value = canonical;
      if (lvec_is_constant(m, lv[i]) && lvec_is_constant(m, lv[j])) {
        double actual = mbu_dot3(m->lvec_const + 3 * lv[i], m->lvec_const + 3 * lv[j]);
        if (fabs(actual - value) > 1e-6 * (1 + fabs(value)))
          return mb_error_set(c->err, MB_ERR_MODEL,
                              "bodies[%d] (%s): inconsistent joints: its ground attachments "
                              "do not fit the body's markers (%g instead of %g)",
                              b, name, actual, value);
        continue;
      }
      /* both vectors already fixed in the frame of one earlier body: their dot product is
         implied by that body's rigidity (a second constraint would be redundant) */
      const int a = bb->vec[i].kind == BASE_VECTOR ? c->fixed_by[bb->vec[i].e] : -1;
      const int a2 = bb->vec[j].kind == BASE_VECTOR ? c->fixed_by[bb->vec[j].e] : -1;
      if (a >= 0 && a == a2) {
        const double implied =
            mbu_dot3(c->fixed_local + 3 * bb->vec[i].e, c->fixed_local + 3 * bb->vec[j].e);
        if (fabs(implied - value) > 1e-9 * (1 + fabs(value)))
          return mb_error_set(c->err, MB_ERR_MODEL,
                              "bodies[%d] (%s): inconsistent joints: markers shared with body "
                              "%s are placed differently on the two bodies",
                              b, name, c->d->body[a].name);
        continue;
      }
      char label[MB_LABEL_LEN];
      snprintf(label, sizeof label, "the rigidity of body %s", name);
      double dvalue = mbu_dot3(bb->vec[i].dv, bb->vec[j].v) + mbu_dot3(bb->vec[i].v, bb->vec[j].dv);
      m->con_body[add_con(c, MB_CON_DOT, lv[i], lv[j], -1, -1, value, dvalue, -1, label)] = b;
    }
  /* the base vectors are now fixed in this body's frame */
  for (int k = 0; k < bb->nvec; k++) {
    const int e = bb->vec[k].e;
    if (bb->vec[k].kind != BASE_VECTOR || c->fixed_by[e] >= 0) continue;
    c->fixed_by[e] = b;
    memcpy(c->fixed_local + 3 * e, bb->vec[k].v, sizeof bb->vec[k].v);
  }
  return MB_OK;
}

/* Elements a body touches beyond its base follow the base linearly. */
static mb_status extra_element_constraints(compiler* c, int b) {
  mb_model* m = c->m;
  const body_base* bb = &c->base[b];
  const char* name = c->d->body[b].name;
  for (int i = 0; i < bb->natt; i++) {
    int e = bb->att[i].elem, in_base = e == bb->origin;
    for (int k = 0; k < bb->nvec; k++)
      if (bb->vec[k].e == e) in_base = 1;
    if (in_base) continue;
    int is_point = m->elem_kind[e] == MB_ELEM_POINT;
    double W[9], dW[9];
    W_identity(1, W);
    W_identity(0, dW);
    int lv = lvec_begin(c);
    lvec_add_elem(c, lv, e, W, dW);
    lvec_add_body_map(c, lv, b, is_point, bb->att[i].local, bb->att[i].dlocal, -1);
    if (lvec_is_constant(m, lv)) {
      if (mbu_norm3(m->lvec_const + 3 * lv) > 1e-6)
        return mb_error_set(c->err, MB_ERR_MODEL,
                            "bodies[%d] (%s): inconsistent joints: its ground attachments do "
                            "not fit the body's markers",
                            b, name);
      continue;
    }
    char label[MB_LABEL_LEN];
    snprintf(label, sizeof label, "the markers of body %s", name);
    for (int r = 0; r < c->dim; r++)
      m->con_body[add_con(c, MB_CON_DOT, lv, c->ex[r], -1, -1, 0, 0, -1, label)] = b;
    if (!is_point && c->fixed_by[e] < 0) {
      c->fixed_by[e] = b;
      memcpy(c->fixed_local + 3 * e, bb->att[i].local, sizeof bb->att[i].local);
    }
  }
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   joint measures and joint constraints */

static void joint_measures(compiler* c, int j) {
  mb_model* m = c->m;
  const mb_joint_desc* jd = &c->d->joint[j];
  int mk1 = marker_index(c, jd->body[0], jd->marker[0]);
  int mk2 = marker_index(c, jd->body[1], jd->marker[1]);
  int* meas = m->joint_measure + 6 * j;
  for (int k = 0; k < 6; k++) meas[k] = -1;
  m->joint_marker[2 * j] = mk1, m->joint_marker[2 * j + 1] = mk2;
  m->joint_rel[j] = lvec_difference(c, m->marker_point[mk2], m->marker_point[mk1]);
  int has_angle = jd->type == MB_JOINT_REVOLUTE || jd->type == MB_JOINT_CYLINDRICAL;
  int has_translation = jd->type == MB_JOINT_PRISMATIC || jd->type == MB_JOINT_CYLINDRICAL;
  /* angle: sine x2 . y1, cosine x2 . x1 */
  int x1 = c->dim == 2 ? m->marker_axis[mk1] : m->marker_ref[mk1];
  int x2 = c->dim == 2 ? m->marker_axis[mk2] : m->marker_ref[mk2];
  if (has_angle) meas[0] = x2, meas[1] = m->marker_third[mk1], meas[2] = x1;
  /* translation: (r2 - r1) . z1 */
  if (has_translation) {
    meas[3] = m->joint_rel[j];
    meas[4] = m->marker_axis[mk1];
  }
}

/* The rows of an explicit joint: its points coincide (r2 - r1 = 0), its axes stay aligned
   (z1 . x2 = z1 . y2 = 0; planar: x1 . y2 = 0) and, where sharing joins the reference directions
   too, x1 . y2 = 0: what sharing the point, axis and reference would express. */
static void explicit_rows(compiler* c, int j, int mk1, int mk2, const char* label) {
  mb_model* m = c->m;
  int point, axis, ref;
  joint_shares(c->d->joint[j].type, c->dim, &point, &axis, &ref);
  for (int r = 0; point && r < c->dim; r++)
    add_con(c, MB_CON_DOT, m->joint_rel[j], c->ex[r], -1, -1, 0, 0, -1, label);
  if (axis && c->dim == 2)
    add_con(c, MB_CON_DOT, m->marker_axis[mk1], m->marker_third[mk2], -1, -1, 0, 0, -1, label);
  if (axis && c->dim == 3) {
    add_con(c, MB_CON_DOT, m->marker_axis[mk1], m->marker_ref[mk2], -1, -1, 0, 0, -1, label);
    add_con(c, MB_CON_DOT, m->marker_axis[mk1], m->marker_third[mk2], -1, -1, 0, 0, -1, label);
  }
  if (ref)
    add_con(c, MB_CON_DOT, m->marker_ref[mk1], m->marker_third[mk2], -1, -1, 0, 0, -1, label);
}

static void joint_constraints(compiler* c, int j) {
  mb_model* m = c->m;
  const mb_joint_desc* jd = &c->d->joint[j];
  int mk1 = marker_index(c, jd->body[0], jd->marker[0]);
  int mk2 = marker_index(c, jd->body[1], jd->marker[1]);
  m->joint_body[2 * j] = m->marker_body[mk1];
  m->joint_body[2 * j + 1] = m->marker_body[mk2];
  m->joint_explicit[j] = c->explicit_joint[j];
  const mb_friction_desc* fr = &jd->friction;
  m->joint_friction[j] = fr->enabled;
  const mb_real* law[8] = {&fr->mu_static, &fr->mu_dynamic,   &fr->transition_velocity,
                           &fr->viscous,   &fr->radius,       &fr->length,
                           &fr->width,     &fr->thrust_radius};
  for (int k = 0; fr->enabled && k < 8; k++) {
    m->joint_fric[8 * j + k] = law[k]->value;
    c->dm->joint_fric[8 * j + k] = dval(c, *law[k]);
  }
  char label[MB_LABEL_LEN];
  snprintf(label, sizeof label, "joint %s", jd->name);
  const int first = m->ncon, rel = m->joint_rel[j];
  if (m->joint_explicit[j]) explicit_rows(c, j, mk1, mk2, label);
  switch (jd->type) {
    case MB_JOINT_UNIVERSAL:
      add_con(c, MB_CON_DOT, m->marker_axis[mk1], m->marker_axis[mk2], -1, -1, 0, 0, -1, label);
      break;
    case MB_JOINT_CYLINDRICAL:
    case MB_JOINT_PRISMATIC:
      if (c->dim == 2) {
        add_con(c, MB_CON_DOT, rel, m->marker_third[mk1], -1, -1, 0, 0, -1, label);
        break;
      }
      add_con(c, MB_CON_DOT, rel, m->marker_ref[mk1], -1, -1, 0, 0, -1, label);
      add_con(c, MB_CON_DOT, rel, m->marker_third[mk1], -1, -1, 0, 0, -1, label);
      break;
    case MB_JOINT_PLANAR:
      add_con(c, MB_CON_DOT, rel, m->marker_axis[mk1], -1, -1, 0, 0, -1, label);
      break;
    default:
      break; /* revolute, spherical, fixed: expressed entirely by shared elements */
  }
  for (int i = first; i < m->ncon; i++) m->con_joint[i] = j;
}

/* What linear vector lv is to the reaction side of joint j (mb_reaction_side). */
static int reaction_side(const mb_model* m, int j, int lv) {
  const int side = m->joint_body[2 * j + 1] >= 0, mk = m->joint_marker[2 * j + side];
  if (lv < 0) return MB_SIDE_NONE;
  if (lv == m->joint_rel[j]) return side ? MB_SIDE_POINT_PLUS : MB_SIDE_POINT_MINUS;
  if (lv == m->marker_point[mk]) return MB_SIDE_POINT_PLUS;
  if (lv == m->marker_axis[mk] || lv == m->marker_ref[mk] || lv == m->marker_third[mk])
    return MB_SIDE_DIRECTION;
  return MB_SIDE_NONE;
}

/* Each joint's rows, then those of the drivers of its coordinates, with what their linear
   vectors are to the joint's reaction side. */
static void joint_rows(compiler* c) {
  mb_model* m = c->m;
  int n = 0;
  for (int j = 0; j < c->d->njoint; j++) {
    m->joint_rowadr[j] = n;
    for (int i = 0; i < m->ncon; i++)
      if (m->con_joint[i] == j) m->joint_row[n++] = i;
    for (int k = 0; k < c->d->ndriver; k++)
      if (c->d->driver[k].joint == j) m->joint_row[n++] = c->driver_row[k];
    m->joint_rownum[j] = n - m->joint_rowadr[j];
    for (int r = m->joint_rowadr[j]; r < n; r++)
      for (int k = 0; k < 4; k++)
        m->con_side[4 * m->joint_row[r] + k] =
            reaction_side(m, j, m->con_lvec[4 * m->joint_row[r] + k]);
  }
}

/* A measure (angle or translation of a joint) set equal to value + f(t): kind and lvecs. */
static int measure_constraint(const mb_model* m, int joint, mb_coord_type coord, int* lv) {
  const int* meas = m->joint_measure + 6 * joint;
  if (coord == MB_COORD_ANGLE) {
    lv[0] = meas[0], lv[1] = meas[1], lv[2] = meas[0], lv[3] = meas[2];
    return MB_CON_ANGLE;
  }
  lv[0] = meas[3], lv[1] = meas[4], lv[2] = lv[3] = -1;
  return MB_CON_DOT;
}

/* ---------------------------------------------------------------------------------------------
   time functions */

static int func_storage(const mb_func_desc* f) {
  switch (f->type) {
    case MB_FUNC_TABLE:
      return 3 * f->ncoef;
    case MB_FUNC_BSPLINE:
      return f->ncoef + 2;
    default:
      return f->ncoef;
  }
}

static int add_func(compiler* c, const mb_func_desc* f) {
  mb_model* m = c->m;
  int i = m->nfunc++;
  int n = f->ncoef;
  m->func_type[i] = f->type;
  m->func_adr[i] = m->nfuncdata;
  m->func_num[i] = n;
  double* data = m->func_data + m->nfuncdata;
  double* ddata = c->dm->func_data + m->nfuncdata;
  for (int k = 0; k < func_storage(f); k++) m->func_param[m->nfuncdata + k] = -1;
  for (int k = 0; k < n; k++) {
    data[k] = f->coef[k].value, ddata[k] = dval(c, f->coef[k]);
    m->func_param[m->nfuncdata + k] = f->coef[k].param;
  }
  if (f->type == MB_FUNC_TABLE) {
    /* the spline is linear in the values: its derivative is the spline of their derivatives */
    memcpy(data + n, f->time, n * sizeof(double));
    double* work = malloc(2 * n * sizeof(double));
    if (work) {
      mbu_spline_setup(n, data + n, data, data + 2 * n, work);
      mbu_spline_setup(n, data + n, ddata, ddata + 2 * n, work);
    }
    free(work);
  } else if (f->type == MB_FUNC_BSPLINE) {
    data[n] = f->time[0], data[n + 1] = f->time[1];
  }
  m->nfuncdata += func_storage(f);
  return i;
}

/* ---------------------------------------------------------------------------------------------
   mass matrix and gravity */

/* The mass block (I, J) of the body being compiled, created (zero) when missing: a body's mass
   couples only its own base elements, so the search stays within its blocks. */
static int mass_block(compiler* c, int I, int J) {
  mb_model* m = c->m;
  for (int k = c->mass_first; k < m->nmass; k++)
    if (m->mass_block[2 * k] == I && m->mass_block[2 * k + 1] == J) return k;
  const int k = m->nmass++;
  m->mass_block[2 * k] = I, m->mass_block[2 * k + 1] = J;
  memset(m->mass + 9 * k, 0, 9 * sizeof(double));
  memset(c->dm->mass + 9 * k, 0, 9 * sizeof(double));
  return k;
}

/* block += s Wa^T Wb (dim x dim in a 3 x 3 slot) */
static void add_wtw(int dim, double s, const double* Wa, const double* Wb, double* block) {
  for (int r = 0; r < dim; r++)
    for (int j = 0; j < dim; j++) {
      double sum = 0;
      for (int l = 0; l < dim; l++) sum += Wa[3 * l + r] * Wb[3 * l + j];
      block[3 * r + j] += s * sum;
    }
}

/* M += s J_a^T J_b and, in the tangent model, dM += ds J_a^T J_b + s (dJ_a^T J_b + J_a^T dJ_b). */
static void add_mass_form(compiler* c, int a, int b, double s, double ds) {
  mb_model *m = c->m, *dm = c->dm;
  const int dim = m->dim;
  for (int ka = m->lvec_termadr[a]; ka < m->lvec_termadr[a] + m->lvec_termnum[a]; ka++)
    for (int kb = m->lvec_termadr[b]; kb < m->lvec_termadr[b] + m->lvec_termnum[b]; kb++) {
      const int k = mass_block(c, m->term_qadr[ka] / dim, m->term_qadr[kb] / dim);
      const double *Wa = m->term_W + 9 * ka, *Wb = m->term_W + 9 * kb;
      add_wtw(dim, s, Wa, Wb, m->mass + 9 * k);
      add_wtw(dim, ds, Wa, Wb, dm->mass + 9 * k);
      add_wtw(dim, s, dm->term_W + 9 * ka, Wb, dm->mass + 9 * k);
      add_wtw(dim, s, Wa, dm->term_W + 9 * kb, dm->mass + 9 * k);
    }
}

/* Second moment about the centre of mass from the inertia tensor, S = tr(I)/2 Id - I (planar:
   Izz/2 on each axis), with the derivatives of the inertia entries in dI. */
static void second_moment(int dim, const double* I, double (*S)[3]) {
  memset(S, 0, 9 * sizeof(double));
  if (dim == 2) {
    S[0][0] = S[1][1] = I[2] / 2;
    return;
  }
  double half = (I[0] + I[1] + I[2]) / 2;
  S[0][0] = half - I[0], S[1][1] = half - I[1], S[2][2] = half - I[2];
  S[0][1] = S[1][0] = -I[3], S[0][2] = S[2][0] = -I[4], S[1][2] = S[2][1] = -I[5];
}

static void body_inertia(compiler* c, int b) {
  mb_model *m = c->m, *dm = c->dm;
  const mb_body_desc* bd = &c->d->body[b];
  const double mass = bd->mass.value, dmass = dval(c, bd->mass);
  double g[3], dg[3], I[6], dI[6], S[3][3], dS[3][3];
  for (int k = 0; k < 3; k++) g[k] = bd->com[k].value, dg[k] = dval(c, bd->com[k]);
  for (int k = 0; k < 6; k++) I[k] = bd->inertia[k].value, dI[k] = dval(c, bd->inertia[k]);
  second_moment(c->dim, I, S);
  second_moment(c->dim, dI, dS); /* linear in the inertia entries */
  /* r(p) = O + sum_k p_k E_k: M += integral of J(p)^T J(p) dm over the body */
  c->mass_first = m->nmass;
  const int O = m->body_origin[b];
  const int* E = m->body_axes + 3 * b;
  add_mass_form(c, O, O, mass, dmass);
  for (int k = 0; k < c->dim; k++) {
    double mg = mass * g[k], dmg = dmass * g[k] + mass * dg[k];
    add_mass_form(c, O, E[k], mg, dmg);
    add_mass_form(c, E[k], O, mg, dmg);
    for (int l = 0; l < c->dim; l++)
      add_mass_form(c, E[k], E[l], mg * g[l] + S[k][l], dmg * g[l] + mg * dg[l] + dS[k][l]);
  }
  /* gravity: Q += m J_com^T g */
  const int G = m->body_com[b];
  mb_lvec_add_jtw(m, G, mass, m->gravity, m->gravity_force);
  mb_lvec_add_jtw(m, G, dmass, m->gravity, dm->gravity_force);
  mb_lvec_add_jtw(dm, G, mass, m->gravity, dm->gravity_force);
  mb_lvec_add_jtw(m, G, mass, dm->gravity, dm->gravity_force);
}

/* Penalty scale of each constraint. The augmented Lagrangian term alpha Phi_q^T Phi_q meets the
   mass matrix through c_i = alpha beta h^2 mu_i, with mu_i = sum_j Phi_q,ij^2 / M_jj the inverse
   of the mass the constraint moves: the multiplier update converges by 1 / (1 + c_i) per Newton
   iteration, and the Newton matrix loses about c_i units of round-off in M. Light bodies under a
   single alpha reach c_i ~ 1e8 and their motion turns noisy; capping c_i at 1e4 (scale
   1e4 / c_i) keeps both fast convergence and accuracy. When the model sets no alpha, c_i is also
   raised to at least 1e2: light bodies at small steps (c_i ~ 1) converge too slowly to meet the
   Newton tolerance, which then stops short of the solution. Rows are taken at the approximate
   initial configuration; massless coordinates (fixed by linear constraints) are left out. The
   penalty that would put every c_i at the cap is kept for the messages: near singular positions
   the multipliers converge by 1 / (1 + c_i sigma^2), and it passes where the defaults stall. */
static mb_status constraint_scales(mb_model* m) {
  const int nq = m->nq;
  double* q0 = calloc(nq + 1, sizeof(double));
  double* row = calloc(nq + 1, sizeof(double));
  if (!q0 || !row) {
    free(q0), free(row);
    return MB_ERR_MEMORY;
  }
  for (int e = 0; e < m->nelem; e++)
    if (m->elem_qadr[e] >= 0)
      memcpy(q0 + m->elem_qadr[e], m->elem_q0 + 3 * e, m->dim * sizeof(double));
  /* the diagonal of M */
  double* mdiag = calloc(nq + 1, sizeof(double));
  if (!mdiag) {
    free(q0), free(row);
    return MB_ERR_MEMORY;
  }
  for (int k = 0; k < m->nmass; k++)
    if (m->mass_block[2 * k] == m->mass_block[2 * k + 1])
      for (int r = 0; r < m->dim; r++)
        mdiag[m->mass_block[2 * k] * m->dim + r] += m->mass[9 * k + 4 * r];
  const double abh2 = m->opt.penalty * m->opt.beta * m->opt.step * m->opt.step;
  double c_min = INFINITY;
  for (int i = 0; i < m->ncon; i++) {
    memset(row, 0, sizeof(double) * nq);
    mb_con_eval(m, m->con_kind[i], m->con_lvec + 4 * i, m->con_value[i], m->con_func[i], 0, q0,
                NULL, row, NULL);
    double mu = 0;
    for (int j = 0; j < nq; j++)
      if (mdiag[j] > 0) mu += row[j] * row[j] / mdiag[j];
    const double c = abh2 * mu;
    m->con_scale[i] = mb_penalty_scale(c, m->opt.penalty_auto);
    if (c > 0) c_min = fmin(c_min, c);
  }
  if (isfinite(c_min)) {
    /* rounded up to two digits, as the messages print it */
    const double at_cap = m->opt.penalty * MB_PENALTY_C_CAP / c_min,
                 unit = pow(10, floor(log10(at_cap)) - 1);
    m->penalty_at_cap = ceil(at_cap / unit) * unit;
  }
  free(q0), free(row), free(mdiag);
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   sensors */

/* The outputs of sensor s; for the multipliers, the most a sensor gives, their count known once
   the joint's rows exist (sensor_setup reads it there). */
static int sensor_columns(const mb_desc* d, const mb_sensor_desc* s) {
  const int dim = d->dim;
  if (s->component >= 0) return 1;
  switch (s->type) {
    case MB_SENSOR_POINT_POSITION:
    case MB_SENSOR_POINT_VELOCITY:
    case MB_SENSOR_POINT_ACCELERATION:
    case MB_SENSOR_REACTION_FORCE:
      return dim;
    case MB_SENSOR_BODY_ANGULAR_VELOCITY:
    case MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY:
    case MB_SENSOR_BODY_ANGLES:
    case MB_SENSOR_REACTION_TORQUE:
      return dim == 2 ? 1 : 3;
    case MB_SENSOR_MULTIPLIERS:
      return MB_SENSOR_VALUES;
    case MB_SENSOR_FRICTION_FORCE: /* one per rate */
      return mb_joint_friction_rates(d->joint[s->joint].type);
    default:
      return 1;
  }
}

static mb_status sensor_setup(compiler* c) {
  mb_model* m = c->m;
  static const char* axis_names[3] = {"x", "y", "z"};
  static const char* angle_names[3] = {"yaw", "pitch", "roll"};
  static const char* sleeve_names[2] = {"torque", "force"};
  for (int i = 0; i < c->d->nsensor; i++) {
    const mb_sensor_desc* s = &c->d->sensor[i];
    m->sensor_type[i] = s->type;
    m->sensor_component[i] = s->component;
    int* ref = m->sensor_ref + 2 * i;
    ref[0] = ref[1] = -1;
    switch (s->type) {
      case MB_SENSOR_POINT_POSITION:
      case MB_SENSOR_POINT_VELOCITY:
      case MB_SENSOR_POINT_ACCELERATION:
        ref[0] = marker_index(c, s->body, s->marker);
        break;
      case MB_SENSOR_BODY_ANGULAR_VELOCITY:
      case MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY:
      case MB_SENSOR_BODY_ANGLES:
        ref[0] = s->body;
        break;
      case MB_SENSOR_JOINT_COORDINATE:
      case MB_SENSOR_JOINT_RATE:
        ref[0] = s->joint, ref[1] = s->coord;
        break;
      case MB_SENSOR_SPRING_LENGTH:
      case MB_SENSOR_SPRING_FORCE:
      case MB_SENSOR_CONTROL:
      case MB_SENSOR_CONTROL_ERROR:
        ref[0] = s->force;
        break;
      case MB_SENSOR_REACTION_FORCE:
      case MB_SENSOR_REACTION_TORQUE:
      case MB_SENSOR_MULTIPLIERS:
      case MB_SENSOR_FRICTION_FORCE:
      case MB_SENSOR_NORMAL_FORCE:
        ref[0] = s->joint, ref[1] = s->joint_frame;
        break;
      default:
        break;
    }
    const int ncol =
        s->type == MB_SENSOR_MULTIPLIERS ? m->joint_rownum[s->joint] : sensor_columns(c->d, s);
    if (ncol > MB_SENSOR_VALUES)
      return mb_error_set(c->err, MB_ERR_MODEL,
                          "sensors[%d] (%s): joint %s has %d multipliers, more than the %d an "
                          "output holds",
                          i, s->name, c->d->joint[s->joint].name, ncol, MB_SENSOR_VALUES);
    m->sensor_outadr[i] = m->nout;
    m->sensor_outnum[i] = ncol;
    int angles = s->type == MB_SENSOR_BODY_ANGLES && c->dim == 3;
    int planar_rot =
        (s->type == MB_SENSOR_BODY_ANGLES || s->type == MB_SENSOR_BODY_ANGULAR_VELOCITY ||
         s->type == MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY || s->type == MB_SENSOR_REACTION_TORQUE) &&
        c->dim == 2;
    for (int k = 0; k < ncol; k++) {
      char* name = m->out_name + MB_LABEL_LEN * m->nout++;
      if (ncol == 1 || planar_rot)
        snprintf(name, MB_LABEL_LEN, "%s", s->name);
      else if (s->type == MB_SENSOR_MULTIPLIERS || k >= 3)
        snprintf(name, MB_LABEL_LEN, "%s.%d", s->name, k + 1); /* the joint's rows, in order */
      else
        snprintf(name, MB_LABEL_LEN, "%s.%s", s->name,
                 angles                                             ? angle_names[k]
                 : ncol == 2 && s->type == MB_SENSOR_FRICTION_FORCE ? sleeve_names[k]
                                                                    : axis_names[k]);
    }
  }
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   controllers */

int mb_model_output(const mb_model* m, const char* name) {
  for (int k = 0; k < m->nout; k++)
    if (!strcmp(m->out_name + MB_LABEL_LEN * k, name)) return k;
  return -1;
}

static mb_status controller_setup(compiler* c) {
  mb_model *m = c->m, *dm = c->dm;
  const mb_desc* d = c->d;
  for (int i = 0; i < d->ncontroller; i++) {
    const mb_controller_desc* cd = &d->controller[i];
    const int elem = c->ctrl_elem[i];
    m->ctrl_qadr[i] = m->elem_qadr[elem];
    const mb_real g[4] = {cd->kp, cd->ki, cd->kd, cd->saturation};
    for (int k = 0; k < 4; k++) {
      const int used = k < 3 || cd->has_saturation;
      m->ctrl_gain[4 * i + k] = used ? g[k].value : 0;
      dm->ctrl_gain[4 * i + k] = used ? dval(c, g[k]) : 0;
    }
    m->ctrl_ref[i] = cd->has_reference ? add_func(c, &cd->reference) : -1;
    m->ctrl_actuator[i] = cd->actuator;
    m->ctrl_lvec[i] = cd->actuator == MB_ACTUATOR_FORCE
                          ? m->marker_point[marker_index(c, cd->body, cd->marker)]
                          : -1;
    m->ctrl_body[i] = cd->actuator == MB_ACTUATOR_TORQUE ? cd->body : -1;
    double dir[3] = {cd->direction[0], cd->direction[1], cd->direction[2]};
    if (!mbu_normalize3(dir))
      return mb_error_set(c->err, MB_ERR_MODEL, "controllers[%d] (%s): zero actuator direction", i,
                          cd->name);
    memcpy(m->ctrl_dir + 3 * i, dir, sizeof dir);

    /* error terms: output columns; the derivative needs point positions, whose rate is J qd */
    const int needs_rate = cd->kd.param >= 0 || cd->kd.expr > 0 || cd->kd.value != 0;
    m->ctrl_termadr[i] = m->ncterm;
    m->ctrl_termnum[i] = cd->nterm;
    for (int j = 0; j < cd->nterm; j++) {
      const int k = m->ncterm++, col = mb_model_output(m, cd->term[j].output);
      int comp = 0, s = col >= 0 ? mb_column_sensor(m, col, &comp) : -1;
      if (col < 0)
        return mb_error_set(c->err, MB_ERR_MODEL,
                            "controllers[%d] (%s): no output column \"%s\" (declare it in "
                            "\"outputs\")",
                            i, cd->name, cd->term[j].output);
      if (m->sensor_type[s] == MB_SENSOR_CONTROL || m->sensor_type[s] == MB_SENSOR_CONTROL_ERROR)
        return mb_error_set(c->err, MB_ERR_MODEL,
                            "controllers[%d] (%s): the error cannot use the control output "
                            "\"%s\"",
                            i, cd->name, cd->term[j].output);
      /* a force from the multipliers would have to be converged inside the step */
      if (mb_output_reads_multipliers(m, col))
        return mb_error_set(c->err, MB_ERR_MODEL,
                            "controllers[%d] (%s): the error cannot use the reaction output "
                            "\"%s\" (it reads the joint's multipliers)",
                            i, cd->name, cd->term[j].output);
      const int point = m->sensor_type[s] == MB_SENSOR_POINT_POSITION;
      if (needs_rate && !point)
        return mb_error_set(c->err, MB_ERR_MODEL,
                            "controllers[%d] (%s).kd: the derivative term needs point-position "
                            "outputs, and \"%s\" is not one",
                            i, cd->name, cd->term[j].output);
      m->cterm_column[k] = col;
      m->cterm_weight[k] = cd->term[j].weight;
      m->cterm_lvec[k] = point ? m->marker_point[m->sensor_ref[2 * s]] : -1;
      m->cterm_comp[k] = comp;
    }

    /* the state starts at rest at zero: prescribed value and rate of every coordinate */
    double W[9], dW[9] = {0};
    W_identity(1, W);
    const int lv = lvec_begin(c);
    lvec_add_elem(c, lv, elem, W, dW);
    for (int r = 0; r < c->dim; r++) {
      const int p = m->npres++;
      m->pres_kind[p] = MB_CON_DOT;
      int* plv = m->pres_lvec + 4 * p;
      plv[0] = lv, plv[1] = c->ex[r], plv[2] = plv[3] = -1;
      m->pres_has_value[p] = m->pres_has_rate[p] = 1;
      m->pres_value[p] = m->pres_rate[p] = 0;
    }
  }
  m->nctrl = d->ncontroller;
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   functionals */

static mb_status functional_setup(compiler* c) {
  mb_model* m = c->m;
  for (int f = 0; f < c->d->nfunctional; f++) {
    const mb_functional_desc* fd = &c->d->functional[f];
    snprintf(m->functional_name + MB_NAME_LEN * f, MB_NAME_LEN, "%s", fd->name);
    for (int j = 0; j < fd->nterm; j++) {
      const mb_fterm_desc* term = &fd->term[j];
      const int col = mb_model_output(m, term->output);
      if (col < 0)
        return mb_error_set(c->err, MB_ERR_MODEL,
                            "functionals[%d] (%s): no output column \"%s\" (declare it in "
                            "\"outputs\"; vector outputs have columns name.x, name.y, ...)",
                            f, fd->name, term->output);
      int comp, sensor = mb_column_sensor(m, col, &comp);
      if (m->sensor_type[sensor] == MB_SENSOR_FRICTION_FORCE ||
          m->sensor_type[sensor] == MB_SENSOR_NORMAL_FORCE)
        return mb_error_set(c->err, MB_ERR_MODEL,
                            "functionals[%d] (%s): the output \"%s\" (a joint's friction) has no "
                            "derivatives; a functional can use the joint's reaction outputs",
                            f, fd->name, term->output);
      int i = m->nfterm++;
      m->fterm_functional[i] = f;
      m->fterm_column[i] = col;
      m->fterm_shape[i] = term->shape;
      m->fterm_final[i] = term->final;
      m->fterm_weight[i] = term->weight.value;
      m->fterm_eps[i] = term->epsilon.value;
      c->dm->fterm_weight[i] = dval(c, term->weight);
      c->dm->fterm_eps[i] = dval(c, term->epsilon);
      m->fterm_ref[i] = term->has_reference ? add_func(c, &term->reference) : -1;
    }
  }
  m->nfunctional = c->d->nfunctional;
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   the compiler */

static caps model_caps(const compiler* c, int nq) {
  const mb_desc* d = c->d;
  caps k;
  memset(&k, 0, sizeof k);
  int natt = 0;
  for (int b = 0; b < d->nbody; b++) natt += c->base[b].natt;
  k.nelem = c->nelem;
  k.nbody = d->nbody;
  k.nmarker = c->nmk;
  k.njoint = d->njoint;
  k.nforce = d->nforce;
  k.nsensor = d->nsensor;
  k.npres = d->nprescribe;
  k.nq = nq;
  /* linear vectors: markers (4), bodies (origin, axes, com, base), extra elements, joints,
     prescriptions, constants */
  k.nlvec = 4 * c->nmk + 10 * d->nbody + natt + 3 * d->njoint + 4 * d->nprescribe + 8;
  k.nterm = 8 * k.nlvec;
  /* a joint's rows: 3 at most when it shares elements, 6 when explicit */
  k.ncon = 6 * d->nbody + 3 * natt + 6 * d->njoint + d->ndriver;
  k.nfunc = d->ndriver + 3 * d->nforce;
  k.nfuncdata = 0;
  for (int i = 0; i < d->ndriver; i++) k.nfuncdata += func_storage(&d->driver[i].func);
  for (int i = 0; i < d->nforce; i++)
    for (int j = 0; j < 3; j++) k.nfuncdata += func_storage(&d->force[i].func[j]);
  k.nout = 0;
  for (int i = 0; i < d->nsensor; i++) k.nout += sensor_columns(d, &d->sensor[i]);
  k.nctrl = d->ncontroller;
  k.npres += d->dim * d->ncontroller;
  k.nlvec += d->ncontroller;
  for (int i = 0; i < d->ncontroller; i++) {
    k.ncterm += d->controller[i].nterm;
    if (d->controller[i].has_reference)
      k.nfunc++, k.nfuncdata += func_storage(&d->controller[i].reference);
  }
  /* a body's mass couples its base elements (an origin and at most three others); a
     controller's its own block */
  k.nmass = 16 * d->nbody + d->ncontroller;
  k.nfunctional = d->nfunctional;
  for (int f = 0; f < d->nfunctional; f++)
    for (int j = 0; j < d->functional[f].nterm; j++) {
      const mb_fterm_desc* term = &d->functional[f].term[j];
      k.nfterm++;
      if (term->has_reference) k.nfunc++, k.nfuncdata += func_storage(&term->reference);
    }
  return k;
}

static mb_status build_model(compiler* c) {
  const mb_desc* d = c->d;
  mb_model *m = c->m, *dm = c->dm;
  mb_status st;
  for (int r = 0; r < 3; r++) dm->gravity[r] = r < c->dim ? dval(c, d->gravity[r]) : 0;

  /* constants: global unit vectors */
  for (int r = 0; r < 3; r++) {
    double e[3] = {0, 0, 0};
    e[r] = 1;
    c->ex[r] = lvec_constant(c, e);
    m->unit_lvec[r] = dm->unit_lvec[r] = c->ex[r];
  }

  /* markers: points may depend on parameters, directions do not */
  for (int i = 0; i < c->nmk; i++) {
    const mb_local_frame* f = &c->mk[i];
    m->marker_body[i] = f->body;
    m->marker_point[i] = lvec_body_map(c, f->body, 1, f->p, f->dp);
    if (c->dim == 2) {
      m->marker_axis[i] = lvec_body_map(c, f->body, 0, f->x, zero3);
      m->marker_ref[i] = -1;
      m->marker_third[i] = lvec_body_map(c, f->body, 0, f->y, zero3);
    } else {
      m->marker_axis[i] = lvec_body_map(c, f->body, 0, f->z, zero3);
      m->marker_ref[i] = lvec_body_map(c, f->body, 0, f->x, zero3);
      m->marker_third[i] = lvec_body_map(c, f->body, 0, f->y, zero3);
    }
  }

  /* bodies: frame, centre of mass, rigid and extra-element constraints, inertia */
  c->fixed_by = malloc(sizeof(int) * (c->nelem + 1));
  c->fixed_local = malloc(sizeof(double) * 3 * (c->nelem + 1));
  if (!c->fixed_by || !c->fixed_local) return mb_error_set(c->err, MB_ERR_MEMORY, "out of memory");
  for (int e = 0; e < c->nelem; e++) c->fixed_by[e] = -1;
  for (int b = 0; b < d->nbody; b++) {
    const mb_body_desc* bd = &d->body[b];
    m->body_origin[b] = lvec_body_map(c, b, 1, zero3, zero3);
    for (int k = 0; k < 3; k++) {
      double e[3] = {0, 0, 0};
      e[k] = 1;
      m->body_axes[3 * b + k] = k < c->dim ? lvec_body_map(c, b, 0, e, zero3) : -1;
    }
    const double com[3] = {bd->com[0].value, bd->com[1].value, bd->com[2].value};
    const double dcom[3] = {dval(c, bd->com[0]), dval(c, bd->com[1]), dval(c, bd->com[2])};
    m->body_com[b] = lvec_body_map(c, b, 1, com, dcom);
    m->body_mass[b] = bd->mass.value;
    dm->body_mass[b] = dval(c, bd->mass);
    snprintf(m->body_name + MB_NAME_LEN * b, MB_NAME_LEN, "%s", bd->name);
    if ((st = rigid_constraints(c, b)) != MB_OK) return st;
    if ((st = extra_element_constraints(c, b)) != MB_OK) return st;
  }
  for (int b = 0; b < d->nbody; b++) body_inertia(c, b);
  /* controller states: unit mass on each coordinate of their block */
  for (int i = 0; i < d->ncontroller; i++) {
    const int w = m->elem_qadr[c->ctrl_elem[i]] / c->dim;
    c->mass_first = m->nmass;
    const int k = mass_block(c, w, w);
    for (int r = 0; r < c->dim; r++) m->mass[9 * k + 4 * r] = 1;
  }

  /* joints */
  for (int j = 0; j < d->njoint; j++) {
    if (d->joint[j].friction.enabled && !mb_joint_friction_rates(d->joint[j].type))
      return mb_error_set(c->err, MB_ERR_MODEL,
                          "joints[%d] (%s): friction is available on revolute, prismatic, "
                          "cylindrical and spherical joints only",
                          j, d->joint[j].name);
    m->joint_type[j] = d->joint[j].type;
    snprintf(m->joint_name + MB_NAME_LEN * j, MB_NAME_LEN, "%s", d->joint[j].name);
    joint_measures(c, j);
    joint_constraints(c, j);
  }

  /* drivers: the joint coordinate follows f(t) */
  for (int i = 0; i < d->ndriver; i++) {
    const mb_driver_desc* dr = &d->driver[i];
    int lv[4];
    int kind = measure_constraint(m, dr->joint, dr->coord, lv);
    char label[MB_LABEL_LEN];
    snprintf(label, sizeof label, "driver %s", dr->name);
    c->driver_row[i] =
        add_con(c, kind, lv[0], lv[1], lv[2], lv[3], 0, 0, add_func(c, &dr->func), label);
  }
  joint_rows(c);

  /* prescribed initial coordinates */
  for (int i = 0; i < d->nprescribe; i++) {
    const mb_prescribe_desc* p = &d->prescribe[i];
    int* lv = m->pres_lvec + 4 * i;
    switch (p->type) {
      case MB_PRESCRIBE_JOINT:
        m->pres_kind[i] = measure_constraint(m, p->joint, p->coord, lv);
        break;
      case MB_PRESCRIBE_BODY_ANGLE:
        m->pres_kind[i] = MB_CON_ANGLE;
        lv[0] = m->body_axes[3 * p->body], lv[1] = c->ex[1];
        lv[2] = lv[0], lv[3] = c->ex[0];
        break;
      case MB_PRESCRIBE_POINT:
        m->pres_kind[i] = MB_CON_DOT;
        lv[0] = m->marker_point[marker_index(c, p->body, p->marker)];
        lv[1] = c->ex[p->component], lv[2] = lv[3] = -1;
        break;
    }
    m->pres_has_value[i] = p->has_value;
    m->pres_value[i] = p->value.value;
    m->pres_has_rate[i] = p->has_rate;
    m->pres_rate[i] = p->rate.value;
    dm->pres_value[i] = dval(c, p->value);
    dm->pres_rate[i] = dval(c, p->rate);
  }
  m->npres = d->nprescribe;

  /* force elements */
  for (int i = 0; i < d->nforce; i++) {
    const mb_force_desc* f = &d->force[i];
    m->force_type[i] = f->type;
    snprintf(m->force_name + MB_NAME_LEN * i, MB_NAME_LEN, "%s", f->name);
    m->force_lvec[2 * i] = m->force_lvec[2 * i + 1] = -1;
    m->force_body[i] = f->body[0];
    for (int k = 0; k < 3; k++) m->force_func[3 * i + k] = -1;
    if (f->type == MB_FORCE_SPRING) {
      m->force_lvec[2 * i] = m->marker_point[marker_index(c, f->body[0], f->marker[0])];
      m->force_lvec[2 * i + 1] = m->marker_point[marker_index(c, f->body[1], f->marker[1])];
      force_scalars(c, i, f->stiffness, f->damping, f->natural_length, f->force);
      continue;
    }
    if (f->type == MB_FORCE_TYRE) {
      int mk = marker_index(c, f->body[0], f->marker[0]);
      m->force_lvec[2 * i] = m->marker_point[mk];
      m->force_lvec[2 * i + 1] = m->marker_axis[mk];
      force_scalars(c, i, f->stiffness, f->damping, f->radius, (mb_real){0, -1, 0});
      for (int k = 0; k < 3; k++) {
        m->force_road[3 * i + k] = f->road[k];
        m->force_slip[3 * i + k] = f->slip[k].value,
                              dm->force_slip[3 * i + k] = dval(c, f->slip[k]);
      }
      continue;
    }
    if (f->type == MB_FORCE_POINT)
      m->force_lvec[2 * i] = m->marker_point[marker_index(c, f->body[0], f->marker[0])];
    int ncomp = f->type == MB_FORCE_TORQUE && c->dim == 2 ? 1 : c->dim;
    for (int k = 0; k < ncomp; k++)
      if (f->func[k].ncoef > 0) m->force_func[3 * i + k] = add_func(c, &f->func[k]);
  }

  if ((st = constraint_scales(m)) != MB_OK) return st;
  if ((st = sensor_setup(c)) != MB_OK) return st;
  if ((st = controller_setup(c)) != MB_OK) return st;
  return functional_setup(c);
}

/* The tangent model shares the model's sizes and integer arrays. */
static void copy_structure(const mb_model* m, mb_model* dm, caps c) {
#define MB_COPY_STRUCTURE(type, name, count) \
  if (sizeof(type) != sizeof(double)) memcpy(dm->name, m->name, sizeof(type) * (size_t)(count));
  MB_MODEL_ARRAYS(MB_COPY_STRUCTURE)
#undef MB_COPY_STRUCTURE
  dm->dim = m->dim, dm->nq = m->nq, dm->ncon = m->ncon, dm->nelem = m->nelem;
  dm->nlvec = m->nlvec, dm->nterm = m->nterm, dm->nbody = m->nbody, dm->nmarker = m->nmarker;
  dm->njoint = m->njoint, dm->nforce = m->nforce, dm->nfunc = m->nfunc;
  dm->nfuncdata = m->nfuncdata, dm->npres = m->npres, dm->nsensor = m->nsensor;
  dm->nout = m->nout, dm->nfunctional = m->nfunctional, dm->nfterm = m->nfterm;
  dm->nmass = m->nmass;
  dm->opt = m->opt;
}

/* The time span and step as set (the loader checks them, but the command line and the C API
   change them afterwards): finite, positive, and at most MB_MAX_STEPS steps. */
static mb_status check_time_span(const mb_settings* s, mb_error* err) {
  if (!(s->step > 0 && s->step <= DBL_MAX))
    return mb_error_set(err, MB_ERR_MODEL, "simulation.step: must be a positive number (got %g)",
                        s->step);
  if (!(s->t_end > 0 && s->t_end <= DBL_MAX))
    return mb_error_set(err, MB_ERR_MODEL, "simulation.t_end: must be a positive number (got %g)",
                        s->t_end);
  if (s->step > s->t_end)
    return mb_error_set(err, MB_ERR_MODEL, "simulation.step: must be <= t_end (got %g > %g)",
                        s->step, s->t_end);
  const double steps = s->t_end / s->step;
  if (!(steps <= (double)MB_MAX_STEPS))
    return mb_error_set(err, MB_ERR_MODEL,
                        "simulation: t_end / step = %g / %g = %.3g steps, more than the %.0e a run "
                        "may take; shorten t_end or lengthen the step",
                        s->t_end, s->step, steps, (double)MB_MAX_STEPS);
  return MB_OK;
}

long mb_step_count(const mb_model* m) {
  return lround(m->opt.t_end / m->opt.step);
}

/* Compiles d; with seed >= 0 also the tangent model with respect to parameter `seed`. */
/* Each element's body and local value, from the bodies' attachments (the first body wins for a
   shared element; fixed elements and controller states have none). */
static void element_owners(const compiler* c) {
  for (int e = 0; e < c->nelem; e++) c->m->elem_body[e] = c->dm->elem_body[e] = -1;
  for (int b = c->d->nbody - 1; b >= 0; b--)
    for (int i = 0; i < c->base[b].natt; i++) {
      const attach* a = &c->base[b].att[i];
      if (c->elem_fixed[a->elem]) continue;
      c->m->elem_body[a->elem] = c->dm->elem_body[a->elem] = b;
      memcpy(c->m->elem_local + 3 * a->elem, a->local, 3 * sizeof(double));
      memcpy(c->dm->elem_local + 3 * a->elem, a->dlocal, 3 * sizeof(double));
    }
}

static mb_status compile(const mb_desc* d, int seed, int exploded, mb_model** out, mb_model** dout,
                         mb_error* err) {
  *out = NULL;
  if (dout) *dout = NULL;
  mb_error_clear(err);
  if (!d || (d->dim != 2 && d->dim != 3) || d->nbody < 1)
    return mb_error_set(err, MB_ERR_ARGUMENT,
                        "model: needs dimension 2 or 3 and at least one body");
  if (check_time_span(&d->settings, err) != MB_OK) return err->status;

  compiler c;
  memset(&c, 0, sizeof c);
  c.d = d;
  c.err = err;
  c.dim = d->dim;
  c.seed = seed;
  c.exploded = exploded;
  mb_status st = MB_ERR_MEMORY;

  /* markers, ground first */
  c.mk_adr = calloc(d->nbody + 1, sizeof(int));
  c.R = calloc(d->nbody, sizeof *c.R);
  c.base = calloc(d->nbody, sizeof *c.base);
  if (!c.mk_adr || !c.R || !c.base) goto fail;
  c.nmk = mb_marker_count(d, c.mk_adr);
  for (int b = 0; b < d->nbody; b++) mb_pose_rotation(c.dim, d->body[b].orientation, c.R[b]);
  c.mk = calloc(c.nmk + 1, sizeof *c.mk);
  c.parent = calloc(3 * c.nmk + 1, sizeof(int));
  c.active = calloc(3 * c.nmk + 1, sizeof(int));
  c.node_elem = calloc(3 * c.nmk + 1, sizeof(int));
  c.explicit_joint = calloc(d->njoint + 1, sizeof(int));
  c.driver_row = calloc(d->ndriver + 1, sizeof(int));
  if (!c.mk || !c.parent || !c.active || !c.node_elem || !c.explicit_joint || !c.driver_row)
    goto fail;
  for (int i = 0; i < 3 * c.nmk; i++) c.parent[i] = i;
  mb_local_frames(d, seed, c.mk_adr, (const double(*)[9])c.R, c.mk);
  mark_explicit_joints(&c);

  /* shared elements, then each body's attachments and base */
  share_joint_nodes(&c);
  share_body_directions(&c);
  if ((st = create_shared_elements(&c)) != MB_OK) goto fail;
  st = MB_ERR_MEMORY;
  for (int b = 0; b < d->nbody; b++) {
    c.base[b].att = calloc(3 * d->body[b].nmarker + 4, sizeof(attach));
    if (!c.base[b].att) goto fail;
  }
  for (int i = 0; i < 3 * c.nmk; i++) {
    int b = c.mk[i / 3].body;
    if (!c.active[i] || b < 0) continue;
    if ((st = body_attach(&c, b, c.node_elem[i], node_local(&c, i), node_dlocal(&c, i))) != MB_OK)
      goto fail;
  }
  for (int b = 0; b < d->nbody; b++)
    if ((st = choose_base(&c, b)) != MB_OK) goto fail;

  /* controller states, after the bodies' elements */
  st = MB_ERR_MEMORY;
  c.ctrl_elem = calloc(d->ncontroller + 1, sizeof(int));
  if (!c.ctrl_elem) goto fail;
  for (int i = 0; i < d->ncontroller; i++) {
    const double zero[3] = {0, 0, 0};
    if ((c.ctrl_elem[i] = new_elem(&c, MB_ELEM_STATE, 0, zero, NULL)) < 0) goto fail;
  }

  /* coordinates of the free elements */
  int nq = 0;
  caps k = model_caps(&c, 0);
  int* qadr = calloc(c.nelem + 1, sizeof(int));
  if (!qadr) goto fail;
  for (int e = 0; e < c.nelem; e++) {
    qadr[e] = c.elem_fixed[e] ? -1 : nq;
    if (!c.elem_fixed[e]) nq += c.dim;
  }
  k.nq = nq;
  k.nelem = c.nelem;
  c.keys = calloc(k.ncon + 1, sizeof *c.keys);
  c.m = model_alloc(k);
  c.dm = model_alloc(k);
  if (!c.m || !c.dm || !c.keys) {
    free(qadr);
    st = MB_ERR_MEMORY;
    goto fail;
  }
  mb_model* m = c.m;
  m->dim = c.dm->dim = c.dim;
  m->exploded = c.dm->exploded = exploded;
  m->nq = c.dm->nq = nq;
  m->nelem = c.nelem;
  m->nbody = d->nbody;
  m->nmarker = c.nmk;
  m->njoint = d->njoint;
  m->nforce = d->nforce;
  m->nsensor = d->nsensor;
  m->opt = d->settings;
  for (int r = 0; r < 3; r++) m->gravity[r] = r < c.dim ? d->gravity[r].value : 0;
  element_owners(&c);
  for (int e = 0; e < c.nelem; e++) {
    m->elem_kind[e] = c.elem_kind[e];
    m->elem_qadr[e] = qadr[e];
    memcpy(m->elem_q0 + 3 * e, c.elem_val + 3 * e, 3 * sizeof(double));
    if (c.elem_fixed[e]) memcpy(c.dm->elem_q0 + 3 * e, c.elem_dval + 3 * e, 3 * sizeof(double));
  }
  free(qadr);
  if ((st = build_model(&c)) != MB_OK) goto fail;
  if (m->ncon > k.ncon || m->nlvec > k.nlvec || m->nterm > k.nterm) {
    st = mb_error_set(err, MB_ERR_MODEL, "model: internal capacity exceeded");
    goto fail;
  }
  copy_structure(c.m, c.dm, k);
  *out = c.m;
  c.m = NULL;
  if (dout) *dout = c.dm, c.dm = NULL;
  st = MB_OK;

fail:
  if (st == MB_ERR_MEMORY && err && err->status == MB_OK)
    mb_error_set(err, MB_ERR_MEMORY, "model: out of memory while compiling");
  mb_model_free_natural(c.m);
  mb_model_free_natural(c.dm);
  if (c.base)
    for (int b = 0; b < d->nbody; b++) free(c.base[b].att);
  free(c.base);
  free(c.mk_adr);
  free(c.R);
  free(c.mk);
  free(c.parent);
  free(c.active);
  free(c.node_elem);
  free(c.explicit_joint);
  free(c.driver_row);
  free(c.keys);
  free(c.elem_kind);
  free(c.elem_fixed);
  free(c.elem_val);
  free(c.elem_dval);
  free(c.ctrl_elem);
  free(c.fixed_by);
  free(c.fixed_local);
  return st;
}

static mb_status compile_with_structure(const mb_desc* d, int exploded, mb_model** out,
                                        mb_error* err) {
  mb_status st = compile(d, -1, exploded, out, NULL, err);
  if (st == MB_OK && (st = mb_structure_build(*out, err)) != MB_OK) {
    mb_model_free_natural(*out);
    *out = NULL;
  }
  return st;
}

mb_status mb_compile_natural(const mb_desc* d, mb_model** out, mb_error* err) {
  return compile_with_structure(d, 0, out, err);
}

mb_status mb_compile_exploded(const mb_desc* d, mb_model** out, mb_error* err) {
  return compile_with_structure(d, 1, out, err);
}

/* 1 when parameter p is bound to a marker direction (not differentiable by this compiler). */
static int binds_direction(const mb_desc* d, int p, char* where, size_t len) {
  for (int b = -1; b < d->nbody; b++) {
    int n = b < 0 ? d->nground_marker : d->body[b].nmarker;
    const mb_marker_desc* mk = b < 0 ? d->ground_marker : d->body[b].marker;
    for (int i = 0; i < n; i++)
      for (int k = 0; k < 3; k++)
        if ((mk[i].has_axis && mb_real_depends(d, &mk[i].axis[k], p)) ||
            (mk[i].has_ref && mb_real_depends(d, &mk[i].ref[k], p))) {
          snprintf(where, len, "%s.%s", b < 0 ? "ground" : d->body[b].name, mk[i].name);
          return 1;
        }
  }
  return 0;
}

/* A copy of m in a new allocation with the same layout. */
static mb_model* model_clone(const mb_model* m) {
  mb_model* c = malloc(sizeof *c);
  char* buffer = malloc(m->buffer_size);
  if (!c || !buffer) {
    free(c);
    free(buffer);
    return NULL;
  }
  *c = *m;
  memcpy(buffer, m->buffer, m->buffer_size);
  c->buffer = buffer;
  c->structure = NULL; /* clones are tangent models, which need no structure, */
  c->joint = NULL;     /* nor a formulation of their own */
#define MB_REBASE(type, name, count) \
  c->name = (type*)(void*)(buffer + ((const char*)m->name - (const char*)m->buffer));
  MB_MODEL_ARRAYS(MB_REBASE)
#undef MB_REBASE
  return c;
}

/* Zeroes every real array of a model; their slots run up to the next array of the block. */
static void zero_reals(mb_model* m) {
  char* starts[] = {
#define MB_START(type, name, count) (char*)m->name,
      MB_MODEL_ARRAYS(MB_START)
#undef MB_START
  };
  const int real[] = {
#define MB_IS_REAL(type, name, count) sizeof(type) == sizeof(double),
      MB_MODEL_ARRAYS(MB_IS_REAL)
#undef MB_IS_REAL
  };
  const int n = sizeof real / sizeof real[0];
  for (int i = 0; i < n; i++) {
    char* end = i + 1 < n ? starts[i + 1] : (char*)m->buffer + m->buffer_size;
    if (real[i]) memset(starts[i], 0, (size_t)(end - starts[i]));
  }
  m->gravity[0] = m->gravity[1] = m->gravity[2] = 0;
}

typedef struct binding_count {
  const mb_desc* d;
  int param, in_functions, elsewhere;
} binding_count;

/* an expression counts as elsewhere: only the whole compilation differentiates it */
static void count_binding(mb_real* r, int in_function, void* user) {
  binding_count* b = user;
  if (!mb_real_depends(b->d, r, b->param)) return;
  if (in_function && r->param == b->param)
    b->in_functions++;
  else
    b->elsewhere++;
}

mb_model* mb_model_zero_clone(const mb_model* m) {
  mb_model* z = model_clone(m);
  if (z) zero_reals(z);
  return z;
}

/* 1 when parameter p of d is bound only to coefficients of time functions (the walk only reads
   the description). */
static int bound_to_functions_only(const mb_desc* d, int p) {
  binding_count bound = {d, p, 0, 0};
  mb_desc_visit((mb_desc*)d, count_binding, &bound);
  return bound.elsewhere == 0;
}

/* Function data of the tangent of a parameter bound only to function coefficients: 1 at those
   coefficients, and the spline curvatures of tables, which are linear in the values. */
static int function_tangent_data(const mb_model* m, int param, double* data) {
  memset(data, 0, sizeof(double) * m->nfuncdata);
  for (int f = 0; f < m->nfunc; f++) {
    const int adr = m->func_adr[f], n = m->func_num[f];
    int hit = 0;
    for (int j = 0; j < n; j++)
      if (m->func_param[adr + j] == param) data[adr + j] = 1, hit = 1;
    if (hit && m->func_type[f] == MB_FUNC_TABLE) {
      double* work = malloc(2 * n * sizeof(double));
      if (!work) return 0;
      mbu_spline_setup(n, m->func_data + adr + n, data + adr, data + adr + 2 * n, work);
      free(work);
    }
  }
  return 1;
}

mb_model* mbd_function_tangent(const mb_desc* d, const mb_model* m, const mb_model* zero,
                               int param) {
  if (!bound_to_functions_only(d, param)) return NULL;
  mb_model* dm = malloc(sizeof *dm);
  double* data = malloc(sizeof(double) * (m->nfuncdata + 1));
  if (!dm || !data || !function_tangent_data(m, param, data)) {
    free(dm);
    free(data);
    return NULL;
  }
  *dm = *zero;
  dm->func_data = data;
  dm->buffer = data; /* what mb_model_free releases; the rest belongs to `zero` */
  return dm;
}

mb_status mbd_model_tangent(const mb_desc* d, const mb_model* m, int param, mb_model** dm,
                            mb_error* err) {
  *dm = NULL;
  if (param < 0 || param >= d->nparam)
    return mb_error_set(err, MB_ERR_ARGUMENT, "parameter index %d out of range", param);
  char where[2 * MB_NAME_LEN + 2];
  if (binds_direction(d, param, where, sizeof where))
    return mb_error_set(err, MB_ERR_MODEL,
                        "parameters.%s: bound to a direction of marker %s; marker axes and "
                        "reference directions cannot be differentiated",
                        d->param_name[param], where);
  if (bound_to_functions_only(d, param)) {
    *dm = mb_model_zero_clone(m);
    if (*dm && !function_tangent_data(m, param, (*dm)->func_data)) {
      mb_model_free_natural(*dm);
      *dm = NULL;
    }
    return *dm ? MB_OK : mb_error_set(err, MB_ERR_MEMORY, "tangent model: out of memory");
  }
  mb_model* again = NULL;
  mb_status st = compile(d, param, m->exploded, &again, dm, err);
  if (st != MB_OK) return st;
  /* the layout must not depend on parameter values: same sizes as the model given */
  if (again->nq != m->nq || again->nlvec != m->nlvec || again->nterm != m->nterm ||
      again->ncon != m->ncon) {
    mb_model_free_natural(*dm);
    *dm = NULL;
    st = mb_error_set(err, MB_ERR_ARGUMENT,
                      "tangent model: the description no longer matches "
                      "the compiled model");
  }
  mb_model_free_natural(again);
  return st;
}

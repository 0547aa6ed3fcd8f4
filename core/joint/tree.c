/* The kinematic tree of the joint-coordinate formulation, compiled from a description
   (tree.h). */
#include "tree.h"

#include <stdlib.h>
#include <string.h>

#include "frames.h"

/* The tree joint of a description joint type. */
static mb_tree_joint tree_kind(mb_joint_type type) {
  switch (type) {
    case MB_JOINT_REVOLUTE:
      return MB_TREE_REVOLUTE;
    case MB_JOINT_PRISMATIC:
      return MB_TREE_PRISMATIC;
    case MB_JOINT_SPHERICAL:
      return MB_TREE_SPHERICAL;
    case MB_JOINT_CYLINDRICAL:
      return MB_TREE_CYLINDRICAL;
    case MB_JOINT_UNIVERSAL:
      return MB_TREE_UNIVERSAL;
    case MB_JOINT_PLANAR:
      return MB_TREE_PLANAR;
    default:
      return MB_TREE_FIXED;
  }
}

/* The number of joint coordinates of a tree joint. */
static int coordinate_count(mb_tree_joint kind, int dim) {
  switch (kind) {
    case MB_TREE_REVOLUTE:
    case MB_TREE_PRISMATIC:
      return 1;
    case MB_TREE_CYLINDRICAL:
    case MB_TREE_UNIVERSAL:
      return 2;
    case MB_TREE_PLANAR:
      return 3;
    case MB_TREE_SPHERICAL:
      return 4;
    case MB_TREE_FREE:
      return dim == 2 ? 3 : 7;
    default:
      return 0;
  }
}

/* A marker's frame as 12 numbers: its axes as the columns of a row-major rotation, its point. */
static void frame_from_marker(const mb_local_frame* f, double* out) {
  for (int r = 0; r < 3; r++)
    out[3 * r] = f->x[r], out[3 * r + 1] = f->y[r], out[3 * r + 2] = f->z[r];
  memcpy(out + 9, f->p, 3 * sizeof(double));
}

static void frame_identity(double* out) {
  memset(out, 0, 12 * sizeof(double));
  out[0] = out[4] = out[8] = 1;
}

void mb_tree_free(mb_tree* t) {
  if (!t) return;
  free(t->path_adr);
  free(t->order);
  free(t->inboard);
  free(t);
}

static mb_tree* tree_alloc(int nbody, int njoint) {
  mb_tree* t = calloc(1, sizeof *t);
  if (!t) return NULL;
  /* one block of ints (order and the 9 per-body arrays, cut, zbody: at most 7 coordinates a
     body) and one of doubles */
  const size_t nint = 17 * (size_t)nbody + (size_t)njoint;
  t->order = calloc(nint + 1, sizeof(int));
  t->inboard = calloc(37 * (size_t)nbody + 1, sizeof(double));
  if (!t->order || !t->inboard) {
    mb_tree_free(t);
    return NULL;
  }
  int* p = t->order + nbody;
  t->parent = p, p += nbody;
  t->joint = p, p += nbody;
  t->kind = p, p += nbody;
  t->reversed = p, p += nbody;
  t->zadr = p, p += nbody;
  t->znum = p, p += nbody;
  t->normadr = p, p += nbody;
  t->marker = p, p += 2 * nbody;
  t->cut = p, p += njoint;
  t->zbody = p; /* 7 nbody: the most coordinates (free spatial bodies) */
  double* x = t->inboard + 12 * nbody;
  t->outboard = x, x += 12 * nbody;
  t->mass = x, x += nbody;
  t->com = x, x += 3 * nbody;
  t->inertia = x;
  return t;
}

/* The inertia tensor (row-major 3 x 3) of a body's description. */
static void inertia_tensor(const mb_desc* d, int b, double* J) {
  const mb_real* I = d->body[b].inertia;
  memset(J, 0, 9 * sizeof(double));
  if (d->dim == 2) {
    J[8] = I[2].value;
    return;
  }
  J[0] = I[0].value, J[4] = I[1].value, J[8] = I[2].value;
  J[1] = J[3] = I[3].value, J[2] = J[6] = I[4].value, J[5] = J[7] = I[5].value;
}

mb_status mb_tree_compile(const mb_desc* d, mb_tree** out, mb_error* err) {
  *out = NULL;
  mb_error_clear(err);
  if (!d || (d->dim != 2 && d->dim != 3) || d->nbody < 1)
    return mb_error_set(err, MB_ERR_ARGUMENT,
                        "model: needs dimension 2 or 3 and at least one body");
  const int nb = d->nbody, nj = d->njoint;
  mb_status st = MB_ERR_MEMORY;
  mb_tree* t = tree_alloc(nb, nj);
  int* adr = calloc((size_t)nb + 1, sizeof(int));
  int* used = calloc((size_t)nj + 1, sizeof(int));
  int* queue = calloc((size_t)nb + 1, sizeof(int));
  double(*R)[9] = calloc((size_t)nb, sizeof *R);
  mb_local_frame* mk = NULL;
  if (!t || !adr || !used || !queue || !R) goto done;
  const int nmk = mb_marker_count(d, adr);
  mk = calloc((size_t)nmk + 1, sizeof *mk);
  if (!mk) goto done;
  for (int b = 0; b < nb; b++) mb_pose_rotation(d->dim, d->body[b].orientation, R[b]);
  mb_local_frames(d, -1, adr, (const double(*)[9])R, mk);
  t->dim = d->dim, t->nbody = nb;

  /* breadth first from the ground; an unreached body starts a subtree on a free joint. A joint
     with friction is always cut: its law reads the joint's reaction, which its rows' multipliers
     give */
  for (int b = 0; b < nb; b++) t->parent[b] = -2;
  for (int j = 0; j < nj; j++)
    if (d->joint[j].friction.enabled) used[j] = 1, t->cut[t->ncut++] = j;
  int head = 0, tail = 0, next_free = 0;
  for (int from = -1;;) {
    for (int j = 0; j < nj; j++) {
      const mb_joint_desc* jd = &d->joint[j];
      if (used[j] || (jd->body[0] != from && jd->body[1] != from)) continue;
      used[j] = 1;
      const int side = jd->body[0] == from ? 1 : 0, body = jd->body[side];
      if (body < 0 || t->parent[body] != -2) {
        t->cut[t->ncut++] = j;
        continue;
      }
      t->parent[body] = from, t->joint[body] = j, t->reversed[body] = side == 0;
      t->kind[body] = tree_kind(jd->type);
      t->marker[2 * body] = mb_marker_index(adr, jd->body[1 - side], jd->marker[1 - side]);
      t->marker[2 * body + 1] = mb_marker_index(adr, body, jd->marker[side]);
      frame_from_marker(&mk[t->marker[2 * body]], t->inboard + 12 * body);
      frame_from_marker(&mk[t->marker[2 * body + 1]], t->outboard + 12 * body);
      queue[tail++] = body;
    }
    if (head < tail) {
      from = queue[head++];
      continue;
    }
    while (next_free < nb && t->parent[next_free] != -2) next_free++;
    if (next_free == nb) break;
    from = next_free;
    t->parent[from] = -1, t->joint[from] = -1, t->kind[from] = MB_TREE_FREE;
    t->marker[2 * from] = t->marker[2 * from + 1] = -1;
    frame_identity(t->inboard + 12 * from);
    frame_identity(t->outboard + 12 * from);
    queue[tail++] = from;
    head++;
  }
  memcpy(t->order, queue, (size_t)nb * sizeof(int));

  /* coordinates in tree order, then the bodies' inertia */
  for (int k = 0; k < nb; k++) {
    const int b = t->order[k];
    t->zadr[b] = t->nz;
    t->znum[b] = coordinate_count((mb_tree_joint)t->kind[b], t->dim);
    for (int i = 0; i < t->znum[b]; i++) t->zbody[t->nz + i] = b;
    if (t->kind[b] == MB_TREE_SPHERICAL) t->normadr[t->nnorm++] = t->nz;
    if (t->kind[b] == MB_TREE_FREE && t->dim == 3) t->normadr[t->nnorm++] = t->nz + 3;
    t->nz += t->znum[b];
  }
  /* each body's path of joint coordinates from the ground */
  int npath = 0;
  for (int b = 0; b < nb; b++)
    for (int a = b; a >= 0; a = t->parent[a]) npath += t->znum[a];
  t->path_adr = malloc(((size_t)nb + 1 + (size_t)npath + 1) * sizeof(int));
  if (!t->path_adr) goto done;
  t->path = t->path_adr + nb + 1;
  npath = 0;
  for (int b = 0; b < nb; b++) {
    t->path_adr[b] = npath;
    for (int a = b; a >= 0; a = t->parent[a])
      for (int i = t->zadr[a]; i < t->zadr[a] + t->znum[a]; i++) t->path[npath++] = i;
  }
  t->path_adr[nb] = npath;
  for (int b = 0; b < nb; b++) {
    t->mass[b] = d->body[b].mass.value;
    for (int k = 0; k < 3; k++) t->com[3 * b + k] = d->body[b].com[k].value;
    inertia_tensor(d, b, t->inertia + 9 * b);
  }
  *out = t, t = NULL;
  st = MB_OK;
done:
  if (st == MB_ERR_MEMORY) mb_error_set(err, st, "model: out of memory building the joint tree");
  mb_tree_free(t);
  free(adr);
  free(used);
  free(queue);
  free(R);
  free(mk);
  return st;
}

mb_status mb_tree_frame_derivatives(const mb_tree* t, const mb_desc* d, int seed, double* dpoint,
                                    mb_error* err) {
  const int nb = t->nbody;
  int* adr = calloc((size_t)nb + 1, sizeof(int));
  double(*R)[9] = calloc((size_t)nb, sizeof *R);
  mb_local_frame* mk = adr && R ? calloc((size_t)mb_marker_count(d, adr) + 1, sizeof *mk) : NULL;
  if (!mk) {
    free(adr), free(R);
    return mb_error_set(err, MB_ERR_MEMORY, "model: out of memory differentiating the joint tree");
  }
  for (int b = 0; b < nb; b++) mb_pose_rotation(d->dim, d->body[b].orientation, R[b]);
  mb_local_frames(d, seed, adr, (const double(*)[9])R, mk);
  for (int b = 0; b < nb; b++)
    for (int side = 0; side < 2; side++) {
      const int k = t->marker[2 * b + side];
      for (int r = 0; r < 3; r++) dpoint[6 * b + 3 * side + r] = k < 0 ? 0 : mk[k].dp[r];
    }
  free(adr), free(R), free(mk);
  return MB_OK;
}

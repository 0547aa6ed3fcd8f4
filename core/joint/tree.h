/* The kinematic tree of the joint-coordinate (semi-recursive) formulation: bodies reached from
   the ground through joints, each body moved by its parent through the joint's relative
   coordinates z; loops are closed by cutting one joint, whose constraints the formulation then
   imposes between the two sides (so are the joints with friction, whose multipliers are the
   reactions the friction reads) (A. Lopez Varela, D. Dopico, A. Luaces, "Augmented Lagrangian
   index-3 semi-recursive formulations with projections: direct sensitivity analysis", section 3).

   Recursive kinematics (tree_kinematics.c): body poses, and the twists V_i = [rdot_i; omega_i] of
   a reference point r_i of each body, V_i = B_i V_parent + b_i zdot_i (eq. 4), with r_i the centre
   of mass (RTdyn0) or the global origin (RTdyn1). Recursive dynamics (tree_dynamics.c): the
   accumulated mass matrix R^T M R and forces R^T (Q - M Rdot zdot) of eq. 7. Internal. */
#ifndef MBOPT_JOINT_TREE_H
#define MBOPT_JOINT_TREE_H

#include "mbopt/desc.h"
#include "mbopt/model.h"
#include "mbopt/status.h"

#include "frames.h"

/* The relative motion a tree joint allows, and its coordinates z (in the inboard frame F1 of
   marker 1, F2 = F1 T(z)):
   - revolute: angle theta about z1 (planar: about the plane's normal);
   - prismatic: translation s along z1 (planar: along marker 1's axis x1);
   - cylindrical: theta, s about and along z1;
   - planar: x, y along x1, y1 and theta about z1;
   - universal: theta1 about z1, then theta2 about marker 2's axis z2 (z2 = Rz(theta1) x1);
   - spherical: Euler parameters e0..e3 (|e| = 1, a constraint of the formulation);
   - free: the body frame's origin x, y (, z) in the global frame, and its angle (planar) or
     Euler parameters (spatial); given to bodies with no joint path to the ground;
   - fixed: none. */
typedef enum mb_tree_joint {
  MB_TREE_REVOLUTE,
  MB_TREE_PRISMATIC,
  MB_TREE_CYLINDRICAL,
  MB_TREE_PLANAR,
  MB_TREE_UNIVERSAL,
  MB_TREE_SPHERICAL,
  MB_TREE_FREE,
  MB_TREE_FIXED
} mb_tree_joint;

/* Compiled tree: sizes, then flat arrays (dimensions in comments), read-only while running. */
typedef struct mb_tree {
  int dim;          /* 2 or 3 */
  int nbody;        /* moving bodies, the description's */
  int nz;           /* joint coordinates */
  int ncut;         /* joints cut: to close loops, or for their friction */
  int nnorm;        /* Euler-parameter quadruples (one normalisation constraint each) */
  int* order;       /* (nbody) bodies in tree order, each after its parent */
  int* parent;      /* (nbody) parent body, -1 the ground */
  int* joint;       /* (nbody) the description's joint to the parent, -1 for an added free joint */
  int* kind;        /* (nbody) mb_tree_joint */
  int* reversed;    /* (nbody) 1 when the body holds marker 1 of its joint (the parent marker 2) */
  int* zadr;        /* (nbody) first joint coordinate of the body's joint */
  int* znum;        /* (nbody) its number of coordinates */
  int* zbody;       /* (nz) the body whose joint each coordinate belongs to */
  int* normadr;     /* (nnorm) first coordinate of each Euler-parameter quadruple */
  int* marker;      /* (nbody x 2) the markers of the joint's inboard and outboard frames
                       (mb_marker_index), -1 for an added free joint */
  double* inboard;  /* (nbody x 12) the joint's frame on the parent, in the parent's body frame
                       (the global frame for the ground): axes x, y, z as the columns of a
                       row-major 3 x 3 rotation, then the point */
  double* outboard; /* (nbody x 12) the joint's frame on the body, in its body frame */
  double* mass;     /* (nbody) kg */
  double* com;      /* (nbody x 3) centre of mass, body frame */
  double* inertia;  /* (nbody x 9) inertia tensor about the centre of mass, body frame */
  int* cut;         /* (ncut) the description's joints cut */
  int* path_adr;    /* (nbody + 1) first of each body's entries in path */
  int* path;        /* the coordinates of the joints from the ground to each body, its own last */
} mb_tree;

/* Builds the tree of a description: breadth first from the ground through the joints in their
   order, a joint reaching a body already in the tree being cut, and every joint with friction
   too; a body still unreached gets a free joint to the ground and its own subtree. MB_ERR_MEMORY,
   or MB_ERR_ARGUMENT for a description the tree cannot hold (the message names the field). */
mb_status mb_tree_compile(const mb_desc* d, mb_tree** out, mb_error* err);
void mb_tree_free(mb_tree* t);

/* The derivatives with respect to parameter seed of each body's joint frame points, in the body
   frames the tree holds them in: dpoint (nbody x 6) the inboard point's, then the outboard
   point's. MB_ERR_MEMORY. */
mb_status mb_tree_frame_derivatives(const mb_tree* t, const mb_desc* d, int seed, double* dpoint,
                                    mb_error* err);

/* Per-run kinematic workspace of a tree: what the recursions compute, global components. */
typedef struct mb_tree_state {
  int ref;    /* mb_reference of the twists */
  double* A;  /* (nbody x 9) body rotations, row-major, local to global */
  double* o;  /* (nbody x 3) body-frame origins */
  double* r;  /* (nbody x 3) reference points */
  double* F;  /* (nbody x 9) the inboard joint frame's rotation (parent side), global */
  double* P;  /* (nbody x 3) the joint point on the body (marker of the outboard frame) */
  double* V;  /* (nbody x 6) twists [rdot_i; omega_i] of the reference points */
  double* Vd; /* (nbody x 6) their time derivatives */
  double* b;  /* (nz x 6) column of R for each coordinate, at its own body's reference point */
  double* c;  /* (nbody x 3) centre of mass relative to the reference point */
  double* Mb; /* (nbody x 36) each body's 6 x 6 mass matrix for its twist, row-major, and */
  double* JG; /* (nbody x 9) its inertia tensor in global axes, both at the poses of the last
                 mb_tree_positions once inertia_valid (tree_dynamics.c) */
  int inertia_valid;
} mb_tree_state;

mb_tree_state* mb_tree_state_create(const mb_tree* t, mb_reference ref);
void mb_tree_state_free(mb_tree_state* s);

/* Poses (A, o, F, P, r, c) at joint coordinates z (nz), and the columns b of R, which depend on
   the positions alone. */
void mb_tree_positions(const mb_tree* t, const double* z, mb_tree_state* s);

/* Twists V at zd (nz), after mb_tree_positions. */
void mb_tree_velocities(const mb_tree* t, const double* zd, mb_tree_state* s);

/* Vd = R zdd + Rdot zd, after mb_tree_velocities; zdd NULL for zero (Vd then holds Rdot zd). */
void mb_tree_accelerations(const mb_tree* t, const double* z, const double* zd, const double* zdd,
                           mb_tree_state* s);

/* M (nz x nz, row-major, full) = R^T M^v R, by composite inertias accumulated from the leaves,
   at the positions of s. work: 36 nbody doubles. */
void mb_tree_mass(const mb_tree* t, mb_tree_state* s, double* M, double* work);

/* W (nbody x 6) += each body's inertial wrench about its reference point: -M^v_i Vd_i (Vd as
   mb_tree_accelerations left it: with zdd = NULL, Rdot zd) and the velocity-dependent inertial
   forces at the velocities of s; then mb_tree_project gives the accumulated forces of eq. 7. */
void mb_tree_inertial_wrenches(const mb_tree* t, mb_tree_state* s, double* W);

/* Q (nz) = R^T W: the generalised forces of body wrenches W (nbody x 6, [force; moment about the
   reference point], global), by composite wrenches accumulated from the leaves. work: 6 nbody
   doubles. */
void mb_tree_project(const mb_tree* t, const mb_tree_state* s, const double* W, double* Q,
                     double* work);

/* The joint coordinates z (nz) of body poses A (nbody x 9, row-major rotations) and o (nbody x
   3, body-frame origins) at which every tree joint holds: the relative motion of each joint's
   frames read as its coordinates (angles in (-pi, pi], Euler parameters with e0 >= 0). */
void mb_tree_coordinates(const mb_tree* t, const double* A, const double* o, double* z);

/* The joint rates zd (nz) of body angular velocities w and origin velocities v (nbody x 3 each,
   global) at the poses of s (mb_tree_positions at z): for each joint, the rates whose twist
   columns give the relative motion, by least squares (Euler parameters: the rate orthogonal to
   e). MB_ERR_LINALG when LAPACK fails. */
mb_status mb_tree_rates(const mb_tree* t, const double* z, const mb_tree_state* s, const double* w,
                        const double* v, double* zd);

/* Whether element e of the exploded natural model aux is placed by the tree: a point or vector of
   a body, with coordinates. */
static inline int mb_tree_places(const mb_model* aux, int e) {
  return aux->elem_qadr[e] >= 0 && aux->elem_body[e] >= 0 && aux->elem_kind[e] != MB_ELEM_STATE;
}

/* y = x, an element's dim (2 or 3) coordinates: written out, as a copy of a length known only at
   run time would be a call to memcpy per element in the passes over them. */
static inline void mb_tree_copy_element(int dim, const double* x, double* y) {
  y[0] = x[0], y[1] = x[1];
  if (dim == 3) y[2] = x[2];
}

/* The global value x (3) of element e of aux at the poses of s (point: o + A local; vector:
   A local); inline, as every pass over the elements reads it. */
static inline void mb_tree_element_value(const mb_tree_state* s, const mb_model* aux, int e,
                                         double* x) {
  const int b = aux->elem_body[e];
  mbu_mat3_vec(s->A + 9 * b, aux->elem_local + 3 * e, x);
  if (aux->elem_kind[e] == MB_ELEM_POINT)
    for (int k = 0; k < 3; k++) x[k] += s->o[3 * b + k];
}

/* The auxiliary natural coordinates (natural_map.c): the points and unit vectors of aux, the
   exploded natural model of the same description (mb_compile_exploded), placed by the tree at
   the poses of s into q (aux->nq), with their velocities (after mb_tree_velocities) and
   accelerations (after mb_tree_accelerations), of the n elements elems (each placed by the
   tree), or of every element when elems is NULL. Ground elements and controller states are left
   as they are. */
void mb_tree_natural_positions(const mb_tree_state* s, const mb_model* aux, double* q);
void mb_tree_natural_velocities(const mb_tree_state* s, const mb_model* aux, int n,
                                const int* elems, double* qd);
void mb_tree_natural_accelerations(const mb_tree_state* s, const mb_model* aux, int n,
                                   const int* elems, double* qdd);

/* dq/dz at the n elements elems (each placed by the tree) at the poses and columns of s
   (mb_tree_positions) into R (aux->nq x nz, row-major: the row of natural coordinate c at R + c
   nz), the rows of those elements' coordinates only, and in them the columns of the joints on their
   body's path from the ground (the others stay as they are: zero once cleared). */
void mb_tree_natural_jacobian(const mb_tree* t, const mb_tree_state* s, const mb_model* aux, int n,
                              const int* elems, int ld, double* R);

/* W (nbody x 6) += the body wrenches of generalised forces Q (aux->nq) on aux's coordinates at
   the poses of s, so that mb_tree_project(W) = (dq/dz)^T Q; Q nonzero on the n elements elems
   alone (NULL: on any). */
void mb_tree_natural_wrenches(const mb_tree_state* s, const mb_model* aux, int n, const int* elems,
                              const double* Q, double* W);

/* W (6) += the wrench of force f (3, global) applied at global point x on a body whose
   reference point is r (3). */
void mb_wrench_add_force(const double* r, const double* x, const double* f, double* W);

/* Column k (3) of 2 E(e), the angular velocity in the inboard frame of the rotation of Euler
   parameters e per parameter rate, or for a joint the tree runs reversed of -2 G(e); both linear
   in e (tree_kinematics.c). */
void mb_euler_column(const double* e, int k, int reversed, double* out);

/* Derivatives of the tree's natural coordinates (tree_tangent.c), for the sensitivities: each
   column of R is a spatial twist carried rigidly by the coordinates before it on its path, so
   that its derivative with respect to one of them is the spatial cross product S_j x S_k; the
   columns of Euler parameters also change with the parameters of their own quadruple. */

/* The spatial motion at a state: columns, velocities and accelerations as spatial vectors
   [v; w], v the velocity of the body point at the global origin, and for each coordinate j the
   terms of the derivatives of the motion beyond it (tree_tangent.c). */
typedef struct mb_tree_spatial {
  double* S;         /* (nz x 6) the columns of R */
  double* Sd;        /* (nz x 6) their time derivatives */
  double* Vu;        /* (nz x 6) the velocity of the frame just after coordinate j (its joint's
                        coordinates up to it in product order; after the whole quadruple of Euler
                        parameters) */
  double* Au;        /* (nz x 6) that frame's acceleration */
  double* X;         /* (nz x 6) the rate of S_j as the frames beyond it see it: Sd_j, or for Euler
                        parameters Vu_j x S_j + the velocity change of their own columns */
  double* Vj;        /* (nz x 6) dVu_j/dz_j at fixed columns beyond: 0, or that velocity change */
  double* Aj;        /* (nz x 6) dAu_j/dz_j likewise */
  double *G, *H, *J; /* (nz x 6 each) Vj_j - S_j x Vu_j, Aj_j - S_j x Au_j - X_j x Vu_j and
                        Sd_j + G_j: a direction's terms per unit coefficient */
  double* D;         /* (nnorm x 4 x 4 x 6) dS_k/de_j within each Euler quadruple, [j][k] */
  double* V;         /* (nbody x 6) the bodies' velocities */
  double* A;         /* (nbody x 6) their accelerations */
  double* W;       /* (nbody x 6) the subtree sums of mb_tree_wrench_sums: [force; moment about the
                      origin] */
  double* dW;      /* (nbody x 6) scratch */
  double *dV, *dA; /* (nbody x 6 each) scratch: the bodies' velocity and acceleration derivatives
                      along a direction */
  double* moments; /* (nbody x 12) of mb_tree_wrench_sums: each body's own force sum F (3), then
                      X = sum x w^T over its elements (row-major 3 x 3) */
  double* sums;    /* (nbody x 24) scratch: a direction's sums over each body's path, the first 6
                      its displacement twist (tree_tangent.c) */
  unsigned char* moved; /* (nbody) scratch */
} mb_tree_spatial;

mb_tree_spatial* mb_tree_spatial_create(const mb_tree* t);
void mb_tree_spatial_free(mb_tree_spatial* sp);

/* The spatial motion at rates zd and accelerations zdd (tree coordinates; zdd may be NULL for
   zero) at the positions z of s (mb_tree_positions). */
void mb_tree_spatial_motion(const mb_tree* t, const mb_tree_state* s, const double* z,
                            const double* zd, const double* zdd, mb_tree_spatial* sp);

/* A direction of the derivatives, the sum of what is given: coordinate `coord` (-1: none) with
   its position, rate and acceleration moved by cz, cv and ca; every coordinate's moved by dz, dzd
   and dzdd (tree nz each, NULL: none); and, body >= 0, the joint frame of body `body` (its
   inboard frame, or with outboard its outboard frame) translated by `shift` (3, global), which
   moves the body's subtree. */
typedef struct mb_tree_direction {
  int coord;
  double cz, cv, ca;
  int body, outboard;
  double shift[3];
  const double *dz, *dzd, *dzdd;
} mb_tree_direction;

/* The derivatives along dir of the bodies' motion, as far as rates asks (0: the displacement
   twists, 1: and the velocities', 2: and the accelerations'), into sp's scratch (sums, dV, dA,
   moved), which mb_tree_element_tangents and mb_tree_acceleration_wrenches read. */
void mb_tree_body_tangents(const mb_tree* t, mb_tree_spatial* sp, const mb_tree_direction* dir,
                           int rates);

/* mb_tree_natural_tangent's derivatives along the direction of the last mb_tree_body_tangents
   (its rates at least those asked for here), at the n elements elems (NULL: every element) alone.
 */
void mb_tree_element_tangents(const mb_tree_state* s, const mb_tree_spatial* sp,
                              const mb_model* aux, int n, const int* elems, const double* dlocal,
                              double* dq, double* dqd, double* dqdd);

/* dq, dqd, dqdd (aux nq, each may be NULL, zero on entry) = the derivatives along dir of the
   natural positions, velocities and accelerations of the elements the tree places, at the motion
   sp; dlocal (aux nelem x 3, may be NULL) adds the derivatives of the elements' local values.
   Without dlocal, only the elements of the bodies dir moves are written, the others' being zero. */
void mb_tree_natural_tangent(const mb_tree* t, const mb_tree_state* s, mb_tree_spatial* sp,
                             const mb_model* aux, const mb_tree_direction* dir,
                             const double* dlocal, double* dq, double* dqd, double* dqdd);

/* sp->W = the wrenches of natural generalised forces w (aux nq) on the elements the tree places,
   summed over each body's subtree, and sp->moments each body's own moments of w (the force sum
   over its points and sum x w^T over its elements), for mb_tree_column_tangent without dq. */
void mb_tree_wrench_sums(const mb_tree* t, const mb_tree_state* s, const mb_model* aux,
                         const double* w, mb_tree_spatial* sp);

/* W (nbody x 6, about the reference points) += the body wrenches of the natural inertial forces
   M^n dqd (level 1) or M^n dqdd (level 2) of the velocities' or accelerations' derivative along
   the direction of the last mb_tree_body_tangents (rates at least level), from each body's mass,
   centre of mass and inertia at the positions of s: the derivative is affine in the element
   positions, and the natural mass integrates the body's density against it. */
void mb_tree_tangent_wrenches(const mb_tree* t, mb_tree_state* s, const mb_tree_spatial* sp,
                              int level, double* W);

/* out (tree nz) = the derivative of R^T w at fixed w along the positions of dir, with w that of
   the last mb_tree_wrench_sums and dq the position derivative mb_tree_natural_tangent gave; with
   dq NULL, from the bodies' moments of w (mb_tree_wrench_sums) and their displacements along
   dir (the last mb_tree_body_tangents, along dir without local values moved). */
void mb_tree_column_tangent(const mb_tree* t, const mb_tree_state* s, mb_tree_spatial* sp,
                            const mb_model* aux, const mb_tree_direction* dir, const double* w,
                            const double* dq, double* out);

#endif

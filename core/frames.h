/* Marker frames and initial body poses: what every formulation reads of a description's geometry
   before it chooses coordinates, so that joint angles and translations have the same zero in
   every formulation. Internal. */
#ifndef MBOPT_FRAMES_H
#define MBOPT_FRAMES_H

#include "mbopt/desc.h"

/* One marker: its local point and axes in its body's frame. */
typedef struct mb_local_frame {
  int body;                      /* -1 ground */
  double p[3], z[3], x[3], y[3]; /* local point and directions (planar: z unused, x = axis) */
  double dp[3];                  /* derivative of the point with respect to the seed parameter */
} mb_local_frame;

/* small 3 x 3 helpers, R row-major; inline: the recursions call them per body and element */
static inline void mbu_mat3_vec(const double* R, const double* v, double* out) { /* out = R v */
  const double o0 = R[0] * v[0] + R[1] * v[1] + R[2] * v[2];
  const double o1 = R[3] * v[0] + R[4] * v[1] + R[5] * v[2];
  const double o2 = R[6] * v[0] + R[7] * v[1] + R[8] * v[2];
  out[0] = o0, out[1] = o1, out[2] = o2;
}
static inline void mbu_mat3_tvec(const double* R, const double* v, double* out) { /* R^T v */
  const double o0 = R[0] * v[0] + R[3] * v[1] + R[6] * v[2];
  const double o1 = R[1] * v[0] + R[4] * v[1] + R[7] * v[2];
  const double o2 = R[2] * v[0] + R[5] * v[1] + R[8] * v[2];
  out[0] = o0, out[1] = o1, out[2] = o2;
}
static inline void mbu_mat3_mul(const double* A, const double* B, double* C) { /* C = A B */
  double T[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      T[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
  for (int k = 0; k < 9; k++) C[k] = T[k];
}
/* Normalises v in place; 0 (v unchanged) when its length is below 1e-12. */
int mbu_normalize3(double* v);
/* Component of v orthogonal to the orthonormal vectors basis[0..n-1]. */
void mbu_orthogonal_part(const double* v, double (*basis)[3], int n, double* out);

/* Rotation R (row-major, local to global) of a body's approximate initial pose: planar, the angle
   o[0]; spatial, yaw o[0] about z, pitch o[1] about y, roll o[2] about x (R = Rz Ry Rx). */
void mb_pose_rotation(int dim, const double* o, double* R);

/* Derivative of a description scalar with respect to parameter seed (-1: none, 0). */
double mb_real_derivative(const mb_desc* d, mb_real r, int seed);

/* The number of markers, ground markers first, then each body's: adr[b] (nbody) receives the
   index of body b's first marker. */
int mb_marker_count(const mb_desc* d, int* adr);

/* Index of marker `marker` of body `body` (-1: the ground) given adr of mb_marker_count. */
static inline int mb_marker_index(const int* adr, int body, int marker) {
  return body < 0 ? marker : adr[body] + marker;
}

/* Every marker's frame into mk (mb_marker_count of them), with the derivative of its point with
   respect to parameter seed (-1: none). R (nbody) are the bodies' initial rotations
   (mb_pose_rotation). A spatial marker without a reference direction takes that of its joint
   partner, seen from its own body at the initial poses, made perpendicular to its axis, so that
   joint angles start near zero; otherwise the local axis direction least aligned with its axis. */
void mb_local_frames(const mb_desc* d, int seed, const int* adr, const double (*R)[9],
                     mb_local_frame* mk);

#endif

/* Marker frames and initial body poses, shared by the formulations (frames.h). */
#include "frames.h"

#include <math.h>
#include <string.h>

#include "internal.h"

int mbu_normalize3(double* v) {
  double n = mbu_norm3(v);
  if (!(n > 1e-12)) return 0;
  v[0] /= n, v[1] /= n, v[2] /= n;
  return 1;
}

void mbu_orthogonal_part(const double* v, double (*basis)[3], int n, double* out) {
  memcpy(out, v, 3 * sizeof(double));
  for (int i = 0; i < n; i++) {
    double d = mbu_dot3(out, basis[i]);
    for (int k = 0; k < 3; k++) out[k] -= d * basis[i][k];
  }
}

void mb_pose_rotation(int dim, const double* o, double* R) {
  if (dim == 2) {
    double c = cos(o[0]), s = sin(o[0]);
    double P[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    memcpy(R, P, sizeof P);
    return;
  }
  double cy = cos(o[0]), sy = sin(o[0]), cp = cos(o[1]), sp = sin(o[1]);
  double cr = cos(o[2]), sr = sin(o[2]);
  double S[9] = {cy * cp,
                 cy * sp * sr - sy * cr,
                 cy * sp * cr + sy * sr,
                 sy * cp,
                 sy * sp * sr + cy * cr,
                 sy * sp * cr - cy * sr,
                 -sp,
                 cp * sr,
                 cp * cr};
  memcpy(R, S, sizeof S);
}

double mb_real_derivative(const mb_desc* d, mb_real r, int seed) {
  if (seed < 0) return 0;
  if (r.expr > 0) {
    double derivative = 0;
    mb_expr_eval(&d->expr[r.expr - 1], d->param_value, seed, &derivative);
    return derivative;
  }
  return r.param == seed ? 1.0 : 0.0;
}

int mb_marker_count(const mb_desc* d, int* adr) {
  int n = d->nground_marker;
  for (int b = 0; b < d->nbody; b++) adr[b] = n, n += d->body[b].nmarker;
  return n;
}

static void marker_from_desc(const mb_desc* d, int seed, const mb_marker_desc* md,
                             mb_local_frame* f) {
  for (int k = 0; k < 3; k++)
    f->p[k] = md->point[k].value, f->dp[k] = mb_real_derivative(d, md->point[k], seed);
  if (d->dim == 2) {
    /* planar: the axis is the in-plane direction, default local x; third = axis turned +90 deg */
    double a[3] = {1, 0, 0};
    if (md->has_axis) a[0] = md->axis[0].value, a[1] = md->axis[1].value;
    mbu_normalize3(a);
    memcpy(f->x, a, sizeof a);
    f->y[0] = -a[1], f->y[1] = a[0], f->y[2] = 0;
    f->z[0] = f->z[1] = 0, f->z[2] = 1;
    return;
  }
  double z[3] = {0, 0, 1};
  if (md->has_axis)
    for (int k = 0; k < 3; k++) z[k] = md->axis[k].value;
  mbu_normalize3(z);
  memcpy(f->z, z, sizeof z);
  f->x[0] = f->x[1] = f->x[2] = 0; /* reference decided later (may follow the joint partner) */
  if (md->has_ref) {
    for (int k = 0; k < 3; k++) f->x[k] = md->ref[k].value;
    mbu_normalize3(f->x);
  }
}

/* Completes a spatial marker's reference direction: from `hint` (local, may be NULL) made
   perpendicular to the axis, else the local axis direction least aligned with z. */
static void complete_ref(mb_local_frame* f, const double* hint) {
  if (mbu_norm3(f->x) > 0.5) {
    mbu_cross3(f->z, f->x, f->y);
    return;
  }
  double basis[1][3] = {{f->z[0], f->z[1], f->z[2]}};
  double cand[3];
  int ok = 0;
  if (hint) {
    mbu_orthogonal_part(hint, basis, 1, cand);
    ok = mbu_normalize3(cand) && mbu_norm3(cand) > 0.5;
  }
  if (!ok) {
    int best = 0;
    for (int k = 1; k < 3; k++)
      if (fabs(f->z[k]) < fabs(f->z[best])) best = k;
    double e[3] = {0, 0, 0};
    e[best] = 1;
    mbu_orthogonal_part(e, basis, 1, cand);
    mbu_normalize3(cand);
  }
  memcpy(f->x, cand, sizeof cand);
  mbu_cross3(f->z, f->x, f->y);
}

void mb_local_frames(const mb_desc* d, int seed, const int* adr, const double (*R)[9],
                     mb_local_frame* mk) {
  for (int i = 0; i < d->nground_marker; i++) {
    mk[i].body = -1;
    marker_from_desc(d, seed, &d->ground_marker[i], &mk[i]);
  }
  for (int b = 0; b < d->nbody; b++)
    for (int i = 0; i < d->body[b].nmarker; i++) {
      mb_local_frame* f = &mk[adr[b] + i];
      f->body = b;
      marker_from_desc(d, seed, &d->body[b].marker[i], f);
    }
  if (d->dim == 2) return;
  /* joints: a missing reference follows the partner's, so that joint angles start near zero */
  for (int j = 0; j < d->njoint; j++) {
    const mb_joint_desc* jd = &d->joint[j];
    mb_local_frame* f1 = &mk[mb_marker_index(adr, jd->body[0], jd->marker[0])];
    mb_local_frame* f2 = &mk[mb_marker_index(adr, jd->body[1], jd->marker[1])];
    complete_ref(f1, NULL);
    double g[3], hint[3];
    if (jd->body[0] >= 0)
      mbu_mat3_vec(R[jd->body[0]], f1->x, g);
    else
      memcpy(g, f1->x, sizeof g);
    if (jd->body[1] >= 0)
      mbu_mat3_tvec(R[jd->body[1]], g, hint);
    else
      memcpy(hint, g, sizeof g);
    complete_ref(f2, hint);
  }
  int n = d->nground_marker;
  for (int b = 0; b < d->nbody; b++) n += d->body[b].nmarker;
  for (int i = 0; i < n; i++) complete_ref(&mk[i], NULL);
}

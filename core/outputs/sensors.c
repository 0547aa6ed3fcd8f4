/* Sensors: the named outputs of a model evaluated at the current state. Angles are unwrapped
   against their previous values, so sensors are evaluated at every step. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "mbopt/simulate.h"

static double unwrap(mb_data* d, int slot, double angle) {
  if (d->have_unwrap) {
    double prev = d->unwrap[slot];
    angle += 2 * MB_PI * round((prev - angle) / (2 * MB_PI));
  }
  d->unwrap[slot] = angle;
  return angle;
}

/* joint coordinate and its rate: angle atan2(x2.y1, x2.x1) or translation (r2 - r1).z1 */
static void joint_value(const mb_model* m, const mb_data* d, int joint, int coord, double* value,
                        double* rate) {
  const int* meas = m->joint_measure + 6 * joint;
  double a[3], b[3], ad[3], bd[3];
  if (coord == MB_COORD_ANGLE) {
    double c[3], cd[3];
    mb_lvec_eval(m, meas[0], d->q, a);
    mb_lvec_eval(m, meas[1], d->q, b);
    mb_lvec_eval(m, meas[2], d->q, c);
    mb_lvec_rate(m, meas[0], d->qd, ad);
    mb_lvec_rate(m, meas[1], d->qd, bd);
    mb_lvec_rate(m, meas[2], d->qd, cd);
    double s = mbu_dot3(a, b), co = mbu_dot3(a, c);
    double sd = mbu_dot3(ad, b) + mbu_dot3(a, bd), cod = mbu_dot3(ad, c) + mbu_dot3(a, cd);
    *value = atan2(s, co);
    *rate = (co * sd - s * cod) / (s * s + co * co);
    return;
  }
  mb_lvec_eval(m, meas[3], d->q, a);
  mb_lvec_eval(m, meas[4], d->q, b);
  mb_lvec_rate(m, meas[3], d->qd, ad);
  mb_lvec_rate(m, meas[4], d->qd, bd);
  *value = mbu_dot3(a, b);
  *rate = mbu_dot3(ad, b) + mbu_dot3(a, bd);
}

/* yaw, pitch, roll (z-y-x) of a body frame, or the planar angle */
static void body_angles(const mb_model* m, const mb_data* d, int body, double* out) {
  const int* E = m->body_axes + 3 * body;
  double ex[3], ey[3], ez[3];
  mb_lvec_eval(m, E[0], d->q, ex);
  if (m->dim == 2) {
    out[0] = atan2(ex[1], ex[0]);
    return;
  }
  mb_lvec_eval(m, E[1], d->q, ey);
  mb_lvec_eval(m, E[2], d->q, ez);
  /* R = [ex ey ez]: yaw = atan2(R10, R00), pitch = -asin(R20), roll = atan2(R21, R22) */
  out[0] = atan2(ex[1], ex[0]);
  out[1] = -asin(fmax(-1, fmin(1, ex[2])));
  out[2] = atan2(ey[2], ez[2]);
}

/* angular velocity along the body's axes E_x, E_y, E_z: w_k = (dE_a . E_b - dE_b . E_a) / 2 with
   (k, a, b) cyclic, which equals w . E_k for orthonormal axes (planar: w about z) */
static void body_axes_angular_velocity(const mb_model* m, const mb_data* d, int body, double* w) {
  if (m->dim == 2) {
    mb_body_angular_velocity(m, body, d->q, d->qd, w);
    return;
  }
  const int* E = m->body_axes + 3 * body;
  double e[3][3], ed[3][3];
  for (int k = 0; k < 3; k++) {
    mb_lvec_eval(m, E[k], d->q, e[k]);
    mb_lvec_rate(m, E[k], d->qd, ed[k]);
  }
  for (int k = 0; k < 3; k++) {
    const int a = (k + 1) % 3, b = (k + 2) % 3;
    w[k] = 0.5 * (mbu_dot3(ed[a], e[b]) - mbu_dot3(ed[b], e[a]));
  }
}

/* 1 when sensor i gives angles, which unwrap against the previous step */
static int is_angle(const mb_model* m, int i) {
  return m->sensor_type[i] == MB_SENSOR_BODY_ANGLES ||
         (m->sensor_type[i] == MB_SENSOR_JOINT_COORDINATE &&
          m->sensor_ref[2 * i + 1] == MB_COORD_ANGLE);
}

int mb_sensor_eval(const mb_model* m, const mb_data* d, int i, double* v, int* angle) {
  const int* ref = m->sensor_ref + 2 * i;
  int nv = 1;
  for (int k = 0; k < MB_SENSOR_VALUES; k++) v[k] = 0;
  *angle = is_angle(m, i);
  switch ((mb_sensor_type)m->sensor_type[i]) {
    case MB_SENSOR_POINT_POSITION:
      mb_lvec_eval(m, m->marker_point[ref[0]], d->q, v), nv = m->dim;
      break;
    case MB_SENSOR_POINT_VELOCITY:
      mb_lvec_rate(m, m->marker_point[ref[0]], d->qd, v), nv = m->dim;
      break;
    case MB_SENSOR_POINT_ACCELERATION:
      mb_lvec_rate(m, m->marker_point[ref[0]], d->qdd, v), nv = m->dim;
      break;
    case MB_SENSOR_BODY_ANGULAR_VELOCITY:
      mb_body_angular_velocity(m, ref[0], d->q, d->qd, v);
      if (m->dim == 2) v[0] = v[2];
      nv = m->dim == 2 ? 1 : 3;
      break;
    case MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY:
      body_axes_angular_velocity(m, d, ref[0], v);
      if (m->dim == 2) v[0] = v[2];
      nv = m->dim == 2 ? 1 : 3;
      break;
    case MB_SENSOR_BODY_ANGLES:
      body_angles(m, d, ref[0], v);
      nv = m->dim == 2 ? 1 : 3;
      break;
    case MB_SENSOR_JOINT_COORDINATE:
    case MB_SENSOR_JOINT_RATE: {
      double value, rate;
      joint_value(m, d, ref[0], ref[1], &value, &rate);
      v[0] = m->sensor_type[i] == MB_SENSOR_JOINT_RATE ? rate : value;
      break;
    }
    case MB_SENSOR_SPRING_LENGTH:
      v[0] = mb_spring_length(m, d, ref[0], NULL);
      break;
    case MB_SENSOR_SPRING_FORCE:
      mb_spring_length(m, d, ref[0], &v[0]);
      break;
    case MB_SENSOR_KINETIC_ENERGY:
      mb_energy(m, d, &v[0], NULL, NULL);
      break;
    case MB_SENSOR_GRAVITY_ENERGY:
      mb_energy(m, d, NULL, &v[0], NULL);
      break;
    case MB_SENSOR_ELASTIC_ENERGY:
      mb_energy(m, d, NULL, NULL, &v[0]);
      break;
    case MB_SENSOR_TOTAL_ENERGY: {
      double T, Vg, Ve;
      mb_energy(m, d, &T, &Vg, &Ve);
      v[0] = T + Vg + Ve;
      break;
    }
    case MB_SENSOR_CONTROL:
      v[0] = mb_controller_output(m, d, ref[0], NULL, NULL);
      break;
    case MB_SENSOR_CONTROL_ERROR:
      v[0] = mb_controller_error(m, d, ref[0], NULL, NULL);
      break;
    case MB_SENSOR_REACTION_FORCE:
    case MB_SENSOR_REACTION_TORQUE: {
      const int torque = m->sensor_type[i] == MB_SENSOR_REACTION_TORQUE;
      double F[3], T[3];
      mb_joint_reaction(m, d, ref[0], NULL, F, T);
      nv = torque && m->dim == 2 ? 1 : m->dim;
      for (int k = 0; k < nv; k++) {
        double e[3];
        mb_lvec_eval(m, mb_reaction_frame(m, ref[0], ref[1], torque, k), d->q, e);
        v[k] = mbu_dot3(e, torque ? T : F);
      }
      break;
    }
    case MB_SENSOR_FRICTION_FORCE:
    case MB_SENSOR_NORMAL_FORCE: {
      mb_friction f;
      mb_friction_eval(m, d, ref[0], d->lambda, &f);
      const int normal = m->sensor_type[i] == MB_SENSOR_NORMAL_FORCE;
      nv = normal ? 1 : f.n;
      for (int a = 0; a < nv; a++) v[a] = normal ? f.normal : f.force[a];
      break;
    }
    case MB_SENSOR_MULTIPLIERS:
      nv = m->joint_rownum[ref[0]];
      for (int k = 0; k < nv; k++)
        v[k] = mb_reaction_multiplier(d, m->joint_row[m->joint_rowadr[ref[0]] + k]);
      break;
  }
  return nv;
}

/* sensor i's outputs into d->out, its angles unwrapped */
static void record(const mb_model* m, mb_data* d, int i) {
  const int comp = m->sensor_component[i];
  double v[MB_SENSOR_VALUES];
  int angle;
  const int nv = mb_sensor_eval(m, d, i, v, &angle);
  if (angle)
    for (int k = 0; k < nv; k++) v[k] = unwrap(d, 3 * i + k, v[k]);
  double* out = d->out + m->sensor_outadr[i];
  if (comp >= 0)
    out[0] = v[comp];
  else
    for (int k = 0; k < nv; k++) out[k] = v[k];
}

void mb_sensors(const mb_model* m, mb_data* d) {
  for (int i = 0; i < m->nsensor; i++) record(m, d, i);
  d->have_unwrap = 1;
}

void mb_sensors_angles(const mb_model* m, mb_data* d) {
  for (int i = 0; i < m->nsensor; i++)
    if (is_angle(m, i)) record(m, d, i);
  d->have_unwrap = 1;
}

size_t mb_sensor_state_size(const mb_model* m) {
  return (size_t)m->nout + 3 * (size_t)m->nsensor + 1;
}

void mb_sensor_state_copy(const mb_model* m, mb_data* d, double* x, int save) {
  const size_t nout = m->nout, nunwrap = 3 * (size_t)m->nsensor;
  memcpy(save ? x : d->out, save ? d->out : x, nout * sizeof(double));
  memcpy(save ? x + nout : d->unwrap, save ? d->unwrap : x + nout, nunwrap * sizeof(double));
  if (save)
    x[nout + nunwrap] = d->have_unwrap;
  else
    d->have_unwrap = x[nout + nunwrap] != 0;
}

void mb_sensor_state_pass(const mb_model* m, const mb_data* from, mb_data* to) {
  memcpy(to->out, from->out, (size_t)m->nout * sizeof(double));
  memcpy(to->unwrap, from->unwrap, 3 * (size_t)m->nsensor * sizeof(double));
  to->have_unwrap = from->have_unwrap;
}

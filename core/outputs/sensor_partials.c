/* Partial derivatives of the output columns with respect to q, qd and qdd, and with respect to one
   parameter at a fixed state (through a tangent model, include/mbopt/sensitivity.h).

   Every sensor is a function of the values, rates and accelerations of a few linear vectors and
   of a few model scalars (spring constants, masses, gravity, the mass matrix); its chain rule is
   written once, through an mb_chain (chain.h), which turns it into partials, a parameter
   derivative or the coordinate blocks it reaches. The kinematic measures (angular velocities,
   angles, joint coordinates, reactions) are chain.c's; the springs', energies' and controllers'
   are here. The values themselves come from mb_sensor_eval (sensors.c), so they are exactly those
   of mb_sensors; angles are moved by whole turns to the branch nearest the last recorded output
   d->out[col] (the raw atan2 value before a run's first mb_sensors), which leaves their derivatives
   unchanged. No scratch memory. */
#include <math.h>
#include <string.h>

#include "chain.h"
#include "mbopt/sensitivity.h"

/* ---------------------------------------------------------------------------------------------
   sensors */

/* s (w_value . d(r2 - r1) + w_rate . d(v2 - v1)) of spring i */
static void spring_chain_d(mb_chain* c, int i, double s, const double* wv, const double* wr) {
  const int a = c->m->force_lvec[2 * i], b = c->m->force_lvec[2 * i + 1];
  mb_chain_lvec(c, b, MB_LV_VALUE, s, wv);
  mb_chain_lvec(c, a, MB_LV_VALUE, -s, wv);
  if (wr) {
    mb_chain_lvec(c, b, MB_LV_RATE, s, wr);
    mb_chain_lvec(c, a, MB_LV_RATE, -s, wr);
  }
}

/* length l = |d| (dl/dd = u) or tension k (l - l0) + c dl/dt + f0, with
   d(dl/dt)/dd = (dd - u dl/dt) / l and d(dl/dt)/d(dd) = u */
static void spring_chain(mb_chain* c, int i, int tension) {
  const mb_model* m = c->m;
  mb_spring_state g;
  mb_spring_eval(m, i, c->d->q, c->d->qd, &g);
  if (!tension) {
    spring_chain_d(c, i, 1, g.u, NULL);
    return;
  }
  const double k = m->force_k[i], damp = m->force_c[i];
  const double inv = g.length > 1e-12 ? 1 / g.length : 0;
  double wv[3], wr[3];
  for (int r = 0; r < 3; r++) {
    wv[r] = k * g.u[r] + damp * (g.dd[r] - g.u[r] * g.rate) * inv;
    wr[r] = damp * g.u[r];
  }
  spring_chain_d(c, i, 1, wv, wr);
  if (c->dm)
    mb_chain_param(c, c->dm->force_k[i] * (g.length - m->force_l0[i]) - k * c->dm->force_l0[i] +
                          c->dm->force_c[i] * g.rate + c->dm->force_f0[i]);
}

/* kinetic energy 1/2 qd^T M qd: d/dqd = M qd; parameter 1/2 qd^T dM qd */
static void kinetic_chain(mb_chain* c) {
  const mb_model* m = c->m;
  const double* qd = c->d->qd;
  if (c->support) {
    for (int k = 0; k < m->nmass; k++) c->support[m->mass_block[2 * k + 1]] = 1;
  } else if (c->dm) {
    mb_chain_param(c, 0.5 * mb_mass_form(c->dm, qd, qd));
  } else if (c->dqd) {
    mb_mass_mul(m, qd, c->scale, c->dqd);
    /* controller states carry unit mass but no physical energy (as in mb_energy) */
    for (int i = 0; i < m->nctrl; i++)
      for (int k = 0; k < m->dim; k++)
        c->dqd[m->ctrl_qadr[i] + k] -= c->scale * qd[m->ctrl_qadr[i] + k];
  }
}

/* gravity energy -sum_b m_b g . r_b */
static void gravity_chain(mb_chain* c) {
  const mb_model* m = c->m;
  for (int b = 0; b < m->nbody; b++) {
    mb_chain_lvec(c, m->body_com[b], MB_LV_VALUE, -m->body_mass[b], m->gravity);
    if (c->dm) {
      double r[3];
      mb_lvec_eval(m, m->body_com[b], c->d->q, r);
      mb_chain_param(c, -c->dm->body_mass[b] * mbu_dot3(m->gravity, r) -
                            m->body_mass[b] * mbu_dot3(c->dm->gravity, r));
    }
  }
}

/* elastic energy sum 1/2 k (l - l0)^2 over the springs */
static void elastic_chain(mb_chain* c) {
  const mb_model* m = c->m;
  for (int i = 0; i < m->nforce; i++) {
    if (m->force_type[i] != MB_FORCE_SPRING) continue;
    mb_spring_state g;
    mb_spring_eval(m, i, c->d->q, c->d->qd, &g);
    const double stretch = g.length - m->force_l0[i];
    spring_chain_d(c, i, m->force_k[i] * stretch, g.u, NULL);
    if (c->dm)
      mb_chain_param(c, 0.5 * c->dm->force_k[i] * stretch * stretch -
                            m->force_k[i] * stretch * c->dm->force_l0[i]);
  }
}

/* the output u (error 0) or the error e (error 1) of controller i */
static void control_chain(mb_chain* c, int i, int error) {
  const mb_model* m = c->m;
  if (c->support) {
    memset(c->support, 1, (size_t)(m->nq / m->dim));
    return;
  }
  if (c->dm) {
    c->dp += c->scale * (error ? mbd_controller_error_param(m, c->dm, c->d, i)
                               : mbd_controller_output_param(m, c->dm, c->d, i));
    return;
  }
  /* scratch of the controllers, past what mb_controller_output itself uses */
  double *uq = c->d->ctrl_work + 6 * m->nq, *uqd = c->d->ctrl_work + 7 * m->nq;
  if (error)
    mb_controller_error(m, c->d, i, uq, uqd);
  else
    mb_controller_output(m, c->d, i, uq, uqd);
  for (int j = 0; j < m->nq; j++) {
    if (c->dq) c->dq[j] += c->scale * uq[j];
    if (c->dqd) c->dqd[j] += c->scale * uqd[j];
  }
}

/* ---------------------------------------------------------------------------------------------
   output columns */

int mb_column_sensor(const mb_model* m, int col, int* comp) {
  for (int i = 0; i < m->nsensor; i++) {
    const int k = col - m->sensor_outadr[i];
    if (k >= 0 && k < m->sensor_outnum[i]) {
      *comp = m->sensor_component[i] >= 0 ? m->sensor_component[i] : k;
      return i;
    }
  }
  return -1;
}

/* value of output column col; with c, its chain rule into c */
static double column_chain(const mb_model* m, const mb_data* d, int col, mb_chain* c) {
  int comp, angle;
  const int i = col >= 0 && col < m->nout ? mb_column_sensor(m, col, &comp) : -1;
  if (i < 0) return NAN;

  /* the value, angles on the branch of the last recorded output (a run's first: the raw one,
     whatever an earlier run of d left there) */
  double v[MB_SENSOR_VALUES];
  mb_sensor_eval(m, d, i, v, &angle);
  double value = v[comp];
  if (angle && d->have_unwrap) value += 2 * MB_PI * round((d->out[col] - value) / (2 * MB_PI));
  if (!c) return value;

  /* the chain rule of the sensor */
  const int* ref = m->sensor_ref + 2 * i;
  double e[3] = {0, 0, 0};
  if (comp < 3) e[comp] = 1; /* the unit vector of vector outputs (multipliers have more columns) */
  switch ((mb_sensor_type)m->sensor_type[i]) {
    case MB_SENSOR_POINT_POSITION:
      mb_chain_lvec(c, m->marker_point[ref[0]], MB_LV_VALUE, 1, e);
      break;
    case MB_SENSOR_POINT_VELOCITY:
      mb_chain_lvec(c, m->marker_point[ref[0]], MB_LV_RATE, 1, e);
      break;
    case MB_SENSOR_POINT_ACCELERATION:
      mb_chain_lvec(c, m->marker_point[ref[0]], MB_LV_ACCEL, 1, e);
      break;
    case MB_SENSOR_BODY_ANGULAR_VELOCITY:
      mb_chain_angular_velocity(c, ref[0], comp);
      break;
    case MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY:
      mb_chain_body_axes_angular_velocity(c, ref[0], comp);
      break;
    case MB_SENSOR_BODY_ANGLES:
      mb_chain_angles(c, ref[0], comp);
      break;
    case MB_SENSOR_JOINT_COORDINATE:
      mb_chain_joint(c, ref[0], ref[1], 0);
      break;
    case MB_SENSOR_JOINT_RATE:
      mb_chain_joint(c, ref[0], ref[1], 1);
      break;
    case MB_SENSOR_SPRING_LENGTH:
      spring_chain(c, ref[0], 0);
      break;
    case MB_SENSOR_SPRING_FORCE:
      spring_chain(c, ref[0], 1);
      break;
    case MB_SENSOR_KINETIC_ENERGY:
      kinetic_chain(c);
      break;
    case MB_SENSOR_GRAVITY_ENERGY:
      gravity_chain(c);
      break;
    case MB_SENSOR_ELASTIC_ENERGY:
      elastic_chain(c);
      break;
    case MB_SENSOR_TOTAL_ENERGY:
      kinetic_chain(c);
      gravity_chain(c);
      elastic_chain(c);
      break;
    case MB_SENSOR_CONTROL:
    case MB_SENSOR_CONTROL_ERROR:
      control_chain(c, ref[0], m->sensor_type[i] == MB_SENSOR_CONTROL_ERROR);
      break;
    case MB_SENSOR_REACTION_FORCE:
    case MB_SENSOR_REACTION_TORQUE:
      mb_chain_reaction(c, ref[0], ref[1], m->sensor_type[i] == MB_SENSOR_REACTION_TORQUE, comp);
      break;
    case MB_SENSOR_MULTIPLIERS:
      mb_chain_lambda(c, m->joint_row[m->joint_rowadr[ref[0]] + comp], 1);
      break;
    case MB_SENSOR_FRICTION_FORCE:
    case MB_SENSOR_NORMAL_FORCE:
      return NAN; /* not differentiated: models with friction have no gradients (sens_create) */
  }
  return value;
}

void mb_output_support(const mb_model* m, const mb_data* d, int col, unsigned char* blocks) {
  mb_chain c = {m, d, 1, NULL, NULL, NULL, NULL, 0, blocks, NULL, NULL};
  column_chain(m, d, col, &c);
}

double mbd_output_add_partials(const mb_model* m, const mb_data* d, int col, double s, double* dq,
                               double* dqd, double* dqdd) {
  mb_chain c = {m, d, s, dq, dqd, dqdd, NULL, 0, NULL, NULL, NULL};
  const int want = s != 0 && (dq || dqd || dqdd);
  return column_chain(m, d, col, want ? &c : NULL);
}

double mbd_output_add_lambda_partials(const mb_model* m, const mb_data* d, int col, double s,
                                      double* dlam) {
  mb_chain c = {m, d, s, NULL, NULL, NULL, NULL, 0, NULL, dlam, NULL};
  return column_chain(m, d, col, s != 0 && dlam ? &c : NULL);
}

double mbd_output_lambda(const mb_model* m, const mb_data* d, int col, double* dlam) {
  memset(dlam, 0, sizeof(double) * (size_t)m->ncon);
  return mbd_output_add_lambda_partials(m, d, col, 1, dlam);
}

int mb_output_reads_multipliers(const mb_model* m, int col) {
  int comp;
  const int i = col >= 0 && col < m->nout ? mb_column_sensor(m, col, &comp) : -1;
  return i >= 0 && (m->sensor_type[i] == MB_SENSOR_REACTION_FORCE ||
                    m->sensor_type[i] == MB_SENSOR_REACTION_TORQUE ||
                    m->sensor_type[i] == MB_SENSOR_MULTIPLIERS ||
                    m->sensor_type[i] == MB_SENSOR_FRICTION_FORCE ||
                    m->sensor_type[i] == MB_SENSOR_NORMAL_FORCE);
}

double mbd_output_partials(const mb_model* m, const mb_data* d, int col, double* dq, double* dqd,
                           double* dqdd) {
  const size_t n = sizeof(double) * (size_t)m->nq;
  if (dq) memset(dq, 0, n);
  if (dqd) memset(dqd, 0, n);
  if (dqdd) memset(dqdd, 0, n);
  return mbd_output_add_partials(m, d, col, 1, dq, dqd, dqdd);
}

double mbd_output_param(const mb_model* m, const mb_model* dm, const mb_data* d, int col) {
  mb_chain c = {m, d, 1, NULL, NULL, NULL, dm, 0, NULL, NULL, NULL};
  if (isnan(column_chain(m, d, col, &c))) return NAN;
  return c.dp;
}

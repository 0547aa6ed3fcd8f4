/* The chain rule of the natural model's kinematic measures (chain.c): a measure is a function
   of the values v = c + W q, rates J qd and accelerations J qdd of a few linear vectors and of a
   few model scalars; its chain rule is written once, as the weights w of its linear vectors
   (w = d measure / d v), and an mb_chain turns them into partials (g += J^T w, into dq, dqd or
   dqdd by level), into the parameter derivative along a tangent model (w . dv/drho), or into the
   coordinate blocks the partials can reach. The outputs (sensor_partials.c) and the joints'
   friction (friction.c) differentiate through it. Internal. */
#ifndef MBOPT_CHAIN_H
#define MBOPT_CHAIN_H

#include "internal.h"

/* which derivative of a linear vector a weight applies to */
typedef enum mb_lv_level { MB_LV_VALUE, MB_LV_RATE, MB_LV_ACCEL } mb_lv_level;

/* the destination of the chain rule: partials (dm NULL) or the parameter of dm */
typedef struct mb_chain {
  const mb_model* m;
  const mb_data* d;
  double scale;            /* factor on every contribution */
  double *dq, *dqd, *dqdd; /* partials (nq each, may be NULL) */
  const mb_model* dm;      /* tangent model, or NULL */
  double dp;               /* accumulated parameter derivative */
  unsigned char* support;  /* or: marks the coordinate blocks the partials can reach */
  double* dlam;            /* partials with respect to the multipliers (ncon, may be NULL) */
  const double* mult;      /* the multipliers reactions read (NULL: mb_reaction_multiplier) */
} mb_chain;

/* adds s w . (derivative of the value, rate or acceleration of linear vector lv) */
void mb_chain_lvec(mb_chain* c, int lv, mb_lv_level level, double s, const double* w);

/* adds x to the parameter derivative (explicit dependence on model scalars) */
void mb_chain_param(mb_chain* c, double x);

/* adds x to the partial with respect to multiplier `row` */
void mb_chain_lambda(mb_chain* c, int row, double x);

/* component comp of the angular velocity of the frame with axes E, times sign */
void mb_chain_frame_angular_velocity(mb_chain* c, const int* E, double sign, int comp);

/* component comp of a body's angular velocity: global, or along the body's own axes */
void mb_chain_angular_velocity(mb_chain* c, int body, int comp);
void mb_chain_body_axes_angular_velocity(mb_chain* c, int body, int comp);

/* a body's angle comp: yaw (the planar angle), pitch, roll */
void mb_chain_angles(mb_chain* c, int body, int comp);

/* joint coordinate coord of joint j, or its rate */
void mb_chain_joint(mb_chain* c, int joint, int coord, int rate);

/* component comp of joint j's reaction force (torque 0) or torque (1), in the joint's frame
   (joint_frame 1) or the global one */
void mb_chain_reaction(mb_chain* c, int j, int joint_frame, int torque, int comp);

#endif

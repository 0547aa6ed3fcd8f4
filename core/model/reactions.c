/* Joint reactions from the Lagrange multipliers of an explicit joint's rows (and of the drivers of
   its coordinates), as Verulkar, Sandu, Sandu and Dopico compute them for joint friction
   ("Simultaneous optimal system and controller design for multibody systems with joint friction
   using direct sensitivities", eq. 6): the constraint force -Phi_q^T lambda of those rows,
   restricted to the linear vectors of one side of the joint, is a force at the side's joint
   point (through the point or the relative position r2 - r1) and torques u x g on the directions
   u fixed in the side's body. The reported reaction is the one body 1 exerts on body 2 through
   the joint, about marker 2's point; when marker 2 is on the ground it is computed on body 1's side
   and reversed.

   The multipliers are lambda + kappa: those of the step's dynamic equations corrected by those of
   the acceleration projection, so that M qdd + Phi_q^T (lambda + kappa) = Q holds with the
   projected accelerations (Dopico, González, Cuadrado and Kövecses, "Determination of holonomic
   and nonholonomic constraint reactions in an index-3 augmented Lagrangian formulation with
   velocity and acceleration projections"); lambda alone carries the integrator's O(h) error in
   the accelerations. */
#include <math.h>

#include "internal.h"

int mb_reaction_terms(const mb_model* m, const mb_data* d, int j, mb_reaction_term* terms) {
  int n = 0;
  for (int r = m->joint_rowadr[j]; r < m->joint_rowadr[j] + m->joint_rownum[j]; r++) {
    const int i = m->joint_row[r];
    const int* lv = m->con_lvec + 4 * i;
    const int* side = m->con_side + 4 * i;
    double e[3];
    mb_con_target(m, m->con_value[i], m->con_func[i], d->t, e);
    for (int k = 0; k < mb_con_nlvec(m->con_kind[i]); k++) {
      if (side[k] == MB_SIDE_NONE) continue;
      mb_reaction_term* t = terms + n++;
      t->row = i, t->lv = lv[k], t->partner = lv[k ^ 1], t->side = side[k];
      /* dot rows a . b - e; angle rows cos(e) a0 . b0 - sin(e) a1 . b1 */
      t->coef = 1, t->dcoef = 0;
      if (m->con_kind[i] == MB_CON_ANGLE)
        t->coef = k < 2 ? cos(e[0]) : -sin(e[0]), t->dcoef = k < 2 ? -sin(e[0]) : -cos(e[0]);
    }
  }
  return n;
}

int mb_reaction_side_index(const mb_model* m, int j) {
  return m->joint_body[2 * j + 1] >= 0;
}

void mb_joint_reaction(const mb_model* m, const mb_data* d, int j, const double* mult,
                       double* force, double* torque) {
  mb_reaction_term terms[MB_REACTION_TERMS];
  const int n = mb_reaction_terms(m, d, j, terms);
  double F[3] = {0, 0, 0}, T[3] = {0, 0, 0};
  for (int k = 0; k < n; k++) {
    const mb_reaction_term* t = terms + k;
    double w[3], g[3];
    mb_lvec_eval(m, t->partner, d->q, w);
    const double s = -(mult ? mult[t->row] : mb_reaction_multiplier(d, t->row)) * t->coef;
    for (int c = 0; c < 3; c++) g[c] = s * w[c];
    if (t->side == MB_SIDE_DIRECTION) {
      double u[3], ug[3];
      mb_lvec_eval(m, t->lv, d->q, u);
      mbu_cross3(u, g, ug);
      for (int c = 0; c < 3; c++) T[c] += ug[c];
    } else {
      const double sigma = t->side == MB_SIDE_POINT_PLUS ? 1 : -1;
      for (int c = 0; c < 3; c++) F[c] += sigma * g[c];
    }
  }
  if (mb_reaction_side_index(m, j)) {
    for (int c = 0; c < 3; c++) force[c] = F[c], torque[c] = T[c];
    return;
  }
  /* body 1's side: reversed, and moved from marker 1's point to marker 2's */
  double p1[3], p2[3], r[3], rF[3];
  mb_lvec_eval(m, m->marker_point[m->joint_marker[2 * j]], d->q, p1);
  mb_lvec_eval(m, m->marker_point[m->joint_marker[2 * j + 1]], d->q, p2);
  for (int c = 0; c < 3; c++) r[c] = p1[c] - p2[c];
  mbu_cross3(r, F, rF);
  for (int c = 0; c < 3; c++) force[c] = -F[c], torque[c] = -T[c] - rF[c];
}

int mb_reaction_frame(const mb_model* m, int j, int joint_frame, int torque, int comp) {
  if (torque && m->dim == 2) return m->unit_lvec[2];
  if (!joint_frame) return m->unit_lvec[comp];
  const int mk = m->joint_marker[2 * j + 1];
  if (m->dim == 2) return comp == 0 ? m->marker_axis[mk] : m->marker_third[mk];
  int E[3];
  mb_marker_frame(m, mk, E);
  return E[comp];
}

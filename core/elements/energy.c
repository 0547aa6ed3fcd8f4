/* The stored energy of a state in natural coordinates: kinetic, gravitational and elastic
   (include/mbopt/simulate.h), for the energy balance and the energy outputs. */
#include "internal.h"
#include "structure.h"

void mb_energy(const mb_model* m, const mb_data* d, double* kinetic, double* gravity,
               double* elastic) {
  if (kinetic) {
    double T = 0.5 * mb_mass_form(m, d->qd, d->qd);
    /* controller states carry unit mass but no physical energy */
    for (int i = 0; i < m->nctrl; i++)
      for (int k = 0; k < m->dim; k++)
        T -= 0.5 * d->qd[m->ctrl_qadr[i] + k] * d->qd[m->ctrl_qadr[i] + k];
    *kinetic = T;
  }
  if (gravity) {
    double V = 0;
    for (int b = 0; b < m->nbody; b++) {
      double r[3];
      mb_lvec_eval(m, m->body_com[b], d->q, r);
      V -= m->body_mass[b] * mbu_dot3(m->gravity, r);
    }
    *gravity = V;
  }
  if (elastic) {
    double V = 0;
    for (int i = 0; i < m->nforce; i++) {
      if (m->force_type[i] != MB_FORCE_SPRING) continue;
      V += mb_spring_elastic_energy(m, d, i);
    }
    *elastic = V;
  }
}

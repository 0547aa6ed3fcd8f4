/* The per-run workspace: one allocation sized from the model, so that nothing is allocated while
   integrating. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

mb_data* mb_data_create(const mb_model* m) {
  const size_t nq = m->nq, nc = m->ncon, nn = nq * nq;
  mb_data* d = calloc(1, sizeof *d);
  if (!d) return NULL;
  double** fields[] = {&d->q,       &d->qd,       &d->qdd,       &d->force,  &d->qhat_v, &d->qhat_a,
                       &d->qd_star, &d->qdd_star, &d->ctrl_work, &d->lambda, &d->sigma,  &d->kappa,
                       &d->phi,     &d->phit,     &d->phidd_rhs, &d->phiq,   &d->stiff,  &d->damp,
                       &d->tangent, &d->proj,     &d->out,       &d->unwrap, &d->work,   &d->psi};
  const size_t counts[] = {nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           8 * nq,
                           nc,
                           nc,
                           nc,
                           nc,
                           nc,
                           nc,
                           nc * nq,
                           nn,
                           nn,
                           nn,
                           nn,
                           (size_t)m->nout,
                           3 * (size_t)m->nsensor,
                           4 * nq + 2 * nc + nn,
                           (size_t)m->nfunctional};
  size_t total = 8;
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) total += counts[i];
  double* buf = calloc(total, sizeof(double));
  int* pivot = calloc(nq + 1, sizeof(int));
  if (!buf || !pivot) {
    free(d);
    free(buf);
    free(pivot);
    return NULL;
  }
  /* the first array owns the block */
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) *fields[i] = buf, buf += counts[i];
  d->pivot = pivot;
  return d;
}

void mb_data_free(mb_data* d) {
  if (!d) return;
  free(d->q);
  free(d->pivot);
  free(d);
}

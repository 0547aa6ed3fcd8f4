/* The per-run workspace: one allocation sized from the model and its sparsity structure, plus the
   numeric factorisations, so that nothing is allocated while integrating. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

mb_data* mb_data_create_natural(const mb_model* m) {
  const mb_structure* st = m->structure;
  const size_t nq = m->nq, nc = m->ncon, nnz = st->sys->nnz, nphiq = st->phiq.nnz;
  mb_data* d = calloc(1, sizeof *d + 2 * sizeof(mb_factor));
  if (!d) return NULL;
  double** fields[] = {
      &d->q,        &d->qd,        &d->qdd,       &d->force,   &d->qhat_v, &d->qhat_a,  &d->qd_star,
      &d->qdd_star, &d->ctrl_work, &d->fric_work, &d->lambda,  &d->sigma,  &d->kappa,   &d->phi,
      &d->phit,     &d->phidd_rhs, &d->phiq,      &d->stiff,   &d->damp,   &d->tangent, &d->proj,
      &d->out,      &d->unwrap,    &d->work,      &d->scatter, &d->psi,    &d->lvcache};
  const size_t counts[] = {nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           nq,
                           8 * nq,
                           6 * nq + nc,
                           nc,
                           nc,
                           nc,
                           nc,
                           nc,
                           nc,
                           nphiq,
                           nnz,
                           nnz,
                           nnz,
                           nnz,
                           (size_t)m->nout,
                           3 * (size_t)m->nsensor,
                           4 * nq + 2 * nc,
                           nq,
                           (size_t)m->nfunctional,
                           MB_LVCACHE * (size_t)st->ncache};
  double* buf = mbu_alloc_arrays(sizeof counts / sizeof counts[0], counts, fields, 8);
  d->newton = (mb_factor*)(d + 1);
  d->projection = d->newton + 1;
  if (!buf || mb_factor_init(d->newton, &st->newton) ||
      mb_factor_init(d->projection, &st->projection)) {
    free(buf);
    mb_factor_release(d->newton);
    mb_factor_release(d->projection);
    free(d);
    return NULL;
  }
  return d; /* the first array owns the block */
}

void mb_data_free_natural(mb_data* d) {
  if (!d) return;
  mb_factor_release(d->newton);
  mb_factor_release(d->projection);
  free(d->q);
  free(d);
}

/* The per-run workspace: one allocation sized from the model, so that nothing is allocated while
   integrating. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

mb_data* mb_data_create(const mb_model* m) {
  const size_t nq = m->nq, nc = m->ncon, nn = nq * nq;
  /* doubles: q, qd, qdd, force, qhat_v, qhat_a (nq each); lambda, sigma, kappa, phi, phit,
     phidd_rhs (nc each); phiq; stiff, damp, tangent, proj; out; unwrap; work */
  size_t ndouble = 8 * nq + 6 * nc + nc * nq + 4 * nn + m->nout + 3 * (size_t)m->nsensor +
                   (4 * nq + 2 * nc + nn) + 8;
  mb_data* d = calloc(1, sizeof *d);
  double* buf = calloc(ndouble, sizeof(double));
  int* pivot = calloc(nq + 1, sizeof(int));
  if (!d || !buf || !pivot) {
    free(d);
    free(buf);
    free(pivot);
    return NULL;
  }
  double* p = buf;
#define MB_TAKE(field, count) \
  d->field = p;               \
  p += (count);
  MB_TAKE(q, nq)
  MB_TAKE(qd, nq)
  MB_TAKE(qdd, nq)
  MB_TAKE(force, nq) MB_TAKE(qhat_v, nq) MB_TAKE(qhat_a, nq) MB_TAKE(qd_star, nq)
      MB_TAKE(qdd_star, nq) MB_TAKE(lambda, nc) MB_TAKE(sigma, nc) MB_TAKE(kappa, nc)
          MB_TAKE(phi, nc) MB_TAKE(phit, nc) MB_TAKE(phidd_rhs, nc) MB_TAKE(phiq, nc * nq)
              MB_TAKE(stiff, nn) MB_TAKE(damp, nn) MB_TAKE(tangent, nn) MB_TAKE(proj, nn)
                  MB_TAKE(out, m->nout) MB_TAKE(unwrap, 3 * (size_t)m->nsensor)
                      MB_TAKE(work, 4 * nq + 2 * nc + nn)
#undef MB_TAKE
                          d->pivot = pivot;
  return d;
}

void mb_data_free(mb_data* d) {
  if (!d) return;
  free(d->q); /* the first array owns the block */
  free(d->pivot);
  free(d);
}

/* The natural model's mass: its constant 3 x 3 (2 x 2) blocks between the coordinates of each
   body's base points and vectors (structure.h). */
#include "internal.h"
#include "structure.h"

/* y += s M x over the mass blocks first to last - 1, for a constant dim */
static inline void mass_mul(const int dim, const mb_model* m, int first, int last, const double* x,
                            double s, double* y) {
  const int* blk = m->mass_block;
  for (int k = first; k < last; k++) {
    const double* xk = x + blk[2 * k + 1] * dim;
    /* the joint formulation's products along one coordinate move few bodies */
    if (xk[0] == 0 && xk[1] == 0 && (dim == 2 || xk[2] == 0)) continue;
    mbu_add_wx(dim, m->mass + 9 * k, xk, s, y + blk[2 * k] * dim);
  }
}

void mb_mass_mul_blocks(const mb_model* m, int first, int last, const double* x, double s,
                        double* y) {
  if (m->dim == 3)
    mass_mul(3, m, first, last, x, s, y);
  else
    mass_mul(2, m, first, last, x, s, y);
}

void mb_mass_mul(const mb_model* m, const double* x, double s, double* y) {
  mb_mass_mul_blocks(m, 0, m->nmass, x, s, y);
}

double mb_mass_form(const mb_model* m, const double* x, const double* y) {
  const int dim = m->dim;
  double sum = 0;
  for (int k = 0; k < m->nmass; k++) {
    double My[3] = {0, 0, 0};
    const int i = m->mass_block[2 * k] * dim, j = m->mass_block[2 * k + 1] * dim;
    mbu_add_wx(dim, m->mass + 9 * k, y + j, 1, My);
    sum += x[i] * My[0] + x[i + 1] * My[1] + (dim == 3 ? x[i + 2] * My[2] : 0);
  }
  return sum;
}

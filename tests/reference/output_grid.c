/* The integration grid shared by the references (reference.h): whole steps between outputs. */
#include <math.h>

#include "reference/reference.h"

int output_grid_init(double t_end, double dt_out, double h, int nout_max, output_grid* g) {
  if (!(t_end > 0) || !(dt_out > 0) || !(h > 0) || nout_max < 1) return 0;
  g->per_out = (long)ceil(dt_out / h - 1e-9);
  g->step = dt_out / g->per_out;
  g->nout = (long)floor(t_end / dt_out * (1 + 1e-9)) + 1;
  return 1;
}

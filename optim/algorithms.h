/* The table of algorithms behind mbo_algorithm: name, NLopt algorithm, and what each needs and
   takes. Internal to optim/. */
#ifndef MBOPT_OPTIM_ALGORITHMS_H
#define MBOPT_OPTIM_ALGORITHMS_H

#include <nlopt.h>

#include "mbopt/optim.h"

typedef struct mbo_algorithm_info {
  const char* name;
  nlopt_algorithm nlopt;
  int gradient;    /* 1 when the callback must supply gradients */
  int constraints; /* 0 none, 1 inequalities, 2 inequalities and equalities */
  int finite;      /* 1 when failed points must read as finite values: the algorithm interpolates
                      models through every value, and one infinity poisons them */
} mbo_algorithm_info;

/* Returns the row of alg, or NULL when alg is outside the enum. */
const mbo_algorithm_info* mbo_algorithm_info_of(mbo_algorithm alg);

#endif

/* The algorithms by name: one const table, so that a new algorithm is one new row. */
#include "algorithms.h"

#include <string.h>

/* in the order of mbo_algorithm */
static const mbo_algorithm_info table[] = {
    {"lbfgs", NLOPT_LD_LBFGS, 1, 0, 0},
    {"slsqp", NLOPT_LD_SLSQP, 1, 2, 0},
    {"mma", NLOPT_LD_MMA, 1, 1, 0},
    {"ccsaq", NLOPT_LD_CCSAQ, 1, 1, 0},
    {"tnewton", NLOPT_LD_TNEWTON_PRECOND_RESTART, 1, 0, 0},
    {"bobyqa", NLOPT_LN_BOBYQA, 0, 0, 1},
    {"cobyla", NLOPT_LN_COBYLA, 0, 2, 1},
    {"neldermead", NLOPT_LN_NELDERMEAD, 0, 0, 0},
    {"sbplx", NLOPT_LN_SBPLX, 0, 0, 0},
};

enum { NALGORITHM = sizeof table / sizeof table[0] };

const mbo_algorithm_info* mbo_algorithm_info_of(mbo_algorithm alg) {
  return (int)alg >= 0 && (int)alg < NALGORITHM ? &table[alg] : NULL;
}

const char* mbo_algorithm_name(mbo_algorithm alg) {
  const mbo_algorithm_info* info = mbo_algorithm_info_of(alg);
  return info ? info->name : "?";
}

int mbo_algorithm_parse(const char* name) {
  for (int i = 0; name && i < NALGORITHM; i++)
    if (!strcmp(name, table[i].name)) return i;
  return -1;
}

int mbo_algorithm_uses_gradient(mbo_algorithm alg) {
  const mbo_algorithm_info* info = mbo_algorithm_info_of(alg);
  return info ? info->gradient : 0;
}

int mbo_algorithm_constraints(mbo_algorithm alg) {
  const mbo_algorithm_info* info = mbo_algorithm_info_of(alg);
  return info ? info->constraints : 0;
}

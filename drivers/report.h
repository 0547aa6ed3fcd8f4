/* DIR/report.html of mbopt optimize and mbopt compare: one self-contained page with the problem
   (objective, design variables and bounds, constraints), the algorithms' table, the convergence
   (every evaluation's objective and the best feasible one so far, the best feasible's distance
   to the best found on a log scale, the constraints' values against their bounds), the design
   variables' paths, and the motion and time histories of the initial and the best design. */
#ifndef MBOPT_REPORT_H
#define MBOPT_REPORT_H

#include <cJSON.h>

#include "mbopt/mbopt.h"

/* One algorithm's run: its summary (summary.json), its folder (holding history.csv) and whether
   each evaluation, from the first, met every constraint (the optimiser's own verdict). */
typedef struct report_run {
  const cJSON* summary;
  const char* dir;
  const unsigned char* feasible; /* (nfeasible) */
  int nfeasible;
} report_run;

/* Writes DIR/report.html for the runs of the spec at `spec`, d being its description (design
   variables anywhere: the start and the best feasible result are set in it, and left so).
   A report is no result of the run: when it cannot be written (the JavaScript libraries are
   missing, a simulation fails) a warning says why and 0 is returned; after SIGINT, SIGTERM or
   SIGHUP none is written. */
int report_write(const char* dir, const char* spec, mb_desc* d, const report_run* runs, int nrun);

#endif

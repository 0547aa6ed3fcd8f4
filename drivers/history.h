/* The history of an optimisation run, DIR/history.csv: one row per evaluation, written whole as
   it happens, and read back to resume the run.
   Columns: evaluation, seconds, objective, the design variables, the constraint functionals,
   gradient (1 when gradients were computed), failed (1 when the point failed: objective and
   constraints are nan), then the gradient of the objective d<objective>/d<variable> and of each
   constraint d<constraint>/d<variable>, empty without gradients. Numbers have 17 significant
   digits, so that a value read back is the value written, bit for bit. */
#ifndef MBOPT_HISTORY_H
#define MBOPT_HISTORY_H

#include <stdio.h>

#include "mbopt/optimize.h"

/* Writes the header row of the history of d's optimisation. */
void history_header(const mb_desc* d, FILE* f);

/* Writes the row of evaluation e and flushes it: a row reaches the file whole (a row is far
   shorter than the buffer the caller gives f). */
void history_row(FILE* f, const mb_opt_evaluation* e);

/* A history read back: its evaluations in order, as mb_optimize_resume takes them. */
typedef struct history_record {
  int count;
  mb_opt_evaluation* rows; /* (count), pointing into values */
  double* values;
  int dropped_partial_row; /* 1 when the file ended in a row cut short, which was left out */
} history_record;

/* Reads the history at `path` written for d's optimisation (the same header). Prints the error,
   naming the file and the line, and returns an exit code. */
int history_read(const char* path, const mb_desc* d, history_record* r);

void history_free(history_record* r);

#endif

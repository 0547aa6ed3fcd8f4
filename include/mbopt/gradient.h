/* Gradients of the functionals of a spec by the sensitivity method that suits it: forward
   (direct differentiation, cost growing with the number of parameters p) or adjoint (one
   backward sweep, cost growing with the number of functionals m). */
#ifndef MBOPT_GRADIENT_H
#define MBOPT_GRADIENT_H

#include <stddef.h>

#include "mbopt/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_method { MB_METHOD_AUTO, MB_METHOD_FORWARD, MB_METHOD_ADJOINT } mb_method;

/* Name of a method ("auto", "forward", "adjoint"), and the method of a name (-1 if unknown). */
const char* mb_method_name(mb_method method);
int mb_method_parse(const char* name);

typedef struct mb_gradient_info {
  mb_method method;     /* the method that ran */
  char reason[256];     /* why, in one sentence with the numbers behind it */
  size_t memory_bytes;  /* trajectory stored by the adjoint */
  int substepped_steps; /* steps taken again on sub-steps after a Newton failure (max_substeps) */
} mb_gradient_info;

/* Computes the functionals psi (m->nfunctional) and their gradients grad (nfunctional x
   mb_desc_gradient_count(desc), row-major: every parameter, or those desc->gradient_param
   selects). With MB_METHOD_AUTO the method is chosen by the linear systems each solves per step:
   the adjoint when p > m, else forward (the same every time for the same p and m). checkpoint > 0
   stores every checkpoint-th state for the adjoint. info (may be NULL) says which method ran and
   why. */
mb_status mb_gradient(const mb_desc* desc, const mb_model* m, mb_method method, int checkpoint,
                      double* psi, double* grad, mb_gradient_info* info, mb_error* err);

#ifdef __cplusplus
}
#endif

#endif

/* A formulation of the equations of motion: the table of what a model compiled in it does at the
   library's entry points (formulation.c), in the pattern of the GSL ODE solvers' step types
   (gsl_odeiv2_step_type): the natural coordinates fill one (formulation.c), the joint coordinates
   another (joint/joint_formulation.c), and a later formulation is a table of its own, not a
   branch in every entry point. The step itself is shared the same way (stepper.h). Internal. */
#ifndef MBOPT_FORMULATION_H
#define MBOPT_FORMULATION_H

#include "mbopt/desc.h"
#include "mbopt/model.h"
#include "mbopt/simulate.h"

typedef struct mb_formulation_ops {
  /* its workspace over d (mb_data_create): 0, or -1 out of memory; and freeing it */
  int (*data_init)(const mb_model* m, mb_data* d);
  void (*data_free)(mb_data* d);
  /* what it holds beyond the natural model, freed with it */
  void (*model_free)(mb_model* m);
  mb_status (*assemble)(const mb_model* m, mb_data* d, mb_error* err);
  mb_status (*simulate)(const mb_model* m, mb_data* d, mb_observer obs, void* user, mb_error* err);
  /* the functionals psi and their gradients (NULL: psi alone) by the forward sensitivity and by
     the discrete adjoint (mbd_forward, mbd_adjoint) */
  mb_status (*forward)(const mb_desc* desc, const mb_model* m, mb_data* d, double* psi,
                       double* grad, mb_error* err);
  mb_status (*adjoint)(const mb_desc* desc, const mb_model* m, mb_data* d, int checkpoint,
                       double* psi, double* grad, size_t* memory, mb_error* err);
  int (*coordinate_count)(const mb_model* m);
  int (*constraint_count)(const mb_model* m);
  const char* (*coordinate_name)(const mb_model* m);
} mb_formulation_ops;

extern const mb_formulation_ops mb_natural_formulation;
extern const mb_formulation_ops mb_joint_formulation;

/* The natural coordinates' sensitivities (sens_forward.c, sens_adjoint.c). */
mb_status mb_natural_forward(const mb_desc* desc, const mb_model* m, mb_data* d, double* psi,
                             double* grad, mb_error* err);
mb_status mb_natural_adjoint(const mb_desc* desc, const mb_model* m, mb_data* d, int checkpoint,
                             double* psi, double* grad, size_t* memory, mb_error* err);

#endif

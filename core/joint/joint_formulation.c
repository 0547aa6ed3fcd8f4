/* The joint coordinates' table of the entry points (formulation.h): the model's joint
   formulation (mb_model.joint) and its workspace (mb_data.joint) over the natural ones. */
#include "formulation.h"

#include "joint_model.h"

static int joint_data_init(const mb_model* m, mb_data* d) {
  d->joint = mb_joint_data_create(m->joint, d);
  return d->joint ? 0 : -1;
}

static void joint_data_free(mb_data* d) {
  mb_joint_data_free(d->joint);
}

static void joint_model_free(mb_model* m) {
  mb_joint_model_free(m->joint);
}

static mb_status joint_assemble(const mb_model* m, mb_data* d, mb_error* err) {
  return mb_joint_assemble(m->joint, d->joint, err);
}

static mb_status joint_simulate(const mb_model* m, mb_data* d, mb_observer obs, void* user,
                                mb_error* err) {
  return mb_joint_simulate(m->joint, d->joint, obs, user, err);
}

static mb_status joint_forward(const mb_desc* desc, const mb_model* m, mb_data* d, double* psi,
                               double* grad, mb_error* err) {
  return mb_joint_forward(desc, m->joint, d->joint, psi, grad, err);
}

static mb_status joint_adjoint(const mb_desc* desc, const mb_model* m, mb_data* d, int checkpoint,
                               double* psi, double* grad, size_t* memory, mb_error* err) {
  return mb_joint_adjoint(desc, m->joint, d->joint, checkpoint, psi, grad, memory, err);
}

static int joint_coordinate_count(const mb_model* m) {
  return m->joint->nz;
}

static int joint_constraint_count(const mb_model* m) {
  return m->joint->ncon;
}

static const char* joint_coordinate_name(const mb_model* m) {
  return m->joint->ref == MB_REFERENCE_GLOBAL_ORIGIN ? "joint coordinates (RTdyn1)"
                                                     : "joint coordinates (RTdyn0)";
}

const mb_formulation_ops mb_joint_formulation = {
    joint_data_init,        joint_data_free,      joint_model_free, joint_assemble,
    joint_simulate,         joint_forward,        joint_adjoint,    joint_coordinate_count,
    joint_constraint_count, joint_coordinate_name};

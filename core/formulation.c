/* The formulations behind the public entry points: a model is compiled in natural coordinates,
   or, with simulation.formulation "joint", as the natural coordinates that a joint formulation
   evaluates its forces, constraints and outputs through (mb_model.joint); its workspace and its
   simulation follow. */
#include "internal.h"
#include "joint/joint_model.h"

mb_status mb_compile(const mb_desc* d, mb_model** out, mb_error* err) {
  if (!d || d->settings.formulation != MB_FORMULATION_JOINT) return mb_compile_natural(d, out, err);
  *out = NULL;
  mb_joint_model* jm = NULL;
  const mb_status st = mb_joint_model_create(d, (mb_reference)d->settings.reference, &jm, err);
  if (st != MB_OK) return st;
  jm->owns_aux = 0;
  jm->aux->joint = jm;
  *out = jm->aux;
  return MB_OK;
}

void mb_model_free(mb_model* m) {
  if (!m) return;
  mb_joint_model_free(m->joint);
  mb_model_free_natural(m);
}

mb_data* mb_data_create(const mb_model* m) {
  mb_data* d = mb_data_create_natural(m);
  if (d && m->joint && !(d->joint = mb_joint_data_create(m->joint, d))) {
    mb_data_free_natural(d);
    return NULL;
  }
  return d;
}

void mb_data_free(mb_data* d) {
  if (!d) return;
  mb_joint_data_free(d->joint);
  mb_data_free_natural(d);
}

mb_status mb_assemble(const mb_model* m, mb_data* d, mb_error* err) {
  if (m->joint) return mb_joint_assemble(m->joint, d->joint, err);
  return mb_assemble_with(m, d, NULL, NULL, err);
}

mb_status mb_simulate(const mb_model* m, mb_data* d, mb_observer obs, void* user, mb_error* err) {
  if (m->joint) return mb_joint_simulate(m->joint, d->joint, obs, user, err);
  return mb_simulate_natural(m, d, obs, user, err);
}

int mb_model_coordinate_count(const mb_model* m) {
  return m->joint ? m->joint->nz : m->nq;
}

int mb_model_constraint_count(const mb_model* m) {
  return m->joint ? m->joint->ncon : m->ncon;
}

const char* mb_model_coordinate_name(const mb_model* m) {
  if (!m->joint) return "coordinates";
  return m->joint->ref == MB_REFERENCE_GLOBAL_ORIGIN ? "joint coordinates (RTdyn1)"
                                                     : "joint coordinates (RTdyn0)";
}

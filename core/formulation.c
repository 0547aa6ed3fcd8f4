/* The formulations behind the public entry points: a model is compiled in natural coordinates,
   or, with simulation.formulation "joint", as the natural coordinates that a joint formulation
   evaluates its forces, constraints and outputs through (mb_model.joint); each entry point then
   calls its formulation's table (formulation.h). The natural coordinates' table is here. */
#include "formulation.h"

#include "internal.h"
#include "joint/joint_model.h"

static int natural_data_init(const mb_model* m, mb_data* d) {
  (void)m, (void)d;
  return 0;
}

static void natural_data_free(mb_data* d) {
  (void)d;
}

static void natural_model_free(mb_model* m) {
  (void)m;
}

static mb_status natural_assemble(const mb_model* m, mb_data* d, mb_error* err) {
  return mb_assemble_with(m, d, NULL, NULL, err);
}

static int natural_coordinate_count(const mb_model* m) {
  return m->nq;
}

static int natural_constraint_count(const mb_model* m) {
  return m->ncon;
}

static const char* natural_coordinate_name(const mb_model* m) {
  (void)m;
  return "coordinates";
}

const mb_formulation_ops mb_natural_formulation = {
    natural_data_init,        natural_data_free,      natural_model_free, natural_assemble,
    mb_simulate_natural,      mb_natural_forward,     mb_natural_adjoint, natural_coordinate_count,
    natural_constraint_count, natural_coordinate_name};

/* the table of a model or workspace: natural without one (models compiled in natural
   coordinates directly, tangent models) */
static const mb_formulation_ops* ops(const mb_formulation_ops* f) {
  return f ? f : &mb_natural_formulation;
}

mb_status mb_compile(const mb_desc* d, mb_model** out, mb_error* err) {
  if (!d || d->settings.formulation != MB_FORMULATION_JOINT) return mb_compile_natural(d, out, err);
  *out = NULL;
  mb_joint_model* jm = NULL;
  const mb_status st = mb_joint_model_create(d, (mb_reference)d->settings.reference, &jm, err);
  if (st != MB_OK) return st;
  jm->owns_aux = 0;
  jm->aux->joint = jm;
  jm->aux->formulation = &mb_joint_formulation;
  *out = jm->aux;
  return MB_OK;
}

void mb_model_free(mb_model* m) {
  if (!m) return;
  ops(m->formulation)->model_free(m);
  mb_model_free_natural(m);
}

mb_data* mb_data_create(const mb_model* m) {
  mb_data* d = mb_data_create_natural(m);
  if (!d) return NULL;
  d->formulation = ops(m->formulation);
  if (d->formulation->data_init(m, d) != 0) {
    mb_data_free_natural(d);
    return NULL;
  }
  return d;
}

void mb_data_free(mb_data* d) {
  if (!d) return;
  ops(d->formulation)->data_free(d);
  mb_data_free_natural(d);
}

mb_status mb_assemble(const mb_model* m, mb_data* d, mb_error* err) {
  return ops(m->formulation)->assemble(m, d, err);
}

mb_status mb_simulate(const mb_model* m, mb_data* d, mb_observer obs, void* user, mb_error* err) {
  return ops(m->formulation)->simulate(m, d, obs, user, err);
}

mb_status mbd_forward(const mb_desc* desc, const mb_model* m, mb_data* d, double* psi, double* grad,
                      mb_error* err) {
  return ops(m->formulation)->forward(desc, m, d, psi, grad, err);
}

mb_status mbd_adjoint(const mb_desc* desc, const mb_model* m, mb_data* d, int checkpoint,
                      double* psi, double* grad, size_t* memory, mb_error* err) {
  return ops(m->formulation)->adjoint(desc, m, d, checkpoint, psi, grad, memory, err);
}

int mb_model_coordinate_count(const mb_model* m) {
  return ops(m->formulation)->coordinate_count(m);
}

int mb_model_constraint_count(const mb_model* m) {
  return ops(m->formulation)->constraint_count(m);
}

const char* mb_model_coordinate_name(const mb_model* m) {
  return ops(m->formulation)->coordinate_name(m);
}

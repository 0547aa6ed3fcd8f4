/* Parameter derivatives of the model, functionals, and forward (direct differentiation)
   sensitivity analysis of ALI3-P (Dopico et al., "Forward sensitivity analysis of the
   index-3 augmented Lagrangian formulation with projections", section 3). */
#ifndef MBOPT_SENSITIVITY_H
#define MBOPT_SENSITIVITY_H

#include <stddef.h>

#include "mbopt/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tangent model: a model-shaped struct with the same sizes and integer arrays as m, whose real
   arrays hold the partial derivatives of m's real arrays with respect to one parameter:
   lvec_const, term_W, con_value, pres_value, pres_rate, force_k, force_c, force_l0, force_f0,
   func_data, mass, gravity_force, gravity, body_mass, elem_q0 and fterm_weight, fterm_eps.
   Because every linear vector is v = c + W q, mb_lvec_eval(dm, lv, q, v) gives the explicit
   derivative dv/drho at fixed q, and mb_lvec_rate(dm, lv, qd, v) gives d(J qd)/drho.
   Fails (MB_ERR_MODEL) when the parameter is bound to a quantity that cannot be differentiated
   (a marker axis or reference direction). Free with mb_model_free. */
mb_status mbd_model_tangent(const mb_desc* d, const mb_model* m, int param, mb_model** dm,
                            mb_error* err);

/* Output column `col` (0 <= col < m->nout) at the state of d, and its partial derivatives with
   respect to q, qd and qdd (each nq, overwritten; each may be NULL). NaN when the column has no
   partials (a joint's friction or normal force). */
double mbd_output_partials(const mb_model* m, const mb_data* d, int col, double* dq, double* dqd,
                           double* dqdd);

/* Output column `col` at the state of d, and its partial derivatives with respect to the
   Lagrange multipliers d->lambda (dlam: ncon, overwritten): nonzero for the reaction and
   multipliers outputs of joints only. */
double mbd_output_lambda(const mb_model* m, const mb_data* d, int col, double* dlam);

/* Explicit partial derivative of output column `col` with respect to the parameter of tangent
   model dm, at fixed q, qd, qdd. */
double mbd_output_param(const mb_model* m, const mb_model* dm, const mb_data* d, int col);

/* Functionals psi = sum of final terms at t_F + integral over [0, t_F] of the integral terms.
   The integrand g (final = 0) or the final value w (final = 1) of functional f at the state of d,
   with partial derivatives with respect to q, qd, qdd (each nq, overwritten, may be NULL). */
double mbd_functional_partials(const mb_model* m, const mb_data* d, int f, int final, double* dq,
                               double* dqd, double* dqdd);

/* The partial derivatives of the same g or w with respect to the multipliers d->lambda (dlam:
   ncon, overwritten); returns the number of the functional's terms that read multipliers (0:
   dlam is zero). */
int mbd_functional_lambda(const mb_model* m, const mb_data* d, int f, int final, double* dlam);

/* Explicit partial derivative of g (final = 0) or w (final = 1) of functional f with respect to
   the parameter of tangent model dm (through sensors, references and weights). */
double mbd_functional_param(const mb_model* m, const mb_model* dm, const mb_data* d, int f,
                            int final);

/* Forward sensitivity: assembles and integrates m (compiled from desc) with ALI3-P and returns
   the functionals psi (m->nfunctional) and, when grad is not NULL, their gradients with respect to
   the gradient parameters of desc (grad: nfunctional x mb_desc_gradient_count(desc), row-major;
   every parameter unless desc->gradient_param selects some), by direct
   differentiation of the discrete scheme including the projections and the initial assembly. */
mb_status mbd_forward(const mb_desc* desc, const mb_model* m, mb_data* d, double* psi, double* grad,
                      mb_error* err);

/* Discrete adjoint sensitivity: the same functionals and gradients as mbd_forward, by one
   backward sweep over the stored trajectory that serves all functionals at once; its cost hardly
   grows with the number of parameters. With checkpoint = k > 0 only every k-th state is stored
   and each segment is recomputed before it is swept (less memory, one more simulation). memory
   (may be NULL) receives the bytes the trajectory took. */
mb_status mbd_adjoint(const mb_desc* desc, const mb_model* m, mb_data* d, int checkpoint,
                      double* psi, double* grad, size_t* memory, mb_error* err);

#ifdef __cplusplus
}
#endif

#endif

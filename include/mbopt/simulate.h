/* Initial assembly, ALI3-P time integration, sensors and energies. */
#ifndef MBOPT_SIMULATE_H
#define MBOPT_SIMULATE_H

#include "mbopt/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called after the initial assembly and at every output time; a non-zero return stops the run. */
typedef int (*mb_observer)(const mb_model* m, const mb_data* d, void* user);

/* The most coordinates mb_assemble takes: its least-squares solves and singular value
   decompositions are dense, their time growing as the cube of the size. */
#define MB_MAX_ASSEMBLY_COORDINATES 4000

/* Solves the initial positions (constraints plus prescribed coordinates, as close as possible to
   the approximate pose of the description), velocities and accelerations at t = 0, in the
   model's formulation. Returns MB_ERR_ASSEMBLY or MB_ERR_SINGULAR with a message naming the
   offending entries. */
mb_status mb_assemble(const mb_model* m, mb_data* d, mb_error* err);

/* Advances one ALI3-P step of size m->opt.step: Newmark prediction, Newton iteration on positions
   with the augmented Lagrangian multiplier update, mass-orthogonal velocity and acceleration
   projections (Dopico et al., "Forward sensitivity analysis of the index-3 augmented Lagrangian
   formulation with projections", eqs. 1-7). Returns MB_NEWTON_FAILED (recoverable) or a negative
   status. */
mb_status mb_step(const mb_model* m, mb_data* d, mb_error* err);

/* Assembles, then integrates from 0 to m->opt.t_end, calling obs (may be NULL) at t = 0 and every
   output interval with every output in d->out; between those calls, and without obs, it
   evaluates only the angles (which unwrap step by step); the functionals evaluate their own.
   Statistics accumulate in d->report. */
mb_status mb_simulate(const mb_model* m, mb_data* d, mb_observer obs, void* user, mb_error* err);

/* Evaluates every sensor at the current state into d->out. */
void mb_sensors(const mb_model* m, mb_data* d);

/* Kinetic, gravitational and elastic energy of the current state, J (pointers may be NULL). */
void mb_energy(const mb_model* m, const mb_data* d, double* kinetic, double* gravity,
               double* elastic);

#ifdef __cplusplus
}
#endif

#endif

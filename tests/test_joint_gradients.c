/* Gradients in joint coordinates against the natural formulation, an independent discretisation
   of the same mechanism: the bundled control problems with joint friction (their friction joints
   cut from the tree, whose multipliers are the reactions the friction law reads) and the models
   whose functionals read joint reactions (the tree joints' recovered body by body, the cut
   joints' the formulation's own). psi within 1e-3 relative and every gradient entry within 1e-3
   of the functional's largest entry, by the forward method in both; in joint coordinates, the
   adjoint gradient equal to the forward one to 1e-8 of the largest entry. Over their first
   second; the PID pendulum at half its step (at its own step its gain gradients change by 8 %
   when the step halves, in both formulations, which differ there by 1.3e-3 of the largest
   entry), and the ball whose mount's reaction torque carries its socket's friction too (1.5e-3
   at its step, 7.9e-4 at half: the two converge together; without the friction's share in the
   tree's reactions, 7.6e-2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mbopt/sensitivity.h"
#include "testing.h"

#define MOST 32 /* functionals x parameters of the models below */

typedef struct problem {
  const char* path;
  double step_factor; /* of the model's step */
} problem;

/* psi and the gradient of the model at path over 1 s, in joint coordinates (joint) or natural
   ones, by the adjoint or the forward method; 0 when it fails (the message printed). */
static int gradient(const problem* pb, int joint, int adjoint, int* nf, int* np, double* psi,
                    double* grad) {
  mb_desc d;
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json(pb->path, &d, &err) != MB_OK) return printf("     %s\n", err.message), 0;
  d.settings.t_end = 1;
  d.settings.step *= pb->step_factor;
  if (joint) d.settings.formulation = MB_FORMULATION_JOINT;
  mb_status st = mb_compile(&d, &m, &err);
  *nf = m ? m->nfunctional : 0, *np = mb_desc_gradient_count(&d);
  if (st == MB_OK && *nf * *np > MOST) st = mb_error_set(&err, MB_ERR_ARGUMENT, "too many");
  mb_data* data = st == MB_OK ? mb_data_create(m) : NULL;
  if (st == MB_OK)
    st = adjoint ? mbd_adjoint(&d, m, data, 0, psi, grad, NULL, &err)
                 : mbd_forward(&d, m, data, psi, grad, &err);
  if (st != MB_OK) printf("     %s\n", err.message);
  mb_data_free(data);
  mb_model_free(m);
  mb_desc_free(&d);
  return st == MB_OK;
}

/* The largest |x_i - y_i| of n entries over the largest |x_i|. */
static double gap(int n, const double* x, const double* y) {
  double e = 0, scale = 0;
  for (int i = 0; i < n; i++) e = fmax(e, fabs(x[i] - y[i])), scale = fmax(scale, fabs(x[i]));
  return scale > 0 ? e / scale : e;
}

int main(void) {
  mbt_tally t = {0};
  static const problem problems[] = {{"problems/control/slider_crank_codesign_friction.json", 1},
                                     {"problems/control/governor_design_friction.json", 1},
                                     {"problems/control/pendulum_pid_friction.json", 0.5},
                                     {"tests/models/ok/reactions_planar.json", 1},
                                     {"tests/models/ok/reactions_spatial.json", 1},
                                     {"tests/models/ok/friction_ball_mount.json", 0.5}};
  for (size_t i = 0; i < sizeof problems / sizeof *problems; i++) {
    const problem* pb = &problems[i];
    int nf, np, nf_j, np_j, nf_a, np_a;
    double psi_n[MOST], grad_n[MOST], psi_j[MOST], grad_j[MOST], psi_a[MOST], grad_a[MOST];
    const int ok = gradient(pb, 0, 0, &nf, &np, psi_n, grad_n) &&
                   gradient(pb, 1, 0, &nf_j, &np_j, psi_j, grad_j) &&
                   gradient(pb, 1, 1, &nf_a, &np_a, psi_a, grad_a) && nf == nf_j && np == np_j &&
                   nf == nf_a && np == np_a;
    char what[256];
    snprintf(what, sizeof what, "%s: natural and joint gradients (both methods) run", pb->path);
    mbt_check(&t, ok, what, ok, 1);
    for (int f = 0; ok && f < nf; f++) {
      const double dpsi = fabs(psi_j[f] - psi_n[f]) / fmax(fabs(psi_n[f]), 1e-300);
      mbt_check_scaled(&t, dpsi, 1, 1e-3, "%s: functional %d, psi joint %.9g natural %.9g",
                       pb->path, f, psi_j[f], psi_n[f]);
      const double *gn = grad_n + f * np, *gj = grad_j + f * np, *ga = grad_a + f * np;
      mbt_check_scaled(&t, gap(np, gn, gj), 1, 1e-3,
                       "%s: functional %d, joint forward gradient against natural", pb->path, f);
      mbt_check_scaled(&t, gap(np, gj, ga), 1, 1e-8,
                       "%s: functional %d, joint adjoint gradient against forward", pb->path, f);
    }
  }
  return mbt_finish(&t);
}

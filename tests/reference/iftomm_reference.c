/* Reference solutions of the IFToMM benchmark problems A01 (simple pendulum) and A02 (N-four-bar)
 * in one angle each.
 *
 * A01: a point mass on a massless bar of length L, theta its angle from the x axis:
 *   theta'' = -(g / L) cos theta.
 * A02: in the benchmark's initial position every window of the chain is a unit square, so the
 * chain moves as a parallelogram: the N + 1 cranks (uniform rods, 1 kg, 1 m) turn together at
 * theta and the N couplers (also 1 kg) translate with the crank tips. Then
 *   T = theta'^2 / 2 [(N + 1) / 3 + N],  V = g sin theta [(N + 1) / 2 + N],
 * and theta'' = -k cos theta with k = g [(N + 1) / 2 + N] / [(N + 1) / 3 + N]. This holds
 * through the singular positions (cranks horizontal), where mbopt's natural coordinates see the
 * constraint Jacobian lose N ranks. Integration: classical RK4 at a fixed step.
 */
#include "reference/reference.h"

#include <math.h>

int angle_reference(double k, double theta0, double rate0, double t_end, double dt_out, double h,
                    int nout_max, double* theta_out) {
  output_grid grid;
  if (!output_grid_init(t_end, dt_out, h, nout_max, &grid)) return -1;
  double th = theta0, w = rate0;
  int stored = 0;
  for (long n = 0; n < grid.nout; n++) {
    if (n > 0)
      for (long s = 0; s < grid.per_out; s++) {
        const double k1t = w, k1w = -k * cos(th);
        const double k2t = w + 0.5 * grid.step * k1w, k2w = -k * cos(th + 0.5 * grid.step * k1t);
        const double k3t = w + 0.5 * grid.step * k2w, k3w = -k * cos(th + 0.5 * grid.step * k2t);
        const double k4t = w + grid.step * k3w, k4w = -k * cos(th + grid.step * k3t);
        th += grid.step / 6 * (k1t + 2 * k2t + 2 * k3t + k4t);
        w += grid.step / 6 * (k1w + 2 * k2w + 2 * k3w + k4w);
      }
    if (stored < nout_max) theta_out[stored++] = th;
  }
  return stored;
}

double fourbar_chain_stiffness(int n, double g) {
  return g * ((n + 1) / 2.0 + n) / ((n + 1) / 3.0 + n);
}

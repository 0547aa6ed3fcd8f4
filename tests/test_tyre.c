/* Tyre-road contact: a wheel dropped onto a flat road settles at the static deflection m g / k of
   its radial stiffness, within 1%, and leaves the road alone while it is in the air. */
#include <math.h>
#include <stdio.h>

#include "mbopt/simulate.h"
#include "testing.h"

int main(void) {
  mbt_tally t = {0, 0};
  mb_desc d;
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json("tests/models/ok/tyre_wheel.json", &d, &err) == MB_OK) {
    d.force[0].road[2] = 0; /* flat road */
    d.settings.t_end = 3;
    if (mb_compile(&d, &m, &err) != MB_OK) mb_desc_free(&d);
  }
  if (!m) {
    printf("FAIL cannot load tyre_wheel.json: %s\n", err.message);
    return 1;
  }
  mb_data* data = mb_data_create(m);
  mb_status st = mb_assemble(m, data, &err);
  /* in the air (1 cm above the road) the tyre pushes with a negligible force */
  mb_sensors(m, data);
  const double z0 = data->out[0];
  mbt_check(&t, st == MB_OK && fabs(z0 - 0.31) < 1e-12, "wheel starts 1 cm above the road",
            fabs(z0 - 0.31), 1e-12);
  if (st == MB_OK) st = mb_simulate(m, data, NULL, NULL, &err);
  if (st != MB_OK) printf("     %s\n", err.message);
  mbt_check(&t, st == MB_OK, "simulation of 3 s completes", st, 0);
  mb_sensors(m, data);
  /* carrier and wheel rest on the tyre; the sled moves only horizontally */
  const double mass = m->body_mass[1] + m->body_mass[2], g = -m->gravity[2];
  const double expected = mass * g / m->force_k[0], deflection = m->force_l0[0] - data->out[0];
  const double rel = fabs(deflection / expected - 1);
  mbt_check(&t, rel < 0.01, "static deflection = m g / k", rel, 0.01);
  mb_data_free(data);
  mb_model_free(m);
  mb_desc_free(&d);
  return mbt_finish(&t);
}

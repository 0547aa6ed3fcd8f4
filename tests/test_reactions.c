/* Joint reactions (core/model/reactions.c) against closed forms that do not use the multipliers:
   - a uniform rod falling about a pin: the force on the rod is m a_G - m g, with a_G from the
     simulated angle and rate and the angular acceleration of the equation of motion, and a pin
     transmits no torque;
   - the same rod driven at a constant rate: the driver's torque holds gravity's moment;
   - a spatial cantilever welded to the ground carries its weight and its moment, on either side
     of the joint and in the joint's frame;
   - the spatial slider-crank (revolute, spherical, universal and prismatic joints): the reactions
     on each body and its weight give its mass times the acceleration of its centre of mass;
   - asking for reactions changes the motion only at the level of the solver's tolerances. */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/simulate.h"
#include "testing.h"

#define G 9.81
#define M 2.0 /* rod mass, kg */
#define L 0.8 /* rod length, m */

/* the planar rod: pinned at the ground's origin, horizontal at rest, optionally driven at
   omega rad/s; outputs: angle, rate, reaction force and torque of the pin */
static const char* rod_model(double omega, char* buf, size_t len) {
  char driver[200] = "";
  if (omega != 0)
    snprintf(driver, sizeof driver,
             ", \"drivers\": [{\"name\": \"motor\", \"joint\": \"pin\", \"coordinate\": \"angle\","
             " \"function\": {\"polynomial\": [0, %g]}}]",
             omega);
  snprintf(buf, len,
           "{\"dimension\": 2, \"gravity\": [0, -%g],"
           " \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0]}}},"
           " \"bodies\": [{\"name\": \"rod\", \"mass\": %g, \"com\": [%g, 0], \"inertia\": %.17g,"
           "   \"markers\": {\"O\": {\"point\": [0, 0]}}}],"
           " \"joints\": [{\"name\": \"pin\", \"type\": \"revolute\", \"marker1\": \"ground.O\","
           "   \"marker2\": \"rod.O\"}]%s,"
           " \"initial\": [{\"joint\": \"pin\", \"angle\": 0%s}],"
           " \"outputs\": [{\"name\": \"th\", \"type\": \"joint\", \"joint\": \"pin\"},"
           "   {\"name\": \"w\", \"type\": \"joint_rate\", \"joint\": \"pin\"},"
           "   {\"name\": \"F\", \"type\": \"reaction_force\", \"joint\": \"pin\"},"
           "   {\"name\": \"T\", \"type\": \"reaction_torque\", \"joint\": \"pin\"}],"
           " \"simulation\": {\"t_end\": 0.6, \"step\": 1e-3}}",
           G, M, L / 2, M * L * L / 12, driver, omega != 0 ? "" : ", \"rate\": 0");
  return buf;
}

typedef struct rod_check {
  double omega;     /* driven rate, 0: free */
  double force_err; /* worst |F - F_closed| / (m g) */
  double torque_err;
} rod_check;

/* at each step: the force m (alpha x r_G - w^2 r_G) - m g and the torque the pin or the driver
   transmits, I_O alpha + m g (L/2) cos(th) (zero for a free rod) */
static int rod_observer(const mb_model* m, const mb_data* d, void* user) {
  rod_check* c = user;
  mb_data* dd = (mb_data*)d;
  mb_sensors(m, dd);
  const double th = d->out[0], w = d->out[1];
  const double IO = M * L * L / 3, gm = -M * G * (L / 2) * cos(th);
  const double alpha = c->omega != 0 ? 0 : gm / IO;
  const double rx = L / 2 * cos(th), ry = L / 2 * sin(th);
  const double Fx = M * (-alpha * ry - w * w * rx), Fy = M * (alpha * rx - w * w * ry) + M * G;
  const double T = IO * alpha - gm;
  c->force_err = fmax(c->force_err, fmax(fabs(d->out[2] - Fx), fabs(d->out[3] - Fy)) / (M * G));
  c->torque_err = fmax(c->torque_err, fabs(d->out[4] - T) / (M * G * L));
  return 0;
}

static void rod(mbt_tally* t, double omega) {
  char text[2000], what[120];
  mb_desc d;
  mb_model* m = mbt_compile_text(rod_model(omega, text, sizeof text), &d);
  if (!m) {
    t->failed++;
    return;
  }
  mb_data* data = mb_data_create(m);
  mb_error err;
  rod_check c = {omega, 0, 0};
  mb_status st = mb_simulate(m, data, rod_observer, &c, &err);
  const char* kind = omega != 0 ? "driven rod" : "falling rod";
  snprintf(what, sizeof what, "%s: simulates", kind);
  mbt_check(t, st == MB_OK, what, st, 0);
  snprintf(what, sizeof what, "%s: pin force against m a_G - m g (of m g)", kind);
  mbt_check(t, c.force_err < 1e-6, what, c.force_err, 1e-6);
  snprintf(what, sizeof what, "%s: %s (of m g L)", kind,
           omega != 0 ? "driver torque holds gravity's moment" : "a pin transmits no torque");
  mbt_check(t, c.torque_err < 1e-6, what, c.torque_err, 1e-6);
  mb_data_free(data);
  mb_model_free(m);
  mb_desc_free(&d);
}

/* A body of mass M with its centre of mass L along x from the weld, at rest under gravity -z: the
   ground holds it with (0, 0, M g) and the moment (0, -L M g, 0) about the weld. With the ground
   as marker 2 the reaction on the ground is the opposite. In the joint frame of a marker whose
   axis is global x and reference global y, the force M g is along its y (z x x). */
static void cantilever(mbt_tally* t, int ground_second) {
  char text[2000], what[160];
  const char* weld = ground_second ? "\"marker1\": \"arm.W\", \"marker2\": \"ground.W\""
                                   : "\"marker1\": \"ground.W\", \"marker2\": \"arm.W\"";
  snprintf(
      text, sizeof text,
      "{\"dimension\": 3, \"gravity\": [0, 0, -%g],"
      " \"ground\": {\"markers\": {\"W\": {\"point\": [0, 0, 1], \"axis\": [1, 0, 0],"
      "   \"ref\": [0, 1, 0]}}},"
      " \"bodies\": [{\"name\": \"arm\", \"mass\": %g, \"com\": [%g, 0, 0],"
      "   \"inertia\": [0.3, 0.25, 0.2], \"position\": [0, 0, 1],"
      "   \"markers\": {\"W\": {\"point\": [0, 0, 0], \"axis\": [1, 0, 0], \"ref\": [0, 1, 0]}}}],"
      " \"joints\": [{\"name\": \"weld\", \"type\": \"fixed\", %s}],"
      " \"outputs\": [{\"name\": \"F\", \"type\": \"reaction_force\", \"joint\": \"weld\"},"
      "   {\"name\": \"T\", \"type\": \"reaction_torque\", \"joint\": \"weld\"},"
      "   {\"name\": \"Fj\", \"type\": \"reaction_force\", \"joint\": \"weld\","
      "    \"frame\": \"joint\"},"
      "   {\"name\": \"lam\", \"type\": \"multipliers\", \"joint\": \"weld\"}],"
      " \"simulation\": {\"t_end\": 0.1, \"step\": 1e-3}}",
      G, M, L, weld);
  mb_desc d;
  mb_model* m = mbt_compile_text(text, &d);
  if (!m) {
    t->failed++;
    return;
  }
  mb_data* data = mb_data_create(m);
  mb_error err;
  mb_status st = mb_simulate(m, data, NULL, NULL, &err);
  mb_sensors(m, data);
  const double s = ground_second ? -1 : 1, W = M * G;
  const double want[9] = {0, 0, s * W, 0, -s * L * W, 0, 0, s * W, 0};
  double worst = st == MB_OK ? 0 : INFINITY;
  for (int k = 0; k < 9; k++) worst = fmax(worst, fabs(data->out[k] - want[k]) / W);
  snprintf(what, sizeof what, "cantilever (ground as marker %d): weight and moment at the weld",
           ground_second ? 2 : 1);
  mbt_check(t, worst < 1e-9, what, worst, 1e-9);
  snprintf(what, sizeof what, "cantilever (ground as marker %d): 6 multipliers",
           ground_second ? 2 : 1);
  mbt_check(t, m->nout == 15, what, m->nout, 15);
  mb_data_free(data);
  mb_model_free(m);
  mb_desc_free(&d);
}

/* the text of a model file with a reaction_force output on every joint (with_reactions) */
static char* model_with_reactions(const char* path, int with_reactions) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  char* text = calloc(1 << 20, 1);
  size_t n = fread(text, 1, (1 << 20) - 1, f);
  fclose(f);
  text[n] = '\0';
  cJSON* root = cJSON_Parse(text);
  free(text);
  if (!root) return NULL;
  cJSON* outputs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
  const cJSON* joint;
  cJSON_ArrayForEach(joint, cJSON_GetObjectItemCaseSensitive(root, "joints")) {
    if (!with_reactions) break;
    const char* name = cJSON_GetObjectItemCaseSensitive(joint, "name")->valuestring;
    char out[80];
    snprintf(out, sizeof out, "F_%s", name);
    cJSON* o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", out);
    cJSON_AddStringToObject(o, "type", "reaction_force");
    cJSON_AddStringToObject(o, "joint", name);
    cJSON_AddItemToArray(outputs, o);
  }
  char* printed = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return printed;
}

typedef struct newton_check {
  double worst; /* |sum of joint forces + m g - m a_G| / (m g), worst over bodies and steps */
} newton_check;

/* each body: the forces of its joints (+ on body 2, - on body 1) and its weight against its
   mass times the acceleration of its centre of mass */
static int newton_observer(const mb_model* m, const mb_data* d, void* user) {
  newton_check* c = user;
  for (int b = 0; b < m->nbody; b++) {
    double sum[3], a[3];
    mb_lvec_rate(m, m->body_com[b], d->qdd, a);
    for (int k = 0; k < 3; k++) sum[k] = m->body_mass[b] * (m->gravity[k] - a[k]);
    for (int j = 0; j < m->njoint; j++) {
      double F[3], T[3];
      mb_joint_reaction(m, d, j, NULL, F, T);
      const double s = (m->joint_body[2 * j + 1] == b) - (m->joint_body[2 * j] == b);
      for (int k = 0; k < 3; k++) sum[k] += s * F[k];
    }
    const double weight = m->body_mass[b] * mbu_norm3(m->gravity);
    for (int k = 0; k < 3; k++) c->worst = fmax(c->worst, fabs(sum[k]) / weight);
  }
  return 0;
}

/* the spatial slider-crank: Newton's law on every body, and the motion with and without the
   reactions asked for */
static void slider_crank(mbt_tally* t) {
  double final[2][3];
  int ok = 1;
  for (int with = 0; with < 2; with++) {
    char* text = model_with_reactions("problems/slider_crank.json", with);
    mb_desc d;
    mb_model* m = text ? mbt_compile_text(text, &d) : NULL;
    free(text);
    if (!m) {
      t->failed++;
      return;
    }
    mb_data* data = mb_data_create(m);
    mb_error err;
    newton_check c = {0};
    ok &= mb_simulate(m, data, with ? newton_observer : NULL, &c, &err) == MB_OK;
    mb_sensors(m, data);
    const int cols[3] = {mb_model_output(m, "phi"), mb_model_output(m, "xC"),
                         mb_model_output(m, "s")};
    for (int k = 0; k < 3; k++) final[with][k] = cols[k] >= 0 ? data->out[cols[k]] : NAN;
    if (with) {
      mbt_check(t, ok && c.worst < 1e-7,
                "slider-crank: joint forces and weight give m a_G on every body (of m g)", c.worst,
                1e-7);
      mbt_check(
          t, m->njoint == 4 && m->ncon > 0, "slider-crank: four joints, all explicit",
          m->joint_explicit[0] + m->joint_explicit[1] + m->joint_explicit[2] + m->joint_explicit[3],
          4);
    }
    mb_data_free(data);
    mb_model_free(m);
    mb_desc_free(&d);
  }
  double diff = 0;
  for (int k = 0; k < 3; k++) diff = fmax(diff, fabs(final[1][k] - final[0][k]));
  mbt_check(t, ok && diff < 1e-7,
            "slider-crank: explicit joints leave the final angle and positions (rad, m)", diff,
            1e-7);
}

int main(void) {
  mbt_tally t = {0};
  rod(&t, 0);
  rod(&t, 3);
  cantilever(&t, 0);
  cantilever(&t, 1);
  slider_crank(&t);
  return mbt_finish(&t);
}

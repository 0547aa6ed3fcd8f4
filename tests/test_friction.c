/* Joint friction (core/elements/friction.c) against closed forms:
   - a block on an incline (prismatic joint): below the static coefficient it creeps slower than
     the transition velocity; beyond it slides with the Coulomb acceleration g (sin t - mu_d cos t),
     on the normal force m g cos t; the energy balance closes on the friction's work;
   - a disc turning on a horizontal pin (planar revolute joint) decelerates at
     r (pi^3/24) m g mu_d / I_O;
   - a rotor turning about a vertical axis (spatial revolute joint) carries its weight as thrust
     and decelerates at r_t m g mu_d / I_zz;
   - a sleeve sliding and turning on a horizontal shaft (cylindrical joint) under its weight
     decelerates at (pi^3/24) g mu_d along it and r (pi^3/24) m g mu_d / I_xx about it;
   - a ball turning in its socket (spherical joint at the centre of mass, isotropic inertia)
     keeps its axis and spins down at r m g mu_d / I;
   - the gradient of the sliding block's final rate with respect to mu_d by both methods against
     central differences;
   - a description built by hand with friction on a joint type that takes none is refused by the
     compiler, naming the joint. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/gradient.h"
#include "sens.h"
#include "mbopt/simulate.h"
#include "testing.h"

#define G 9.81
#define MU_S 0.4
#define MU_D 0.3

/* the state after simulating to t_end: outputs in d->out */
typedef struct run {
  mb_desc desc;
  mb_model* m;
  mb_data* d;
  mb_status st;
} run;

static int run_text(const char* text, run* r) {
  mb_error err;
  memset(r, 0, sizeof *r);
  r->m = mbt_compile_text(text, &r->desc);
  if (!r->m) return 0;
  r->d = mb_data_create(r->m);
  r->st = mb_simulate(r->m, r->d, NULL, NULL, &err);
  if (r->st != MB_OK) printf("     %s\n", err.message);
  mb_sensors(r->m, r->d);
  return r->st == MB_OK;
}

static void run_free(run* r) {
  mb_data_free(r->d);
  mb_model_free(r->m);
  if (r->m) mb_desc_free(&r->desc);
}

/* the run's energy balance closes to 1e-4 of the work the friction exchanged */
static void energy_closes(mbt_tally* t, const run* r, const char* what) {
  const mb_report* rep = &r->d->report;
  const double exchanged = fabs(rep->work_nonconservative);
  char label[160];
  snprintf(label, sizeof label, "%s: energy balance closes on the friction's work (relative)",
           what);
  mbt_check(t, rep->max_energy_error < 1e-4 * exchanged, label, rep->max_energy_error / exchanged,
            1e-4);
}

static double out(const run* r, const char* name) {
  const int col = mb_model_output(r->m, name);
  return col >= 0 ? r->d->out[col] : NAN;
}

/* a block of 2 kg on an incline at angle theta, from rest, for t_end */
static void incline(mbt_tally* t, double theta, double t_end, run* r) {
  char text[2400];
  snprintf(text, sizeof text,
           "{\"dimension\": 2, \"gravity\": [0, -%g], \"parameters\": {\"mu_d\": %g},"
           " \"ground\": {\"markers\": {\"S\": {\"point\": [0, 0], \"axis\": [%.17g, %.17g]}}},"
           " \"bodies\": [{\"name\": \"block\", \"mass\": 2, \"inertia\": 0.01,"
           "   \"markers\": {\"S\": {\"point\": [0, 0], \"axis\": [%.17g, %.17g]}}}],"
           " \"joints\": [{\"name\": \"slide\", \"type\": \"prismatic\", \"marker1\": \"ground.S\","
           "   \"marker2\": \"block.S\", \"friction\": {\"static\": %g, \"dynamic\": \"$mu_d\","
           "   \"transition_velocity\": 1e-3, \"length\": 0.1}}],"
           " \"initial\": [{\"joint\": \"slide\", \"translation\": 0, \"rate\": 0}],"
           " \"outputs\": [{\"name\": \"v\", \"type\": \"joint_rate\", \"joint\": \"slide\"},"
           "   {\"name\": \"Fn\", \"type\": \"normal_force\", \"joint\": \"slide\"},"
           "   {\"name\": \"Ff\", \"type\": \"friction_force\", \"joint\": \"slide\"}],"
           " \"functionals\": [{\"name\": \"v_end\", \"final\": [{\"output\": \"v\","
           "   \"shape\": \"value\"}]}],"
           " \"simulation\": {\"t_end\": %g, \"step\": 1e-3}}",
           G, MU_D, cos(theta), -sin(theta), cos(theta), -sin(theta), MU_S, t_end);
  if (!run_text(text, r)) t->failed++;
}

static void block_on_incline(mbt_tally* t) {
  run r;
  /* tan(0.3) = 0.31 < mu_s: it holds, creeping */
  incline(t, 0.3, 1, &r);
  if (r.m) {
    const double v = out(&r, "v"), Fn = out(&r, "Fn"), W = 2 * G;
    mbt_check(t, r.st == MB_OK && fabs(v) < 1e-3, "incline at 0.3 rad: creeps below v_t (m/s)",
              fabs(v), 1e-3);
    /* the smooth absolute values add up to 2e-6 N */
    mbt_check(t, fabs(Fn - W * cos(0.3)) < 3e-6, "incline at 0.3 rad: normal force m g cos (N)",
              fabs(Fn - W * cos(0.3)), 3e-6);
    mbt_check(t, fabs(out(&r, "Ff") - W * sin(0.3)) < 1e-8 * W,
              "incline at 0.3 rad: friction holds m g sin (of m g)",
              fabs(out(&r, "Ff") - W * sin(0.3)) / W, 1e-8);
  }
  run_free(&r);

  /* tan(0.5) = 0.55 > mu_s: it slides; the acceleration between 0.5 s and 1 s */
  run half;
  incline(t, 0.5, 0.5, &half);
  incline(t, 0.5, 1, &r);
  if (r.m && half.m) {
    const double a = (out(&r, "v") - out(&half, "v")) / 0.5;
    const double want = G * (sin(0.5) - MU_D * cos(0.5));
    mbt_check(t, fabs(a - want) < 1e-6 * want,
              "incline at 0.5 rad: slides with g (sin - mu_d cos) (relative)",
              fabs(a - want) / want, 1e-6);
    energy_closes(t, &r, "incline at 0.5 rad");
  }
  run_free(&half);
  run_free(&r);
}

/* a uniform disc (m = 2 kg, I_O = 0.01 kg m^2) on a pin of radius 5 mm at its centre, spinning
   at 5 rad/s: the pin carries m g; the friction torque r (pi^3/24) m g mu_d, with v_t = 1e-4 m/s
   far below the slip speed (the static term then adds 1e-5 of it); the scheme's own error grows
   as (w h)^2 */
static void disc_on_pin(mbt_tally* t) {
  const double m = 2, I = 0.01, r = 0.005, w0 = 5, t_end = 1;
  char text[2000];
  snprintf(text, sizeof text,
           "{\"dimension\": 2, \"gravity\": [0, -%g],"
           " \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0]}}},"
           " \"bodies\": [{\"name\": \"disc\", \"mass\": %g, \"inertia\": %g,"
           "   \"markers\": {\"O\": {\"point\": [0, 0]}}}],"
           " \"joints\": [{\"name\": \"pin\", \"type\": \"revolute\", \"marker1\": \"ground.O\","
           "   \"marker2\": \"disc.O\", \"friction\": {\"static\": %g, \"dynamic\": %g,"
           "   \"transition_velocity\": 1e-4, \"radius\": %g}}],"
           " \"initial\": [{\"joint\": \"pin\", \"angle\": 0, \"rate\": %g}],"
           " \"outputs\": [{\"name\": \"w\", \"type\": \"joint_rate\", \"joint\": \"pin\"}],"
           " \"simulation\": {\"t_end\": %g, \"step\": 1e-3}}",
           G, m, I, MU_S, MU_D, r, w0, t_end);
  run run;
  if (!run_text(text, &run)) t->failed++;
  if (run.m) {
    const double want = w0 - r * MB_PI * MB_PI * MB_PI / 24 * m * G * MU_D / I * t_end;
    mbt_check(t, fabs(out(&run, "w") - want) < 1e-5 * w0,
              "disc on a pin: spins down at r (pi^3/24) m g mu_d / I (of w0)",
              fabs(out(&run, "w") - want) / w0, 1e-5);
    energy_closes(t, &run, "disc on a pin");
  }
  run_free(&run);
}

/* a rotor (m = 3 kg, I_zz = 0.02 kg m^2) on a vertical axle at 5 rad/s: the thrust m g rubs at
   r_t = 1 cm; the pin (radius 5 mm) carries no side load */
static void rotor_thrust(mbt_tally* t) {
  const double m = 3, Izz = 0.02, rt = 0.01, w0 = 5, t_end = 1;
  char text[2400];
  snprintf(text, sizeof text,
           "{\"dimension\": 3, \"gravity\": [0, 0, -%g],"
           " \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [0, 0, 1]}}},"
           " \"bodies\": [{\"name\": \"rotor\", \"mass\": %g, \"inertia\": [0.015, 0.015, %g],"
           "   \"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [0, 0, 1]}}}],"
           " \"joints\": [{\"name\": \"axle\", \"type\": \"revolute\", \"marker1\": \"ground.O\","
           "   \"marker2\": \"rotor.O\", \"friction\": {\"static\": %g, \"dynamic\": %g,"
           "   \"transition_velocity\": 1e-4, \"radius\": 0.005, \"length\": 0.05,"
           "   \"thrust_radius\": %g}}],"
           " \"initial\": [{\"joint\": \"axle\", \"angle\": 0, \"rate\": %g}],"
           " \"outputs\": [{\"name\": \"w\", \"type\": \"joint_rate\", \"joint\": \"axle\"}],"
           " \"simulation\": {\"t_end\": %g, \"step\": 1e-3}}",
           G, m, Izz, MU_S, MU_D, rt, w0, t_end);
  run run;
  if (!run_text(text, &run)) t->failed++;
  if (run.m) {
    const double want = w0 - rt * m * G * MU_D / Izz * t_end;
    mbt_check(t, fabs(out(&run, "w") - want) < 1e-5 * w0,
              "rotor on a vertical axle: thrust friction r_t m g mu_d / I_zz (of w0)",
              fabs(out(&run, "w") - want) / w0, 1e-5);
  }
  run_free(&run);
}

/* a sleeve (m = 2 kg, I_xx = 0.01 kg m^2) on a horizontal shaft along x, its centre of mass on
   the axis, sliding at 1 m/s and turning at 5 rad/s: the weight is the radial load at one end of
   the joint's length (no moment), so F_n = (pi^3/24) m g */
static void sleeve_on_shaft(mbt_tally* t) {
  const double m = 2, Ixx = 0.01, r = 0.005, v0 = 1, w0 = 5, t_end = 0.2;
  char text[2600];
  snprintf(
      text, sizeof text,
      "{\"dimension\": 3, \"gravity\": [0, 0, -%g],"
      " \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [1, 0, 0]}}},"
      " \"bodies\": [{\"name\": \"sleeve\", \"mass\": %g, \"inertia\": [%g, 0.02, 0.02],"
      "   \"markers\": {\"O\": {\"point\": [0, 0, 0], \"axis\": [1, 0, 0]}}}],"
      " \"joints\": [{\"name\": \"shaft\", \"type\": \"cylindrical\", \"marker1\": \"ground.O\","
      "   \"marker2\": \"sleeve.O\", \"friction\": {\"static\": %g, \"dynamic\": %g,"
      "   \"transition_velocity\": 1e-4, \"radius\": %g, \"length\": 0.05}}],"
      " \"initial\": [{\"joint\": \"shaft\", \"angle\": 0, \"rate\": %g},"
      "   {\"joint\": \"shaft\", \"translation\": 0, \"rate\": %g}],"
      " \"outputs\": [{\"name\": \"w\", \"type\": \"joint_rate\", \"joint\": \"shaft\","
      "   \"coordinate\": \"angle\"},"
      "  {\"name\": \"v\", \"type\": \"joint_rate\", \"joint\": \"shaft\","
      "   \"coordinate\": \"translation\"},"
      "  {\"name\": \"Ff\", \"type\": \"friction_force\", \"joint\": \"shaft\"},"
      "  {\"name\": \"Fn\", \"type\": \"normal_force\", \"joint\": \"shaft\"}],"
      " \"simulation\": {\"t_end\": %g, \"step\": 1e-3}}",
      G, m, Ixx, MU_S, MU_D, r, w0, v0, t_end);
  run run;
  if (!run_text(text, &run)) t->failed++;
  if (run.m) {
    const double pin = MB_PI * MB_PI * MB_PI / 24;
    const double want_v = v0 - pin * G * MU_D * t_end;
    const double want_w = w0 - r * pin * m * G * MU_D / Ixx * t_end;
    const double ev = fabs(out(&run, "v") - want_v) / v0, ew = fabs(out(&run, "w") - want_w) / w0;
    mbt_check(t, ev < 1e-5, "sleeve on a shaft: slides down at (pi^3/24) g mu_d (of v0)", ev, 1e-5);
    mbt_check(t, ew < 1e-5, "sleeve on a shaft: spins down at r (pi^3/24) m g mu_d / I_xx (of w0)",
              ew, 1e-5);
    const double en = fabs(out(&run, "Fn") - pin * m * G) / (m * G);
    const double ef = fabs(out(&run, "Ff.force") - pin * m * G * MU_D) / (m * G);
    mbt_check(t, en < 1e-6 && ef < 1e-6,
              "sleeve on a shaft: outputs Fn = (pi^3/24) m g, Ff.force = mu_d Fn (of m g)",
              fmax(en, ef), 1e-6);
    energy_closes(t, &run, "sleeve on a shaft");
  }
  run_free(&run);
}

/* a ball (m = 2 kg, I = 0.01 kg m^2 about every axis) held at its centre by a spherical joint of
   radius 5 mm, turning at w0 = (3, 2, 6) rad/s, prescribed through the rates of two points on
   it: the socket carries m g, so the torque r m g mu_d opposes w and |w| falls linearly */
static void ball_in_socket(mbt_tally* t) {
  const double m = 2, I = 0.01, r = 0.005, t_end = 1, w0[3] = {3, 2, 6};
  char text[3000];
  snprintf(
      text, sizeof text,
      "{\"dimension\": 3, \"gravity\": [0, 0, -%g],"
      " \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0, 0]}}},"
      " \"bodies\": [{\"name\": \"ball\", \"mass\": %g, \"inertia\": [%g, %g, %g],"
      "   \"markers\": {\"O\": {\"point\": [0, 0, 0]}, \"P\": {\"point\": [0.1, 0, 0]},"
      "   \"Q\": {\"point\": [0, 0.1, 0]}}}],"
      " \"joints\": [{\"name\": \"socket\", \"type\": \"spherical\", \"marker1\": \"ground.O\","
      "   \"marker2\": \"ball.O\", \"friction\": {\"static\": %g, \"dynamic\": %g,"
      "   \"transition_velocity\": 1e-4, \"radius\": %g}}],"
      " \"initial\": [{\"marker\": \"ball.P\", \"component\": \"y\", \"value\": 0, \"rate\": %g},"
      "   {\"marker\": \"ball.P\", \"component\": \"z\", \"value\": 0, \"rate\": %g},"
      "   {\"marker\": \"ball.Q\", \"component\": \"z\", \"value\": 0, \"rate\": %g}],"
      " \"outputs\": [{\"name\": \"w\", \"type\": \"angular_velocity\", \"body\": \"ball\"}],"
      " \"simulation\": {\"t_end\": %g, \"step\": 1e-3}}",
      G, m, I, I, I, MU_S, MU_D, r, 0.1 * w0[2], -0.1 * w0[1], 0.1 * w0[0], t_end);
  run run;
  if (!run_text(text, &run)) t->failed++;
  if (run.m) {
    const double n0 = sqrt(mbu_dot3(w0, w0)), n1 = n0 - r * m * G * MU_D / I * t_end;
    double e = 0;
    static const char* const names[3] = {"w.x", "w.y", "w.z"};
    for (int k = 0; k < 3; k++) e = fmax(e, fabs(out(&run, names[k]) - w0[k] / n0 * n1) / n0);
    mbt_check(t, e < 1e-5,
              "ball in a socket: keeps its axis, spins down at r m g mu_d / I (of |w0|)", e, 1e-5);
    energy_closes(t, &run, "ball in a socket");
  }
  run_free(&run);
}

/* the gradient of the sliding block's final rate with respect to mu_d: both methods agree and
   match central differences of simulations */
static void gradients(mbt_tally* t) {
  run r;
  incline(t, 0.5, 0.5, &r);
  if (!r.m) return;
  const int p = mb_desc_param_index(&r.desc, "mu_d");
  double psi[2], grad[2][8];
  mb_error err;
  mb_status st = MB_OK;
  /* the functional: the final rate, as a term on the output v */
  for (int method = 0; method < 2 && st == MB_OK; method++)
    st = method ? mbd_adjoint(&r.desc, r.m, r.d, 0, &psi[1], grad[1], NULL, &err)
                : mbd_forward(&r.desc, r.m, r.d, &psi[0], grad[0], &err);
  if (st != MB_OK) printf("     %s\n", err.message);
  const int k = st == MB_OK ? p : 0;
  double fd = 0;
  for (int sgn = -1; sgn <= 1; sgn += 2) {
    const double h = 1e-6;
    mb_desc_set_param(&r.desc, p, MU_D + sgn * h);
    mb_model* m = NULL;
    if (mb_compile(&r.desc, &m, &err) == MB_OK) {
      mb_data* d = mb_data_create(m);
      double v;
      if (mbd_forward(&r.desc, m, d, &v, NULL, &err) == MB_OK) fd += sgn * v / (2 * h);
      mb_data_free(d);
    }
    mb_model_free(m);
  }
  mb_desc_set_param(&r.desc, p, MU_D);
  const double agree = fabs(grad[0][k] - grad[1][k]) / fabs(grad[0][k]);
  mbt_check(t, st == MB_OK && agree < 1e-9, "friction: forward and adjoint d v(T)/d mu_d agree",
            agree, 1e-9);
  const double diff = fabs(grad[0][k] - fd) / fabs(fd);
  mbt_check(t, st == MB_OK && diff < 1e-5, "friction: d v(T)/d mu_d against central differences",
            diff, 1e-5);
  run_free(&r);
}

/* the friction force on rate a of joint j at the state of d */
static double friction_force(const mb_model* m, const mb_data* d, int j, int a) {
  mb_friction f;
  mb_friction_eval(m, d, j, d->lambda, &f);
  return f.force[a];
}

/* At random states and multipliers of the test models: the partials of each friction force in q,
   qd and the multipliers (mbd_friction_partials), and the friction's stiffness K_f and damping C
   (sens_friction_stiffness_mul, mb_forces), against central differences; the stiffness's
   transposed product against the plain one. */
static void derivatives(mbt_tally* t, const char* path) {
  mb_desc desc;
  mb_model* m = mbt_load(path, &desc);
  if (!m) {
    t->failed++;
    return;
  }
  const int nq = m->nq, nc = m->ncon;
  mb_data* d = mb_data_create(m);
  sens_point pt;
  double* buf = calloc(6 * (size_t)nq + nc + 1, sizeof(double));
  double *dq = buf, *dqd = dq + nq, *Kx = dqd + nq, *Q0 = Kx + nq, *Q1 = Q0 + nq, *x = Q1 + nq;
  double* dlam = x + nq;
  unsigned seed = 11;
  double worst[5] = {0, 0, 0, 0, 0};
  sens_point_init(m, &pt, d);
  for (int state = 0; state < 3; state++) {
    mbt_random_state(m, d, &seed);
    /* the third state near rest: the ball's law by its series about w = 0 */
    for (int i = 0; state == 2 && i < nq; i++) d->qd[i] *= 1e-4;
    for (int i = 0; i < nc; i++) d->lambda[i] = 20 * mbt_uniform(&seed);
    for (int j = 0; j < m->njoint; j++)
      for (int a = 0; m->joint_friction[j] && a < mb_friction_rates(m, j); a++) {
        memset(buf, 0, sizeof(double) * (3 * (size_t)nq));
        memset(dlam, 0, sizeof(double) * nc);
        mb_friction f;
        mb_friction_eval(m, d, j, d->lambda, &f);
        mbd_friction_partials(m, d, j, a, d->lambda, &f, 1, dq, dqd, dlam, NULL, NULL);
        const double scale = fmax(1, fabs(friction_force(m, d, j, a)));
        double* xs[3] = {d->q, d->qd, d->lambda};
        const double* an[3] = {dq, dqd, dlam};
        for (int w = 0; w < 3; w++)
          for (int i = 0; i < (w == 2 ? nc : nq); i++) {
            /* near rest the law curves on the scale of v_t: a shorter step */
            const double x0 = xs[w][i], h = (state == 2 ? 2e-8 : 1e-6) * fmax(1, fabs(x0));
            xs[w][i] = x0 + h;
            const double plus = friction_force(m, d, j, a);
            xs[w][i] = x0 - h;
            const double minus = friction_force(m, d, j, a);
            xs[w][i] = x0;
            worst[w] = fmax(worst[w], fabs(an[w][i] - (plus - minus) / (2 * h)) / scale);
          }
      }
    /* K_f x + K x and C x of the whole generalised force against its differences along x */
    mb_forces(m, d, 1);
    pt.d = d;
    for (int i = 0; i < nq; i++) x[i] = mbt_uniform(&seed);
    for (int level = 0; level < 2; level++) {
      double* v = level ? d->qd : d->q;
      const double h = 1e-6;
      for (int i = 0; i < nq; i++) v[i] += h * x[i];
      mb_forces(m, d, 0);
      memcpy(Q1, d->force, sizeof(double) * nq);
      for (int i = 0; i < nq; i++) v[i] -= 2 * h * x[i];
      mb_forces(m, d, 0);
      memcpy(Q0, d->force, sizeof(double) * nq);
      for (int i = 0; i < nq; i++) v[i] += h * x[i];
      mb_forces(m, d, 1);
      memset(Kx, 0, sizeof(double) * nq);
      mb_spmv(m->structure->sys, level ? d->damp : d->stiff, x, 1, Kx);
      if (level == 0) {
        sens_friction_linearise(m, &pt);
        sens_friction_stiffness_mul(m, &pt, x, 0, 1, Kx);
      }
      double e = 0, big = 1;
      for (int i = 0; i < nq; i++) {
        const double fd = -(Q1[i] - Q0[i]) / (2 * h);
        e = fmax(e, fabs(Kx[i] - fd)), big = fmax(big, fabs(fd));
      }
      worst[3] = fmax(worst[3], e / big);
    }
    /* the transposed product the adjoint uses: y . (K_f x) = x . (K_f^T y) */
    double* y = Q0;
    for (int i = 0; i < nq; i++) y[i] = mbt_uniform(&seed);
    memset(Kx, 0, sizeof(double) * nq);
    memset(Q1, 0, sizeof(double) * nq);
    sens_friction_stiffness_mul(m, &pt, x, 0, 1, Kx);
    sens_friction_stiffness_mul(m, &pt, y, 1, 1, Q1);
    const double yKx = mbu_dot(nq, y, Kx), xKty = mbu_dot(nq, x, Q1);
    worst[4] = fmax(worst[4], fabs(yKx - xKty) / fmax(1, fabs(yKx)));
  }
  char what[200];
  static const char* const wrt[4] = {"q", "qd", "multipliers", "(K + K_f) x and C x"};
  for (int w = 0; w < 4; w++) {
    snprintf(what, sizeof what, "%s: friction %s%s against differences", path,
             w < 3 ? "force d/d" : "force ", wrt[w]);
    mbt_check(t, worst[w] < 1e-6, what, worst[w], 1e-6);
  }
  snprintf(what, sizeof what, "%s: friction stiffness transposed, y.(K_f x) = x.(K_f^T y)", path);
  mbt_check(t, worst[4] < 1e-12, what, worst[4], 1e-12);
  sens_point_free(&pt);
  free(buf);
  mb_data_free(d);
  mb_model_free(m);
  mb_desc_free(&desc);
}

/* A library user's description, not the loader's: the sleeve's cylindrical joint turned into a
   universal joint keeps its friction, which mb_compile must refuse rather than drop. */
static void friction_without_law(mbt_tally* t) {
  mb_desc d;
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json("tests/models/ok/friction_sleeve.json", &d, &err) != MB_OK) {
    mbt_check(t, 0, "friction_sleeve.json loads", 0, 0);
    return;
  }
  int j = 0;
  while (j < d.njoint && !d.joint[j].friction.enabled) j++;
  if (j == d.njoint) {
    mbt_check(t, 0, "friction_sleeve.json has a joint with friction", 0, 0);
    mb_desc_free(&d);
    return;
  }
  d.joint[j].type = MB_JOINT_UNIVERSAL;
  char expected[160];
  snprintf(expected, sizeof expected, "joints[%d] (%s): friction is available", j, d.joint[j].name);
  const mb_status st = mb_compile(&d, &m, &err);
  const int refused = st == MB_ERR_MODEL && strstr(err.message, expected) != NULL;
  if (!refused) printf("     %s\n", st == MB_OK ? "compiled" : err.message);
  mbt_check(t, refused, "friction on a universal joint refused by mb_compile", 0, 0);
  mb_model_free(m);
  mb_desc_free(&d);
}

int main(void) {
  mbt_tally t = {0};
  friction_without_law(&t);
  block_on_incline(&t);
  disc_on_pin(&t);
  rotor_thrust(&t);
  sleeve_on_shaft(&t);
  ball_in_socket(&t);
  gradients(&t);
  derivatives(&t, "tests/models/ok/friction_planar.json");
  derivatives(&t, "tests/models/ok/friction_spatial.json");
  derivatives(&t, "tests/models/ok/friction_sleeve.json");
  derivatives(&t, "tests/models/ok/friction_ball.json");
  return mbt_finish(&t);
}

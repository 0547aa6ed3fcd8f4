/* mbopt check: the analytic gradient against central finite differences of whole simulations. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "mbopt/gradient.h"

static void check_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt check SPEC.json [options]\n"
          "Compares the analytic gradient of every functional of SPEC.json with\n"
          "central finite differences of whole simulations, run with tight Newton and projection\n"
          "tolerances and Newton's method at steps h and h/2 per parameter and combined by\n"
          "Richardson extrapolation (error O(h^4)), and prints the relative difference of every\n"
          "entry. An entry passes when its relative difference is within the tolerance, or its\n"
          "absolute difference within what the functional's noise does to the differences:\n"
          "the noise eps (printed) is measured from psi at a few points a millionth of the\n"
          "steps away (second differences, so that the smooth change cancels), at least psi's\n"
          "own rounding (4 x machine epsilon x |psi|), and the absolute\n"
          "tolerance of an entry is 10 x 3 eps / h (printed), which lets functionals that are\n"
          "zero but for round-off (a symmetric vehicle's roll on a straight road) pass. An\n"
          "entry that fails is differenced again at 1/10 and then 1/100 of its step (a feature\n"
          "narrower than the step, as a tyre's contact, spoils the differences) and passes\n"
          "there only by the relative tolerance; the table marks it. One that comes within\n"
          "that smaller step's noise alone still fails, and the table says so with that\n"
          "step's difference: psi is not smooth at the step (stick-slip), and --fd-step\n"
          "(with --fd-abs for parameters at zero) differences every entry there. Prints the\n"
          "method checked and why; exits with 1 when an entry fails.\n\n"
          "Options:\n"
          "  --fd-step E       relative finite-difference step h_k = E |rho_k| (default 1e-3)\n"
          "  --fd-abs A        step of parameters whose value is 0 (default 1e-5)\n"
          "  --tolerance TOL   largest accepted relative difference (default 1e-5)\n"
          "  --method M        gradient method checked: forward, adjoint or auto (default: the\n"
          "                    spec's \"sensitivity\", else auto)\n");
  cli_run_options_help(out, 20, "iteration, whatever the spec says", 1);
  fprintf(out,
          "  --json            print the table as one JSON object\n"
          "  -h, --help        show this help\n");
}

/* Relative difference of an entry, with a floor at 1e-6 of the functional's largest entry so that
   entries that vanish are judged against the scale of their row. */
static double relative_difference(double a, double fd, double row_scale) {
  double denom = fmax(fmax(fabs(a), fabs(fd)), 1e-6 * row_scale);
  return denom > 0 ? fabs(a - fd) / denom : 0;
}

/* The noise of a functional: how far psi strays from a smooth function of the parameters, from
   round-off and the solvers' stopping. Measured at NOISE_SAMPLES pairs of points, every
   parameter moved by +-NOISE_SHIFT of its step (signs from a hash of sample and parameter), as
   second differences psi(rho + s) + psi(rho - s) - 2 psi(rho): their smooth part, s^2 psi'', is
   far below the noise, which moves each by up to 4 eps. (The residual of the two difference
   levels, Delta_h - 2 Delta_{h/2}, would also hold the truncation h^3 psi''' / 4, which the
   extrapolation removes: as a noise measure it loosened smooth entries to 0.4 %.) */
#define NOISE_SHIFT 1e-6
enum { NOISE_SAMPLES = 4 };

/* The absolute tolerance of an entry is NOISE_FACTOR times the most that noise eps moves the
   extrapolated difference (8 Delta_{h/2} - Delta_h) / (6 h): (8 (2 eps) + 2 eps) / (6 h) =
   3 eps / h; the factor allows for noise that four samples do not catch in full (the symmetric
   buggy's roll, zero but for round-off, needs 2.2). */
#define NOISE_FACTOR 10.0

/* psi (m->nfunctional) of d as its parameters stand: compiled and simulated, without gradients */
static mb_status simulate_at(const char* spec, const mb_desc* d, double* psi) {
  mb_model* m = NULL;
  if (cli_compile(spec, d, &m) != CLI_OK) return MB_ERR_MODEL;
  const mb_status st = cli_functionals(d, m, 0, psi, NULL, NULL);
  mb_model_free(m);
  return st;
}

typedef struct check_args {
  const char* spec;
  cli_run run;
  int method; /* mb_method; -1: the spec's */
  double fd_step, fd_abs, tolerance;
  int json;
} check_args;

static int check_parse(int argc, char** argv, check_args* a) {
  *a = (check_args){
      .run = CLI_RUN_SPEC, .method = -1, .fd_step = 1e-3, .fd_abs = 1e-5, .tolerance = 1e-5};
  const cli_option options[] = {
      CLI_RUN_OPTIONS(a->run),
      CLI_THREADS_OPTION(a->run),
      CLI_METHOD_OPTION(a->method),
      {.name = "--fd-step", .kind = CLI_POSITIVE, .target = &a->fd_step},
      {.name = "--fd-abs", .kind = CLI_POSITIVE, .target = &a->fd_abs},
      {.name = "--tolerance", .kind = CLI_POSITIVE, .target = &a->tolerance},
      {.name = "--json", .kind = CLI_FLAG, .target = &a->json, .limit = 1}};
  return cli_parse_options("check", argc, argv, options, sizeof options / sizeof *options, 1,
                           &a->spec);
}

int cmd_check_parse(int argc, char** argv) {
  check_args a;
  return check_parse(argc, argv, &a);
}

/* Central differences of every functional with respect to parameter k (at value base) at steps
   h and h/2, combined by Richardson extrapolation, D = (4 D(h/2) - D(h)) / 3, into out (nf);
   the parameter is left at base. */
static mb_status differences(const char* spec, mb_desc* d, int nf, int k, double base, double h,
                             double* plus, double* minus, double* out) {
  mb_status st = MB_OK;
  for (int f = 0; f < nf; f++) out[f] = 0;
  for (int level = 0; level < 2 && st == MB_OK; level++) {
    const double hl = level == 0 ? h : h / 2, weight = level == 0 ? -1.0 / 3 : 4.0 / 3;
    for (int side = 0; side < 2 && st == MB_OK; side++) {
      mb_desc_set_param(d, k, side == 0 ? base + hl : base - hl);
      st = simulate_at(spec, d, side == 0 ? plus : minus);
    }
    for (int f = 0; f < nf; f++) out[f] += weight * (plus[f] - minus[f]) / (2 * hl);
  }
  mb_desc_set_param(d, k, base);
  return st;
}

/* The absolute tolerance of entry (f, k): what functional f's noise does to its differences. */
static double absolute_tolerance(const double* noise, const double* step, int f, int k) {
  return NOISE_FACTOR * 3 * noise[f] / step[k];
}

/* Entry (f, k) passes: its relative difference within the tolerance (scale: the largest
   analytic entry of each row), or its absolute difference within what the noise does. */
static int entry_passes(const double* grad, const double* fd, const double* scale,
                        const double* noise, const double* step, int p, int f, int k,
                        double tolerance) {
  const size_t e = (size_t)f * p + k;
  return relative_difference(grad[e], fd[e], scale[f]) <= tolerance ||
         fabs(grad[e] - fd[e]) <= absolute_tolerance(noise, step, f, k);
}

int cmd_check(int argc, char** argv) {
  check_args a;
  int code = check_parse(argc, argv, &a);
  if (code != CLI_OK) return cli_parse_exit(code, check_help);
  const char* spec = a.spec;
  const double fd_step = a.fd_step, fd_abs = a.fd_abs, tolerance = a.tolerance;
  const int json = a.json;

  mb_desc d;
  code = cli_load_desc(spec, &a.run, &d);
  if (code != CLI_OK) return code;
  /* finite differences need solutions converged well below their step */
  d.settings.tol_newton = fmin(d.settings.tol_newton, 1e-13);
  d.settings.tol_constraint = fmin(d.settings.tol_constraint, 1e-13);
  d.settings.tol_projection = fmin(d.settings.tol_projection, 1e-14);
  d.settings.max_newton = d.settings.max_newton > 50 ? d.settings.max_newton : 50;
  /* and Newton's method, whose last iterate lies far inside the tolerance: chord iterations stop
     anywhere within it, a jump of the result with the parameter that the differences amplify */
  if (a.run.refresh < 0) d.settings.refresh_each_iteration = 1;
  mb_model* m = NULL;
  double *psi = NULL, *grad = NULL, *fd = NULL, *plus = NULL, *minus = NULL, *noise = NULL;
  double *step = NULL, *nominal = NULL, *base = NULL, *diffs = NULL, *scale = NULL;
  int* refined = NULL; /* per entry: the divisor of the step it passed at, 0 for the step itself */
  int* noisy = NULL;   /* per failed entry: the divisor of the smallest step whose differences came
                          within that step's noise (noisy_fd), 0 for none */
  double* noisy_fd = NULL;
  if ((code = cli_compile(spec, &d, &m)) != CLI_OK) goto done;
  const int p = d.nparam, nf = m->nfunctional;
  if (nf == 0 || p == 0) {
    cli_error("%s: check needs \"functionals\" and \"parameters\" in the spec", spec);
    code = CLI_BAD_INPUT;
    goto done;
  }
  psi = calloc(nf, sizeof(double));
  grad = calloc((size_t)nf * p, sizeof(double));
  fd = calloc((size_t)nf * p, sizeof(double));
  plus = calloc(nf, sizeof(double));
  minus = calloc(nf, sizeof(double));
  noise = calloc(nf, sizeof(double));
  nominal = calloc(nf, sizeof(double));
  step = calloc(p, sizeof(double));
  base = calloc(p, sizeof(double));
  diffs = calloc(nf, sizeof(double));
  scale = calloc(nf, sizeof(double));
  refined = calloc((size_t)nf * p, sizeof(int));
  noisy = calloc((size_t)nf * p, sizeof(int));
  noisy_fd = calloc((size_t)nf * p, sizeof(double));
  if (!psi || !grad || !fd || !plus || !minus || !noise || !nominal || !step || !base || !diffs ||
      !scale || !refined || !noisy || !noisy_fd) {
    cli_error("out of memory");
    code = CLI_RUN_FAILED;
    goto done;
  }
  const int chosen = a.method >= 0 ? a.method : d.sensitivity;
  mb_gradient_info info;
  memset(&info, 0, sizeof info);
  const int progress = !json && cli_stderr_is_terminal();
  if (progress) fprintf(stderr, "check: analytic gradient ...");
  mb_status st = cli_functionals(&d, m, chosen, psi, grad, &info);
  for (int f = 0; f < nf; f++)
    for (int k = 0; k < p; k++) scale[f] = fmax(scale[f], fabs(grad[f * p + k]));
  for (int k = 0; k < p; k++) {
    base[k] = d.param_value[k];
    step[k] = base[k] != 0 ? fd_step * fabs(base[k]) : fd_abs;
  }

  /* the noise: psi at the point as the differences simulate it, then the second differences
     of NOISE_SAMPLES shifts */
  if (st == MB_OK) st = simulate_at(spec, &d, nominal);
  for (int j = 0; j < NOISE_SAMPLES && st == MB_OK; j++) {
    if (progress) fprintf(stderr, "\r\033[Kcheck: noise sample %d of %d", j + 1, NOISE_SAMPLES);
    for (int side = 0; side < 2 && st == MB_OK; side++) {
      for (int k = 0; k < p; k++) {
        const unsigned hash = (unsigned)(j + 1) * 2654435761u ^ (unsigned)(k + 1) * 40503u;
        const double sign = (hash >> 13 & 1 ? 1 : -1) * (side ? -1 : 1);
        mb_desc_set_param(&d, k, base[k] + sign * NOISE_SHIFT * step[k]);
      }
      st = simulate_at(spec, &d, side ? minus : plus);
    }
    for (int f = 0; f < nf && st == MB_OK; f++)
      noise[f] = fmax(noise[f], fabs(plus[f] + minus[f] - 2 * nominal[f]) / 4);
    for (int k = 0; k < p; k++) mb_desc_set_param(&d, k, base[k]);
  }
  /* at least psi's own rounding: a psi the shifts leave bitwise alone (it does not depend on the
     parameters) still moves by rounding when one parameter moves */
  for (int f = 0; f < nf && st == MB_OK; f++)
    noise[f] = fmax(noise[f], 4 * DBL_EPSILON * fabs(nominal[f]));

  /* central differences, one parameter at a time */
  for (int k = 0; k < p && st == MB_OK; k++) {
    if (progress)
      fprintf(stderr, "\r\033[Kcheck: finite differences, parameter %d of %d (%s)", k + 1, p,
              d.param_name[k]);
    st = differences(spec, &d, nf, k, base[k], step[k], plus, minus, diffs);
    for (int f = 0; f < nf; f++) fd[f * p + k] = diffs[f];
  }
  /* an entry that fails may have met a feature narrower than its step (a tyre's contact, smooth
     over 0.1 mm): its differences again at a tenth and a hundredth of the step, where it passes
     only by the relative tolerance (the noise's share grows as the step shrinks); one that comes
     within that step's noise alone still fails, and the table says so */
  for (int k = 0; k < p && st == MB_OK; k++) {
    for (int divisor = 10; divisor <= 100 && st == MB_OK; divisor *= 10) {
      int failing = 0;
      for (int f = 0; f < nf; f++)
        failing += !entry_passes(grad, fd, scale, noise, step, p, f, k, tolerance);
      if (!failing) break;
      if (progress)
        fprintf(stderr, "\r\033[Kcheck: parameter %s again at 1/%d of its step", d.param_name[k],
                divisor);
      st = differences(spec, &d, nf, k, base[k], step[k] / divisor, plus, minus, diffs);
      for (int f = 0; f < nf && st == MB_OK; f++) {
        const size_t e = (size_t)f * p + k;
        if (entry_passes(grad, fd, scale, noise, step, p, f, k, tolerance)) continue;
        if (relative_difference(grad[e], diffs[f], scale[f]) <= tolerance)
          fd[e] = diffs[f], refined[e] = divisor;
        else if (fabs(grad[e] - diffs[f]) <= divisor * absolute_tolerance(noise, step, f, k))
          noisy[e] = divisor, noisy_fd[e] = diffs[f];
      }
    }
  }
  if (progress) fputs("\r\033[K", stderr);
  if (st != MB_OK) {
    code = cli_exit_code(st);
    goto done;
  }

  /* the table: an entry passes when its relative difference is within the tolerance or its
     absolute difference within what the functional's noise does to the differences */
  int failed = 0, by_noise = 0, smaller = 0, noise_limited = 0, finest = 0;
  double worst = 0;
  cJSON* o = json ? cJSON_CreateObject() : NULL;
  cJSON* entries = json ? cJSON_AddArrayToObject(o, "entries") : NULL;
  cJSON* noise_json = json ? cJSON_AddObjectToObject(o, "noise") : NULL;
  if (!json) {
    printf("method    %s (%s)\n", mb_method_name(info.method), info.reason);
    for (int f = 0; f < nf; f++)
      printf("noise     %-10s %.2e at psi = %.9g\n", m->functional_name + MB_NAME_LEN * f, noise[f],
             nominal[f]);
    printf("%-10s %-12s %16s %16s %10s %10s %10s\n", "functional", "parameter", "analytic",
           "finite diff.", "rel. diff.", "abs. diff.", "abs. tol.");
  }
  for (int f = 0; f < nf; f++) {
    const char* fname = m->functional_name + MB_NAME_LEN * f;
    if (json) cJSON_AddNumberToObject(noise_json, fname, noise[f]);
    for (int k = 0; k < p; k++) {
      const double a = grad[f * p + k], b = fd[f * p + k], r = relative_difference(a, b, scale[f]);
      const double diff = fabs(a - b), abs_tol = absolute_tolerance(noise, step, f, k);
      const int pass = entry_passes(grad, fd, scale, noise, step, p, f, k, tolerance);
      const int divisor = refined[f * p + k], within = pass ? 0 : noisy[f * p + k];
      failed += !pass;
      noise_limited += within > 0;
      finest = within > finest ? within : finest;
      by_noise += pass && r > tolerance;
      smaller += divisor > 0;
      worst = fmax(worst, r);
      if (json) {
        cJSON* e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "functional", fname);
        cJSON_AddStringToObject(e, "parameter", d.param_name[k]);
        cJSON_AddNumberToObject(e, "analytic", a);
        cJSON_AddNumberToObject(e, "finite_difference", b);
        cJSON_AddNumberToObject(e, "relative_difference", r);
        cJSON_AddNumberToObject(e, "absolute_difference", diff);
        cJSON_AddNumberToObject(e, "absolute_tolerance", abs_tol);
        cJSON_AddNumberToObject(e, "step", divisor ? step[k] / divisor : step[k]);
        cJSON_AddBoolToObject(e, "passed", pass);
        if (within) {
          cJSON_AddNumberToObject(e, "within_noise_at_step", step[k] / within);
          cJSON_AddNumberToObject(e, "finite_difference_there", noisy_fd[f * p + k]);
        }
        cJSON_AddItemToArray(entries, e);
      } else {
        char note[80] = "";
        if (divisor) snprintf(note, sizeof note, "  (at 1/%d of the step)", divisor);
        if (within)
          snprintf(note, sizeof note, "  (at 1/%d of the step %.9g, within its noise)", within,
                   noisy_fd[f * p + k]);
        printf("%-10s %-12s %16.9g %16.9g %10.2e %10.2e %10.2e%s%s\n", fname, d.param_name[k], a, b,
               r, diff, abs_tol, note, pass ? "" : "  FAIL");
      }
    }
  }
  code = failed ? CLI_RUN_FAILED : CLI_OK;
  if (json) {
    cJSON_AddStringToObject(o, "method", mb_method_name(info.method));
    cJSON_AddStringToObject(o, "reason", info.reason);
    cJSON_AddNumberToObject(o, "fd_step", fd_step);
    cJSON_AddNumberToObject(o, "fd_abs", fd_abs);
    cJSON_AddNumberToObject(o, "tolerance", tolerance);
    cJSON_AddNumberToObject(o, "worst", worst);
    cJSON_AddNumberToObject(o, "failed", failed);
    cJSON_AddNumberToObject(o, "passed_by_absolute_tolerance", by_noise);
    cJSON_AddNumberToObject(o, "passed_at_a_smaller_step", smaller);
    cJSON_AddNumberToObject(o, "failed_within_noise_at_a_smaller_step", noise_limited);
    cJSON_AddBoolToObject(o, "passed", code == CLI_OK);
    cli_print_json(o);
    cJSON_Delete(o);
  } else {
    char at_smaller[64] = "";
    if (smaller) snprintf(at_smaller, sizeof at_smaller, ", %d at a smaller step", smaller);
    printf(
        "worst relative difference %.2e (tolerance %.1e); %d of %d entries beyond it but within "
        "their absolute tolerance%s, %d failed: %s\n",
        worst, tolerance, by_noise, nf * p, at_smaller, failed,
        code == CLI_OK ? "passed" : "FAILED");
    if (noise_limited) {
      /* parameters at zero take their step from --fd-abs: the hint scales both */
      char abs_step[64] = "";
      for (int k = 0; k < p && !abs_step[0]; k++)
        if (base[k] == 0) snprintf(abs_step, sizeof abs_step, " --fd-abs %g", fd_abs / finest);
      printf(
          "%d failed %s the differences at a smaller step within their noise there, not by "
          "the relative tolerance: psi is not smooth at the differences' step (a stick-slip "
          "or contact event that moves with the parameter); --fd-step %g%s differences all "
          "entries at that step\n",
          noise_limited, noise_limited == 1 ? "entry meets" : "entries meet", fd_step / finest,
          abs_step);
    }
  }

done:
  free(psi), free(grad), free(fd), free(plus), free(minus), free(noise), free(nominal);
  free(step), free(base), free(diffs), free(scale), free(refined), free(noisy), free(noisy_fd);
  mb_model_free(m);
  mb_desc_free(&d);
  return code;
}

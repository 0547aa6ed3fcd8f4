/* mbopt check: the analytic gradient against central finite differences of whole simulations. */
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
          "entry. Exits with 1 when an entry differs by more than the tolerance.\n\n"
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

int cmd_check(int argc, char** argv) {
  const char *spec = NULL, *method = NULL;
  cli_run run = CLI_RUN_SPEC;
  double fd_step = 1e-3, fd_abs = 1e-5, tolerance = 1e-5;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    int t = cli_run_option(argc, argv, &i, &run);
    if (t < 0) return CLI_USAGE;
    if (t > 0) continue;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      check_help(stdout);
      return CLI_OK;
    } else if (!strcmp(a, "--fd-step")) {
      if (!cli_parse_positive(a, next, &fd_step)) return CLI_USAGE;
      i++;
    } else if (!strcmp(a, "--method")) {
      if (!cli_method_option(next, &method)) return CLI_USAGE;
      i++;
    } else if (!strcmp(a, "--fd-abs")) {
      if (!cli_parse_positive(a, next, &fd_abs)) return CLI_USAGE;
      i++;
    } else if (!strcmp(a, "--tolerance")) {
      if (!cli_parse_positive(a, next, &tolerance)) return CLI_USAGE;
      i++;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (cli_spec_argument("check", a, &spec) != CLI_OK) {
      return CLI_USAGE;
    }
  }
  if (!spec) {
    check_help(stderr);
    return CLI_USAGE;
  }

  mb_desc d;
  int code = cli_load_desc(spec, &run, &d);
  if (code != CLI_OK) return code;
  /* finite differences need solutions converged well below their step */
  d.settings.tol_newton = fmin(d.settings.tol_newton, 1e-13);
  d.settings.tol_constraint = fmin(d.settings.tol_constraint, 1e-13);
  d.settings.tol_projection = fmin(d.settings.tol_projection, 1e-14);
  d.settings.max_newton = d.settings.max_newton > 50 ? d.settings.max_newton : 50;
  /* and Newton's method, whose last iterate lies far inside the tolerance: chord iterations stop
     anywhere within it, a jump of the result with the parameter that the differences amplify */
  if (run.refresh < 0) d.settings.refresh_each_iteration = 1;
  mb_model* m = NULL;
  double *psi = NULL, *grad = NULL, *fd = NULL, *plus = NULL, *minus = NULL;
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
  const int chosen = method ? mb_method_parse(method) : d.sensitivity;
  mb_status st = cli_functionals(&d, m, chosen, psi, grad);

  /* central differences at h and h/2, one parameter at a time, extrapolated:
     D = (4 D(h/2) - D(h)) / 3 */
  for (int k = 0; k < p && st == MB_OK; k++) {
    const double v = d.param_value[k], h = v != 0 ? fd_step * fabs(v) : fd_abs;
    for (int level = 0; level < 2 && st == MB_OK; level++) {
      const double hl = level == 0 ? h : h / 2, weight = level == 0 ? -1.0 / 3 : 4.0 / 3;
      for (int side = 0; side < 2 && st == MB_OK; side++) {
        mb_model* mk = NULL;
        mb_desc_set_param(&d, k, side == 0 ? v + hl : v - hl);
        if ((code = cli_compile(spec, &d, &mk)) != CLI_OK)
          st = MB_ERR_MODEL;
        else
          st = cli_functionals(&d, mk, 0, side == 0 ? plus : minus, NULL);
        mb_model_free(mk);
      }
      for (int f = 0; f < nf; f++) fd[f * p + k] += weight * (plus[f] - minus[f]) / (2 * hl);
    }
    mb_desc_set_param(&d, k, v);
  }
  if (st != MB_OK) {
    code = cli_exit_code(st);
    goto done;
  }

  /* the table */
  double worst = 0;
  cJSON* o = json ? cJSON_CreateObject() : NULL;
  cJSON* entries = json ? cJSON_AddArrayToObject(o, "entries") : NULL;
  if (!json)
    printf("%-10s %-12s %16s %16s %12s\n", "functional", "parameter", "analytic", "finite diff.",
           "rel. diff.");
  for (int f = 0; f < nf; f++) {
    double row_scale = 0;
    for (int k = 0; k < p; k++) row_scale = fmax(row_scale, fabs(grad[f * p + k]));
    for (int k = 0; k < p; k++) {
      double a = grad[f * p + k], b = fd[f * p + k], r = relative_difference(a, b, row_scale);
      worst = fmax(worst, r);
      const char* fname = m->functional_name + MB_NAME_LEN * f;
      if (json) {
        cJSON* e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "functional", fname);
        cJSON_AddStringToObject(e, "parameter", d.param_name[k]);
        cJSON_AddNumberToObject(e, "analytic", a);
        cJSON_AddNumberToObject(e, "finite_difference", b);
        cJSON_AddNumberToObject(e, "relative_difference", r);
        cJSON_AddItemToArray(entries, e);
      } else {
        printf("%-10s %-12s %16.9g %16.9g %12.2e%s\n", fname, d.param_name[k], a, b, r,
               r > tolerance ? "  FAIL" : "");
      }
    }
  }
  code = worst > tolerance ? CLI_RUN_FAILED : CLI_OK;
  if (json) {
    cJSON_AddNumberToObject(o, "fd_step", fd_step);
    cJSON_AddNumberToObject(o, "fd_abs", fd_abs);
    cJSON_AddNumberToObject(o, "tolerance", tolerance);
    cJSON_AddNumberToObject(o, "worst", worst);
    cJSON_AddBoolToObject(o, "passed", code == CLI_OK);
    char* text = cJSON_PrintUnformatted(o);
    if (text) puts(text);
    cJSON_free(text);
    cJSON_Delete(o);
  } else {
    printf("worst relative difference %.2e (tolerance %.1e): %s\n", worst, tolerance,
           code == CLI_OK ? "passed" : "FAILED");
  }

done:
  free(psi), free(grad), free(fd), free(plus), free(minus);
  mb_model_free(m);
  mb_desc_free(&d);
  return code;
}

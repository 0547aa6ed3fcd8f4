/* mbopt simulate: integrate a model and write its outputs as CSV, with a summary for people or
   as JSON for programs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "outdir.h"

static void simulate_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt simulate SPEC.json [options]\n"
          "Integrates the model of SPEC.json over its time span with ALI3-P (trapezoidal rule,\n"
          "augmented Lagrangian, mass-orthogonal projections) and prints a summary.\n\n"
          "Options:\n");
  cli_run_options_help(out, 24, CLI_REFRESH_DEFAULT, 0);
  fprintf(out,
          "  --csv FILE            write the outputs: first column t, then one column per output\n"
          "  --output-interval DT  time between CSV rows in s (default: every step)\n"
          "  --json                print the summary as one JSON object on stdout\n"
          "  --quiet               no progress line on a terminal\n"
          "  -h, --help            show this help\n");
}

typedef struct run_state {
  FILE* csv; /* the staged file's stream, or NULL */
  long rows;
  int progress;
  double t_end, last_progress;
} run_state;

static void write_header(FILE* csv, const mb_model* m) {
  fputs("t", csv);
  for (int i = 0; i < m->nout; i++) fprintf(csv, ",%s", m->out_name + MB_LABEL_LEN * i);
  fputc('\n', csv);
}

static int observe(const mb_model* m, const mb_data* d, void* user) {
  run_state* rs = user;
  if (rs->csv) {
    fprintf(rs->csv, "%.10g", d->t);
    for (int i = 0; i < m->nout; i++) fprintf(rs->csv, ",%.12g", d->out[i]);
    fputc('\n', rs->csv);
    rs->rows++;
  }
  if (rs->progress) {
    double now = cli_now();
    if (now - rs->last_progress > 0.2) {
      fprintf(stderr, "\r  t = %.4g / %.4g s", d->t, rs->t_end);
      rs->last_progress = now;
    }
  }
  return 0;
}

/* The functionals are complete only when the run reached t_end. */
static int functionals_complete(const mb_model* m, const mb_data* d, mb_status st) {
  return st == MB_OK && m->nfunctional > 0 && fabs(d->t - m->opt.t_end) < 0.5 * m->opt.step;
}

static void print_summary(const char* name, const mb_model* m, const mb_data* d, double seconds,
                          const char* csv_path, long rows, mb_status st) {
  const mb_report* r = &d->report;
  const mb_settings* o = &m->opt;
  double rel = r->max_energy_error / (r->energy_scale > 0 ? r->energy_scale : 1);
  /* controller states are coordinates but not degrees of freedom of the mechanism */
  const int states = m->nctrl * m->dim;
  const int nq = mb_model_coordinate_count(m), nc = mb_model_constraint_count(m);
  printf("model        %s (%s, %d bodies, %d %s, %d constraints", name,
         m->dim == 2 ? "planar" : "spatial", m->nbody, nq, mb_model_coordinate_name(m), nc);
  if (m->nctrl)
    printf(", %d controller%s with %d state coordinates", m->nctrl, m->nctrl > 1 ? "s" : "",
           states);
  printf(", %d DOF)\n", nq - (nc - r->redundant) - states);
  if (r->redundant)
    printf("redundant    %d of the constraints at t = 0 (dependent: %s)\n", r->redundant,
           r->dependent);
  if (o->equilibrium)
    printf("initial      static equilibrium: %d Newton iteration%s, unbalanced force %.2e N\n",
           r->equilibrium_iterations, r->equilibrium_iterations == 1 ? "" : "s",
           r->equilibrium_residual);
  printf("integrator   ALI3-P, Newmark beta %g gamma %g, h = %g s, alpha = %g, %s linear solver\n",
         o->beta, o->gamma, o->step, o->penalty, mb_model_linear_solver(m));
  printf("time         0 .. %g s: %d steps, %ld Newton iterations (%.2f per step, max %d)", d->t,
         r->steps, r->newton_iterations, r->steps ? (double)r->newton_iterations / r->steps : 0.0,
         r->max_newton_per_step);
  if (r->stalled_steps) printf(", %d stalled at round-off", r->stalled_steps);
  if (r->substepped_steps) printf(", %d retried on sub-steps", r->substepped_steps);
  printf("\n");
  /* the accepted steps' positions sit off the step's solution by what the slow iteration had
     left, an error that a smaller step does not reduce (docs/model-format.md) */
  const double remedy_penalty = mb_model_penalty_remedy(m);
  if (r->stalled_steps && remedy_penalty > 0)
    printf(
        "stalled      steps accepted where the iteration stalled keep an error that a smaller "
        "step does not reduce; simulation.penalty = %.2g (every constraint's penalty at its "
        "cap) converges them\n",
        remedy_penalty);
  printf("violations   |Phi| %.2e   |dPhi/dt| %.2e   |d2Phi/dt2| %.2e\n", r->max_phi, r->max_phid,
         r->max_phidd);
  printf("energy       initial %.8g J, final %.8g J, non-conservative work %.6g J\n",
         r->energy_initial, r->energy_final, r->work_nonconservative);
  printf("balance      max |E - E0 - W| = %.3e J = %.3e of the energy exchanged (%.4g J)\n",
         r->max_energy_error, rel, r->energy_scale);
  if (functionals_complete(m, d, st)) {
    printf("functionals ");
    for (int f = 0; f < m->nfunctional; f++)
      printf(" %s = %.9g", m->functional_name + (size_t)f * MB_NAME_LEN, d->psi[f]);
    printf("\n");
  }
  printf("wall time    %.3f s\n", seconds);
  if (csv_path) printf("csv          %s (%ld rows, %d output columns)\n", csv_path, rows, m->nout);
  printf("status       %s\n", st == MB_OK ? "completed" : mb_status_str(st));
}

static void print_json(const char* name, const mb_model* m, const mb_data* d, double seconds,
                       const char* csv_path, long rows, mb_status st) {
  const mb_report* r = &d->report;
  cJSON* o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", name);
  cJSON_AddNumberToObject(o, "dimension", m->dim);
  cJSON_AddNumberToObject(o, "bodies", m->nbody);
  cJSON_AddStringToObject(o, "formulation", mb_formulation_name(m->opt.formulation));
  cJSON_AddNumberToObject(o, "coordinates", mb_model_coordinate_count(m));
  cJSON_AddNumberToObject(o, "constraints", mb_model_constraint_count(m));
  cJSON_AddStringToObject(o, "linear_solver", mb_model_linear_solver(m));
  cJSON_AddNumberToObject(o, "controllers", m->nctrl);
  cJSON_AddNumberToObject(o, "step", m->opt.step);
  cJSON_AddNumberToObject(o, "t_final", d->t);
  cJSON_AddNumberToObject(o, "steps", r->steps);
  cJSON_AddNumberToObject(o, "newton_iterations", (double)r->newton_iterations);
  cJSON_AddNumberToObject(o, "max_newton_per_step", r->max_newton_per_step);
  cJSON_AddNumberToObject(o, "stalled_steps", r->stalled_steps);
  cJSON_AddNumberToObject(o, "substepped_steps", r->substepped_steps);
  cJSON_AddNumberToObject(o, "redundant_constraints", r->redundant);
  if (r->redundant) cJSON_AddStringToObject(o, "dependent", r->dependent);
  if (m->opt.equilibrium) {
    cJSON_AddNumberToObject(o, "equilibrium_iterations", r->equilibrium_iterations);
    cJSON_AddNumberToObject(o, "equilibrium_residual", r->equilibrium_residual);
  }
  cJSON_AddNumberToObject(o, "max_phi", r->max_phi);
  cJSON_AddNumberToObject(o, "max_phid", r->max_phid);
  cJSON_AddNumberToObject(o, "max_phidd", r->max_phidd);
  cJSON_AddNumberToObject(o, "energy_initial", r->energy_initial);
  cJSON_AddNumberToObject(o, "energy_final", r->energy_final);
  cJSON_AddNumberToObject(o, "work_nonconservative", r->work_nonconservative);
  cJSON_AddNumberToObject(o, "max_energy_error", r->max_energy_error);
  cJSON_AddNumberToObject(o, "energy_scale", r->energy_scale);
  if (functionals_complete(m, d, st)) {
    cJSON* psi = cJSON_AddObjectToObject(o, "functionals");
    for (int f = 0; f < m->nfunctional; f++)
      cJSON_AddNumberToObject(psi, m->functional_name + (size_t)f * MB_NAME_LEN, d->psi[f]);
  }
  cJSON_AddNumberToObject(o, "seconds", seconds);
  if (csv_path) {
    cJSON_AddStringToObject(o, "csv", csv_path);
    cJSON_AddNumberToObject(o, "rows", rows);
  }
  cJSON_AddStringToObject(o, "status", st == MB_OK ? "completed" : mb_status_str(st));
  cli_print_json(o);
  cJSON_Delete(o);
}

typedef struct simulate_args {
  const char *spec, *csv_path;
  cli_run run;
  double interval;
  int json, quiet;
} simulate_args;

static int simulate_parse(int argc, char** argv, simulate_args* a) {
  *a = (simulate_args){.run = CLI_RUN_SPEC};
  const cli_option options[] = {
      CLI_RUN_OPTIONS(a->run),
      {.name = "--output-interval", .kind = CLI_POSITIVE, .target = &a->interval},
      {.name = "--csv", .kind = CLI_TEXT, .target = &a->csv_path},
      {.name = "--json", .kind = CLI_FLAG, .target = &a->json, .limit = 1},
      {.name = "--quiet", .kind = CLI_FLAG, .target = &a->quiet, .limit = 1}};
  return cli_parse_options("simulate", argc, argv, options, sizeof options / sizeof *options, 1,
                           &a->spec);
}

int cmd_simulate_parse(int argc, char** argv) {
  simulate_args a;
  return simulate_parse(argc, argv, &a);
}

int cmd_simulate(int argc, char** argv) {
  simulate_args a;
  int code = simulate_parse(argc, argv, &a);
  if (code != CLI_OK) return cli_parse_exit(code, simulate_help);
  const char *spec = a.spec, *csv_path = a.csv_path;

  mb_desc desc;
  code = cli_load_desc(spec, &a.run, &desc);
  if (code != CLI_OK) return code;
  if (a.interval > 0) desc.settings.output_interval = a.interval;
  mb_model* m = NULL;
  mb_data* d = NULL;
  run_state rs = {0};
  cli_staged csv = {0};
  code = cli_compile(spec, &desc, &m);
  if (code != CLI_OK) goto done;
  d = mb_data_create(m);
  if (!d) {
    cli_error("out of memory");
    code = CLI_RUN_FAILED;
    goto done;
  }
  /* the rows go beside the CSV's name and are renamed to it at the end, so that no reader sees
     a row cut short, whatever stops the run */
  if (csv_path) {
    if (!cli_staged_open(&csv, "--csv", csv_path)) {
      code = CLI_BAD_INPUT;
      goto done;
    }
    rs.csv = csv.f;
    write_header(rs.csv, m);
  }
  rs.progress = !a.quiet && !a.json && cli_stderr_is_terminal();
  rs.t_end = m->opt.t_end;
  rs.last_progress = cli_now();

  double start = cli_now();
  mb_error err;
  mb_error_clear(&err);
  /* without rows to write or progress to show, the outputs the functionals do not read are
     left alone */
  mb_status st = mb_simulate(m, d, rs.csv || rs.progress ? observe : NULL, &rs, &err);
  double seconds = cli_now() - start;
  if (rs.progress) fputs("\r\033[K", stderr);
  /* whatever was written before a failure stays in the CSV */
  if (rs.csv && !cli_staged_commit(&csv)) st = st == MB_OK ? MB_ERR_IO : st;
  rs.csv = NULL;
  if (st != MB_OK) cli_error("%s: %s", spec, err.message[0] ? err.message : mb_status_str(st));
  const char* name = desc.name[0] ? desc.name : spec;
  if (a.json)
    print_json(name, m, d, seconds, csv_path, rs.rows, st);
  else if (d->report.assembled)
    print_summary(name, m, d, seconds, csv_path, rs.rows, st);
  code = cli_exit_code(st);

done:
  cli_staged_discard(&csv);
  mb_data_free(d);
  mb_model_free(m);
  mb_desc_free(&desc);
  return code;
}

/* mbopt view: simulate a spec and write one self-contained HTML page with the mechanism in 3-D
   in motion and its outputs plotted against the time cursor; with --parameters of an
   optimisation, the initial and the optimised design together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "outdir.h"
#include "view_page.h"
#include "view_scene.h"

static void view_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt view SPEC.json [options]\n"
          "Simulates SPEC.json and writes one self-contained HTML page (it opens from disk, with\n"
          "no network): the mechanism in 3-D (a planar model in its plane) drawn from the\n"
          "bodies' frames and markers as the simulation places them, with play, pause, a time\n"
          "slider, speed and an orbiting camera, and the model's outputs plotted against the\n"
          "time cursor. With --parameters of an optimisation's summary.json or comparison.json\n"
          "the page shows the initial design (the run's start) and the optimised one together.\n\n"
          "Options:\n");
  cli_run_options_help(out, 24, CLI_REFRESH_DEFAULT, 0);
  fprintf(out,
          "  --out FILE.html       the page (default out/view-<spec name>.html)\n"
          "  -h, --help            show this help\n");
}

typedef struct view_args {
  const char *spec, *out;
  cli_run run;
} view_args;

static int view_parse(int argc, char** argv, view_args* a) {
  *a = (view_args){.run = CLI_RUN_SPEC};
  const cli_option options[] = {CLI_RUN_OPTIONS(a->run),
                                {.name = "--out", .kind = CLI_TEXT, .target = &a->out}};
  return cli_parse_options("view", argc, argv, options, sizeof options / sizeof *options, 1,
                           &a->spec);
}

int cmd_view_parse(int argc, char** argv) {
  view_args a;
  return view_parse(argc, argv, &a);
}

/* The start of the run that --parameters reads (its "start" x, for its "parameters"), set in d,
   with the label "initial"; the design stays the spec's where the file has no start. The
   optimised design's label names the run's algorithm. Prints why not and returns an exit code. */
static int set_start(const char* path, mb_desc* d, char* label, size_t label_size) {
  char* text = cli_read_file(path, NULL);
  cJSON* root = text ? cJSON_Parse(text) : NULL;
  free(text);
  const cJSON* run = cli_parameters_run(root);
  const cJSON* names = cJSON_GetObjectItemCaseSensitive(run, "parameters");
  const cJSON* x =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "start"), "x");
  const cJSON* algorithm = cJSON_GetObjectItemCaseSensitive(run, "algorithm");
  snprintf(label, label_size, "optimised%s%s%s", cJSON_IsString(algorithm) ? " (" : "",
           cJSON_IsString(algorithm) ? algorithm->valuestring : "",
           cJSON_IsString(algorithm) ? ")" : "");
  int code = CLI_OK;
  if (cJSON_IsArray(names) && cJSON_IsArray(x) &&
      cJSON_GetArraySize(names) == cJSON_GetArraySize(x))
    for (const cJSON *n = names->child, *v = x->child; code == CLI_OK && n && v;
         n = n->next, v = v->next)
      if (cJSON_IsString(n) && cJSON_IsNumber(v))
        code = cli_set_named(d, n->valuestring, v->valuedouble, path);
  cJSON_Delete(root);
  return code == CLI_OK ? CLI_OK : CLI_BAD_INPUT;
}

typedef struct view_page_data {
  const char* spec;
  const char* title;
  view_design* designs;
  int ndesign;
} view_page_data;

static void write_data(FILE* f, void* user) {
  const view_page_data* p = user;
  fputs("{\"kind\":\"view\",\"title\":", f);
  view_json_string(f, p->title);
  fputs(",\"spec\":", f);
  view_json_string(f, p->spec);
  fprintf(f, ",\"generator\":\"mbopt %s\",\"designs\":[", mb_version());
  for (int k = 0; k < p->ndesign; k++) {
    if (k) fputc(',', f);
    view_design_write(f, &p->designs[k]);
  }
  fputs("]}", f);
}

/* the page's path: --out, or out/view-<spec file name without extension>.html, whose folder is
   made */
static int page_path(const view_args* a, char* path) {
  if (a->out) return cli_path(path, "--out", "%s", a->out) ? CLI_OK : CLI_USAGE;
  const char* base = strrchr(a->spec, '/');
  base = base ? base + 1 : a->spec;
  if (!cli_path(path, "SPEC", "out/view-%.*s.html", (int)strcspn(base, "."), base))
    return CLI_USAGE;
  return cli_make_dirs("--out", "out");
}

int cmd_view(int argc, char** argv) {
  view_args a;
  int code = view_parse(argc, argv, &a);
  if (code != CLI_OK) return cli_parse_exit(code, view_help);
  if (!view_libraries_present()) return CLI_BAD_INPUT;
  char path[CLI_PATH_MAX];
  if ((code = page_path(&a, path)) != CLI_OK) return code;

  /* the designs: the spec's (after --set), or with --parameters the run's start and its result */
  view_design designs[2];
  memset(designs, 0, sizeof designs);
  int ndesign = 0;
  mb_desc desc;
  char label[64] = "design", title[MB_NAME_LEN + 32];
  if (a.run.parameters) {
    cli_run initial = a.run;
    initial.parameters = NULL;
    code = cli_load_desc(a.spec, &initial, &desc);
    if (code != CLI_OK) return code;
    code = set_start(a.run.parameters, &desc, label, sizeof label);
    if (code == CLI_OK) code = view_design_record(a.spec, &desc, "initial", &designs[ndesign++]);
    mb_desc_free(&desc);
  }
  if (code == CLI_OK && (code = cli_load_desc(a.spec, &a.run, &desc)) == CLI_OK) {
    code = view_design_record(a.spec, &desc, label, &designs[ndesign++]);
    snprintf(title, sizeof title, "%s", desc.name[0] ? desc.name : a.spec);
    mb_desc_free(&desc);
  }
  if (code == CLI_OK) {
    view_page_data data = {a.spec, title, designs, ndesign};
    if (!view_page_write("--out", path, title, write_data, &data)) code = CLI_BAD_INPUT;
  }
  if (code == CLI_OK) {
    for (int k = 0; k < ndesign; k++)
      printf("%-24s %s, %d frames, %d samples to t = %g s, simulated in %.2f s\n", designs[k].label,
             designs[k].status, designs[k].nframe, designs[k].nsample,
             view_design_last_time(&designs[k]), designs[k].seconds);
    printf("wrote %s\n", path);
    /* a run that stopped early: its page shows the motion until then, and the command failed */
    for (int k = 0; k < ndesign && code == CLI_OK; k++)
      if (!designs[k].completed) {
        cli_error("%s: %s: %s at t = %g s; the page shows the motion until then", a.spec,
                  designs[k].label, designs[k].status, view_design_last_time(&designs[k]));
        code = CLI_RUN_FAILED;
      }
  }
  for (int k = 0; k < ndesign; k++) view_design_free(&designs[k]);
  return code;
}

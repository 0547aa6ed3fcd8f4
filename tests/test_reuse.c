/* A workspace (mb_data) reused for another run gives that run's results to the last bit, as a
   fresh one does: an optimiser evaluates its designs on one workspace, and the adjoint often
   follows the forward method on it. For every model of tests/models/ok/ and problems/, over its
   first 60 steps, in both formulations: the simulation's final positions and functionals, and
   where the model has a gradient psi and the gradient of the forward method and of the adjoint,
   on fresh workspaces, then again on one workspace that has just run another method. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/sensitivity.h"
#include "testing.h"

#define STEPS 60

typedef enum { SIMULATE, FORWARD, ADJOINT } method;
static const char* const method_name[] = {"simulation", "forward", "adjoint"};

/* The results of a run of the method on d into x: the final positions and psi of a simulation,
   psi and the gradient of a sensitivity method; 0 when it fails (message: its error). */
static int run(const mb_desc* desc, const mb_model* m, mb_data* d, method how, double* x,
               mb_error* err) {
  mb_status st;
  if (how == SIMULATE) {
    if ((st = mb_simulate(m, d, NULL, NULL, err)) == MB_OK) {
      memcpy(x, d->q, (size_t)m->nq * sizeof(double));
      memcpy(x + m->nq, d->psi, (size_t)m->nfunctional * sizeof(double));
    }
  } else {
    double* grad = x + m->nfunctional;
    st = how == ADJOINT ? mbd_adjoint(desc, m, d, 0, x, grad, NULL, err)
                        : mbd_forward(desc, m, d, x, grad, err);
  }
  return st == MB_OK;
}

/* The largest difference of n entries relative to the largest entry of a. */
static double gap(size_t n, const double* a, const double* b) {
  double e = 0, scale = 0;
  for (size_t i = 0; i < n; i++) e = fmax(e, fabs(a[i] - b[i])), scale = fmax(scale, fabs(a[i]));
  return scale > 0 ? e / scale : e;
}

static void check_model(mbt_tally* t, const char* path, int joint) {
  mb_desc desc;
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json(path, &desc, &err) != MB_OK) return; /* a spec, not a model */
  desc.settings.t_end = fmin(desc.settings.t_end, STEPS * desc.settings.step);
  if (joint) desc.settings.formulation = MB_FORMULATION_JOINT;
  if (mb_compile(&desc, &m, &err) != MB_OK) {
    printf("FAIL %s: %s\n", path, err.message);
    t->failed++;
    mb_desc_free(&desc);
    return;
  }
  const int nf = m->nfunctional, p = mb_desc_gradient_count(&desc);
  const size_t size[] = {(size_t)m->nq + nf, (size_t)nf * (1 + p), (size_t)nf * (1 + p)};
  double* fresh[3];
  double* again = malloc((size[0] + size[1]) * sizeof(double) + 1);
  int ran[3];
  for (int how = 0; how < 3; how++) {
    fresh[how] = malloc(size[how] * sizeof(double) + 1);
    mb_data* d = mb_data_create(m);
    /* a model without functionals has no gradient; one whose gradient is refused (initial
       velocities left undetermined, an equilibrium without a derivative) runs the rest */
    ran[how] = (how == SIMULATE || nf > 0) && run(&desc, m, d, how, fresh[how], &err);
    if (!ran[how] && how == SIMULATE) printf("FAIL %s: %s\n", path, err.message), t->failed++;
    mb_data_free(d);
  }
  /* on one workspace: the adjoint (or a simulation), then each method again */
  mb_data* reused = mb_data_create(m);
  run(&desc, m, reused, ran[ADJOINT] ? ADJOINT : SIMULATE, again, &err);
  for (int how = FORWARD; how <= ADJOINT + 1; how++) {
    const method which = how == ADJOINT + 1 ? SIMULATE : (method)how;
    if (!ran[which]) continue;
    const int ok = run(&desc, m, reused, which, again, &err);
    const int same = ok && memcmp(fresh[which], again, size[which] * sizeof(double)) == 0;
    char what[256];
    snprintf(what, sizeof what, "%s (%s, %s): a reused workspace = a fresh one, bitwise", path,
             joint ? "joint" : "natural", method_name[which]);
    mbt_check(t, same, what, ok ? gap(size[which], fresh[which], again) : 1, 0);
  }
  mb_data_free(reused);
  for (int how = 0; how < 3; how++) free(fresh[how]);
  free(again);
  mb_model_free(m);
  mb_desc_free(&desc);
}

static int by_name(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* every .json of dir (sorted, for a stable order) */
static void check_folder(mbt_tally* t, const char* dir) {
  DIR* folder = opendir(dir);
  if (!folder) {
    printf("FAIL cannot read %s\n", dir);
    t->failed++;
    return;
  }
  int n = 0, cap = 0;
  char** paths = NULL;
  for (struct dirent* e; (e = readdir(folder)) != NULL;) {
    const size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char** grown = realloc(paths, cap * sizeof(char*));
      if (!grown) break;
      paths = grown;
    }
    const size_t size = strlen(dir) + len + 2;
    if (!(paths[n] = malloc(size))) break;
    snprintf(paths[n++], size, "%s/%s", dir, e->d_name);
  }
  closedir(folder);
  qsort(paths, n, sizeof(char*), by_name);
  for (int i = 0; i < n; i++) {
    for (int joint = 0; joint < 2; joint++) check_model(t, paths[i], joint);
    free(paths[i]);
  }
  free(paths);
}

int main(void) {
  mbt_tally t = {0};
  check_folder(&t, "tests/models/ok");
  check_folder(&t, "problems");
  check_folder(&t, "problems/control");
  check_folder(&t, "problems/vehicle");
  return mbt_finish(&t);
}

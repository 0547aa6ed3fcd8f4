/* libFuzzer harness of the model/spec loader: any bytes as a JSON file. A description that loads
   is compiled, assembled, and runs a few time steps and both sensitivity methods, in its own
   formulation and then in the other (the repository's models name none, and the joint
   formulation's compiler reads the same joints), so that the checks of the loader are tested
   against everything that trusts them. Built by -DMBOPT_FUZZ=ON with clang
   (tests/fuzz/CMakeLists.txt); run by scripts/fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "mbopt/mbopt.h"
#include "mbopt/gradient.h"

/* time steps a loaded model runs: enough to reach every phase of a step and of both sweeps */
enum { STEPS = 3 };
/* the other formulation runs models of at most this many bodies: the joint formulation assembles
   a natural model with every joint written as its constraint rows, whose dense mobility test at
   a singular position takes seconds at 80 bodies (tests/models/fail/singular_chain.json: 7.7 s
   in a Release build, beyond the 20 s limit under the sanitizers) */
enum { OTHER_FORMULATION_BODIES = 32 };

static void run_gradients(const mb_desc* d, const mb_model* m) {
  const int nf = m->nfunctional, np = mb_desc_gradient_count(d);
  double* psi = calloc((size_t)nf + 1, sizeof(double));
  double* grad = calloc((size_t)nf * np + 1, sizeof(double));
  mb_error err;
  if (psi && grad) {
    mb_gradient(d, m, MB_METHOD_FORWARD, 0, psi, grad, NULL, &err);
    mb_gradient(d, m, MB_METHOD_ADJOINT, 2, psi, grad, NULL, &err);
  }
  free(psi);
  free(grad);
}

/* compiles d, assembles it, takes a few time steps and both gradients */
static void run_model(const mb_desc* d) {
  mb_model* m = NULL;
  mb_error err;
  if (mb_compile(d, &m, &err) != MB_OK) return;
  mb_data* data = mb_data_create(m);
  int k = 0;
  if (data && mb_assemble(m, data, &err) == MB_OK)
    while (k < STEPS && mb_step(m, data, &err) == MB_OK) k++;
  mb_data_free(data);
  run_gradients(d, m);
  mb_model_free(m);
}

/* one BLAS thread, as the mbopt command sets it: threads waiting for one another on a busy
   machine made a 2-second input take over 20 s */
int LLVMFuzzerInitialize(int* argc, char*** argv) {
  openblas_set_num_threads(1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  char* text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, bytes, size);
  text[size] = 0;
  mb_desc d;
  mb_error err;
  const mb_status st = mb_desc_parse_json(text, "fuzz.json", &d, &err);
  free(text);
  if (st != MB_OK) return 0;
  if (d.settings.t_end > STEPS * d.settings.step) d.settings.t_end = STEPS * d.settings.step;
  run_model(&d);
  if (d.nbody <= OTHER_FORMULATION_BODIES) {
    d.settings.formulation = d.settings.formulation == MB_FORMULATION_NATURAL
                                 ? MB_FORMULATION_JOINT
                                 : MB_FORMULATION_NATURAL;
    run_model(&d);
  }
  mb_desc_free(&d);
  return 0;
}

/* Several runs on one model at once: the model is only read while it runs, each thread has its
   own mb_data. Four threads simulate the five-bar at once; their functionals equal, bit for bit,
   those of one run alone.
   Usage: examples/threads [MODEL.json]   (default problems/fivebar.json) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mbopt/mbopt.h>

enum { THREADS = 4 };

typedef struct job {
  const mb_model* model; /* shared, read-only */
  mb_data* data;         /* this thread's own */
  mb_status status;
} job;

static void* run(void* arg) {
  job* j = arg;
  mb_error err;
  j->status = mb_simulate(j->model, j->data, NULL, NULL, &err);
  return NULL;
}

int main(int argc, char** argv) {
  mb_desc desc;
  mb_error err;
  if (mb_desc_load_json(argc > 1 ? argv[1] : "problems/fivebar.json", &desc, &err) != MB_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  mb_model* model = NULL;
  if (mb_compile(&desc, &model, &err) != MB_OK) {
    fprintf(stderr, "%s\n", err.message);
    mb_desc_free(&desc);
    return 1;
  }
  /* one run alone, then THREADS at once on the same model */
  job alone = {model, mb_data_create(model), MB_OK};
  run(&alone);
  job jobs[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) {
    jobs[i] = (job){model, mb_data_create(model), MB_OK};
    pthread_create(&threads[i], NULL, run, &jobs[i]);
  }
  int same = alone.status == MB_OK;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    same = same && jobs[i].status == MB_OK &&
           !memcmp(jobs[i].data->psi, alone.data->psi, sizeof(double) * model->nfunctional);
    mb_data_free(jobs[i].data);
  }
  printf("%d runs at once on one model: functionals %s the single run's (psi1 = %.9g)\n", THREADS,
         same ? "equal to" : "DIFFERENT from", alone.data->psi[0]);
  mb_data_free(alone.data);
  mb_model_free(model);
  mb_desc_free(&desc);
  return same ? 0 : 1;
}

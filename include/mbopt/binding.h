/* Flat functions for language bindings (the Python package, python/mbopt): opaque handles,
   plain numbers and arrays, no structures to mirror. Each failing call returns a negative
   mb_status and writes its one-line message into `message` (`size` bytes, may be NULL). */
#ifndef MBOPT_BINDING_H
#define MBOPT_BINDING_H

#include <stddef.h>

#include "mbopt/desc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A description loaded from a model or spec file (mb_desc_load_json), or NULL with the message.
   Close with mb_binding_close. */
mb_desc* mb_binding_open(const char* path, char* message, size_t size);
void mb_binding_close(mb_desc* d);

/* Parameters (every element of a vector parameter is one), functionals and the time span. */
int mb_binding_parameter_count(const mb_desc* d);
const char* mb_binding_parameter_name(const mb_desc* d, int k);
double mb_binding_parameter_value(const mb_desc* d, int k);
int mb_binding_functional_count(const mb_desc* d);
const char* mb_binding_functional_name(const mb_desc* d, int f);
double mb_binding_t_end(const mb_desc* d);
double mb_binding_step(const mb_desc* d);

/* Sets parameter `name` to value, checked against the rules of the fields it sets. */
mb_status mb_binding_set_parameter(mb_desc* d, const char* name, double value, char* message,
                                   size_t size);

/* Sets the time span and step (values <= 0 keep the description's); step <= t_end. */
mb_status mb_binding_set_span(mb_desc* d, double t_end, double step, char* message, size_t size);

/* Simulates d and returns its outputs at every output interval (0: every step) as a table of
   *rows x (1 + *columns) values, row-major, t first (free with mb_binding_free), the column
   names "t", then one per output, each ended by '\n' (free with mb_binding_free), and the
   functionals in psi (mb_binding_functional_count values, may be NULL). */
mb_status mb_binding_simulate(const mb_desc* d, double interval, double** table, int* rows,
                              int* columns, char** names, double* psi, char* message, size_t size);

/* The functionals psi and their gradients grad (functionals x parameters, row-major) by method
   (mb_method), with the method that ran (method_name, 16 bytes) and why (reason, 256 bytes). */
mb_status mb_binding_gradient(const mb_desc* d, int method, double* psi, double* grad,
                              char* method_name, char* reason, char* message, size_t size);

/* Called per evaluation of mb_binding_optimize: its number, the design variables, the objective,
   whether gradients were computed and whether the point failed. */
typedef void (*mb_binding_observer)(int index, const double* x, int nvar, double objective,
                                    int with_gradient, int failed, void* user);

/* Runs d's optimisation with `algorithm` (NULL: the spec's); x receives the best point (the
   description's design variables, in order), status (32 bytes) how the run ended, *objective
   and *evaluations its result. */
mb_status mb_binding_optimize(mb_desc* d, const char* algorithm, mb_binding_observer observer,
                              void* user, double* x, char* status, double* objective,
                              int* evaluations, char* message, size_t size);

/* The number of design variables of d's optimisation, and the parameter of variable v. */
int mb_binding_design_count(const mb_desc* d);
const char* mb_binding_design_name(const mb_desc* d, int v);

/* Frees what mb_binding_simulate allocated. */
void mb_binding_free(void* p);

#ifdef __cplusplus
}
#endif

#endif

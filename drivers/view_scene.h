/* The motion of a design recorded for an HTML page (mbopt view, report.html): the model's
   geometry as the simulation places it at t = 0 (every body's markers, centre of mass, mass and
   inertia in its own frame; joints, springs, point forces, torques and tyres on those markers),
   then the bodies' frames sampled at a frame rate for the animation and the declared outputs on
   a finer grid for the plots. Everything is taken from the compiled model's linear vectors (body
   frames, marker points and axes), so a page draws what the simulation computed. */
#ifndef MBOPT_VIEW_SCENE_H
#define MBOPT_VIEW_SCENE_H

#include <stdio.h>

#include "mbopt/mbopt.h"

/* Most animation frames and plot samples of one design */
#define VIEW_MAX_FRAMES 600
#define VIEW_MAX_SAMPLES 1000

/* One design's run: its label, parameters, the geometry at t = 0 and the sampled motion. */
typedef struct view_design {
  char label[64];
  char status[MB_MESSAGE_LEN]; /* "completed", or the simulation's error */
  int completed;               /* the run reached t_end */
  double seconds;              /* of the simulation */
  int nparam;                  /* the spec's parameters and their values in this design */
  char (*param_name)[MB_NAME_LEN];
  double* param_value;
  int nfunctional;
  char (*functional_name)[MB_NAME_LEN];
  double* psi;    /* (nfunctional) complete only when completed */
  char* geometry; /* JSON object of the scene at t = 0 (view_scene.c), NULL before it */
  char* outputs;  /* JSON array of the plot panels: per output its columns, unit and targets
                     (the functionals' constant references and controllers' setpoints) */
  int nbody, nforce, nout;
  int nframe, frame_cap;
  double* frame; /* (nframe x (1 + 7 nbody + 3 nforce)) t, each body's origin and
                    quaternion (w, x, y, z), each force's vector (point forces, torques) */
  int nsample, sample_cap;
  double* sample; /* (nsample x (1 + nout)) t and the outputs */
} view_design;

/* Compiles d and simulates it over its span, recording the design as `label`. A run that fails
   after its assembly keeps what it recorded (completed 0, status says why; the caller tells);
   one that cannot start is an error. Prints the error and returns an exit code (CLI_OK when the
   design has a geometry). */
int view_design_record(const char* spec, const mb_desc* d, const char* label, view_design* v);

void view_design_free(view_design* v);

/* The time of the last sample, s (0 without samples) */
double view_design_last_time(const view_design* v);

/* Writes v as a JSON object: label, status, parameters, functionals, geometry, outputs, frames
   and samples. */
void view_design_write(FILE* f, const view_design* v);

/* Writes text as a JSON string whose characters cannot end an HTML script element ('<' as
   \u003c). */
void view_json_string(FILE* f, const char* text);

#endif

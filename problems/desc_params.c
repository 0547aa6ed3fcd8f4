/* Setting a named parameter of a description: every scalar bound to it takes the new value. */
#include "mbopt/desc.h"

static void set_real(mb_real* r, int n, int p, double value) {
  for (int i = 0; i < n; i++)
    if (r[i].param == p) r[i].value = value;
}

static void set_func(mb_func_desc* f, int p, double value) {
  if (f->coef) set_real(f->coef, f->ncoef, p, value);
}

static void set_markers(mb_marker_desc* mk, int n, int p, double value) {
  for (int i = 0; i < n; i++) {
    set_real(mk[i].point, 3, p, value);
    set_real(mk[i].axis, 3, p, value);
    set_real(mk[i].ref, 3, p, value);
  }
}

void mb_desc_set_param(mb_desc* d, int p, double value) {
  if (p < 0 || p >= d->nparam) return;
  d->param_value[p] = value;
  set_real(d->gravity, 3, p, value);
  set_markers(d->ground_marker, d->nground_marker, p, value);
  for (int b = 0; b < d->nbody; b++) {
    mb_body_desc* bd = &d->body[b];
    set_real(&bd->mass, 1, p, value);
    set_real(bd->com, 3, p, value);
    set_real(bd->inertia, 6, p, value);
    set_markers(bd->marker, bd->nmarker, p, value);
  }
  for (int i = 0; i < d->nforce; i++) {
    mb_force_desc* f = &d->force[i];
    set_real(&f->stiffness, 1, p, value);
    set_real(&f->damping, 1, p, value);
    set_real(&f->natural_length, 1, p, value);
    set_real(&f->force, 1, p, value);
    for (int k = 0; k < 3; k++) set_func(&f->func[k], p, value);
  }
  for (int i = 0; i < d->ndriver; i++) set_func(&d->driver[i].func, p, value);
  for (int i = 0; i < d->nprescribe; i++) {
    set_real(&d->prescribe[i].value, 1, p, value);
    set_real(&d->prescribe[i].rate, 1, p, value);
  }
  for (int f = 0; f < d->nfunctional; f++)
    for (int j = 0; j < d->functional[f].nterm; j++) {
      mb_fterm_desc* t = &d->functional[f].term[j];
      set_real(&t->weight, 1, p, value);
      set_real(&t->epsilon, 1, p, value);
      set_func(&t->reference, p, value);
    }
}

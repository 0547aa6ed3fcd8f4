/* The compiled sparsity of a model in natural coordinates (structure.h). Every matrix entry the
   integrator can touch comes from a pair of coordinate blocks that some part of the model couples:
   a body's mass, a constraint (its Gram product and Hessian couple every block it touches), a
   force element, or a controller (its actuator against the blocks its error reads). The pattern is
   the union of those pairs; what is constant in natural coordinates (M, the constraint Hessians)
   is put on it here once. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "structure.h"

/* ---------------------------------------------------------------------------------------------
   the blocks of linear vectors, constraints and elements */

/* appends the blocks of linear vector lv (if any) to list; returns the new count */
static int lvec_blocks(const mb_model* m, int lv, int* list, int n) {
  if (lv < 0) return n;
  for (int k = m->lvec_termadr[lv]; k < m->lvec_termadr[lv] + m->lvec_termnum[lv]; k++)
    list[n++] = m->term_qadr[k] / m->dim;
  return n;
}

/* the product terms a_j . b_j of constraint i: one, or two for an angle */
static int constraint_pairs(const mb_model* m, int i) {
  return mb_con_nlvec(m->con_kind[i]) / 2;
}

/* the blocks of constraint i, ascending */
static int constraint_blocks(const mb_model* m, int i, int* list) {
  int n = 0;
  for (int j = 0; j < 2 * constraint_pairs(m, i); j++)
    n = lvec_blocks(m, m->con_lvec[4 * i + j], list, n);
  return mbu_sort_unique(list, n);
}

/* the blocks of a body's frame axes */
static int axes_blocks(const mb_model* m, int body, int* list, int n) {
  for (int k = 0; k < m->dim; k++) n = lvec_blocks(m, m->body_axes[3 * body + k], list, n);
  return n;
}

/* the blocks force element i couples (its K and C) */
static int force_blocks(const mb_model* m, int i, int* list) {
  int n = 0;
  switch ((mb_force_type)m->force_type[i]) {
    case MB_FORCE_SPRING:
      n = lvec_blocks(m, m->force_lvec[2 * i], list, n);
      n = lvec_blocks(m, m->force_lvec[2 * i + 1], list, n);
      break;
    case MB_FORCE_TYRE:
      n = lvec_blocks(m, m->force_lvec[2 * i], list, n);
      if (mb_tyre_has_slip(m, i)) {
        n = lvec_blocks(m, m->force_lvec[2 * i + 1], list, n);
        n = axes_blocks(m, m->force_body[i], list, n);
      }
      break;
    case MB_FORCE_TORQUE:
      n = axes_blocks(m, m->force_body[i], list, n);
      break;
    case MB_FORCE_POINT:
      break; /* a given force at a linear point: no Jacobian */
  }
  return mbu_sort_unique(list, n);
}

/* A controller couples its actuator rows (and its state) with the blocks its error reads (and its
   state): both lists into rows and cols; probe holds a state to run the output chains at. */
static void controller_blocks(const mb_model* m, const mb_data* probe, int i, unsigned char* mark,
                              int* rows, int* nrows, int* cols, int* ncols) {
  const int nb = m->nq / m->dim, w = m->ctrl_qadr[i] / m->dim;
  int n = 0;
  if (m->ctrl_actuator[i] == MB_ACTUATOR_FORCE)
    n = lvec_blocks(m, m->ctrl_lvec[i], rows, n);
  else
    n = axes_blocks(m, m->ctrl_body[i], rows, n);
  rows[n++] = w;
  *nrows = mbu_sort_unique(rows, n);
  memset(mark, 0, (size_t)nb);
  for (int k = m->ctrl_termadr[i]; k < m->ctrl_termadr[i] + m->ctrl_termnum[i]; k++)
    mb_output_support(m, probe, m->cterm_column[k], mark);
  mark[w] = 1;
  n = 0;
  for (int b = 0; b < nb; b++)
    if (mark[b]) cols[n++] = b;
  *ncols = n;
}

/* ---------------------------------------------------------------------------------------------
   building */

typedef struct builder {
  const mb_model* m;
  mb_structure* s;
  int* list;  /* (nb) scratch */
  int* list2; /* (nb) scratch */
  unsigned char* mark;
  int too_many; /* 1 + a force element with more than MB_LOCAL_BLOCKS blocks, or 0 */
} builder;

/* the pairs of every coupling */
static int collect_pairs(builder* b, const mb_data* probe, mb_pairs* pairs) {
  const mb_model* m = b->m;
  for (int k = 0; k < m->nmass; k++)
    if (mb_pairs_add(pairs, m->mass_block[2 * k], m->mass_block[2 * k + 1])) return -1;
  for (int i = 0; i < m->ncon; i++)
    if (mb_pairs_add_all(pairs, constraint_blocks(m, i, b->list), b->list)) return -1;
  for (int i = 0; i < m->nforce; i++)
    if (mb_pairs_add_all(pairs, force_blocks(m, i, b->list), b->list)) return -1;
  /* a joint's friction couples everything it reads */
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    int lv[MB_FRICTION_LVECS], blocks[8 * MB_FRICTION_LVECS], n = 0;
    const int nlv = mb_friction_lvecs(m, j, lv);
    for (int k = 0; k < nlv; k++) n = lvec_blocks(m, lv[k], blocks, n);
    if (mb_pairs_add_all(pairs, mbu_sort_unique(blocks, n), blocks)) return -1;
  }
  for (int i = 0; i < m->nctrl; i++) {
    int nr, nc;
    controller_blocks(m, probe, i, b->mark, b->list, &nr, b->list2, &nc);
    for (int r = 0; r < nr; r++)
      for (int c = 0; c < nc; c++)
        if (mb_pairs_add(pairs, b->list[r], b->list2[c])) return -1;
    if (m->ctrl_actuator[i] == MB_ACTUATOR_TORQUE &&
        mb_pairs_add_all(
            pairs, mbu_sort_unique(b->list, axes_blocks(m, m->ctrl_body[i], b->list, 0)), b->list))
      return -1;
  }
  return 0;
}

/* sizes of the maps: entries of Phi_q, of the Gram map and of the Hessian lists (an upper
   bound: repeated entries are merged later), blocks and block pairs of the force elements */
static void map_sizes(builder* b, size_t* nphiq, size_t* ngram, size_t* nhess, size_t* nfblock,
                      size_t* nfpair, size_t* nterm) {
  const mb_model* m = b->m;
  const size_t dim = (size_t)m->dim;
  *nphiq = *ngram = *nhess = *nfblock = *nfpair = *nterm = 0;
  for (int i = 0; i < m->nforce; i++) {
    const size_t nb = (size_t)force_blocks(m, i, b->list);
    *nfblock += nb, *nfpair += nb * nb;
    if (nb > MB_LOCAL_BLOCKS) b->too_many = i + 1;
  }
  for (int i = 0; i < m->ncon; i++) {
    const size_t nblk = (size_t)constraint_blocks(m, i, b->list);
    *nphiq += dim * nblk, *ngram += 4 * (nblk * (nblk + 1) / 2);
    const int* lv = m->con_lvec + 4 * i;
    for (int j = 0; j < constraint_pairs(m, i); j++)
      *nhess += 2 * dim * dim * (size_t)m->lvec_termnum[lv[2 * j]] *
                (size_t)m->lvec_termnum[lv[2 * j + 1]];
    for (int j = 0; j < mb_con_nlvec(m->con_kind[i]); j++) *nterm += (size_t)m->lvec_termnum[lv[j]];
  }
}

/* Phi_q by rows: the coordinates of each constraint's blocks */
static void phiq_rows(builder* b) {
  const mb_model* m = b->m;
  mb_rows* r = &b->s->phiq;
  r->nrow = m->ncon, r->ncol = m->nq, r->bs = m->dim;
  int e = 0;
  for (int i = 0; i < m->ncon; i++) {
    r->rowptr[i] = e;
    const int nblk = constraint_blocks(m, i, b->list);
    for (int k = 0; k < nblk; k++)
      for (int c = 0; c < m->dim; c++) r->col[e++] = b->list[k] * m->dim + c;
  }
  r->rowptr[m->ncon] = r->nnz = e;
}

/* where the terms of each constraint's linear vectors put their blocks in its row of Phi_q */
static void term_offsets(builder* b) {
  const mb_model* m = b->m;
  mb_structure* s = b->s;
  const mb_rows* r = &s->phiq;
  int t = 0;
  for (int i = 0; i < m->ncon; i++)
    for (int j = 0; j < 4; j++) {
      s->con_toff_adr[4 * i + j] = t;
      if (j >= mb_con_nlvec(m->con_kind[i])) continue;
      const int lv = m->con_lvec[4 * i + j];
      for (int k = m->lvec_termadr[lv]; k < m->lvec_termadr[lv] + m->lvec_termnum[lv]; k++) {
        int e = r->rowptr[i];
        while (r->col[e] != m->term_qadr[k]) e++;
        s->con_toff[t++] = e - r->rowptr[i];
      }
    }
  s->con_toff_adr[4 * m->ncon] = t;
}

/* the cache of the constraints' linear vectors: their slots, and the list in slot order; slot
   of lvec lv kept in mark (nlvec ints) */
static void lvec_cache(builder* b, int* slot_of) {
  const mb_model* m = b->m;
  mb_structure* s = b->s;
  for (int lv = 0; lv < m->nlvec; lv++) slot_of[lv] = -1;
  s->ncache = 0;
  for (int i = 0; i < m->ncon; i++)
    for (int j = 0; j < 4; j++) {
      const int lv = m->con_lvec[4 * i + j];
      if (j >= mb_con_nlvec(m->con_kind[i])) {
        s->con_slot[4 * i + j] = -1;
        continue;
      }
      if (slot_of[lv] < 0) slot_of[lv] = s->ncache, s->cache_lvec[s->ncache++] = lv;
      s->con_slot[4 * i + j] = slot_of[lv];
    }
}

static void force_maps(builder* b) {
  const mb_model* m = b->m;
  mb_structure* s = b->s;
  int nblock = 0, npair = 0;
  for (int i = 0; i < m->nforce; i++) {
    s->force_blkadr[i] = nblock, s->force_pairadr[i] = npair;
    const int nb = force_blocks(m, i, b->list);
    memcpy(s->force_block + nblock, b->list, sizeof(int) * nb);
    for (int a = 0; a < nb; a++)
      for (int c = 0; c < nb; c++, npair++)
        s->force_entry[npair] =
            mb_pattern_block(s->sys, s->force_block[nblock + a], s->force_block[nblock + c],
                             &s->force_stride[npair]);
    nblock += nb;
  }
  s->force_blkadr[m->nforce] = nblock, s->force_pairadr[m->nforce] = npair;
}

/* the Gram map: for each pair a <= b of the blocks of a row, where blocks (a, b) and (b, a) of
   the system pattern start and their column strides */
static void gram_map(builder* b) {
  const mb_model* m = b->m;
  const mb_rows* r = &b->s->phiq;
  int g = 0;
  for (int i = 0; i < r->nrow; i++) {
    b->s->gram_adr[i] = g;
    const int nblk = (r->rowptr[i + 1] - r->rowptr[i]) / m->dim;
    const int* col = r->col + r->rowptr[i];
    for (int x = 0; x < nblk; x++)
      for (int y = x; y < nblk; y++, g++) {
        const int bx = col[x * m->dim] / m->dim, by = col[y * m->dim] / m->dim;
        int* e = b->s->gram + 4 * g;
        e[0] = mb_pattern_block(b->s->sys, bx, by, &e[1]);
        e[2] = mb_pattern_block(b->s->sys, by, bx, &e[3]);
      }
  }
  b->s->gram_adr[r->nrow] = g;
}

typedef struct hess_item {
  int entry;
  double value;
} hess_item;

static int by_entry(const void* a, const void* b) {
  const int x = ((const hess_item*)a)->entry, y = ((const hess_item*)b)->entry;
  return (x > y) - (x < y);
}

/* the entries of J_a^T J_b + J_b^T J_a into items; returns their number */
static int pair_hessian(const mb_model* m, const mb_pattern* sys, int a, int b, hess_item* items) {
  const int dim = m->dim;
  int n = 0;
  for (int ka = m->lvec_termadr[a]; ka < m->lvec_termadr[a] + m->lvec_termnum[a]; ka++)
    for (int kb = m->lvec_termadr[b]; kb < m->lvec_termadr[b] + m->lvec_termnum[b]; kb++) {
      const double *Wa = m->term_W + 9 * ka, *Wb = m->term_W + 9 * kb;
      const int ia = m->term_qadr[ka], ib = m->term_qadr[kb];
      for (int r = 0; r < dim; r++)
        for (int c = 0; c < dim; c++) {
          double v = 0; /* (Wa^T Wb)_rc */
          for (int l = 0; l < dim; l++) v += Wa[3 * l + r] * Wb[3 * l + c];
          items[n++] = (hess_item){mb_pattern_entry(sys, ia + r, ib + c), v};
          items[n++] = (hess_item){mb_pattern_entry(sys, ib + c, ia + r), v};
        }
    }
  /* merged by entry */
  qsort(items, (size_t)n, sizeof *items, by_entry);
  int u = 0;
  for (int k = 0; k < n; k++) {
    if (u > 0 && items[u - 1].entry == items[k].entry)
      items[u - 1].value += items[k].value;
    else
      items[u++] = items[k];
  }
  return u;
}

/* the distinct entries of the Hessian lists (nitem items), ascending, so in column order */
static int compact_hessian(mb_structure* s, int nitem) {
  const mb_pattern* p = s->sys;
  int* slot_of = malloc(sizeof(int) * ((size_t)p->nnz + 1));
  if (!slot_of) return -1;
  for (int e = 0; e < p->nnz; e++) slot_of[e] = -1;
  for (int h = 0; h < nitem; h++) slot_of[s->hess_entry[h]] = 0;
  int u = 0;
  for (int j = 0; j < p->n; j++)
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++)
      if (slot_of[e] == 0) {
        slot_of[e] = u;
        s->hess_rc[2 * u] = p->rowind[e], s->hess_rc[2 * u + 1] = j;
        u++;
      }
  for (int h = 0; h < nitem; h++) s->hess_slot[h] = slot_of[s->hess_entry[h]];
  s->nhess_unique = u;
  free(slot_of);
  return 0;
}

static int hessian_lists(builder* b, size_t nhess) {
  const mb_model* m = b->m;
  mb_structure* s = b->s;
  hess_item* items = malloc(sizeof *items * (nhess + 1));
  if (!items) return -1;
  int h = 0;
  for (int i = 0; i < m->ncon; i++)
    for (int j = 0; j < 2; j++) {
      const int* lv = m->con_lvec + 4 * i + 2 * j;
      s->hess_adr[2 * i + j] = h;
      if (j >= constraint_pairs(m, i)) continue;
      const int n = pair_hessian(m, s->sys, lv[0], lv[1], items);
      for (int k = 0; k < n; k++)
        s->hess_entry[h] = items[k].entry, s->hess_value[h++] = items[k].value;
    }
  s->hess_adr[2 * m->ncon] = h;
  free(items);
  return compact_hessian(s, h);
}

/* which terms are a multiple of the identity, exactly: off the diagonal zero, on it equal */
static unsigned char* scalar_terms(const mb_model* m) {
  unsigned char* scalar = calloc((size_t)m->nterm + 1, 1);
  if (!scalar) return NULL;
  for (int k = 0; k < m->nterm; k++) {
    const double* W = m->term_W + 9 * k;
    int ok = 1;
    for (int r = 0; r < m->dim; r++)
      for (int c = 0; c < m->dim; c++) ok &= r == c ? W[4 * r] == W[0] : W[3 * r + c] == 0;
    scalar[k] = (unsigned char)ok;
  }
  return scalar;
}

static void mass_values(const mb_model* m, mb_structure* s) {
  memset(s->mass, 0, sizeof(double) * (size_t)s->sys->nnz);
  for (int k = 0; k < m->nmass; k++)
    mb_pattern_add_block(s->sys, s->mass, m->mass_block[2 * k], m->mass_block[2 * k + 1], 1,
                         m->mass + 9 * k);
  s->mass_diag_max = 0;
  for (int j = 0; j < m->nq; j++)
    if (s->mass[s->sys->diag[j]] > s->mass_diag_max) s->mass_diag_max = s->mass[s->sys->diag[j]];
}

/* a state at the approximate initial configuration for the output chains */
typedef struct probe {
  mb_data d;
  double* buffer;
} probe;

static int probe_init(const mb_model* m, probe* p) {
  const size_t nq = (size_t)m->nq;
  memset(p, 0, sizeof *p);
  p->buffer = calloc(12 * nq + (size_t)m->nout + 3 * (size_t)m->nsensor + 1, sizeof(double));
  if (!p->buffer) return -1;
  double* x = p->buffer;
  p->d.q = x, x += nq;
  p->d.qd = x, x += nq;
  p->d.qdd = x, x += nq;
  p->d.scatter = x, x += nq;
  p->d.ctrl_work = x, x += 8 * nq;
  p->d.out = x, x += m->nout;
  p->d.unwrap = x;
  for (int e = 0; e < m->nelem; e++)
    if (m->elem_qadr[e] >= 0)
      memcpy(p->d.q + m->elem_qadr[e], m->elem_q0 + 3 * e, sizeof(double) * m->dim);
  return 0;
}

/* dense below the crossover unless a method is chosen */
static int use_dense(const mb_model* m) {
  if (m->opt.linear_solver == MB_LINEAR_DENSE || m->nq == 0) return 1;
  if (m->opt.linear_solver != MB_LINEAR_AUTO) return 0;
  return m->nq <= MB_DENSE_MAX_COORDINATES;
}

mb_status mb_structure_build(mb_model* m, mb_error* err) {
  const int nb = m->nq / m->dim;
  mb_structure* s = calloc(1, sizeof *s);
  /* a list holds the blocks of up to five linear vectors, each at most nb */
  builder b = {m,
               s,
               calloc(5 * (size_t)nb + 16, sizeof(int)),
               calloc((size_t)nb + 1, sizeof(int)),
               calloc((size_t)nb + 1, 1),
               0};
  mb_pairs pairs = {0, 0, NULL};
  probe pr = {0};
  mb_status st = MB_ERR_MEMORY;
  if (!s || !b.list || !b.list2 || !b.mark || probe_init(m, &pr)) goto done;
  m->structure = s;

  /* the pattern of every coupling */
  if (collect_pairs(&b, &pr.d, &pairs) || !(s->sys = mb_pattern_create(nb, m->dim, &pairs)))
    goto done;

  /* the maps, in one allocation */
  size_t nphiq, ngram, nhess, nfblock, nfpair, nterm;
  map_sizes(&b, &nphiq, &ngram, &nhess, &nfblock, &nfpair, &nterm);
  if (b.too_many) {
    st = mb_error_set(err, MB_ERR_MODEL, "forces[%d] (%s): acts on more than %d coordinate blocks",
                      b.too_many - 1, m->force_name + MB_NAME_LEN * (b.too_many - 1),
                      MB_LOCAL_BLOCKS);
    goto done;
  }
  const size_t ncon = (size_t)m->ncon, nforce = (size_t)m->nforce;
  const size_t ints = (ncon + 1) + nphiq + (ncon + 1) + ngram + (2 * ncon + 1) + 4 * nhess +
                      2 * (nforce + 1) + nfblock + 2 * nfpair + 8 * ncon + (4 * ncon + 1) + nterm;
  const size_t doubles = nhess + (size_t)s->sys->nnz;
  s->buffer = calloc(1, sizeof(double) * (doubles + 1) + sizeof(int) * (ints + 1));
  if (!s->buffer) goto done;
  double* x = s->buffer;
  s->hess_value = x, x += nhess;
  s->mass = x, x += s->sys->nnz;
  int* a = (int*)(x + 1);
  s->phiq.rowptr = a, a += ncon + 1;
  s->phiq.col = a, a += nphiq;
  s->gram_adr = a, a += ncon + 1;
  s->gram = a, a += ngram;
  s->hess_adr = a, a += 2 * ncon + 1;
  s->hess_entry = a, a += nhess;
  s->hess_slot = a, a += nhess;
  s->hess_rc = a, a += 2 * nhess;
  s->force_blkadr = a, a += nforce + 1;
  s->force_block = a, a += nfblock;
  s->force_pairadr = a, a += nforce + 1;
  s->force_entry = a, a += nfpair;
  s->force_stride = a, a += nfpair;
  s->cache_lvec = a, a += 4 * ncon;
  s->con_slot = a, a += 4 * ncon;
  s->con_toff_adr = a, a += 4 * ncon + 1;
  s->con_toff = a;
  phiq_rows(&b);
  term_offsets(&b);
  force_maps(&b);
  int* slot_of = malloc(sizeof(int) * ((size_t)m->nlvec + 1));
  if (!slot_of) goto done;
  lvec_cache(&b, slot_of);
  free(slot_of);
  gram_map(&b);
  if (hessian_lists(&b, nhess)) goto done;
  mass_values(m, s);
  if (!(s->term_scalar = scalar_terms(m))) goto done;

  /* the symbolic factorisations */
  s->dense = use_dense(m);
  const mb_solver_method *newton = &mb_block_lu, *projection = &mb_block_ldlt;
  if (s->dense)
    newton = &mb_dense_lu, projection = &mb_dense_cholesky;
  else if (m->opt.linear_solver == MB_LINEAR_KLU)
    newton = &mb_klu_lu, projection = &mb_ldl_cholesky;
  if (mb_solver_init(&s->newton, newton, s->sys) ||
      mb_solver_init(&s->projection, projection, s->sys))
    goto done;
  st = MB_OK;

done:
  if (st == MB_ERR_MEMORY)
    mb_error_set(err, st, "model: out of memory while compiling its sparsity");
  if (st != MB_OK) {
    mb_structure_free(s);
    m->structure = NULL;
  }
  mb_pairs_free(&pairs);
  free(b.list), free(b.list2), free(b.mark), free(pr.buffer);
  return st;
}

const char* mb_model_linear_solver(const mb_model* m) {
  if (m->joint || !m->structure || m->structure->dense)
    return mb_linear_solver_name(MB_LINEAR_DENSE);
  return mb_linear_solver_name(m->opt.linear_solver == MB_LINEAR_KLU ? MB_LINEAR_KLU
                                                                     : MB_LINEAR_SPARSE);
}

void mb_structure_free(mb_structure* s) {
  if (!s) return;
  mb_solver_release(&s->newton);
  mb_solver_release(&s->projection);
  mb_pattern_free(s->sys);
  free(s->buffer);
  free(s->term_scalar);
  free(s);
}

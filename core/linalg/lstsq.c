/* Least squares and SVD for the initial assembly and its sensitivities, through LAPACK's
   Fortran interface (dgelsd, dgesvd; the declarations of lapack.h, the routines of OpenBLAS)
   rather than LAPACKE, whose library and the LAPACK it loads cost every run of the program more
   start-up time than the assembly takes. Large sparse systems of full row rank take the
   semi-normal equations of normal.c first, whose sparse factorisation costs a small part of the
   SVD's. */
#include <lapack.h>
#include <stdlib.h>

#include "internal.h"

mb_status mbu_least_squares(int rows, int n, int nrhs, double* A, double* B, int ldb_, int* rank) {
  const lapack_int m_ = rows, n_ = n, nrhs_ = nrhs, ldb = ldb_;
  const int mn = rows < n ? rows : n;
  const double rcond = 1e-12;
  lapack_int r = 0, info = 0, lwork = -1, liwork = 0;
  double query = 0;
  double* s = malloc(sizeof(double) * ((size_t)mn + 1));
  if (!s) return MB_ERR_MEMORY;
  /* the workspace sizes first */
  LAPACK_dgelsd(&m_, &n_, &nrhs_, A, &m_, B, &ldb, s, &rcond, &r, &query, &lwork, &liwork, &info);
  lwork = (lapack_int)query + 1;
  liwork = liwork > 1 ? liwork : 1;
  double* work = malloc(sizeof(double) * (size_t)lwork);
  lapack_int* iwork = malloc(sizeof(lapack_int) * (size_t)liwork);
  if (info == 0 && work && iwork)
    LAPACK_dgelsd(&m_, &n_, &nrhs_, A, &m_, B, &ldb, s, &rcond, &r, work, &lwork, iwork, &info);
  const mb_status st = !work || !iwork ? MB_ERR_MEMORY : info == 0 ? MB_OK : MB_ERR_LINALG;
  free(s), free(work), free(iwork);
  if (rank) *rank = (int)r;
  return st;
}

mb_status mbu_least_squares_rows(int rows, int n, int nrhs, const double* A, double* B, int ldb,
                                 int* rank) {
  if (mbu_least_squares_sparse(rows, n, nrhs, A, B, ldb) == 0) {
    if (rank) *rank = rows;
    return MB_OK;
  }
  double* cols = malloc(sizeof(double) * (size_t)rows * n + sizeof(double));
  if (!cols) return MB_ERR_MEMORY;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < n; j++) cols[(size_t)j * rows + i] = A[(size_t)i * n + j];
  const mb_status st = mbu_least_squares(rows, n, nrhs, cols, B, ldb, rank);
  free(cols);
  return st;
}

int mbu_svd(int rows, int n, double* A, double* s, double* U, double* VT) {
  const lapack_int m_ = rows, n_ = n, ldvt = VT ? n : 1;
  const char jobu = U ? 'A' : 'N', jobvt = VT ? 'A' : 'N';
  double u = 0, vt = 0;
  if (!U) U = &u; /* not referenced */
  if (!VT) VT = &vt;
  lapack_int info = 0, lwork = -1;
  double query = 0;
  LAPACK_dgesvd(&jobu, &jobvt, &m_, &n_, A, &m_, s, U, &m_, VT, &ldvt, &query, &lwork, &info);
  if (info != 0) return (int)info;
  lwork = (lapack_int)query + 1;
  double* work = malloc(sizeof(double) * (size_t)lwork);
  if (!work) return -1;
  LAPACK_dgesvd(&jobu, &jobvt, &m_, &n_, A, &m_, s, U, &m_, VT, &ldvt, work, &lwork, &info);
  free(work);
  return (int)info;
}

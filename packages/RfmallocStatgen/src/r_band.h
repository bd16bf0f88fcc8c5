/* r_band.h: an LD band (fm_band.h) from the R parts of a statgen_ld object
 * (R/ld_band.R, .ld_parts()): list(colptr = doubles, rowidx = integers,
 * values = doubles or raw bytes of floats). The vectors may be mapped (an
 * Rfmalloc runtime) or on the heap; they are only read. */
#ifndef STG_R_BAND_H
#define STG_R_BAND_H

#include <R.h>
#include <Rinternals.h>

#include "fm/fm_band.h"

/* Fill *b from parts; colptr is converted to int64 in R_alloc memory (freed
 * when the .Call returns). Raises an R error naming the part that is not
 * what the layout says (types, lengths, colptr not nondecreasing from 0,
 * a row index outside 0..n-1). */
void stg_band_get(SEXP parts, fm_band *b);

#endif

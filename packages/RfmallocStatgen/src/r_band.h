/* r_band.h: an LD band (fm_band.h) from the R parts of a statgen_ld object
 * (R/ld_band.R, .ld_parts()): list(colptr = doubles, rowidx = integers,
 * values = doubles or raw bytes of floats). The vectors may be mapped (an
 * Rfmalloc runtime) or on the heap; they are only read. The parts may
 * carry the token of a past check (checked = stg_band_check(parts)). */
#ifndef STG_R_BAND_H
#define STG_R_BAND_H

#include <R.h>
#include <Rinternals.h>

#include "fm/fm_band.h"

/* Fill *b from parts. Raises an R error naming the part that is not what
 * the layout says (types, lengths, colptr not nondecreasing from 0, a row
 * index outside 0..n-1). Types, lengths and colptr's ends are checked on
 * every call; the rest once per band, when parts holds a token of
 * stg_band_check (part "checked") that matches the arrays (b->colptr is
 * then the token's int64 copy); without one, on every call (b->colptr in
 * R_alloc memory, freed when the .Call returns). */
void stg_band_get(SEXP parts, fm_band *b);

/* .Call(stg_band_check, parts): check the whole layout of parts and return
 * the token that lets later stg_band_get calls skip it (an external pointer;
 * after serialization its address is NULL, and the next call checks again
 * and refills it). */
SEXP stg_band_check(SEXP parts);

#endif

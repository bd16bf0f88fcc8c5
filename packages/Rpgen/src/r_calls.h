/* r_calls.h: the .Call tables of Rpgen's glue modules (r_init.c joins them;
 * the convention of r_calls.h in every package of the stack). */
#ifndef RPGEN_R_CALLS_H
#define RPGEN_R_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#define RPG_CALLDEF(name, n) {#name, (DL_FUNC)&name, n}

extern const R_CallMethodDef rpg_read_calls[]; /* r_read.c: formats, readers, streaming */

#endif

/* Rfmalloc_core.h: the C core, reached from sibling packages through one
 * versioned function table.
 *
 * Rfmalloc hosts the only compiled copy of the core (core/src, every
 * subsystem but the GGML one) in an R process, so process-wide state (open
 * mappings, the backend registry, worker threads) exists once. A package
 * that calls core functions (Rpgen, Rgguf, Rllm, ...) compiles none of
 * them. Instead:
 *   DESCRIPTION: LinkingTo: Rfmalloc, Imports (or Depends): Rfmalloc
 *   one source file:   #include <Rfmalloc_core_stubs.c>
 *   R_init_<pkg>():    Rfmalloc_core_init();
 * and then calls the functions of Rfmalloc_core_list.h by their core names
 * (fm_gguf_open(...), fm_err_set(...)): the stubs are hidden forwarders
 * into the table, so glue and core sources compiled into that package
 * (Rgguf's GGML subsystem) read as they do in the standalone core. The
 * core's public headers come with this one (include/fm/, the same files
 * Rfmalloc was built with, so struct layouts agree).
 *
 * The table starts with its version and its number of functions; a
 * package built against another version raises an R error at load time
 * that says to reinstall it. */
#ifndef RFMALLOC_CORE_H
#define RFMALLOC_CORE_H

#include <stdarg.h>

#include "fm/fm_base.h"
#include "fm/fm_codec_hap1.h"
#include "fm/fm_cpu.h"
#include "fm/fm_fmt.h"
#include "fm/fm_fmt_bgen.h"
#include "fm/fm_fmt_pgen.h"
#include "fm/fm_fmt_plink.h"
#include "fm/fm_fmt_registry.h"
#include "fm/fm_fmt_text.h"
#include "fm/fm_fmt_vcf.h"
#include "fm/fm_gguf.h"
#include "fm/fm_pt.h"
#include "fm/fm_rng.h"
#include "fm/fm_stats_clump.h"
#include "fm/fm_stats_coloc.h"
#include "fm/fm_stats_glm.h"
#include "fm/fm_stats_ld.h"
#include "fm/fm_stats_ldpred2.h"
#include "fm/fm_stats_ldscore.h"
#include "fm/fm_tok.h"

/* Bump when Rfmalloc_core_list.h or a struct of the core headers changes. */
#define RFMALLOC_CORE_VERSION 18

typedef struct Rfmalloc_core_api {
  int version;     /* RFMALLOC_CORE_VERSION of the Rfmalloc that filled it */
  int n_functions; /* the lines of Rfmalloc_core_list.h */
#define FM_CORE_FN(ret, name, params, args) ret(*name) params;
#define FM_CORE_VOID(name, params, args) void(*name) params;
#include "Rfmalloc_core_list.h"
#undef FM_CORE_FN
#undef FM_CORE_VOID
} Rfmalloc_core_api;

enum {
  RFMALLOC_CORE_N = 0
#define FM_CORE_FN(ret, name, params, args) +1
#define FM_CORE_VOID(name, params, args) +1
#include "Rfmalloc_core_list.h"
#undef FM_CORE_FN
#undef FM_CORE_VOID
};

/* Defined by Rfmalloc_core_stubs.c: look Rfmalloc's table up (from
 * R_init_<pkg>, before any core call). */
void Rfmalloc_core_init(void);

/* How a client looks a table up (this one, or another package's built the
 * same way, such as Rgguf's): the table that package registered under
 * `name`, after checking its leading version and function count against
 * the ones the client was compiled with; raises an R error otherwise.
 * Main thread, at load time (R_init_<pkg>). */
const void *Rfmalloc_table(const char *pkg, const char *name, int version, int n_functions);

#endif

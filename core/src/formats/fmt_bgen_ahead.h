/* fmt_bgen_ahead.h (private to fmt_bgen.c): decompression ahead of the BGEN
 * reader on one worker thread.
 *
 * The worker walks the layout-2 variant blocks that follow a given file
 * offset with its own reads (pread: the reader's stdio position is never
 * moved), and decompresses up to AHEAD_SLOTS of them ahead into a ring of
 * buffers while the reader decodes the current one. The reader asks for
 * each block by the file offset of its compressed bytes and receives the
 * decompressed bytes in exchange for its own buffer. The worker is only a
 * cache: it validates nothing the reader reports. Any block it cannot
 * parse, bound or decompress ends its walk or is handed back as missing,
 * and the reader then reads and decompresses that block itself, with its
 * own checks and messages. Blocks the reader skips are dropped.
 *
 * Threads: the reader's thread calls every function; the worker touches
 * only its ring (under the mutex) and its own buffers. */
#ifndef FMT_BGEN_AHEAD_H
#define FMT_BGEN_AHEAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct bgen_ahead bgen_ahead;

/* Start a worker on the variant blocks at [off, file_size) of fd, at most
 * n_variants of them, for n_samples samples (to bound the sizes it accepts)
 * and compression 1 (zlib) or 2 (zstd). NULL when the thread or its memory
 * cannot be had (the reader then works alone). */
bgen_ahead *bgen_ahead_start(int fd, uint64_t off, uint64_t file_size, uint32_t n_variants,
                             uint32_t n_samples, unsigned compression);

/* The block whose compressed bytes (clen of them, after the 4-byte
 * uncompressed length dlen) start at file offset off: 1 when the worker
 * decompressed it, and then *raw (capacity *raw_cap) holds its dlen bytes
 * plus 8 zero bytes and the caller's previous buffer belongs to the worker;
 * 0 when the caller must read it itself (nothing changed). Waits while the
 * worker is on that block. */
int bgen_ahead_take(bgen_ahead *a, uint64_t off, uint64_t clen, uint64_t dlen, uint8_t **raw,
                    size_t *raw_cap);

/* Stop and join the worker, free everything. Safe on NULL. */
void bgen_ahead_stop(bgen_ahead *a);

#endif

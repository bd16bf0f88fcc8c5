/* llm_cache.c: the KV cache of one sequence. Layout, per layer with KV heads:
 * K as n_ctx rows of n_embd_k_gqa (position-major, as RoPE'd keys are
 * written), V transposed as n_embd_v_gqa rows of n_ctx (so attention's
 * V x softmax product reads contiguous rows), each padded to 64 bytes; then
 * per-layer recurrent state (F32). Cell p holds position p. The memory is
 * zeroed at creation: cells beyond n_past are masked with -Inf, and their
 * finite zeros keep 0 x value products exact. For a model on a device the
 * same tensors live in one buffer of the device's memory, placed by GGML's
 * allocator (the device's alignment, not this layout's offsets), and are
 * read and written through the backend (ggml_backend_tensor_*). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>

#include "llm_impl.h"

static atomic_llong cache_serial;

static int64_t next_serial(void) { return (int64_t)atomic_fetch_add(&cache_serial, 1) + 1; }

#define CACHE_ALIGN 64

static size_t align_up(size_t x) { return (x + CACHE_ALIGN - 1) & ~(size_t)(CACHE_ALIGN - 1); }

/* Layout of one cache; returns total bytes from the aligned base (0 for
 * a model with no cache to hold: no attention, no state), SIZE_MAX on
 * overflow. Offsets per layer when off_k/off_v/off_s are not NULL. */
static size_t layout(const fm_llm_model *m, int64_t n_ctx, fm_llm_kv_type kv, size_t *off_k,
                     size_t *off_v, size_t *off_s) {
  const llm_hparams *hp = &m->hp;
  enum ggml_type t = kv == FM_LLM_KV_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  size_t total = 0;
  if (n_ctx > INT64_MAX - LLM_KV_PAD) return SIZE_MAX;
  n_ctx = (n_ctx + LLM_KV_PAD - 1) / LLM_KV_PAD * LLM_KV_PAD;
  for (int64_t il = 0; il < hp->n_layer; il++) {
    if (hp->n_head_kv[il] > 0) {
      int64_t ek = llm_n_embd_k_gqa(hp, il), ev = llm_n_embd_v_gqa(hp, il), bk, bv;
      if (!fm_mul_ok(ek, n_ctx, &bk) || !fm_mul_ok(ev, n_ctx, &bv)) return SIZE_MAX;
      size_t sk = align_up(ggml_row_size(t, bk)), sv = align_up(ggml_row_size(t, bv));
      if (off_k) off_k[il] = total;
      total += sk;
      if (off_v) off_v[il] = total;
      total += sv;
    }
    int64_t ns = llm_program_state_elems(m, il);
    if (ns > 0) {
      if (off_s) off_s[il] = total;
      total += align_up((size_t)ns * sizeof(float));
    }
    if (total > (SIZE_MAX >> 2)) return SIZE_MAX;
  }
  return total;
}

size_t fm_llm_cache_bytes(const fm_llm_model *m, int64_t n_ctx, fm_llm_kv_type kv) {
  if (!m || n_ctx < 1 || (kv != FM_LLM_KV_F16 && kv != FM_LLM_KV_F32)) return 0;
  size_t n = layout(m, n_ctx, kv, NULL, NULL, NULL);
  return n != SIZE_MAX ? n + CACHE_ALIGN : 0;
}

/* The tensors of cache c (model, n_cells and type set) in one zeroed
 * buffer of the model's device. */
static fm_status device_tensors(fm_llm_cache *c, fm_err *err) {
  const fm_llm_model *m = c->m;
  const llm_hparams *hp = &m->hp;
  int64_t L = hp->n_layer;
  enum ggml_type t = c->type == FM_LLM_KV_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  struct ggml_init_params ip = {(size_t)(3 * L + 4) * ggml_tensor_overhead(), NULL, true};
  c->ctx = ggml_init(ip);
  if (!c->ctx) return fm_err_set(err, FM_ENOMEM, "out of memory for a KV cache");
  int any = 0;
  for (int64_t il = 0; il < L; il++) {
    if (hp->n_head_kv[il] > 0) {
      c->k[il] = ggml_new_tensor_2d(c->ctx, t, llm_n_embd_k_gqa(hp, il), c->n_cells);
      c->v[il] = ggml_new_tensor_2d(c->ctx, t, c->n_cells, llm_n_embd_v_gqa(hp, il));
      any = 1;
    }
    int64_t ns = llm_program_state_elems(m, il);
    if (ns > 0) {
      c->s[il] = ggml_new_tensor_1d(c->ctx, GGML_TYPE_F32, ns);
      any = 1;
    }
  }
  c->on_device = 1;
  if (!any) return FM_OK; /* nothing to hold (GGML allocates no empty buffer) */
  c->buf = ggml_backend_alloc_ctx_tensors_from_buft(c->ctx, ggml_backend_dev_buffer_type(m->dev));
  if (!c->buf)
    return fm_err_set(err, FM_ENOMEM, "%s has no room for a KV cache of %lld positions",
                      ggml_backend_dev_name(m->dev), (long long)c->n_ctx);
  ggml_backend_buffer_set_usage(c->buf, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
  ggml_backend_buffer_clear(c->buf, 0);
  c->n_bytes = ggml_backend_buffer_get_size(c->buf);
  return FM_OK;
}

fm_status fm_llm_cache_new(const fm_llm_model *m, int64_t n_ctx, fm_llm_kv_type kv, void *mem,
                           size_t n_bytes, fm_llm_cache **out, fm_err *err) {
  fm_status st = FM_OK;
  fm_llm_cache *c = NULL;
  size_t *off = NULL;
  if (out) *out = NULL;
  if (!m || !out) return fm_err_set(err, FM_EARG, "fm_llm_cache_new: NULL model or out");
  if (n_ctx < 1) return fm_err_set(err, FM_EARG, "n_ctx must be >= 1, got %lld", (long long)n_ctx);
  if (kv != FM_LLM_KV_F16 && kv != FM_LLM_KV_F32)
    return fm_err_set(err, FM_EARG, "unknown KV cache type %d", (int)kv);
  size_t need = fm_llm_cache_bytes(m, n_ctx, kv);
  if (need == 0)
    return fm_err_set(err, FM_EARG, "a cache of %lld positions is too large", (long long)n_ctx);
  if (mem && n_bytes < need)
    return fm_err_set(err, FM_EARG, "cache buffer of %zu bytes is smaller than the %zu needed",
                      n_bytes, need);
  if (mem && m->dev)
    return fm_err_set(err, FM_EARG,
                      "the model runs on %s: its caches live in the device's memory, not in a "
                      "caller's buffer",
                      ggml_backend_dev_name(m->dev));
  int64_t L = m->hp.n_layer;
  c = calloc(1, sizeof *c);
  off = calloc((size_t)L * 3, sizeof *off);
  if (!c || !off) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory for a KV cache");
    goto fail;
  }
  c->m = m;
  c->n_ctx = n_ctx;
  c->n_cells = (n_ctx + LLM_KV_PAD - 1) / LLM_KV_PAD * LLM_KV_PAD;
  c->serial = next_serial();
  c->type = kv;
  c->k = calloc((size_t)L, sizeof *c->k);
  c->v = calloc((size_t)L, sizeof *c->v);
  c->s = calloc((size_t)L, sizeof *c->s);
  if (!c->k || !c->v || !c->s) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory for a KV cache");
    goto fail;
  }
  if (m->dev) {
    st = device_tensors(c, err);
    if (st != FM_OK) goto fail;
    free(off);
    *out = c;
    return FM_OK;
  }
  if (mem) {
    c->base = (void *)(((uintptr_t)mem + CACHE_ALIGN - 1) & ~(uintptr_t)(CACHE_ALIGN - 1));
    c->mem_off = (size_t)((char *)c->base - (char *)mem);
  } else {
    if (posix_memalign(&c->heap, CACHE_ALIGN, need) != 0) {
      c->heap = NULL;
      st = fm_err_set(err, FM_ENOMEM, "out of memory for a KV cache of %zu bytes", need);
      goto fail;
    }
    c->base = c->heap;
  }
  c->n_bytes = layout(m, n_ctx, kv, off, off + L, off + 2 * L);
  memset(c->base, 0, c->n_bytes);
  struct ggml_init_params ip = {(size_t)(3 * L + 4) * ggml_tensor_overhead(), NULL, true};
  c->ctx = ggml_init(ip);
  c->buf = c->ctx ? ggml_backend_cpu_buffer_from_ptr(c->base, c->n_bytes ? c->n_bytes : 1) : NULL;
  if (!c->ctx || !c->buf) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory for a KV cache");
    goto fail;
  }
  enum ggml_type t = kv == FM_LLM_KV_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  const llm_hparams *hp = &m->hp;
  for (int64_t il = 0; il < L; il++) {
    if (hp->n_head_kv[il] > 0) {
      c->k[il] = ggml_new_tensor_2d(c->ctx, t, llm_n_embd_k_gqa(hp, il), c->n_cells);
      c->v[il] = ggml_new_tensor_2d(c->ctx, t, c->n_cells, llm_n_embd_v_gqa(hp, il));
      if (ggml_backend_tensor_alloc(c->buf, c->k[il], (char *)c->base + off[il]) !=
              GGML_STATUS_SUCCESS ||
          ggml_backend_tensor_alloc(c->buf, c->v[il], (char *)c->base + off[L + il]) !=
              GGML_STATUS_SUCCESS) {
        st = fm_err_set(err, FM_EINTERNAL, "GGML refused the KV cache layout of layer %lld",
                        (long long)il);
        goto fail;
      }
    }
    int64_t ns = llm_program_state_elems(m, il);
    if (ns > 0) {
      c->s[il] = ggml_new_tensor_1d(c->ctx, GGML_TYPE_F32, ns);
      if (ggml_backend_tensor_alloc(c->buf, c->s[il], (char *)c->base + off[2 * L + il]) !=
          GGML_STATUS_SUCCESS) {
        st = fm_err_set(err, FM_EINTERNAL, "GGML refused the state layout of layer %lld",
                        (long long)il);
        goto fail;
      }
    }
  }
  free(off);
  *out = c;
  return FM_OK;
fail:
  free(off);
  fm_llm_cache_free(c);
  return st;
}

void fm_llm_cache_free(fm_llm_cache *c) {
  if (!c) return;
  if (c->buf) ggml_backend_buffer_free(c->buf);
  if (c->ctx) ggml_free(c->ctx);
  free(c->heap);
  free(c->k);
  free(c->v);
  free(c->s);
  free(c);
}

fm_status fm_llm_cache_rebase(fm_llm_cache *c, void *mem, size_t n_bytes, fm_err *err) {
  if (!c || !mem) return fm_err_set(err, FM_EARG, "fm_llm_cache_rebase: NULL argument");
  if (c->heap) return fm_err_set(err, FM_EARG, "the cache is on the heap; it cannot move");
  if (c->on_device)
    return fm_err_set(err, FM_EARG, "the cache is in a device's memory; it cannot move");
  /* The contents sit mem_off bytes into the caller's buffer, wherever it is. */
  void *base = (char *)mem + c->mem_off;
  if (base == c->base) return FM_OK;
  if (n_bytes < c->n_bytes + c->mem_off)
    return fm_err_set(err, FM_EARG, "the moved cache buffer of %zu bytes is too small", n_bytes);
  if ((uintptr_t)base % CACHE_ALIGN != 0)
    return fm_err_set(err, FM_EARG, "the cache buffer moved to an address of another alignment");
  ggml_backend_buffer_t nb = ggml_backend_cpu_buffer_from_ptr(base, c->n_bytes ? c->n_bytes : 1);
  if (!nb) return fm_err_set(err, FM_ENOMEM, "out of memory rebasing a cache");
  for (int64_t il = 0; il < c->m->hp.n_layer; il++) {
    struct ggml_tensor *ts[3] = {c->k[il], c->v[il], c->s[il]};
    for (int j = 0; j < 3; j++)
      if (ts[j]) {
        ts[j]->data = (char *)base + ((char *)ts[j]->data - (char *)c->base);
        ts[j]->buffer = nb;
      }
  }
  ggml_backend_buffer_free(c->buf);
  c->buf = nb;
  c->base = base;
  c->serial = next_serial(); /* graphs built over the old address are stale */
  return FM_OK;
}

void fm_llm_cache_clear(fm_llm_cache *c) {
  if (!c) return;
  c->n_past = 0;
  for (int64_t il = 0; il < c->m->hp.n_layer; il++)
    if (c->s && c->s[il]) ggml_backend_tensor_memset(c->s[il], 0, 0, ggml_nbytes(c->s[il]));
}

int64_t fm_llm_cache_n_past(const fm_llm_cache *c) { return c ? c->n_past : 0; }
int64_t fm_llm_cache_n_ctx(const fm_llm_cache *c) { return c ? c->n_ctx : 0; }
fm_llm_kv_type fm_llm_cache_type(const fm_llm_cache *c) { return c ? c->type : FM_LLM_KV_F16; }

/* llm_model.c: a model of a bound program (fm_llm_program.h) on a parsed
 * GGUF file: its weights bound zero-copy (GGML tensors whose data pointers
 * lie in the file's read-only mapping, wrapped by one CPU backend buffer;
 * GGML only reads them), or, on a device, copied once into one buffer of
 * its memory; the backend, the graph allocator and the model's switches.
 *
 * Every value the graph relies on is checked before GGML sees it (the
 * program's shape rules, llm_program.c; tensor types and extents here), so
 * a malformed file or program is an error naming the node or tensor and
 * never reaches one of GGML's asserts (which abort, or in R raise an error
 * through a longjmp). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_llm_ggml.h"
#include "llm_impl.h"
#ifdef FM_GGML_VULKAN
#include <ggml-vulkan.h>
#include <stdbool.h>
#endif

/* ---- tensors -------------------------------------------------------------- */

static int type_consistent(uint32_t type) {
  if (type >= GGML_TYPE_COUNT) return 0;
  if (ggml_blck_size((enum ggml_type)type) <= 0) return 0;
  return (int64_t)ggml_blck_size((enum ggml_type)type) == fm_gguf_type_block(type) &&
         (int64_t)ggml_type_size((enum ggml_type)type) == fm_gguf_type_size(type);
}

static int type_ok_for(uint32_t type, int kind) {
  enum ggml_type t = (enum ggml_type)type;
  switch (kind) {
  case LLM_T_F32: return t == GGML_TYPE_F32;
  case LLM_T_MATMUL: {
    const struct ggml_type_traits_cpu *tc = ggml_get_type_traits_cpu(t);
    return tc && tc->vec_dot != NULL;
  }
  case LLM_T_ROWS: {
    if (t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16) return 1;
    const struct ggml_type_traits *tr = ggml_get_type_traits(t);
    return tr && tr->to_float != NULL;
  }
  default: return 1;
  }
}

static const char *kind_name(int kind) {
  switch (kind) {
  case LLM_T_F32: return "f32";
  case LLM_T_MATMUL: return "a type with a GGML CPU dot product";
  case LLM_T_ROWS: return "a type GGML can dequantize";
  default: return "any type";
  }
}

fm_status llm_bind_at(llm_model *m, int64_t idx, int kind, const int64_t *want,
                      struct ggml_tensor **out, fm_err *err) {
  *out = NULL;
  if (idx < 0 || idx >= fm_gguf_n_tensors(m->g))
    return fm_err_set(err, FM_EARG, "tensor index %lld is not in the file (%lld tensors)",
                      (long long)idx, (long long)fm_gguf_n_tensors(m->g));
  const fm_gguf_tensor *t = fm_gguf_tensor_at(m->g, idx);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)(t->name_len > 255 ? 255 : t->name_len), t->name);
  int bad = 0;
  for (int d = 0; want && d < 4; d++)
    if (want[d] >= 0 && t->ne[d] != want[d]) bad = 1;
  if (bad) {
    char w[96], h[96];
    snprintf(h, sizeof h, "[%lld, %lld, %lld, %lld]", (long long)t->ne[0], (long long)t->ne[1],
             (long long)t->ne[2], (long long)t->ne[3]);
    snprintf(w, sizeof w, "[%lld, %lld, %lld, 1] (-1: any)", (long long)want[0], (long long)want[1],
             (long long)want[2]);
    return fm_err_set(err, FM_EFORMAT, "tensor '%s' has shape %s, expected %s", name, h, w);
  }
  if (!type_consistent(t->type))
    return fm_err_set(err, FM_EUNSUPPORTED, "tensor '%s' has ggml type %u, which this GGML does not know",
                      name, t->type);
  if (!type_ok_for(t->type, kind))
    return fm_err_set(err, FM_EFORMAT, "tensor '%s' has type %s, expected %s", name,
                      ggml_type_name((enum ggml_type)t->type), kind_name(kind));
  if (m->bound[idx]) {
    *out = m->bound[idx];
    return FM_OK;
  }
  int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
  int n_dims = t->n_dims < 1 ? 1 : (int)t->n_dims;
  struct ggml_tensor *gt = ggml_new_tensor(m->wctx, (enum ggml_type)t->type, n_dims, ne);
  if (!gt) return fm_err_set(err, FM_ENOMEM, "no room for tensor '%s'", name);
  ggml_set_name(gt, name);
  size_t nbytes = ggml_nbytes(gt);
  if ((uint64_t)nbytes != t->n_bytes || t->data_offset > fm_gguf_size(m->g) ||
      t->n_bytes > fm_gguf_size(m->g) - t->data_offset)
    return fm_err_set(err, FM_EFORMAT,
                      "tensor '%s' holds %llu bytes at offset %llu, GGML expects %llu (file of %llu bytes)",
                      name, (unsigned long long)t->n_bytes, (unsigned long long)t->data_offset,
                      (unsigned long long)nbytes, (unsigned long long)fm_gguf_size(m->g));
  /* On a device the tensor stays unallocated here: upload_weights() places
   * every bound tensor in one device buffer once the architecture is loaded. */
  void *addr = (void *)(fm_gguf_bytes(m->g) + t->data_offset);
  if (!m->dev && ggml_backend_tensor_alloc(m->wbuf, gt, addr) != GGML_STATUS_SUCCESS)
    return fm_err_set(err, FM_EINTERNAL, "GGML refused to bind tensor '%s'", name);
  m->bound[idx] = gt;
  m->info.n_params += ggml_nelements(gt);
  m->info.n_weight_bytes += nbytes;
  *out = gt;
  return FM_OK;
}

/* ---- devices ---------------------------------------------------------------- */

/* The registry's device `index` of `kind` into *dev, with a backend on it. */
static fm_status open_device(fm_llm_device kind, int index, ggml_backend_dev_t *dev,
                             ggml_backend_t *backend, fm_err *err) {
  const char *reg_name = "Vulkan";
  if (kind != FM_LLM_DEVICE_VULKAN)
    return fm_err_set(err, FM_EARG, "unknown device kind %d (0: CPU, 1: Vulkan)", (int)kind);
  llm_ggml_quiet();
  if (!fm_llm_ggml_has_vulkan())
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "Vulkan is not in this GGML build (ggmlR was compiled without "
                      "--with-vulkan); in the source repository, `make vulkan` builds one");
  int n = fm_llm_ggml_n_devices(reg_name);
  if (n < 1)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "GGML's Vulkan backend found no device (it needs a Vulkan loader and a "
                      "GPU driver; a CPU driver such as Mesa's lavapipe counts only when "
                      "GGML_VK_VISIBLE_DEVICES names it)");
  if (index < 0 || index >= n)
    return fm_err_set(err, FM_EARG, "Vulkan device %d does not exist (GGML has %d: 0 to %d)",
                      index, n, n - 1);
  *dev = ggml_backend_reg_dev_get(ggml_backend_reg_by_name(reg_name), (size_t)index);
#ifdef FM_GGML_VULKAN
  /* ggmlR's backend raises an R error from inside GGML (a longjmp through
   * this code) when it starts a device with fewer than 256 bytes of push
   * constants (Mesa 22's lavapipe has 128): asked first, so it is a status. */
  bool pc256 = false;
  uint32_t pc = 0;
  ggml_backend_vk_get_device_caps(index, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                  NULL, NULL, NULL, NULL, &pc256, &pc, NULL, NULL);
  if (!pc256)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "Vulkan device %d (%s) offers %u bytes of push constants; GGML's Vulkan "
                      "backend needs 256 (a newer driver: for Mesa's lavapipe, Mesa 25 or later)",
                      index, *dev ? ggml_backend_dev_description(*dev) : "?", (unsigned)pc);
#endif
  *backend = *dev ? ggml_backend_dev_init(*dev, NULL) : NULL;
  if (!*backend)
    return fm_err_set(err, FM_EINTERNAL, "GGML could not start Vulkan device %d", index);
  return FM_OK;
}

/* Every bound weight, copied from the mapping into one buffer of the
 * device's memory (allocated for all of them at once, so the model's
 * weights cost one allocation). */
static fm_status upload_weights(llm_model *m, fm_err *err) {
  ggml_backend_buffer_type_t bt = ggml_backend_dev_buffer_type(m->dev);
  m->wbuf = ggml_backend_alloc_ctx_tensors_from_buft(m->wctx, bt);
  if (!m->wbuf)
    return fm_err_set(err, FM_ENOMEM, "%s has no room for the model's %llu bytes of weights",
                      ggml_backend_dev_name(m->dev), (unsigned long long)m->info.n_weight_bytes);
  ggml_backend_buffer_set_usage(m->wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  const uint8_t *bytes = fm_gguf_bytes(m->g);
  for (int64_t i = 0; i < fm_gguf_n_tensors(m->g); i++)
    if (m->bound[i]) {
      const fm_gguf_tensor *t = fm_gguf_tensor_at(m->g, i);
      ggml_backend_tensor_set(m->bound[i], bytes + t->data_offset, 0, ggml_nbytes(m->bound[i]));
    }
  return FM_OK;
}

/* ---- the model ------------------------------------------------------------- */

fm_status fm_llm_model_new_program(const fm_gguf *g, const fm_llm_program *p, int n_threads,
                                   fm_llm_device device, int index, fm_llm_model **out, fm_err *err) {
  fm_status st = FM_OK;
  llm_model *m = NULL;
  if (out) *out = NULL;
  if (!g || !p || !out) return fm_err_set(err, FM_EARG, "fm_llm_model_new_program: NULL file, program or out");
  if (n_threads < 0)
    return fm_err_set(err, FM_EARG, "threads must be >= 0 (0: the call's), got %d", n_threads);
  m = calloc(1, sizeof *m);
  if (!m) return fm_err_set(err, FM_ENOMEM, "out of memory for a model");
  m->g = g;
  m->n_threads = n_threads;
  m->flash_attn = 1;
  m->fused_gemm = 1;
  if (device != FM_LLM_DEVICE_CPU) {
    st = open_device(device, index, &m->dev, &m->backend, err);
    if (st != FM_OK) goto fail;
  }

  const char *s = p->name ? p->name : "program";
  size_t len = strlen(s);
  snprintf(m->arch_name, sizeof m->arch_name, "%.*s", (int)(len > 63 ? 63 : len), s);
  int64_t in = fm_gguf_find_kv(g, "general.name");
  if (in >= 0 && fm_gguf_get_str(fm_gguf_kv_at(g, in), 0, &s, &len) == 0)
    snprintf(m->name, sizeof m->name, "%.*s", (int)(len > 127 ? 127 : len), s);

  const uint8_t *bytes = fm_gguf_bytes(g);
  size_t size = fm_gguf_size(g);
  if (((uintptr_t)bytes % 64) != 0) {
    st = fm_err_set(err, FM_EUNSUPPORTED, "the GGUF bytes are not 64-byte aligned in memory");
    goto fail;
  }
  int64_t nt = fm_gguf_n_tensors(g);
  m->bound = calloc((size_t)(nt > 0 ? nt : 1), sizeof *m->bound);
  struct ggml_init_params ip = {(size_t)(nt + 8) * ggml_tensor_overhead(), NULL, true};
  m->wctx = ggml_init(ip);
  if (!m->dev) {
    m->backend = ggml_backend_cpu_init();
    m->wbuf = ggml_backend_cpu_buffer_from_ptr((void *)bytes, size);
  }
  if (!m->bound || !m->wctx || !m->backend || (!m->dev && !m->wbuf)) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory setting up GGML for the model");
    goto fail;
  }
  if (m->wbuf) ggml_backend_buffer_set_usage(m->wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);

  st = llm_program_load(m, p, err);
  if (st != FM_OK) goto fail;
  if (m->dev) {
    st = upload_weights(m, err);
    if (st != FM_OK) goto fail;
  }

  m->galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(m->backend));
  m->graph_size = 1024 + 8 * p->n_nodes;
  m->graph_mem_size = (size_t)m->graph_size * ggml_tensor_overhead() +
                      ggml_graph_overhead_custom((size_t)m->graph_size, false);
  m->graph_mem = malloc(m->graph_mem_size);
  if (!m->galloc || !m->graph_mem) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory for the graph allocator");
    goto fail;
  }

  llm_hparams *hp = &m->hp;
  fm_llm_info *in2 = &m->info;
  in2->arch = m->arch_name;
  in2->name = m->name;
  in2->n_vocab = hp->n_vocab;
  in2->n_embd = hp->n_embd;
  if (in2->n_embd_out == 0) in2->n_embd_out = hp->n_embd;
  in2->n_layer = hp->n_layer;
  for (int64_t il = 0; il < hp->n_layer; il++)
    if (hp->n_head[il] > 0 && hp->n_head_kv[il] > 0) { /* an attention layer */
      in2->n_head = hp->n_head[il];
      in2->n_head_kv = hp->n_head_kv[il];
      break;
    }
  in2->n_embd_head_k = hp->n_embd_head_k;
  in2->n_embd_head_v = hp->n_embd_head_v;
  llm_program_encoder_info(m, in2);
  in2->n_ff = hp->n_ff[0];
  in2->n_rot = hp->n_rot;
  in2->n_ctx_train = hp->n_ctx_train;
  in2->n_expert = hp->n_expert;
  in2->n_expert_used = hp->n_expert_used;
  in2->rope_freq_base = hp->rope_freq_base;
  in2->norm_eps = hp->norm_rms_eps;
  in2->rope_neox = hp->rope_neox;
  in2->causal = hp->causal;
  in2->pooling = hp->pooling;
  *out = m;
  return FM_OK;
fail:
  fm_llm_model_free(m);
  return st;
}

void fm_llm_model_free(fm_llm_model *m) {
  if (!m) return;
  if (m->gctx) ggml_free(m->gctx);
  free(m->gb);
  if (m->galloc) ggml_gallocr_free(m->galloc);
  if (m->wbuf) ggml_backend_buffer_free(m->wbuf);
  if (m->rbuf) ggml_backend_buffer_free(m->rbuf);
  if (m->rctx) ggml_free(m->rctx);
  if (m->backend) ggml_backend_free(m->backend);
  if (m->wctx) ggml_free(m->wctx);
  free(m->graph_mem);
  free(m->gemm_scratch);
  free(m->inp_scratch);
  free(m->bound);
  free(m->hp.n_head);
  free(m->hp.n_head_kv);
  free(m->hp.n_ff);
  free(m->hp.swa_layer);
  free(m->prog);
  free(m);
}

const fm_llm_info *fm_llm_model_info(const fm_llm_model *m) { return m ? &m->info : NULL; }

fm_status fm_llm_model_set_threads(fm_llm_model *m, int n_threads, fm_err *err) {
  if (!m) return fm_err_set(err, FM_EARG, "NULL model");
  if (n_threads < 0)
    return fm_err_set(err, FM_EARG, "threads must be >= 0 (0: the call's), got %d", n_threads);
  m->n_threads = n_threads;
  return FM_OK;
}

int fm_llm_model_threads(const fm_llm_model *m) { return m ? m->n_threads : 0; }

/* Checks of an on/off setting of m, named in errors. */
static fm_status check_switch(const fm_llm_model *m, const char *name, int on, fm_err *err) {
  if (!m) return fm_err_set(err, FM_EARG, "NULL model");
  if (on != 0 && on != 1) return fm_err_set(err, FM_EARG, "%s must be 0 or 1, got %d", name, on);
  return FM_OK;
}

fm_status fm_llm_model_set_flash_attn(fm_llm_model *m, int on, fm_err *err) {
  fm_status st = check_switch(m, "flash_attn", on, err);
  if (st == FM_OK) m->flash_attn = on;
  return st;
}

int fm_llm_model_flash_attn(const fm_llm_model *m) { return m ? m->flash_attn : 0; }

fm_status fm_llm_model_set_fused_gemm(fm_llm_model *m, int on, fm_err *err) {
  fm_status st = check_switch(m, "fused_gemm", on, err);
  if (st == FM_OK) m->fused_gemm = on;
  return st;
}

/* on a device the fused kernels (CPU code, a GGML custom operator) never run */
int fm_llm_model_fused_gemm(const fm_llm_model *m) { return m && !m->dev ? m->fused_gemm : 0; }

const char *fm_llm_model_device(const fm_llm_model *m) {
  return m && m->dev ? ggml_backend_dev_name(m->dev) : "CPU";
}

fm_status fm_llm_model_repack(fm_llm_model *m, fm_err *err) {
  if (!m) return fm_err_set(err, FM_EARG, "NULL model");
  /* GGML's repacked layout is its CPU backend's: a device keeps its copy */
  if (m->repack_done || m->dev) return FM_OK;
  /* once only: after an error every slot still holds a valid tensor
   * (repacked or mapped), so the model stays usable as it is */
  m->repack_done = 1;
  fm_status st = llm_repack(m, err);
  /* a graph built before binds the tensors of then: rebuild it */
  if (m->gctx) ggml_free(m->gctx);
  m->gctx = NULL;
  memset(m->gkey, 0, sizeof m->gkey);
  return st;
}

size_t fm_llm_model_repacked_bytes(const fm_llm_model *m) { return m ? m->repacked_bytes : 0; }

int fm_llm_threads_for(const fm_llm_model *m, const fm_ctl *ctl) {
  if (ctl && ctl->forked) return 1;
  if (m && m->n_threads > 0) return m->n_threads > FM_THREADS_MAX ? FM_THREADS_MAX : m->n_threads;
  return fm_threads(ctl);
}

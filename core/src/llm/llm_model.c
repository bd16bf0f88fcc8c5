/* llm_model.c: loading a model from a parsed GGUF file: the architecture
 * table, hyperparameters from metadata, and weights bound zero-copy (GGML
 * tensors whose data pointers lie in the file's read-only mapping, wrapped
 * by one CPU backend buffer; GGML only reads them), or, on a device
 * (fm_llm_model_new_on), copied once into one buffer of its memory.
 *
 * Every value the graph relies on is checked here (key types, positive
 * counts, tensor shapes and types), so a malformed file is an FM_EFORMAT
 * naming the key or tensor and never reaches one of GGML's asserts (which
 * abort, or in R raise an error through a longjmp). */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_llm_ggml.h"
#include "llm_impl.h"
#ifdef FM_GGML_VULKAN
#include <ggml-vulkan.h>
#include <stdbool.h>
#endif

/* ---- the architecture table ---------------------------------------------- */

#define LLM_ARCH(name) extern const llm_arch llm_arch_##name;
#include "llm_arch_list.h"
#undef LLM_ARCH

static const llm_arch *const arch_table[] = {
#define LLM_ARCH(name) &llm_arch_##name,
#include "llm_arch_list.h"
#undef LLM_ARCH
};

#define N_ARCH (sizeof arch_table / sizeof arch_table[0])

const llm_arch *llm_arch_find(const char *name, size_t len) {
  for (size_t i = 0; i < N_ARCH; i++)
    if (strlen(arch_table[i]->name) == len && memcmp(arch_table[i]->name, name, len) == 0)
      return arch_table[i];
  return NULL;
}

static void arch_names(char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < N_ARCH && used + 1 < n; i++) {
    int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", arch_table[i]->name);
    if (w < 0) break;
    used += (size_t)w;
  }
}

/* ---- metadata ------------------------------------------------------------- */

static void key_of(const llm_model *m, const char *suffix, char *key, size_t n) {
  if (suffix[0] == '=')
    snprintf(key, n, "%s", suffix + 1);
  else
    snprintf(key, n, "%s.%s", m->arch_name, suffix);
}

static const fm_gguf_kv *find_kv(const llm_model *m, const char *suffix, char *key, size_t n) {
  key_of(m, suffix, key, n);
  int64_t i = fm_gguf_find_kv(m->g, key);
  return i < 0 ? NULL : fm_gguf_kv_at(m->g, i);
}

static int is_int_type(fm_gguf_vtype t) {
  return t == FM_GGUF_U8 || t == FM_GGUF_I8 || t == FM_GGUF_U16 || t == FM_GGUF_I16 ||
         t == FM_GGUF_U32 || t == FM_GGUF_I32 || t == FM_GGUF_U64 || t == FM_GGUF_I64;
}

static int is_num_type(fm_gguf_vtype t) {
  return is_int_type(t) || t == FM_GGUF_F32 || t == FM_GGUF_F64;
}

fm_status llm_kv_i64(const llm_model *m, const char *suffix, int required, int64_t def,
                     int64_t *out, fm_err *err) {
  char key[256];
  const fm_gguf_kv *kv = find_kv(m, suffix, key, sizeof key);
  *out = def;
  if (!kv) {
    if (required) return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is missing", key);
    return FM_OK;
  }
  if (kv->type == FM_GGUF_ARRAY || !is_int_type(kv->type) || fm_gguf_get_i64(kv, 0, out) != 0)
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is %s, expected an integer", key,
                      kv->type == FM_GGUF_ARRAY ? "an array" : fm_gguf_vtype_name(kv->type));
  return FM_OK;
}

fm_status llm_kv_f64(const llm_model *m, const char *suffix, int required, double def,
                     double *out, fm_err *err) {
  char key[256];
  const fm_gguf_kv *kv = find_kv(m, suffix, key, sizeof key);
  *out = def;
  if (!kv) {
    if (required) return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is missing", key);
    return FM_OK;
  }
  if (kv->type == FM_GGUF_ARRAY || !is_num_type(kv->type) || fm_gguf_get_f64(kv, 0, out) != 0)
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is %s, expected a number", key,
                      kv->type == FM_GGUF_ARRAY ? "an array" : fm_gguf_vtype_name(kv->type));
  return FM_OK;
}

fm_status llm_kv_bool(const llm_model *m, const char *suffix, int required, int def, int *out,
                      fm_err *err) {
  char key[256];
  const fm_gguf_kv *kv = find_kv(m, suffix, key, sizeof key);
  int64_t v = def;
  *out = def;
  if (!kv) {
    if (required) return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is missing", key);
    return FM_OK;
  }
  if (kv->type != FM_GGUF_BOOL || fm_gguf_get_i64(kv, 0, &v) != 0)
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is %s, expected a bool", key,
                      fm_gguf_vtype_name(kv->type));
  *out = v != 0;
  return FM_OK;
}

fm_status llm_kv_str(const llm_model *m, const char *suffix, const char **s, size_t *len,
                     fm_err *err) {
  char key[256];
  const fm_gguf_kv *kv = find_kv(m, suffix, key, sizeof key);
  *s = NULL;
  *len = 0;
  if (!kv) return FM_OK;
  if (kv->type != FM_GGUF_STRING || fm_gguf_get_str(kv, 0, s, len) != 0)
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is %s, expected a string", key,
                      fm_gguf_vtype_name(kv->type));
  return FM_OK;
}

fm_status llm_kv_layers_i64(const llm_model *m, const char *suffix, int required, int64_t def,
                            int64_t *out, fm_err *err) {
  char key[256];
  const fm_gguf_kv *kv = find_kv(m, suffix, key, sizeof key);
  int64_t n_layer = m->hp.n_layer;
  for (int64_t il = 0; il < n_layer; il++) out[il] = def;
  if (!kv) {
    if (required) return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is missing", key);
    return FM_OK;
  }
  if (kv->type == FM_GGUF_ARRAY) {
    if (!is_int_type(kv->elem_type))
      return fm_err_set(err, FM_EFORMAT, "metadata key '%s' is an array of %s, expected integers",
                        key, fm_gguf_vtype_name(kv->elem_type));
    if (kv->n != (uint64_t)n_layer)
      return fm_err_set(err, FM_EFORMAT,
                        "metadata key '%s' has %llu values, expected one per layer (%lld)", key,
                        (unsigned long long)kv->n, (long long)n_layer);
    for (int64_t il = 0; il < n_layer; il++)
      if (fm_gguf_get_i64(kv, (uint64_t)il, &out[il]) != 0)
        return fm_err_set(err, FM_EFORMAT, "metadata key '%s': value %lld is not an int64", key,
                          (long long)il);
    return FM_OK;
  }
  int64_t v;
  fm_status st = llm_kv_i64(m, suffix, 1, def, &v, err);
  if (st != FM_OK) return st;
  for (int64_t il = 0; il < n_layer; il++) out[il] = v;
  return FM_OK;
}

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

fm_status llm_bind(llm_model *m, struct ggml_tensor **out, int required, int kind, int64_t ne0,
                   int64_t ne1, int64_t ne2, fm_err *err, const char *fmt, ...) {
  char name[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  *out = NULL;
  int64_t idx = fm_gguf_find_tensor(m->g, name);
  if (idx < 0) {
    if (required)
      return fm_err_set(err, FM_EFORMAT, "tensor '%s' is missing (architecture %s)", name,
                        m->arch_name);
    return FM_OK;
  }
  const int64_t want[4] = {ne0, ne1, ne2, 1};
  return llm_bind_at(m, idx, kind, want, out, err);
}

/* ---- common hyperparameters and global tensors ----------------------------- */

#define TRY(x)                                                                   \
  do {                                                                           \
    st = (x);                                                                    \
    if (st != FM_OK) return st;                                                  \
  } while (0)

static fm_status load_common(llm_model *m, fm_err *err) {
  fm_status st;
  llm_hparams *hp = &m->hp;
  int64_t v;
  double d;
  TRY(llm_kv_i64(m, "block_count", 1, 0, &hp->n_layer, err));
  if (hp->n_layer < 1 || hp->n_layer > 4096)
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s.block_count' is %lld, expected 1..4096",
                      m->arch_name, (long long)hp->n_layer);
  TRY(llm_kv_i64(m, "embedding_length", 1, 0, &hp->n_embd, err));
  if (hp->n_embd < 1 || hp->n_embd > (1 << 20))
    return fm_err_set(err, FM_EFORMAT,
                      "metadata key '%s.embedding_length' is %lld, expected 1..1048576",
                      m->arch_name, (long long)hp->n_embd);
  TRY(llm_kv_i64(m, "context_length", 0, 0, &hp->n_ctx_train, err));
  if (hp->n_ctx_train < 0) hp->n_ctx_train = 0;

  int64_t L = hp->n_layer;
  hp->n_head = calloc((size_t)L, sizeof *hp->n_head);
  hp->n_head_kv = calloc((size_t)L, sizeof *hp->n_head_kv);
  hp->n_ff = calloc((size_t)L, sizeof *hp->n_ff);
  hp->swa_layer = calloc((size_t)L, 1);
  m->layers = calloc((size_t)L, sizeof *m->layers);
  if (!hp->n_head || !hp->n_head_kv || !hp->n_ff || !hp->swa_layer || !m->layers)
    return fm_err_set(err, FM_ENOMEM, "out of memory for %lld layers", (long long)L);
  TRY(llm_kv_layers_i64(m, "attention.head_count", 1, 0, hp->n_head, err));
  TRY(llm_kv_layers_i64(m, "attention.head_count_kv", 0, -1, hp->n_head_kv, err));
  TRY(llm_kv_layers_i64(m, "feed_forward_length", 0, 0, hp->n_ff, err));
  int64_t first_head = 0;
  for (int64_t il = 0; il < L; il++) {
    if (hp->n_head_kv[il] < 0) hp->n_head_kv[il] = hp->n_head[il];
    if (hp->n_head[il] < 0 || hp->n_head[il] > 65536 || hp->n_head_kv[il] > hp->n_head[il] ||
        (hp->n_head_kv[il] > 0 && hp->n_head[il] % hp->n_head_kv[il] != 0))
      return fm_err_set(err, FM_EFORMAT,
                        "layer %lld has %lld heads and %lld KV heads (%s.attention.head_count, "
                        "head_count_kv); expected 0 <= kv <= heads with kv dividing heads",
                        (long long)il, (long long)hp->n_head[il], (long long)hp->n_head_kv[il],
                        m->arch_name);
    if (hp->n_ff[il] < 0 || hp->n_ff[il] > (INT64_C(1) << 24))
      return fm_err_set(err, FM_EFORMAT, "layer %lld: feed_forward_length %lld is out of range",
                        (long long)il, (long long)hp->n_ff[il]);
    if (!first_head && hp->n_head[il] > 0) first_head = hp->n_head[il];
  }
  int64_t hd_def = first_head > 0 ? hp->n_embd / first_head : 0;
  TRY(llm_kv_i64(m, "attention.key_length", 0, hd_def, &hp->n_embd_head_k, err));
  TRY(llm_kv_i64(m, "attention.value_length", 0, hp->n_embd_head_k, &hp->n_embd_head_v, err));
  if (first_head > 0 && (hp->n_embd_head_k < 1 || hp->n_embd_head_v < 1 ||
                         hp->n_embd_head_k > 65536 || hp->n_embd_head_v > 65536))
    return fm_err_set(err, FM_EFORMAT, "head sizes %lld (keys) and %lld (values) are out of range",
                      (long long)hp->n_embd_head_k, (long long)hp->n_embd_head_v);
  TRY(llm_kv_i64(m, "rope.dimension_count", 0, hp->n_embd_head_k, &hp->n_rot, err));
  if (hp->n_rot < 0 || hp->n_rot > hp->n_embd_head_k || hp->n_rot % 2 != 0)
    return fm_err_set(err, FM_EFORMAT,
                      "metadata key '%s.rope.dimension_count' is %lld, expected an even number "
                      "<= the head size %lld",
                      m->arch_name, (long long)hp->n_rot, (long long)hp->n_embd_head_k);
  TRY(llm_kv_f64(m, "attention.layer_norm_rms_epsilon", 0, 1e-5, &hp->norm_rms_eps, err));
  TRY(llm_kv_f64(m, "attention.layer_norm_epsilon", 0, 1e-5, &hp->norm_eps, err));
  if (!(hp->norm_rms_eps >= 0 && hp->norm_rms_eps < 1))
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s.attention.layer_norm_rms_epsilon' is %g, "
                      "expected a number in [0, 1)", m->arch_name, hp->norm_rms_eps);
  if (!(hp->norm_eps >= 0 && hp->norm_eps < 1))
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s.attention.layer_norm_epsilon' is %g, "
                      "expected a number in [0, 1)", m->arch_name, hp->norm_eps);
  TRY(llm_kv_f64(m, "rope.freq_base", 0, 10000.0, &d, err));
  if (!(d > 0 && d <= FLT_MAX))
    return fm_err_set(err, FM_EFORMAT, "metadata key '%s.rope.freq_base' is %g, expected a positive "
                      "finite number", m->arch_name, d);
  hp->rope_freq_base = (float)d;
  /* RoPE scaling: none or linear (freq_scale = 1 / factor). */
  const char *s;
  size_t slen;
  TRY(llm_kv_str(m, "rope.scaling.type", &s, &slen, err));
  double factor = 0;
  TRY(llm_kv_f64(m, "rope.scaling.factor", 0, 0.0, &factor, err));
  if (factor == 0) TRY(llm_kv_f64(m, "rope.scale_linear", 0, 0.0, &factor, err));
  if (s && !(slen == 4 && memcmp(s, "none", 4) == 0) && !(slen == 6 && memcmp(s, "linear", 6) == 0))
    return fm_err_set(err, FM_EUNSUPPORTED, "RoPE scaling '%.*s' is not supported (none, linear)",
                      (int)(slen > 32 ? 32 : slen), s);
  if (s && slen == 4) factor = 0;
  hp->rope_freq_scale = factor > 0 ? (float)(1.0 / factor) : 1.0f;
  TRY(llm_kv_i64(m, "rope.scaling.original_context_length", 0, hp->n_ctx_train, &hp->n_ctx_orig,
                 err));
  TRY(llm_kv_bool(m, "attention.causal", 0, 1, &hp->causal, err));
  TRY(llm_kv_i64(m, "pooling_type", 0, -1, &v, err));
  hp->pooling = (v < -1 || v > 4) ? -1 : (int)v;
  TRY(llm_kv_i64(m, "expert_count", 0, 0, &hp->n_expert, err));
  TRY(llm_kv_i64(m, "expert_used_count", 0, 0, &hp->n_expert_used, err));
  if (hp->n_expert < 0 || hp->n_expert > 4096 || hp->n_expert_used < 0 ||
      hp->n_expert_used > hp->n_expert)
    return fm_err_set(err, FM_EFORMAT, "expert_count %lld / expert_used_count %lld are out of range",
                      (long long)hp->n_expert, (long long)hp->n_expert_used);
  TRY(llm_kv_i64(m, "expert_feed_forward_length", 0, 0, &hp->n_ff_exp, err));
  TRY(llm_kv_i64(m, "expert_shared_feed_forward_length", 0, 0, &hp->n_ff_shexp, err));
  TRY(llm_kv_i64(m, "attention.sliding_window", 0, 0, &hp->n_swa, err));
  if (hp->n_swa < 0) hp->n_swa = 0;

  /* Global tensors. */
  TRY(llm_bind(m, &m->tok_embd, 1, LLM_T_ROWS, hp->n_embd, -1, 1, err, "token_embd.weight"));
  hp->n_vocab = m->tok_embd->ne[1];
  if (hp->n_vocab < 1 || hp->n_vocab > INT32_MAX)
    return fm_err_set(err, FM_EFORMAT, "token_embd.weight has %lld rows", (long long)hp->n_vocab);
  TRY(llm_bind(m, &m->output_norm, 0, LLM_T_F32, hp->n_embd, 1, 1, err, "output_norm.weight"));
  TRY(llm_bind(m, &m->output_norm_b, 0, LLM_T_F32, hp->n_embd, 1, 1, err, "output_norm.bias"));
  TRY(llm_bind(m, &m->output, 0, LLM_T_MATMUL, hp->n_embd, hp->n_vocab, 1, err, "output.weight"));
  if (!m->output) {
    if (!type_ok_for(m->tok_embd->type, LLM_T_MATMUL))
      return fm_err_set(err, FM_EFORMAT,
                        "output.weight is absent and token_embd.weight (%s) cannot serve as the "
                        "tied output",
                        ggml_type_name(m->tok_embd->type));
    m->output = m->tok_embd;
    m->info.tied_output = 1;
  }
  return FM_OK;
}

fm_status llm_bind_decoder_layers(llm_model *m, fm_err *err) {
  fm_status st;
  const llm_hparams *hp = &m->hp;
  int64_t E = hp->n_embd, hk = hp->n_embd_head_k, hv = hp->n_embd_head_v;
  for (int64_t il = 0; il < hp->n_layer; il++) {
    llm_layer *l = &m->layers[il];
    int i = (int)il;
    int64_t nh = hp->n_head[il], nkv = hp->n_head_kv[il];
    if (nh < 1 || nkv < 1)
      return fm_err_set(err, FM_EFORMAT, "layer %lld has %lld heads and %lld KV heads, expected >= 1",
                        (long long)il, (long long)nh, (long long)nkv);
    TRY(llm_bind(m, &l->attn_norm, 1, LLM_T_F32, E, 1, 1, err, "blk.%d.attn_norm.weight", i));
    TRY(llm_bind(m, &l->attn_norm_b, 0, LLM_T_F32, E, 1, 1, err, "blk.%d.attn_norm.bias", i));
    TRY(llm_bind(m, &l->wq, 1, LLM_T_MATMUL, E, hk * nh, 1, err, "blk.%d.attn_q.weight", i));
    TRY(llm_bind(m, &l->wk, 1, LLM_T_MATMUL, E, hk * nkv, 1, err, "blk.%d.attn_k.weight", i));
    TRY(llm_bind(m, &l->wv, 1, LLM_T_MATMUL, E, hv * nkv, 1, err, "blk.%d.attn_v.weight", i));
    TRY(llm_bind(m, &l->wo, 1, LLM_T_MATMUL, hv * nh, E, 1, err, "blk.%d.attn_output.weight", i));
    TRY(llm_bind(m, &l->bq, 0, LLM_T_F32, hk * nh, 1, 1, err, "blk.%d.attn_q.bias", i));
    TRY(llm_bind(m, &l->bk, 0, LLM_T_F32, hk * nkv, 1, 1, err, "blk.%d.attn_k.bias", i));
    TRY(llm_bind(m, &l->bv, 0, LLM_T_F32, hv * nkv, 1, 1, err, "blk.%d.attn_v.bias", i));
    TRY(llm_bind(m, &l->bo, 0, LLM_T_F32, E, 1, 1, err, "blk.%d.attn_output.bias", i));
    TRY(llm_bind(m, &l->attn_q_norm, 0, LLM_T_F32, hk, 1, 1, err, "blk.%d.attn_q_norm.weight", i));
    TRY(llm_bind(m, &l->attn_k_norm, 0, LLM_T_F32, hk, 1, 1, err, "blk.%d.attn_k_norm.weight", i));
    TRY(llm_bind(m, &l->attn_post_norm, 0, LLM_T_F32, E, 1, 1, err,
                 "blk.%d.post_attention_norm.weight", i));
    TRY(llm_bind(m, &l->ffn_norm, 1, LLM_T_F32, E, 1, 1, err, "blk.%d.ffn_norm.weight", i));
    TRY(llm_bind(m, &l->ffn_norm_b, 0, LLM_T_F32, E, 1, 1, err, "blk.%d.ffn_norm.bias", i));
    TRY(llm_bind(m, &l->ffn_post_norm, 0, LLM_T_F32, E, 1, 1, err, "blk.%d.post_ffw_norm.weight",
                 i));
    struct ggml_tensor *router = NULL;
    /* expert_count > 0 declares a mixture of experts: its router is required */
    if (hp->n_expert > 0)
      TRY(llm_bind(m, &router, 1, LLM_T_MATMUL, E, hp->n_expert, 1, err,
                   "blk.%d.ffn_gate_inp.weight", i));
    if (router) {
      int64_t ne = hp->n_expert;
      int64_t ff = hp->n_ff_exp > 0 ? hp->n_ff_exp : hp->n_ff[il];
      if (hp->n_expert_used < 1)
        return fm_err_set(err, FM_EFORMAT, "%s.expert_used_count is missing or 0 for a mixture of experts",
                          m->arch_name);
      l->ffn_gate_inp = router;
      TRY(llm_bind(m, &l->ffn_gate_exps, 1, LLM_T_MATMUL, E, ff, ne, err,
                   "blk.%d.ffn_gate_exps.weight", i));
      ff = l->ffn_gate_exps->ne[1];
      if (ff < 1) return fm_err_set(err, FM_EFORMAT, "blk.%d.ffn_gate_exps.weight is empty", i);
      TRY(llm_bind(m, &l->ffn_up_exps, 1, LLM_T_MATMUL, E, ff, ne, err, "blk.%d.ffn_up_exps.weight",
                   i));
      TRY(llm_bind(m, &l->ffn_down_exps, 1, LLM_T_MATMUL, ff, E, ne, err,
                   "blk.%d.ffn_down_exps.weight", i));
      TRY(llm_bind(m, &l->ffn_exp_probs_b, 0, LLM_T_F32, ne, 1, 1, err, "blk.%d.exp_probs_b.bias",
                   i));
      TRY(llm_bind(m, &l->ffn_up_shexp, 0, LLM_T_MATMUL, E, -1, 1, err,
                   "blk.%d.ffn_up_shexp.weight", i));
      if (l->ffn_up_shexp) {
        int64_t fs = l->ffn_up_shexp->ne[1];
        TRY(llm_bind(m, &l->ffn_gate_shexp, 1, LLM_T_MATMUL, E, fs, 1, err,
                     "blk.%d.ffn_gate_shexp.weight", i));
        TRY(llm_bind(m, &l->ffn_down_shexp, 1, LLM_T_MATMUL, fs, E, 1, err,
                     "blk.%d.ffn_down_shexp.weight", i));
        TRY(llm_bind(m, &l->ffn_gate_inp_shexp, 0, LLM_T_MATMUL, E, 1, 1, err,
                     "blk.%d.ffn_gate_inp_shexp.weight", i));
      }
    } else {
      int64_t ff = hp->n_ff[il] > 0 ? hp->n_ff[il] : -1;
      TRY(llm_bind(m, &l->ffn_up, 1, LLM_T_MATMUL, E, ff, 1, err, "blk.%d.ffn_up.weight", i));
      ff = l->ffn_up->ne[1];
      /* Required: every decoder built over these layers has a gated
       * feed-forward (SwiGLU, GeGLU); a file without the gate is refused
       * here, at load, not when the first graph is built. */
      TRY(llm_bind(m, &l->ffn_gate, 1, LLM_T_MATMUL, E, ff, 1, err, "blk.%d.ffn_gate.weight", i));
      TRY(llm_bind(m, &l->ffn_down, 1, LLM_T_MATMUL, ff, E, 1, err, "blk.%d.ffn_down.weight", i));
      TRY(llm_bind(m, &l->ffn_up_b, 0, LLM_T_F32, ff, 1, 1, err, "blk.%d.ffn_up.bias", i));
      TRY(llm_bind(m, &l->ffn_gate_b, 0, LLM_T_F32, ff, 1, 1, err, "blk.%d.ffn_gate.bias", i));
      TRY(llm_bind(m, &l->ffn_down_b, 0, LLM_T_F32, E, 1, 1, err, "blk.%d.ffn_down.bias", i));
    }
  }
  /* The decoder ends with RMSNorm: without its weight the logits would be
   * computed, silently wrong. */
  if (!m->output_norm)
    return fm_err_set(err, FM_EFORMAT, "tensor 'output_norm.weight' is missing (architecture %s)",
                      m->arch_name);
  return FM_OK;
}

fm_status llm_bind_decoder_layers_need(llm_model *m, unsigned need, fm_err *err) {
  const llm_hparams *hp = &m->hp;
  const char *a = m->arch_name;
  if ((need & LLM_NEED_MOE) && (hp->n_expert < 1 || hp->n_expert_used < 1))
    return fm_err_set(err, FM_EFORMAT,
                      "metadata keys '%s.expert_count' (%lld) and '%s.expert_used_count' (%lld) "
                      "must be >= 1",
                      a, (long long)hp->n_expert, a, (long long)hp->n_expert_used);
  fm_status st = llm_bind_decoder_layers(m, err);
  if (st != FM_OK) return st;
  for (int64_t il = 0; il < hp->n_layer; il++) {
    const llm_layer *l = &m->layers[il];
    if ((need & LLM_NEED_QKV_BIAS) && (!l->bq || !l->bk || !l->bv))
      return fm_err_set(err, FM_EFORMAT,
                        "tensor 'blk.%lld.attn_%s.bias' is missing (architecture %s has Q, K and V "
                        "biases)",
                        (long long)il, !l->bq ? "q" : !l->bk ? "k" : "v", a);
    if ((need & LLM_NEED_QK_NORM) && (!l->attn_q_norm || !l->attn_k_norm))
      return fm_err_set(err, FM_EFORMAT,
                        "tensor 'blk.%lld.attn_%s_norm.weight' is missing (architecture %s)",
                        (long long)il, !l->attn_q_norm ? "q" : "k", a);
    if ((need & LLM_NEED_DENSE) && l->ffn_gate_inp)
      return fm_err_set(err, FM_EFORMAT,
                        "layer %lld has experts (ffn_gate_inp); %s is a dense architecture",
                        (long long)il, a);
    if ((need & LLM_NEED_MOE) && !l->ffn_gate_inp)
      return fm_err_set(err, FM_EFORMAT,
                        "tensor 'blk.%lld.ffn_gate_inp.weight' is missing (architecture %s)",
                        (long long)il, a);
  }
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

fm_status fm_llm_model_new(const fm_gguf *g, int n_threads, fm_llm_model **out, fm_err *err) {
  return fm_llm_model_new_on(g, n_threads, FM_LLM_DEVICE_CPU, 0, out, err);
}

/* A model of file g: its architecture's (general.architecture), or
 * program p's when p is not NULL (llm_program.c). */
static fm_status model_new(const fm_gguf *g, const fm_llm_program *p, int n_threads,
                           fm_llm_device device, int index, fm_llm_model **out, fm_err *err) {
  fm_status st = FM_OK;
  llm_model *m = NULL;
  if (out) *out = NULL;
  if (!g || !out) return fm_err_set(err, FM_EARG, "fm_llm_model_new: NULL file or out");
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

  int64_t ia = fm_gguf_find_kv(g, "general.architecture");
  const char *s = NULL;
  size_t len = 0;
  if (p) {
    m->arch = &llm_arch_program;
    s = p->name ? p->name : "program";
    len = strlen(s);
  } else if (ia < 0 || fm_gguf_get_str(fm_gguf_kv_at(g, ia), 0, &s, &len) != 0) {
    st = fm_err_set(err, FM_EFORMAT, "metadata key 'general.architecture' is missing or not a string");
    goto fail;
  }
  if (!p) m->arch = llm_arch_find(s, len);
  if (!m->arch) {
    char known[256];
    arch_names(known, sizeof known);
    st = fm_err_set(err, FM_EUNSUPPORTED, "unknown architecture '%.*s' (general.architecture); known: %s",
                    (int)(len > 64 ? 64 : len), s, known);
    goto fail;
  }
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

  st = p ? llm_program_load(m, p, err) : load_common(m, err);
  if (st != FM_OK) goto fail;
  if (!p) st = m->arch->load(m, err);
  if (st != FM_OK) goto fail;
  if (m->dev) {
    st = upload_weights(m, err);
    if (st != FM_OK) goto fail;
  }

  m->galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(m->backend));
  m->graph_size = p ? 1024 + 8 * p->n_nodes : 1024 + 160 * m->hp.n_layer;
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
  in2->n_ff = hp->n_ff[0];
  if (in2->n_ff == 0 && m->layers[0].ffn_up) in2->n_ff = m->layers[0].ffn_up->ne[1];
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

fm_status fm_llm_model_new_on(const fm_gguf *g, int n_threads, fm_llm_device device, int index,
                              fm_llm_model **out, fm_err *err) {
  return model_new(g, NULL, n_threads, device, index, out, err);
}

fm_status fm_llm_model_new_program(const fm_gguf *g, const fm_llm_program *p, int n_threads,
                                   fm_llm_device device, int index, fm_llm_model **out, fm_err *err) {
  if (!p) {
    if (out) *out = NULL;
    return fm_err_set(err, FM_EARG, "fm_llm_model_new_program: NULL program");
  }
  return model_new(g, p, n_threads, device, index, out, err);
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
  free(m->layers);
  free(m->hp.n_head);
  free(m->hp.n_head_kv);
  free(m->hp.n_ff);
  free(m->hp.swa_layer);
  free(m->arch_data);
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

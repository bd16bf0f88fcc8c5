/* Rgguf_llm_list.h: the functions of the core's GGML subsystem (core/src/llm,
 * compiled once, into Rgguf) that Rgguf's function table (Rgguf_llm.h)
 * carries to other packages, one line each:
 *   FM_LLM_FN(return type, name, (parameters), (arguments))
 *   FM_LLM_VOID(name, (parameters), (arguments))
 * Included several times with those two macros defined (no include guard).
 * The order is the table's layout: append at the end of a group and bump
 * RGGUF_LLM_VERSION. */
/* fm_llm_tensor.h: GGUF tensors as codecs */
FM_LLM_FN(fm_status, fm_llm_tensor_backend,
          (void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err), (ud, p, ctl, err))
FM_LLM_FN(const fm_ext_codec *, fm_llm_tensor_codec, (uint32_t type), (type))
FM_LLM_FN(fm_status, fm_llm_tensor_dequantize,
          (const fm_gguf *g, const fm_gguf_tensor *t, double *out, int64_t n, fm_err *err),
          (g, t, out, n, err))
FM_LLM_FN(int64_t, fm_llm_tensor_n_elements, (const fm_gguf_tensor *t), (t))
FM_LLM_FN(const char *, fm_llm_tensor_vec_dot_type, (uint32_t type), (type))
FM_LLM_FN(fm_status, fm_llm_tensor_view,
          (const fm_gguf *g, const fm_gguf_tensor *t, fm_mat *out, fm_err *err), (g, t, out, err))
/* fm_llm_ggml.h: the linked GGML build */
FM_LLM_FN(int, fm_llm_ggml_feature, (int i, const char **name), (i, name))
FM_LLM_FN(const char *, fm_llm_ggml_isa, (void), ())
FM_LLM_FN(int, fm_llm_ggml_n_features, (void), ())
FM_LLM_FN(const char *, fm_llm_ggml_version, (void), ())
FM_LLM_FN(int, fm_llm_ggml_has_vulkan, (void), ())
FM_LLM_FN(int, fm_llm_ggml_n_devices, (const char *backend), (backend))
FM_LLM_FN(fm_status, fm_llm_ggml_device, (const char *backend, int i, fm_llm_device_info *out),
          (backend, i, out))
/* fm_llm.h: models, KV caches, samplers */
FM_LLM_FN(size_t, fm_llm_cache_bytes, (const fm_llm_model *m, int64_t n_ctx, fm_llm_kv_type kv),
          (m, n_ctx, kv))
FM_LLM_VOID(fm_llm_cache_clear, (fm_llm_cache *c), (c))
FM_LLM_VOID(fm_llm_cache_free, (fm_llm_cache *c), (c))
FM_LLM_FN(int64_t, fm_llm_cache_n_ctx, (const fm_llm_cache *c), (c))
FM_LLM_FN(int64_t, fm_llm_cache_n_past, (const fm_llm_cache *c), (c))
FM_LLM_FN(fm_status, fm_llm_cache_new,
          (const fm_llm_model *m, int64_t n_ctx, fm_llm_kv_type kv, void *mem, size_t n_bytes,
           fm_llm_cache **out, fm_err *err),
          (m, n_ctx, kv, mem, n_bytes, out, err))
FM_LLM_FN(fm_status, fm_llm_cache_rebase,
          (fm_llm_cache *c, void *mem, size_t n_bytes, fm_err *err), (c, mem, n_bytes, err))
FM_LLM_FN(fm_llm_kv_type, fm_llm_cache_type, (const fm_llm_cache *c), (c))
FM_LLM_FN(fm_status, fm_llm_embed,
          (fm_llm_model *m, const int32_t *tokens, int64_t n_tokens, fm_llm_pooling pooling,
           float *out, const fm_ctl *ctl, fm_err *err),
          (m, tokens, n_tokens, pooling, out, ctl, err))
FM_LLM_FN(fm_status, fm_llm_eval,
          (fm_llm_model *m, fm_llm_cache *c, const int32_t *tokens, int64_t n_tokens,
           fm_llm_out out, float *logits, const fm_ctl *ctl, fm_err *err),
          (m, c, tokens, n_tokens, out, logits, ctl, err))
FM_LLM_FN(fm_status, fm_llm_generate,
          (fm_llm_model *m, fm_llm_cache *c, const int32_t *prompt, int64_t n_prompt,
           int64_t n_new, fm_llm_sampler *s, const int32_t *stop, int64_t n_stop,
           int32_t *tokens_out, int64_t *n_out, fm_llm_timings *t, const fm_ctl *ctl, fm_err *err),
          (m, c, prompt, n_prompt, n_new, s, stop, n_stop, tokens_out, n_out, t, ctl, err))
FM_LLM_VOID(fm_llm_model_free, (fm_llm_model *m), (m))
FM_LLM_FN(const fm_llm_info *, fm_llm_model_info, (const fm_llm_model *m), (m))
FM_LLM_FN(fm_status, fm_llm_model_set_threads, (fm_llm_model *m, int n_threads, fm_err *err),
          (m, n_threads, err))
FM_LLM_FN(int, fm_llm_model_threads, (const fm_llm_model *m), (m))
FM_LLM_FN(fm_status, fm_llm_model_set_flash_attn, (fm_llm_model *m, int on, fm_err *err),
          (m, on, err))
FM_LLM_FN(int, fm_llm_model_flash_attn, (const fm_llm_model *m), (m))
FM_LLM_FN(fm_status, fm_llm_model_repack, (fm_llm_model *m, fm_err *err), (m, err))
FM_LLM_FN(size_t, fm_llm_model_repacked_bytes, (const fm_llm_model *m), (m))
FM_LLM_FN(int, fm_llm_ggml_has_repack, (void), ())
FM_LLM_FN(fm_status, fm_llm_model_set_fused_gemm, (fm_llm_model *m, int on, fm_err *err),
          (m, on, err))
FM_LLM_FN(int, fm_llm_model_fused_gemm, (const fm_llm_model *m), (m))
FM_LLM_FN(int, fm_llm_threads_for, (const fm_llm_model *m, const fm_ctl *ctl), (m, ctl))
FM_LLM_VOID(fm_llm_sampler_free, (fm_llm_sampler *s), (s))
FM_LLM_FN(fm_status, fm_llm_sampler_new,
          (const fm_llm_sampling *s, int64_t n_vocab, fm_llm_sampler **out, fm_err *err),
          (s, n_vocab, out, err))
FM_LLM_FN(int64_t, fm_llm_sampler_next, (fm_llm_sampler *s, const float *logits), (s, logits))
FM_LLM_FN(const char *, fm_llm_model_device, (const fm_llm_model *m), (m))
/* fm_llm_program.h: models as bound architecture programs */
FM_LLM_FN(int, fm_llm_op_find, (const char *name), (name))
FM_LLM_FN(fm_status, fm_llm_model_new_program,
          (const fm_gguf *g, const fm_llm_program *p, int n_threads, fm_llm_device device, int index,
           fm_llm_model **out, fm_err *err),
          (g, p, n_threads, device, index, out, err))
FM_LLM_FN(fm_status, fm_llm_output_shape,
          (const fm_llm_model *m, int64_t k, int64_t n, int64_t ne[3], int *pairs, fm_err *err),
          (m, k, n, ne, pairs, err))
FM_LLM_FN(fm_status, fm_llm_run,
          (fm_llm_model *m, const int32_t *tokens, const float *x, const float *mask, int64_t n, int64_t n_want,
           const int64_t *want, float *const *out, const int64_t *cap, int64_t (*ne)[3], const fm_ctl *ctl,
           fm_err *err),
          (m, tokens, x, mask, n, n_want, want, out, cap, ne, ctl, err))

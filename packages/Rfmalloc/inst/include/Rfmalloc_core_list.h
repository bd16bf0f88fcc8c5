/* Rfmalloc_core_list.h: the core functions that Rfmalloc's function table
 * (Rfmalloc_core.h) carries to sibling packages, one line each:
 *   FM_CORE_FN(return type, name, (parameters), (arguments))
 *   FM_CORE_VOID(name, (parameters), (arguments))
 * Included several times with those two macros defined (no include guard).
 * The order is the table's layout: append new functions at the end of
 * their group and bump RFMALLOC_CORE_VERSION. A line whose types disagree
 * with the core header is a compile error on both sides. fm_err_set (a
 * variadic function) travels as fm_err_setv. */
/* fm_base.h: errors, control blocks, checked arithmetic */
FM_CORE_FN(int, fm_ctl_cancelled, (const fm_ctl *ctl), (ctl))
FM_CORE_VOID(fm_ctl_progress, (const fm_ctl *ctl, double done, double total), (ctl, done, total))
FM_CORE_VOID(fm_err_clear, (fm_err *err), (err))
FM_CORE_FN(fm_status, fm_err_setv, (fm_err *err, fm_status code, const char *fmt, va_list ap),
           (err, code, fmt, ap))
FM_CORE_FN(int, fm_mul_ok, (int64_t a, int64_t b, int64_t *out), (a, b, out))
FM_CORE_FN(const char *, fm_status_name, (fm_status code), (code))
FM_CORE_FN(int, fm_threads, (const fm_ctl *ctl), (ctl))
FM_CORE_FN(const char *, fm_dtype_name, (fm_dtype t), (t))
/* fm_cpu.h: the kernels' instruction-set level */
FM_CORE_FN(fm_isa, fm_cpu_isa, (void), ())
/* fm_rng.h: the documented generator */
FM_CORE_VOID(fm_rng_seed, (fm_rng *r, uint64_t seed), (r, seed))
FM_CORE_FN(double, fm_rng_unif, (fm_rng *r), (r))
/* fm_fmt*.h: genotype readers and destinations */
FM_CORE_FN(fm_status, fm_dest_bytes,
           (fm_dest_kind kind, int64_t n_out_samples, int64_t n_out_variants, uint64_t *n_bytes_out,
            fm_err *err),
           (kind, n_out_samples, n_out_variants, n_bytes_out, err))
FM_CORE_FN(fm_status, fm_fmt_bed_open,
           (const char *bed_path, const char *bim_path, const char *fam_path, fm_reader **out,
            fm_err *err),
           (bed_path, bim_path, fam_path, out, err))
FM_CORE_FN(fm_status, fm_fmt_bgen_open, (const char *path, fm_reader **out, fm_err *err),
           (path, out, err))
FM_CORE_FN(fm_status, fm_fmt_dosage_open,
           (const char *dosage_path, const char *fam_path, const char *map_path, int format,
            fm_reader **out, fm_err *err),
           (dosage_path, fam_path, map_path, format, out, err))
FM_CORE_FN(fm_status, fm_fmt_eigenstrat_open,
           (const char *geno_path, const char *snp_path, const char *ind_path, fm_reader **out,
            fm_err *err),
           (geno_path, snp_path, ind_path, out, err))
FM_CORE_FN(fm_status, fm_fmt_gen_open,
           (const char *gen_path, const char *sample_path, fm_reader **out, fm_err *err),
           (gen_path, sample_path, out, err))
FM_CORE_FN(fm_status, fm_fmt_haps_legend_open,
           (const char *haps_path, const char *legend_path, const char *sample_path,
            const char *chrom, fm_reader **out, fm_err *err),
           (haps_path, legend_path, sample_path, chrom, out, err))
FM_CORE_FN(fm_status, fm_fmt_haps_open,
           (const char *haps_path, const char *sample_path, fm_reader **out, fm_err *err),
           (haps_path, sample_path, out, err))
FM_CORE_FN(fm_status, fm_fmt_ped_open,
           (const char *ped_path, const char *map_path, const char *const *counted_alleles,
            int64_t n_counted, fm_reader **out, fm_err *err),
           (ped_path, map_path, counted_alleles, n_counted, out, err))
FM_CORE_FN(fm_status, fm_fmt_pgen_open,
           (const char *pgen_path, const char *pvar_path, const char *psam_path, fm_reader **out,
            fm_err *err),
           (pgen_path, pvar_path, psam_path, out, err))
FM_CORE_FN(fm_status, fm_fmt_sample_sex, (fm_reader *r, const char *sample_path, fm_err *err),
           (r, sample_path, err))
FM_CORE_FN(fm_status, fm_fmt_stream,
           (fm_reader *r, const fm_dest *d, const int64_t *variant_index, int64_t block_records,
            fm_variant_fn on_variant, void *on_variant_ud, const fm_ctl *ctl, fm_err *err),
           (r, d, variant_index, block_records, on_variant, on_variant_ud, ctl, err))
FM_CORE_FN(fm_status, fm_fmt_tped_open,
           (const char *tped_path, const char *tfam_path, const char *const *counted_alleles,
            int64_t n_counted, fm_reader **out, fm_err *err),
           (tped_path, tfam_path, counted_alleles, n_counted, out, err))
FM_CORE_FN(fm_status, fm_fmt_vcf_open,
           (const char *path, const char *region, fm_reader **out, fm_err *err),
           (path, region, out, err))
FM_CORE_VOID(fm_reader_close, (fm_reader *r), (r))
FM_CORE_FN(fm_status, fm_reader_count, (fm_reader *r, int64_t *n_out, const fm_ctl *ctl, fm_err *err),
           (r, n_out, ctl, err))
FM_CORE_FN(fm_status, fm_reader_next, (fm_reader *r, fm_gt_record *rec, fm_err *err),
           (r, rec, err))
FM_CORE_FN(fm_status, fm_reader_set_sex,
           (fm_reader *r, const uint8_t *sex, int64_t n, fm_err *err), (r, sex, n, err))
FM_CORE_FN(fm_status, fm_dest_kind_by_name, (const char *name, fm_dest_kind *out, fm_err *err),
           (name, out, err))
FM_CORE_FN(fm_dtype, fm_dest_dtype, (fm_dest_kind kind), (kind))
FM_CORE_FN(const fm_fmt_format *, fm_fmt_by_name, (const char *name), (name))
FM_CORE_FN(fm_status, fm_fmt_detect,
           (const char *path, const char *name, const fm_fmt_format **out, fm_err *err),
           (path, name, out, err))
FM_CORE_FN(fm_status, fm_fmt_resolve,
           (const fm_fmt_format *f, const char *path, const char *const *given,
            fm_fmt_fileset *out, fm_err *err),
           (f, path, given, out, err))
FM_CORE_FN(fm_status, fm_fmt_open,
           (const fm_fmt_fileset *fs, const fm_fmt_options *opt, fm_reader **out, fm_err *err),
           (fs, opt, out, err))
/* fm_codec_hap1.h: one-bit haplotype rows */
FM_CORE_FN(int64_t, fm_codec_hap1_row_bytes, (int64_t n_haps), (n_haps))
/* fm_gguf.h: GGUF files */
FM_CORE_FN(uint32_t, fm_gguf_alignment, (const fm_gguf *g), (g))
FM_CORE_FN(const uint8_t *, fm_gguf_bytes, (const fm_gguf *g), (g))
FM_CORE_FN(fm_status, fm_gguf_check, (const fm_gguf *g, fm_err *err), (g, err))
FM_CORE_FN(fm_status, fm_gguf_check_addr, (const void *p, fm_err *err), (p, err))
FM_CORE_VOID(fm_gguf_close, (fm_gguf *g), (g))
FM_CORE_FN(uint64_t, fm_gguf_data_offset, (const fm_gguf *g), (g))
FM_CORE_FN(int64_t, fm_gguf_find_kv, (const fm_gguf *g, const char *key), (g, key))
FM_CORE_FN(int64_t, fm_gguf_find_tensor, (const fm_gguf *g, const char *name), (g, name))
FM_CORE_FN(int, fm_gguf_get_f64, (const fm_gguf_kv *kv, uint64_t i, double *out), (kv, i, out))
FM_CORE_FN(int, fm_gguf_get_i64, (const fm_gguf_kv *kv, uint64_t i, int64_t *out), (kv, i, out))
FM_CORE_FN(int, fm_gguf_get_str, (const fm_gguf_kv *kv, uint64_t i, const char **s, size_t *len),
           (kv, i, s, len))
FM_CORE_FN(int, fm_gguf_get_u64, (const fm_gguf_kv *kv, uint64_t i, uint64_t *out), (kv, i, out))
FM_CORE_FN(const fm_gguf_kv *, fm_gguf_kv_at, (const fm_gguf *g, int64_t i), (g, i))
FM_CORE_FN(int64_t, fm_gguf_n_kv, (const fm_gguf *g), (g))
FM_CORE_FN(int64_t, fm_gguf_n_tensors, (const fm_gguf *g), (g))
FM_CORE_FN(fm_status, fm_gguf_open, (const char *path, fm_gguf **out, fm_err *err),
           (path, out, err))
FM_CORE_FN(const char *, fm_gguf_path, (const fm_gguf *g), (g))
FM_CORE_FN(size_t, fm_gguf_size, (const fm_gguf *g), (g))
FM_CORE_FN(const fm_gguf_tensor *, fm_gguf_tensor_at, (const fm_gguf *g, int64_t i), (g, i))
FM_CORE_FN(const uint8_t *, fm_gguf_tensor_data, (const fm_gguf *g, const fm_gguf_tensor *t),
           (g, t))
FM_CORE_FN(int64_t, fm_gguf_type_block, (uint32_t type), (type))
FM_CORE_FN(const char *, fm_gguf_type_name, (uint32_t type), (type))
FM_CORE_FN(int64_t, fm_gguf_type_size, (uint32_t type), (type))
FM_CORE_FN(uint32_t, fm_gguf_version, (const fm_gguf *g), (g))
FM_CORE_FN(const char *, fm_gguf_vtype_name, (fm_gguf_vtype t), (t))
FM_CORE_FN(size_t, fm_gguf_vtype_size, (fm_gguf_vtype t), (t))
FM_CORE_FN(int, fm_gguf_fd, (const fm_gguf *g), (g))
/* fm_pt.h: PyTorch .pt state dicts */
FM_CORE_FN(const uint8_t *, fm_pt_bytes, (const fm_pt *pt), (pt))
FM_CORE_FN(fm_status, fm_pt_check, (const fm_pt *pt, fm_err *err), (pt, err))
FM_CORE_VOID(fm_pt_close, (fm_pt *pt), (pt))
FM_CORE_FN(const char *, fm_pt_dtype_name, (fm_pt_dtype t), (t))
FM_CORE_FN(size_t, fm_pt_dtype_size, (fm_pt_dtype t), (t))
FM_CORE_FN(int64_t, fm_pt_find, (const fm_pt *pt, const char *name), (pt, name))
FM_CORE_FN(int64_t, fm_pt_n_tensors, (const fm_pt *pt), (pt))
FM_CORE_FN(fm_status, fm_pt_open, (const char *path, fm_pt **out, fm_err *err), (path, out, err))
FM_CORE_FN(fm_status, fm_pt_parse,
           (const void *data, size_t size, const char *path, fm_pt **out, fm_err *err),
           (data, size, path, out, err))
FM_CORE_FN(const char *, fm_pt_path, (const fm_pt *pt), (pt))
FM_CORE_FN(size_t, fm_pt_size, (const fm_pt *pt), (pt))
FM_CORE_FN(const fm_pt_tensor *, fm_pt_tensor_at, (const fm_pt *pt, int64_t i), (pt, i))
FM_CORE_FN(const char *, fm_pt_top, (const fm_pt *pt), (pt))
/* fm_tok.h: tokenizers */
FM_CORE_FN(fm_status, fm_tok_detokenize,
           (const fm_tok *t, const int32_t *ids, int64_t n, unsigned flags, uint8_t *buf,
            size_t cap, size_t *n_out, fm_err *err),
           (t, ids, n, flags, buf, cap, n_out, err))
FM_CORE_VOID(fm_tok_free, (fm_tok *t), (t))
FM_CORE_FN(fm_status, fm_tok_from_gguf, (const fm_gguf *g, fm_tok **out, fm_err *err),
           (g, out, err))
FM_CORE_VOID(fm_tok_ids_clear, (fm_tok_ids *v), (v))
FM_CORE_FN(int, fm_tok_is_eog, (const fm_tok *t, int32_t id), (t, id))
FM_CORE_FN(const char *, fm_tok_model_name, (const fm_tok *t), (t))
FM_CORE_FN(int32_t, fm_tok_n_vocab, (const fm_tok *t), (t))
FM_CORE_FN(const char *, fm_tok_pre_name, (const fm_tok *t), (t))
FM_CORE_FN(const fm_tok_special *, fm_tok_specials, (const fm_tok *t), (t))
FM_CORE_FN(fm_status, fm_tok_token_bytes,
           (const fm_tok *t, int32_t id, unsigned flags, const uint8_t **bytes, size_t *n_bytes,
            fm_err *err),
           (t, id, flags, bytes, n_bytes, err))
FM_CORE_FN(float, fm_tok_token_score, (const fm_tok *t, int32_t id), (t, id))
FM_CORE_FN(const char *, fm_tok_token_text, (const fm_tok *t, int32_t id, size_t *n_bytes),
           (t, id, n_bytes))
FM_CORE_FN(fm_tok_type, fm_tok_token_type, (const fm_tok *t, int32_t id), (t, id))
FM_CORE_FN(fm_status, fm_tok_tokenize,
           (const fm_tok *t, const char *text, size_t n_bytes, unsigned flags, fm_tok_ids *out,
            fm_err *err),
           (t, text, n_bytes, flags, out, err))
FM_CORE_FN(int, fm_tok_eog_ids, (const fm_tok *t, const int32_t **ids), (t, ids))
/* fm_stats_glm.h: association tests */
FM_CORE_FN(fm_status, fm_stats_glm_linear,
           (const fm_mat *x, const fm_glm_design *d, const fm_glm_opts *opts,
            const fm_glm_out *out, const fm_ctl *ctl, fm_err *err),
           (x, d, opts, out, ctl, err))
FM_CORE_FN(fm_status, fm_stats_glm_logistic,
           (const fm_mat *x, const fm_glm_design *d, const fm_glm_opts *opts,
            const fm_glm_out *out, const fm_ctl *ctl, fm_err *err),
           (x, d, opts, out, ctl, err))
FM_CORE_FN(const char *, fm_glm_code_name, (int code), (code))
/* fm_stats_ld.h, fm_band.h: LD bands */
FM_CORE_FN(fm_status, fm_stats_ld_count,
           (const fm_mat *x, const fm_affine *aff, const int64_t *win_end,
            const fm_ld_opts *opts, int64_t *count_out, const fm_ctl *ctl, fm_err *err),
           (x, aff, win_end, opts, count_out, ctl, err))
FM_CORE_FN(fm_status, fm_stats_ld_fill,
           (const fm_mat *x, const fm_affine *aff, const int64_t *win_end,
            const fm_ld_opts *opts, const int64_t *colptr, int32_t *rowidx, void *values,
            const fm_ctl *ctl, fm_err *err),
           (x, aff, win_end, opts, colptr, rowidx, values, ctl, err))
FM_CORE_FN(fm_status, fm_band_matmul,
           (const fm_band *b, const double *B, int64_t k, int64_t ldb, double *Y, int64_t ldy,
            uint64_t budget, const fm_ctl *ctl, fm_err *err),
           (b, B, k, ldb, Y, ldy, budget, ctl, err))
/* fm_stats_ldscore.h: LD scores of a band */
FM_CORE_FN(fm_status, fm_stats_ldscore,
           (const fm_band *b, int64_t n_samples, double *scores_out, const fm_ctl *ctl,
            fm_err *err),
           (b, n_samples, scores_out, ctl, err))
/* fm_stats_coloc.h: colocalisation of every pair of signals */
FM_CORE_FN(fm_status, fm_stats_coloc_pairs,
           (const double *l1, int64_t n1, int64_t ld1, const double *l2, int64_t n2, int64_t ld2,
            int64_t m, double p1, double p2, double p12, double *pp_out, double *lh_out,
            int64_t *n_exact_out, const fm_ctl *ctl, fm_err *err),
           (l1, n1, ld1, l2, n2, ld2, m, p1, p2, p12, pp_out, lh_out, n_exact_out, ctl, err))
/* fm_stats_ldpred2.h: LDpred2 polygenic scores */
FM_CORE_FN(fm_status, fm_stats_ldpred2_inf,
           (const fm_band *ld, const fm_ldpred2_data *d, double h2,
            const fm_ldpred2_inf_opts *opts, double *beta_out, fm_ldpred2_inf_info *info,
            const fm_ctl *ctl, fm_err *err),
           (ld, d, h2, opts, beta_out, info, ctl, err))
FM_CORE_FN(fm_status, fm_stats_ldpred2_grid,
           (const fm_band *ld, const fm_ldpred2_data *d, int64_t n_sets, const double *p,
            const double *h2, const int32_t *sparse, const fm_ldpred2_gibbs_opts *opts,
            const fm_ldpred2_grid_out *out, const fm_ctl *ctl, fm_err *err),
           (ld, d, n_sets, p, h2, sparse, opts, out, ctl, err))
FM_CORE_FN(fm_status, fm_stats_ldpred2_auto,
           (const fm_band *ld, const fm_ldpred2_data *d, const fm_ldpred2_auto_opts *aopts,
            const fm_ldpred2_gibbs_opts *opts, const fm_ldpred2_auto_out *out,
            const fm_ctl *ctl, fm_err *err),
           (ld, d, aopts, opts, out, ctl, err))
FM_CORE_FN(double, fm_stats_ldpred2_mean_ld, (const fm_band *ld), (ld))
/* fm_stats_clump.h: clumping, LD pruning, haplotype-frequency r^2 */
FM_CORE_FN(fm_status, fm_stats_clump,
           (const fm_band *b, int values_are_r2, const double *p, const int32_t *chr,
            const double *pos, const fm_clump_opts *opts, int32_t *clump_out,
            int64_t *index_out, int32_t *counts_out, int64_t *n_index_out, const fm_ctl *ctl,
            fm_err *err),
           (b, values_are_r2, p, chr, pos, opts, clump_out, index_out, counts_out, n_index_out,
            ctl, err))
FM_CORE_FN(fm_status, fm_stats_prune,
           (const fm_band *b, int values_are_r2, const double *maf, const int32_t *chr,
            const int64_t *win_end, int64_t step, double r2, const uint8_t *is_constant,
            uint8_t *keep_out, int64_t *n_kept_out, const fm_ctl *ctl, fm_err *err),
           (b, values_are_r2, maf, chr, win_end, step, r2, is_constant, keep_out, n_kept_out,
            ctl, err))
FM_CORE_FN(fm_status, fm_stats_ld_hap_r2,
           (const double *ga, const double *G, int64_t n_samples, int64_t k, int64_t ldg,
            double *r2_out, fm_err *err),
           (ga, G, n_samples, k, ldg, r2_out, err))

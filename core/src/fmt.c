/* fmt.c: the reader interface shared by every genotype format (fm_fmt.h). */
#include "fm/fm_fmt.h"

#include <stdlib.h>

fm_status fm_reader_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  if (!r || !r->ops || !rec) return fm_err_set(err, FM_EARG, "fm_reader_next: reader and record must not be NULL");
  rec->bed2 = NULL;
  return r->ops->next(r, rec, err);
}

void fm_reader_close(fm_reader *r) {
  if (!r) return;
  if (r->sample_ids) {
    for (int64_t i = 0; i < r->info.n_samples; i++) free(r->sample_ids[i]);
    free(r->sample_ids);
    r->sample_ids = NULL;
  }
  if (r->ops && r->ops->close) r->ops->close(r); /* frees impl */
  free(r);
}

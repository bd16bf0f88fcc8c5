# GGUF bytes written by hand in R (generated test data, not fixtures), from
# the format in GGML's docs/gguf.md: little-endian header "GGUF", version,
# u64 tensor and kv counts, the kvs (string key, u32 type, value), the tensor
# infos (string name, u32 n_dims, u64 ne[], u32 type, u64 offset), padding to
# the alignment, then the data section.

le_u32 <- function(v) {
  v <- as.double(v)
  writeBin(as.integer(ifelse(v >= 2^31, v - 2^32, v)), raw(), size = 4, endian = "little")
}
le_u64 <- function(v) {
  v <- as.double(v)
  unlist(lapply(v, function(x) c(le_u32(x %% 2^32), le_u32(x %/% 2^32))))
}
le_str <- function(s) {
  b <- charToRaw(enc2utf8(s))
  c(le_u64(length(b)), b)
}

# One metadata entry: type is a GGUF value type id (4 uint32, 8 string, 9
# array); value is the encoded bytes after the type.
gguf_kv <- function(key, type, value) c(le_str(key), le_u32(type), value)
kv_u32 <- function(key, v) gguf_kv(key, 4, le_u32(v))
kv_str <- function(key, s) gguf_kv(key, 8, le_str(s))
# An array of elem_type with a claimed count n and the given element bytes.
kv_array <- function(key, elem_type, n, bytes) gguf_kv(key, 9, c(le_u32(elem_type), le_u64(n), bytes))

# A tensor: name, ne (GGML order), GGML type id, data bytes.
gguf_tensor_spec <- function(name, ne, type, data) list(name = name, ne = ne, type = type, data = data)

# The bytes of a GGUF v3 file. kvs: list of raw vectors from gguf_kv();
# tensors: list from gguf_tensor_spec(); offsets are computed (each tensor
# aligned) unless `offsets` overrides them.
gguf_bytes <- function(kvs = list(), tensors = list(), alignment = 32, offsets = NULL,
                       magic = charToRaw("GGUF"), version = 3, n_kv = length(kvs)) {
  pad <- function(n) (alignment - n %% alignment) %% alignment
  head <- c(magic, le_u32(version), le_u64(length(tensors)), le_u64(n_kv), unlist(kvs))
  data <- raw(0)
  offs <- numeric(0)
  for (t in tensors) {
    data <- c(data, raw(pad(length(data))))
    offs <- c(offs, length(data))
    data <- c(data, t$data)
  }
  if (!is.null(offsets)) offs <- offsets
  infos <- raw(0)
  for (i in seq_along(tensors)) {
    t <- tensors[[i]]
    infos <- c(infos, le_str(t$name), le_u32(length(t$ne)), le_u64(t$ne), le_u32(t$type),
               le_u64(offs[i]))
  }
  h <- c(head, infos)
  c(h, raw(pad(length(h))), data)
}

write_gguf <- function(bytes, env = parent.frame()) {
  f <- tempfile(fileext = ".gguf")
  writeBin(bytes, f)
  do.call(on.exit, list(substitute(unlink(f), list(f = f)), add = TRUE), envir = env)
  f
}

#!/usr/bin/env node
// llama.cpp oracle for Rllm's tests and bench/llm: a small CLI over
// node-llama-cpp (llama.cpp's prebuilt Node binding, CPU only) that prints
// one JSON object on stdout.
//
//   node oracle.mjs <command> --model M [options]
//
// Commands (token ids are 0-based, exactly as llama.cpp numbers them):
//   info        model facts: n_vocab, n_embd, bos/eos ids, add_bos/add_eos,
//               vocabulary type, train context, architecture.
//   tokenize    (--text S | --text-file F) [--add-special] [--parse-special]
//               -> {"tokens": [...]}. --add-special prepends BOS when the
//               vocab's add_bos flag is set, appends EOS when add_eos is, and
//               appends SEP for WordPiece vocabs unless add_sep_token is false,
//               as llama.cpp's llama_tokenize(add_special = true) does. Vocab-only GGUFs
//               work (the model is loaded with vocabOnly).
//   detokenize  --tokens 1,2,3 [--special]
//               -> {"text": ..., "bytes": [...]} (bytes: the UTF-8 encoding
//               of text; llama.cpp's bytes are exact only when they are valid
//               UTF-8, since the binding returns a JS string).
//   generate    (--prompt S | --tokens ...) --n 64 [--add-special]
//               [--parse-special] [--stop-at-eog]
//               greedy decoding (llama.cpp's greedy sampler alone: no
//               temperature, no penalties, no top-k/p; ties go to the lowest
//               id) -> {"prompt_tokens": [...], "tokens": [...],
//               "first_eog": index or null}.
//   logits      --tokens ... [--all] [--top N]
//               -> {"kind": "log_softmax", "n_vocab": V, "positions": [...],
//               "logits": [[V values] per position], "top5": [...]}.
//               node-llama-cpp 3.21 exposes no raw logits; what it exposes is
//               the full next-token distribution softmax(logits) (computed by
//               its addon in float32 from llama.cpp's raw logits, since the
//               greedy sampler chain leaves them unchanged). We return
//               log(p), i.e. the raw logits minus one constant per position
//               (their log-sum-exp), with about 1e-7 absolute error. A
//               probability that underflows to 0 is printed as null (R: -Inf).
//               Compare after centring (cosine of centred rows) or by
//               differences; argmax and top-k ids are exact. Without --all
//               only the last position is returned. top5 ("topN" with
//               --top N): ids of the last position by decreasing
//               probability, ties to the lowest id.
//   embed       (--tokens ... | --text S) [--pooling mean|cls|last|none]
//               -> {"embedding": [...], "n_embd": d, "pooling": ...}.
//               Without --pooling llama.cpp uses the model's own
//               <arch>.pooling_type (none: the last token's hidden state).
//               The vector is not normalized.
//   bench       (--tokens ... | --prompt-tokens N) --gen-tokens N [--reps R]
//               [--decode-tokens ...]
//               -> {"prefill_tps": ..., "decode_tps": ..., per-rep times}.
//               prefill: the prompt (the ids given, or BOS and N-1 fixed
//               pseudo-random ids) in one batch on an empty sequence;
//               decode: N greedy tokens after the decode prompt (default:
//               the prompt's first token), i.e. the one-token evaluations
//               (decode_steps of them) that follow the prompt's batch.
//               prefill_tps/decode_tps come from llama.cpp's own counters
//               (time inside llama_decode); *_wall_tps from JS wall time,
//               which adds node-llama-cpp's per-call overhead.
//               Median over R repetitions (default 3) after one warm-up.
//
// Common options: --model PATH (required), --threads N (default 2),
// --ctx N (context size; default: enough for the request, at least 512),
// --kv-type f16|f32 (KV cache type, default f16 as llama.cpp),
// --flash-attn on|off|auto (default off), --batch N (default: the context
// size, so a prompt is one batch).
//
// Errors: exit status 1 and {"error": "..."} on stdout.

import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";

// stdout may be a pipe (asynchronous in node): exit only once it is flushed.
function emit(obj, status) {
  process.exitCode = status;
  process.stdout.write(JSON.stringify(obj) + "\n", () => process.exit(status));
}

function fail(msg) {
  emit({ error: String(msg) }, 1);
  throw new OracleExit();
}
class OracleExit extends Error {}

function parseArgs(argv) {
  const out = { _: [] };
  const flags = new Set(["add-special", "parse-special", "special", "all", "stop-at-eog", "vocab-only"]);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) { out[a.slice(2, eq)] = a.slice(eq + 1); continue; }
      const k = a.slice(2);
      if (flags.has(k)) { out[k] = true; continue; }
      if (i + 1 >= argv.length) fail(`option --${k} needs a value`);
      out[k] = argv[++i];
    } else out._.push(a);
  }
  return out;
}

function intOpt(args, k, dflt) {
  if (args[k] == null) return dflt;
  const v = Number(args[k]);
  if (!Number.isInteger(v) || v < 0) fail(`--${k} must be a non-negative integer, got '${args[k]}'`);
  return v;
}

function parseTokens(s, nVocab) {
  if (s == null) return null;
  const str = String(s).trim();
  if (str === "") return [];
  const toks = str.split(/[\s,]+/).map(Number);
  for (const t of toks) {
    if (!Number.isInteger(t) || t < 0 || (nVocab != null && t >= nVocab))
      fail(`token id '${t}' is not an integer in [0, ${nVocab ?? "n_vocab"})`);
  }
  return toks;
}

function readText(args) {
  if (args["text-file"] != null) {
    try { return fs.readFileSync(args["text-file"], "utf8"); }
    catch (e) { fail(`cannot read --text-file '${args["text-file"]}': ${e.message}`); }
  }
  if (args.text != null) return String(args.text);
  return null;
}

let args, cmd, modelPath, threads, llamaMod;
const perfLines = [];
const commands = ["info", "tokenize", "detokenize", "generate", "logits", "embed", "bench"];

async function main() {
  args = parseArgs(process.argv.slice(2));
  cmd = args._[0];
  if (!commands.includes(cmd)) fail(`usage: oracle.mjs <${commands.join("|")}> --model PATH [options]; got '${cmd ?? ""}'`);
  if (args.model == null) fail("--model PATH is required");
  modelPath = path.resolve(String(args.model));
  if (!fs.existsSync(modelPath)) fail(`model file '${modelPath}' does not exist`);
  threads = intOpt(args, "threads", 2) || 2;
  try { llamaMod = await import("node-llama-cpp"); }
  catch (e) { fail(`cannot load node-llama-cpp (run tools/llama-oracle/install.sh): ${e.message}`); }
  const { getLlama, LlamaLogLevel } = llamaMod;

  const llama = await getLlama({
    gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
    progressLogs: false, maxThreads: threads,
    // bench reads llama.cpp's own timings, printed at info level
    logLevel: cmd === "bench" ? LlamaLogLevel.info : LlamaLogLevel.error,
    logger: (level, message) => {
      if (cmd === "bench" && message.includes("llama_perf_context_print")) perfLines.push(message);
      if (process.env.ORACLE_DEBUG) process.stderr.write(message + "\n");
    }
  });
  const vocabOnly = cmd === "tokenize" || cmd === "detokenize" || (cmd === "info" && args["vocab-only"] === true);
  const modelOpts = { modelPath, gpuLayers: 0, vocabOnly, useMmap: true };
  let pooling = null;
  if (cmd === "embed" && args.pooling != null) {
    const codes = { none: 0, mean: 1, cls: 2, last: 3 };
    if (!(args.pooling in codes)) fail(`--pooling must be one of mean, cls, last, none; got '${args.pooling}'`);
    pooling = args.pooling;
    const { readGgufFileInfo } = llamaMod;
    const info = await readGgufFileInfo(modelPath, { readTensorInfo: false });
    const arch = info.metadata?.general?.architecture;
    if (arch == null) fail("the model has no general.architecture");
    modelOpts.metadataOverrides = { [arch]: { pooling_type: codes[pooling] } };
  }
  const model = await llama.loadModel(modelOpts);
  const nVocab = model.tokens ? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length ?? null : null;
  const T = model.tokens;

  const addSpecial = (toks) => {
    const out = toks.slice();
    if (T.shouldPrependBosToken && T.bos != null) out.unshift(T.bos);
    if (T.shouldAppendEosToken && T.eos != null) out.push(T.eos);
    const md = model.fileInfo?.metadata?.tokenizer?.ggml ?? {};
    // WordPiece: llama.cpp wraps the text as [CLS] ... [SEP] (add_sep
    // defaults to true for BERT vocabs, tokenizer.ggml.add_sep_token may say)
    if (model.vocabularyType === "wpm" && md.add_sep_token !== false && T.sep != null) out.push(T.sep);
    return out;
  };
  const tokenizeText = (text) => {
    let toks = Array.from(model._model.tokenize(text, Boolean(args["parse-special"])));
    if (args["add-special"]) toks = addSpecial(toks);
    return toks;
  };
  const needed = (n) => {
    const ctx = intOpt(args, "ctx", 0);
    if (ctx > 0) return ctx;
    let c = 512;
    while (c < n + 8) c *= 2;
    return Math.min(c, Math.max(model.trainContextSize || c, n + 8));
  };
  const ctxOpts = (n) => {
    const size = needed(n);
    const kv = (args["kv-type"] ?? "f16").toUpperCase();
    if (kv !== "F16" && kv !== "F32") fail(`--kv-type must be f16 or f32, got '${args["kv-type"]}'`);
    const fa = args["flash-attn"] ?? "off";
    const faMap = { on: true, off: false, auto: "auto" };
    if (!(fa in faMap)) fail(`--flash-attn must be on, off or auto, got '${fa}'`);
    return {
      contextSize: size, batchSize: intOpt(args, "batch", size) || size, sequences: 1,
      threads, flashAttention: faMap[fa], experimentalKvCacheKeyType: kv,
      experimentalKvCacheValueType: kv, ignoreMemorySafetyChecks: true,
      failedCreationRemedy: false
    };
  };
  const getTokensArg = () => parseTokens(args.tokens, nVocab);

  switch (cmd) {
    case "info": {
      const md = model.fileInfo?.metadata ?? {};
      return {
        architecture: md.general?.architecture ?? null, n_vocab: nVocab,
        n_embd: vocabOnly ? null : model.embeddingVectorSize,
        train_context: model.trainContextSize, vocabulary_type: model.vocabularyType,
        bos: T.bos, eos: T.eos, eot: T.eot, sep: T.sep, nl: T.nl,
        add_bos: T.shouldPrependBosToken, add_eos: T.shouldAppendEosToken,
        tokenizer_model: md.tokenizer?.ggml?.model ?? null, tokenizer_pre: md.tokenizer?.ggml?.pre ?? null
      };
    }
    case "tokenize": {
      const text = readText(args);
      if (text == null) fail("tokenize needs --text S or --text-file F");
      return { tokens: tokenizeText(text) };
    }
    case "detokenize": {
      const toks = getTokensArg();
      if (toks == null) fail("detokenize needs --tokens");
      const text = toks.length === 0 ? "" : model._model.detokenize(Uint32Array.from(toks), Boolean(args.special));
      return { text, bytes: Array.from(Buffer.from(text, "utf8")) };
    }
    case "generate": {
      let prompt = getTokensArg();
      if (prompt == null) {
        const text = args.prompt ?? readText(args);
        if (text == null) fail("generate needs --prompt S or --tokens ...");
        prompt = tokenizeText(String(text));
      }
      if (prompt.length === 0) fail("the prompt has no tokens");
      const n = intOpt(args, "n", 64);
      const ctx = await model.createContext(ctxOpts(prompt.length + n));
      const seq = ctx.getSequence();
      const out = [];
      let firstEog = null;
      const greedy = { generateNext: { token: true, options: { temperature: 0 } } };
      let input = prompt.map((t, i) => (i === prompt.length - 1 ? [t, greedy] : t));
      for (let i = 0; i < n; i++) {
        const res = await seq.controlledEvaluate(input);
        const tok = res[input.length - 1]?.next?.token;
        if (tok == null) fail(`llama.cpp produced no token at step ${i}`);
        out.push(tok);
        if (firstEog == null && model.isEogToken(tok)) {
          firstEog = i;
          if (args["stop-at-eog"]) break;
        }
        input = [[tok, greedy]];
      }
      return { prompt_tokens: prompt, tokens: out, first_eog: firstEog };
    }
    case "logits": {
      const toks = getTokensArg();
      if (toks == null || toks.length === 0) fail("logits needs --tokens with at least one id");
      const topN = intOpt(args, "top", 5) || 5;
      const all = Boolean(args.all);
      const ctx = await model.createContext(ctxOpts(toks.length));
      const seq = ctx.getSequence();
      const want = { generateNext: { probabilities: true, options: { temperature: 0 } } };
      const input = toks.map((t, i) => (all || i === toks.length - 1 ? [t, want] : t));
      const res = await seq.controlledEvaluate(input);
      const V = nVocab;
      const positions = [], rows = [];
      let lastProbs = null;
      for (let i = 0; i < toks.length; i++) {
        const probs = res[i]?.next?.probabilities;
        if (probs == null) continue;
        const row = new Array(V).fill(null);
        const p = new Float64Array(V);
        for (const [id, pr] of probs) {
          p[id] = pr;
          row[id] = pr > 0 ? Number(Math.log(pr).toPrecision(10)) : null;
        }
        positions.push(i);
        rows.push(row);
        lastProbs = p;
      }
      const ids = Array.from({ length: V }, (_, i) => i);
      ids.sort((a, b) => (lastProbs[b] - lastProbs[a]) || (a - b));
      const top = ids.slice(0, topN);
      return { kind: "log_softmax", n_vocab: V, positions, logits: rows, [`top${topN}`]: top, top5: ids.slice(0, 5) };
    }
    case "embed": {
      let toks = getTokensArg();
      if (toks == null) {
        const text = readText(args);
        if (text == null) fail("embed needs --tokens or --text");
        toks = tokenizeText(text);
      }
      if (toks.length === 0) fail("embed needs at least one token");
      const size = needed(toks.length);
      const ectx = await model.createEmbeddingContext({ contextSize: size, batchSize: size, threads, ignoreMemorySafetyChecks: true });
      const emb = await ectx.getEmbeddingFor(toks);
      return { tokens: toks, embedding: Array.from(emb.vector), n_embd: emb.vector.length, pooling: pooling ?? "model" };
    }
    case "bench": {
      // prefill: the prompt evaluated as one batch on an empty sequence;
      // decode: gen-tokens greedy steps of one token after a 1-token prompt.
      // Times: llama.cpp's own counters (llama_perf_context: time inside
      // llama_decode, as llama-bench and llamaR's llama_perf report them),
      // and the wall time seen from JS (adds node-llama-cpp's per-call
      // scheduling, which dominates decode for tiny models).
      const ng = intOpt(args, "gen-tokens", 64);
      const reps = intOpt(args, "reps", 3) || 3;
      const V = nVocab;
      let prompt = getTokensArg();
      if (prompt == null) {
        // a fixed pseudo-random prompt of ordinary token ids after BOS
        const np = intOpt(args, "prompt-tokens", 128);
        prompt = [];
        let s = 12345;
        for (let i = 0; i < np; i++) {
          s = (s * 48271) % 2147483647;
          prompt.push(T.bos != null && i === 0 ? T.bos : 3 + (s % Math.max(1, V - 3)));
        }
      }
      const np = prompt.length;
      if (np === 0) fail("bench needs a prompt of at least one token");
      const opts = ctxOpts(Math.max(np, ng + 1));
      opts.performanceTracking = true;
      const ctx = await model.createContext(opts);
      const seq = ctx.getSequence();
      const perf = async () => {
        perfLines.length = 0;
        await ctx.printTimings(); // prints, then resets the counters
        const txt = perfLines.join("\n");
        const num = (re) => { const m = txt.match(re); return m ? [Number(m[1]), Number(m[2])] : [null, null]; };
        const [pms, pn] = num(/prompt eval time =\s*([\d.]+) ms \/\s*(\d+) tokens/);
        const [ems, en] = num(/\seval time =\s*([\d.]+) ms \/\s*(\d+) runs/);
        return { p_ms: pms, p_n: pn, e_ms: ems, e_n: en };
      };
      const pre = [], dec = [], preLl = [], decLl = [];
      let decN = null;
      const decPrompt = parseTokens(args["decode-tokens"], nVocab) ?? [prompt[0]];
      if (decPrompt.length === 0) fail("--decode-tokens needs at least one id");
      const greedy = { generateNext: { token: true, options: { temperature: 0 } } };
      for (let r = 0; r <= reps; r++) {
        await seq.clearHistory();
        await perf();
        let t0 = performance.now();
        await seq.evaluateWithoutGeneratingNewTokens(prompt);
        const tp = (performance.now() - t0) / 1000;
        const pp = await perf();
        await seq.clearHistory();
        await perf();
        let input = decPrompt.map((t, i) => (i === decPrompt.length - 1 ? [t, greedy] : t));
        t0 = performance.now();
        for (let i = 0; i < ng; i++) {
          const res = await seq.controlledEvaluate(input);
          input = [[res[input.length - 1].next.token, greedy]];
        }
        const td = (performance.now() - t0) / 1000;
        const dp = await perf();
        if (r > 0) {
          pre.push(tp); dec.push(td);
          preLl.push(pp.p_ms != null ? pp.p_ms / 1000 : null);
          // llama.cpp counts a one-token batch as 'eval': the decode steps
          decLl.push(dp.e_ms != null ? dp.e_ms / 1000 : null);
          decN = dp.e_n;
        }
      }
      const med = (a) => {
        if (a.some((x) => x == null)) return null;
        const b = a.slice().sort((x, y) => x - y); const m = b.length >> 1;
        return b.length % 2 ? b[m] : (b[m - 1] + b[m]) / 2;
      };
      const rate = (n, t) => (t == null || t <= 0 ? null : n / t);
      return {
        threads, prompt_tokens: np, gen_tokens: ng, reps,
        decode_steps: decN,
        prefill_tps: rate(np, med(preLl)), decode_tps: rate(decN ?? ng, med(decLl)),
        prefill_wall_tps: rate(np, med(pre)), decode_wall_tps: rate(ng, med(dec)),
        prefill_s: preLl, decode_s: decLl, prefill_wall_s: pre, decode_wall_s: dec,
        llama_cpp: llama.llamaCppRelease?.release ?? null
      };
    }
  }
  return null;
}

try {
  const res = await main();
  emit(res, 0);
} catch (e) {
  if (!(e instanceof OracleExit)) {
    try { fail(e && e.message ? e.message : String(e)); } catch (e2) { /* exiting */ }
  }
}

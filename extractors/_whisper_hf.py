"""Whisper through transformers: batched decoding with word timings.

Decoding runs batched with `generate` (sdpa attention, fp16 on CUDA). Word
timings then come from one teacher-forced decoder pass over the decoded tokens,
aligned to the audio with dynamic time warping over the cross-attention of the
model's alignment heads, as in OpenAI's whisper/timing.py. transformers'
`return_token_timestamps` is not used: it switches the model to eager attention
for good, dates each token where the next one starts, and spreads attention
over the padding after the audio (its softmax runs over the whole 30 s). The
same pass gives the token probabilities, the average log-probability and the
no-speech probability that faster-whisper reports, so both backends are gated
alike.

A window whose text compresses too well (a repetition loop) or whose average
log-probability is too low is decoded again at rising temperatures, as Whisper
does: `best_of` samples at each, the most probable kept. Sampling is seeded per
window (from its audio, extractors/_whisper_decoding.py) in a forked random state,
so the same audio gives the same transcript whatever batch it came in, and the
caller's random state is left alone.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from extractors._whisper_decoding import Fallback, WindowTranscript, Word, compression_ratio

__all__ = ["TransformersWhisper", "dynamic_time_warping", "split_words"]

SAMPLE_RATE = 16000
MEL_HOP = 160  # samples per mel frame
FRAMES_PER_SECOND = 50  # encoder frames per second (two mel frames each)
MEDIAN_FILTER_WIDTH = 7
PREPEND_PUNCTUATION = "\"'“¿([{-"
APPEND_PUNCTUATION = "\"'.。,，!！?？:：”)]}、"
SENTENCE_END = ".。!！?？"
BEST_OF = 5  # samples per fallback temperature, as in Whisper
# Languages whose word timings Whisper gives per character (its tokenizer's split_to_word_tokens).
UNSPACED = frozenset({"zh", "ja", "th", "lo", "my", "yue"})

_DTYPES = {
    "float16": "float16",
    "fp16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float32": "float32",
    "fp32": "float32",
}


@dataclass
class _Decoded:
    prompt: list[int]  # start-of-transcript sequence ending in <|notimestamps|>
    text_tokens: list[int]
    language: str | None
    temperature: float


class TransformersWhisper:
    """A Whisper checkpoint in the transformers layout (the hub's openai/whisper-* repositories)."""

    name = "transformers"

    def __init__(
        self,
        directory: Path,
        fallback: Fallback,
        device: str = "cpu",
        compute_type: str = "float32",
        beam_size: int = 1,
    ):
        import torch
        from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperTokenizer

        if compute_type not in _DTYPES:
            raise ValueError(f"compute_type {compute_type!r} for transformers; expected one of: {', '.join(_DTYPES)}")
        self.torch = torch
        self.device = torch.device(device)
        self.dtype = getattr(torch, _DTYPES[compute_type])
        self.beam_size = beam_size
        self.fallback = fallback
        self.model = (
            WhisperForConditionalGeneration.from_pretrained(directory, dtype=self.dtype, attn_implementation="sdpa")
            .to(self.device)
            .eval()
        )
        self.features = WhisperFeatureExtractor.from_pretrained(directory)
        self.tokenizer = WhisperTokenizer.from_pretrained(directory)

        generation = self.model.generation_config
        self.multilingual = bool(getattr(generation, "is_multilingual", False))
        eos = generation.eos_token_id
        self.eot = int(eos if isinstance(eos, int) else eos[0])
        self.sot = int(generation.decoder_start_token_id)
        self.no_timestamps = int(generation.no_timestamps_token_id)
        self.no_speech = self._token_id("<|nospeech|>") or self._token_id("<|nocaptions|>")
        lang_to_id = getattr(generation, "lang_to_id", None) or {}
        self.language_of_id = {int(i): token.strip("<|>") for token, i in lang_to_id.items()}
        self.id_of_language = {lang: i for i, lang in self.language_of_id.items()}
        self.transcribe_id = (getattr(generation, "task_to_id", None) or {}).get("transcribe")
        heads = getattr(generation, "alignment_heads", None)
        if not heads:  # OpenAI's default: every head of the second half of the decoder
            layers, n_heads = self.model.config.decoder_layers, self.model.config.decoder_attention_heads
            heads = [[layer, head] for layer in range(layers // 2, layers) for head in range(n_heads)]
        self.alignment_heads = [(int(layer), int(head)) for layer, head in heads]

    def _token_id(self, token: str) -> int | None:
        token_id = self.tokenizer.convert_tokens_to_ids(token)
        return token_id if isinstance(token_id, int) and token_id != self.tokenizer.unk_token_id else None

    def supports_language(self, language: str | None) -> bool:
        if language is None:
            return True
        if not self.multilingual:
            return language == "en"
        return language in self.id_of_language

    def detect_languages(self, windows: list[np.ndarray]) -> list[dict[str, float]]:
        """Whisper's probability of every language it knows, for each window (always heard padded to 30 s): the
        language tokens' share of the first token after start-of-transcript (as OpenAI's detect_language)."""
        torch = self.torch
        features = self.features(
            [np.asarray(w, dtype=np.float32) for w in windows], sampling_rate=SAMPLE_RATE, return_tensors="pt"
        ).input_features.to(self.device, self.dtype)
        ids = sorted(self.language_of_id)
        with torch.inference_mode():
            states = self.model.get_encoder()(features).last_hidden_state
            start = torch.full((len(windows), 1), self.sot, device=self.device)
            hidden = self.model.get_decoder()(input_ids=start, encoder_hidden_states=states, use_cache=False)
            logits = self.model.get_output_embeddings()(hidden.last_hidden_state[:, -1]).float()
            probabilities = torch.softmax(logits[:, ids], dim=-1).cpu().numpy()
        return [{self.language_of_id[i]: float(p) for i, p in zip(ids, row)} for row in probabilities]

    # -- decoding ---------------------------------------------------------------------------
    def decode_in_languages(self, window: np.ndarray, languages: list[str], max_tokens: int) -> list[WindowTranscript]:
        """The window decoded by beam search in each language (its words aligned too, which the check ignores)."""
        return [self.transcribe([window], language, [0], False, max_tokens)[0] for language in languages]

    def transcribe(
        self,
        windows: list[np.ndarray],
        language: str | None,
        seeds: list[int],
        fallback: bool = True,
        max_tokens: int | None = None,
    ) -> list[WindowTranscript]:
        """Transcribe one batch of windows of at most 30 s of 16 kHz audio (beam search only: not `fallback`; at
        most `max_tokens` tokens a window)."""
        torch = self.torch
        features = self.features(
            [np.asarray(w, dtype=np.float32) for w in windows], sampling_rate=SAMPLE_RATE, return_tensors="pt"
        ).input_features.to(self.device, self.dtype)
        encoder_frames = [min(len(w) // MEL_HOP, features.shape[-1]) // 2 for w in windows]
        with torch.inference_mode():
            encoder_outputs = self.model.get_encoder()(features)
            languages = self._languages(encoder_outputs, len(windows), language)
            states = encoder_outputs.last_hidden_state
            results = self._decode_at(0.0, states, languages, encoder_frames, max_tokens)
            for k, result in enumerate(results):
                if fallback and self.fallback.needs_retry(result):
                    results[k] = self._fall_back(result, states[k : k + 1], languages[k], encoder_frames[k], seeds[k])
            return results

    def _decode_at(
        self,
        temperature: float,
        states,
        languages: list[str | None],
        encoder_frames: list[int],
        max_tokens: int | None = None,
    ) -> list[WindowTranscript]:
        """One transcript per row of encoder states: beam search at 0, plain sampling above."""
        from transformers.modeling_outputs import BaseModelOutput

        kwargs: dict = {"return_timestamps": False}
        if max_tokens is not None:  # within what the decoder holds beside the longest start of a transcript
            room = self.model.config.max_target_positions - max(len(self._prompt(lang)) for lang in languages) - 1
            kwargs["max_new_tokens"] = min(max_tokens, room)
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_k=0, num_beams=1)
        else:
            kwargs.update(num_beams=self.beam_size)
        if self.multilingual:
            kwargs.update(task="transcribe", language=languages)
        sequences = self.model.generate(encoder_outputs=BaseModelOutput(last_hidden_state=states), **kwargs)
        decoded = [
            _Decoded(self._prompt(lang), self._text_tokens(seq.tolist()), lang, temperature)
            for seq, lang in zip(sequences, languages)
        ]
        return [self._align(d, states[k : k + 1], encoder_frames[k]) for k, d in enumerate(decoded)]

    def _fall_back(
        self, first: WindowTranscript, states, language: str | None, frames: int, seed: int
    ) -> WindowTranscript:
        """Whisper's fallback for one window: the first temperature whose best sample passes; when none
        does, the most probable attempt that does not loop (Fallback.best_of_failed)."""
        torch = self.torch
        attempts = [first]
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            for temperature in self.fallback.sampled:
                samples = self._decode_at(
                    temperature, states.expand(BEST_OF, -1, -1), [language] * BEST_OF, [frames] * BEST_OF
                )
                best = max(samples, key=lambda t: t.avg_logprob)
                best.tried_up_to = temperature
                if not self.fallback.needs_retry(best):
                    return best
                attempts.append(best)
        return self.fallback.best_of_failed(attempts)

    def _languages(self, encoder_outputs, batch: int, language: str | None) -> list[str | None]:
        if not self.multilingual:
            return ["en"] * batch
        if language is not None:
            return [language] * batch
        ids = self.model.detect_language(encoder_outputs=encoder_outputs)
        return [self.language_of_id.get(int(i)) for i in ids]

    def _prompt(self, language: str | None) -> list[int]:
        if not self.multilingual:
            return [self.sot, self.no_timestamps]
        prompt = [self.sot]
        if language is not None:
            prompt.append(self.id_of_language[language])
        if self.transcribe_id is not None:
            prompt.append(int(self.transcribe_id))
        return prompt + [self.no_timestamps]

    def _text_tokens(self, sequence: list[int]) -> list[int]:
        """The text tokens of a generated sequence: after any prompt, up to the first special token."""
        start = 0
        while start < len(sequence) and sequence[start] >= self.eot:
            start += 1
        end = start
        while end < len(sequence) and sequence[end] < self.eot:
            end += 1
        return sequence[start:end]

    # -- alignment --------------------------------------------------------------------------
    def _align(self, d: _Decoded, encoder_states, encoder_frames: int) -> WindowTranscript:
        """One window's transcript with its words timed, from a decoder pass over its tokens alone.

        One window at a time: in a batch, the decoder's products are summed in an order that depends on the
        batch's size, and on CUDA that moved a word's time by a frame (batch_invariance, scripts/bench_gpu.py).
        """
        torch = self.torch
        row = d.prompt + d.text_tokens + [self.eot]
        input_ids = torch.tensor([row], device=self.device)
        decoder = self.model.get_decoder()
        queries: dict[int, object] = {}

        def keep_query(layer: int):
            def hook(_module, args, kwargs):
                queries[layer] = args[0] if args else kwargs["hidden_states"]

            return hook

        layers = sorted({layer for layer, _ in self.alignment_heads})
        handles = [
            decoder.layers[layer].encoder_attn.register_forward_pre_hook(keep_query(layer), with_kwargs=True)
            for layer in layers
        ]
        try:
            hidden = decoder(input_ids=input_ids, encoder_hidden_states=encoder_states, use_cache=False)
        finally:
            for handle in handles:
                handle.remove()
        logits = self.model.get_output_embeddings()(hidden.last_hidden_state).float()
        weights = self._alignment_logits(queries, encoder_states)  # (1, heads, tokens, frames)
        return self._window_result(d, logits[0], weights[0, :, :, :encoder_frames])

    def _alignment_logits(self, queries: dict, encoder_states):
        """Pre-softmax cross-attention (q·k) of the alignment heads, computed from the captured queries.

        Reading q·k directly (rather than attention weights) works with any attention
        implementation and lets the softmax run over the window's audio frames only.
        """
        torch = self.torch
        decoder = self.model.get_decoder()
        per_head = []
        for layer, head in self.alignment_heads:
            attn = decoder.layers[layer].encoder_attn
            hidden = queries[layer]
            batch, tokens, _ = hidden.shape
            q = (attn.q_proj(hidden) * attn.scaling).view(batch, tokens, attn.num_heads, attn.head_dim)[:, :, head]
            k = attn.k_proj(encoder_states).view(batch, -1, attn.num_heads, attn.head_dim)[:, :, head]
            per_head.append(torch.einsum("btd,bfd->btf", q.float(), k.float()))
        return torch.stack(per_head, dim=1)

    def _window_result(self, d: _Decoded, logits, qk) -> WindowTranscript:
        torch = self.torch
        log_probs = torch.log_softmax(logits, dim=-1)
        first = len(d.prompt) - 1  # the position that predicts the first text token
        targets = d.text_tokens + [self.eot]
        positions = torch.arange(first, first + len(targets), device=logits.device)
        target_ids = torch.tensor(targets, device=logits.device)
        avg_logprob = float(log_probs[positions, target_ids].mean())
        no_speech_prob = float(torch.softmax(logits[0], dim=-1)[self.no_speech]) if self.no_speech is not None else 0.0
        text = self._decode(d.text_tokens).strip()
        decoding = (compression_ratio(text), d.temperature, len(d.text_tokens))
        if not d.text_tokens or qk.shape[-1] < 2:
            return WindowTranscript(text, [], d.language, no_speech_prob, avg_logprob, *decoding)
        # Probabilities among text tokens only, as OpenAI and faster-whisper report them.
        text_probs = torch.softmax(logits[positions[:-1], : self.eot], dim=-1)
        token_probs = text_probs[torch.arange(len(d.text_tokens)), target_ids[:-1]].cpu().numpy()

        weights = torch.softmax(qk, dim=-1)
        std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)
        weights = ((weights - mean) / std.clamp_min(1e-8)).cpu().numpy()
        weights = _median_filter(weights, MEDIAN_FILTER_WIDTH)
        matrix = weights.mean(axis=0)[first:-1]  # rows: <|notimestamps|> and each text token
        text_indices, time_indices = dynamic_time_warping(-matrix)
        jumps = np.pad(np.diff(text_indices), (1, 0), constant_values=1).astype(bool)
        jump_times = time_indices[jumps] / FRAMES_PER_SECOND

        words, word_tokens = split_words(self._decode, d.text_tokens, d.language)
        bounds = np.pad(np.cumsum([len(t) for t in word_tokens]), (1, 0))
        timed = [
            Word(
                word=w,
                start=float(jump_times[a]),
                end=float(jump_times[b]),
                probability=float(np.mean(token_probs[a:b])),
            )
            for w, a, b in zip(words, bounds[:-1], bounds[1:])
        ]
        timed = _clamp_long_words([w for w in _merge_punctuation(timed) if w.word.strip()])
        return WindowTranscript(text, timed, d.language, no_speech_prob, avg_logprob, *decoding)

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)


# -- word building (pure functions) --------------------------------------------------------------
def split_words(decode, tokens: list[int], language: str | None = None) -> tuple[list[str], list[list[int]]]:
    """Group text tokens into words: a word starts at a token with a leading space or at punctuation; in the
    languages Whisper writes without spaces (UNSPACED), every whole character (or run of characters one token
    holds) is a word of its own, as Whisper's and faster-whisper's tokenizers split them.

    Tokens are first grouped into whole unicode characters (a character can span
    several byte-level tokens), as whisper's tokenizer does.
    """
    pieces: list[str] = []
    piece_tokens: list[list[int]] = []
    current: list[int] = []
    for token in tokens:
        current.append(token)
        text = decode(current)
        if "\ufffd" not in text:  # the bytes so far form whole characters
            pieces.append(text)
            piece_tokens.append(current)
            current = []
    if current:
        pieces.append(decode(current))
        piece_tokens.append(current)

    if language in UNSPACED:
        return pieces, piece_tokens
    words: list[str] = []
    word_tokens: list[list[int]] = []
    for piece, toks in zip(pieces, piece_tokens):
        starts_word = piece.startswith(" ") or piece.strip() in string.punctuation or not words
        if starts_word:
            words.append(piece)
            word_tokens.append(list(toks))
        else:
            words[-1] += piece
            word_tokens[-1].extend(toks)
    return words, word_tokens


def _merge_punctuation(words: list[Word]) -> list[Word]:
    """Attach opening punctuation to the next word and closing punctuation to the previous one."""
    merged: list[Word] = []
    pending = ""
    for w in words:
        bare = w.word.strip()
        opening = bool(bare) and (w.word.startswith(" ") or not merged) and all(c in PREPEND_PUNCTUATION for c in bare)
        closing = bool(bare) and not opening and all(c in APPEND_PUNCTUATION for c in bare)
        if closing and merged and not pending:
            last = merged[-1]
            merged[-1] = Word(last.word + bare, last.start, last.end, last.probability)
        elif opening:
            pending += bare
        else:
            if pending:
                w = Word(" " + pending + w.word.lstrip(), w.start, w.end, w.probability)
                pending = ""
            merged.append(w)
    return merged


def _clamp_long_words(words: list[Word]) -> list[Word]:
    """Shorten implausibly long words next to sentence ends and at the start (OpenAI's heuristics).

    DTW stretches a word over the silence before it; the first word and words
    after a full stop are the ones this happens to. Words must be non-empty.
    """
    durations = np.array([w.end - w.start for w in words])
    durations = durations[durations > 0]
    if len(durations) == 0:
        return words
    max_duration = 2 * min(0.7, float(np.median(durations)))
    out = list(words)
    for i in range(len(out)):
        w = out[i]
        if w.end - w.start <= max_duration:
            continue
        if w.word.strip() and w.word.strip()[-1] in SENTENCE_END:
            out[i] = Word(w.word, w.start, w.start + max_duration, w.probability)
        elif i == 0 or out[i - 1].word.strip()[-1:] in SENTENCE_END:
            out[i] = Word(w.word, w.end - max_duration, w.end, w.probability)
    return out


def _median_filter(x: np.ndarray, width: int) -> np.ndarray:
    """Median over the last axis, edges reflected without repeating the edge sample (like torch)."""
    if x.shape[-1] <= width // 2:
        return x
    from scipy.ndimage import median_filter

    size = (1,) * (x.ndim - 1) + (width,)
    return median_filter(x, size=size, mode="mirror")


def dynamic_time_warping(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Monotonic path of least total cost through a (tokens, frames) matrix.

    Returns the token and frame index of each step. Same recurrence and tie
    breaking as OpenAI's dtw_cpu, filled one anti-diagonal at a time so the inner
    loop runs in numpy.
    """
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    trace = np.full((n + 1, m + 1), -1, dtype=np.int8)
    acc[0, 0] = 0.0
    for diagonal in range(2, n + m + 1):
        i = np.arange(max(1, diagonal - m), min(n, diagonal - 1) + 1)
        j = diagonal - i
        c0, c1, c2 = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
        step = np.where((c0 < c1) & (c0 < c2), 0, np.where((c1 < c0) & (c1 < c2), 1, 2))
        acc[i, j] = cost[i - 1, j - 1] + np.choose(step, [c0, c1, c2])
        trace[i, j] = step
    trace[0, :] = 2
    trace[:, 0] = 1
    i, j = n, m
    path = []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        step = trace[i, j]
        if step == 0:
            i, j = i - 1, j - 1
        elif step == 1:
            i -= 1
        else:
            j -= 1
    path_array = np.array(path[::-1])
    return path_array[:, 0], path_array[:, 1]

// Sampling at llama-server's cost.
//
// llama_sampler_sample allocates and fills an n_vocab array of candidates
// for every token (0.6 MB on a 49k vocabulary), and the chain's first
// samplers then walk all of it: the logit bias, the repetition penalties
// (a hash lookup per vocabulary entry) and top-k (a partial sort). This
// front end does the same arithmetic in the same order without the
// full-vocabulary passes: logit bias and penalties are applied to the few
// tokens they name (in a reused copy of the logits), top-k is one pass
// with a k-element heap, and only the k survivors (already sorted, as
// llama.cpp's top-k leaves them) go through the rest of llama.cpp's chain
// (typical → top-p → min-p → temperature → the seeded draw). Greedy
// decoding is an argmax. Grammars and Mirostat keep llama.cpp's whole
// chain (rest), fed from a reused candidate array. Greedy decoding under a
// grammar first asks the grammar about the unconstrained argmax alone,
// as llama-server's sampler does, and runs the chain (the grammar over
// the whole vocabulary) only when the grammar rejects it: the same
// token, since the grammar only removes candidates (see
// tp_sampler_sample).

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampling.h"

struct tp_sampler {
	int32_t n_vocab;
	struct llama_sampler *rest; // NULL: greedy
	int greedy_grammar;         // rest is grammar → logit bias → greedy
	int32_t top_k;
	float *work;                // logits with bias and penalties applied
	llama_token_data *cand;     // candidates for rest

	int32_t n_bias;
	int32_t *bias_tok;
	float *bias_val;

	// Penalties over the last last_n accepted tokens: a ring of them,
	// each token's count, and the set of tokens with a count (uniq, with
	// where[t] its index: a sparse set, so nothing needs clearing).
	int32_t last_n;
	float repeat, freq, present;
	int32_t *ring;
	int32_t ring_len, ring_head;
	int32_t *count;
	int32_t *uniq, *where;
	int32_t n_uniq;
};

struct tp_sampler *tp_sampler_new(int32_t n_vocab, struct llama_sampler *rest, int32_t top_k,
                                  int32_t last_n, float repeat, float freq, float present,
                                  int32_t n_bias, const int32_t *bias_tok, const float *bias_val,
                                  int32_t greedy_grammar) {
	struct tp_sampler *s = calloc(1, sizeof *s);
	if (!s) {
		return NULL;
	}
	s->n_vocab = n_vocab;
	s->rest = rest;
	s->greedy_grammar = rest && greedy_grammar && llama_sampler_chain_n(rest) > 0;
	s->top_k = top_k;
	s->work = malloc((size_t)n_vocab * sizeof(float));
	s->cand = malloc((size_t)n_vocab * sizeof(llama_token_data));
	int ok = s->work && s->cand;
	if (n_bias > 0) {
		s->n_bias = n_bias;
		s->bias_tok = malloc((size_t)n_bias * sizeof(int32_t));
		s->bias_val = malloc((size_t)n_bias * sizeof(float));
		ok = ok && s->bias_tok && s->bias_val;
		if (ok) {
			memcpy(s->bias_tok, bias_tok, (size_t)n_bias * sizeof(int32_t));
			memcpy(s->bias_val, bias_val, (size_t)n_bias * sizeof(float));
		}
	}
	if (last_n > 0 && !(repeat == 1.0f && freq == 0.0f && present == 0.0f)) {
		s->last_n = last_n;
		s->repeat = repeat;
		s->freq = freq;
		s->present = present;
		s->ring = malloc((size_t)last_n * sizeof(int32_t));
		s->count = calloc((size_t)n_vocab, sizeof(int32_t));
		s->uniq = malloc((size_t)n_vocab * sizeof(int32_t));
		s->where = malloc((size_t)n_vocab * sizeof(int32_t));
		ok = ok && s->ring && s->count && s->uniq && s->where;
	}
	if (!ok) {
		s->rest = NULL; // the caller still owns it
		tp_sampler_free(s);
		return NULL;
	}
	return s;
}

void tp_sampler_free(struct tp_sampler *s) {
	if (!s) {
		return;
	}
	if (s->rest) {
		llama_sampler_free(s->rest);
	}
	free(s->work);
	free(s->cand);
	free(s->bias_tok);
	free(s->bias_val);
	free(s->ring);
	free(s->count);
	free(s->uniq);
	free(s->where);
	free(s);
}

void tp_sampler_accept(struct tp_sampler *s, int32_t t) {
	if (s->rest) {
		llama_sampler_accept(s->rest, t);
	}
	if (s->last_n == 0 || t < 0 || t >= s->n_vocab) {
		return;
	}
	if (s->ring_len == s->last_n) {
		int32_t old = s->ring[s->ring_head];
		if (--s->count[old] == 0) {
			int32_t i = s->where[old], last = s->uniq[--s->n_uniq];
			s->uniq[i] = last;
			s->where[last] = i;
		}
	} else {
		s->ring_len++;
	}
	s->ring[s->ring_head] = t;
	s->ring_head = (s->ring_head + 1) % s->last_n;
	if (s->count[t]++ == 0) {
		s->where[t] = s->n_uniq;
		s->uniq[s->n_uniq++] = t;
	}
}

void tp_sampler_reset(struct tp_sampler *s) {
	if (s->rest) {
		llama_sampler_reset(s->rest);
	}
	for (int32_t i = 0; i < s->n_uniq; i++) {
		s->count[s->uniq[i]] = 0;
	}
	s->n_uniq = 0;
	s->ring_len = 0;
	s->ring_head = 0;
}

// topk puts the k largest of l[0..n) into out, largest first (k < n).
static void topk(const float *l, int32_t n, int32_t k, llama_token_data *out) {
	// A min-heap of the best k so far: out[0] is the smallest of them.
	for (int32_t i = 0; i < n; i++) {
		float v = l[i];
		int32_t j;
		if (i < k) {
			j = i; // sift up
			while (j > 0) {
				int32_t p = (j - 1) / 2;
				if (out[p].logit <= v) {
					break;
				}
				out[j] = out[p];
				j = p;
			}
		} else {
			if (v <= out[0].logit) {
				continue;
			}
			j = 0; // replace the root, sift down
			for (;;) {
				int32_t c = 2 * j + 1;
				if (c >= k) {
					break;
				}
				if (c + 1 < k && out[c + 1].logit < out[c].logit) {
					c++;
				}
				if (out[c].logit >= v) {
					break;
				}
				out[j] = out[c];
				j = c;
			}
		}
		out[j].id = i;
		out[j].logit = v;
		out[j].p = 0.0f;
	}
	// Heap-sort: pop the smallest to the end, leaving the array largest
	// first.
	for (int32_t end = k - 1; end > 0; end--) {
		llama_token_data min = out[0], x = out[end];
		out[end] = min;
		int32_t j = 0;
		for (;;) {
			int32_t c = 2 * j + 1;
			if (c >= end) {
				break;
			}
			if (c + 1 < end && out[c + 1].logit < out[c].logit) {
				c++;
			}
			if (out[c].logit >= x.logit) {
				break;
			}
			out[j] = out[c];
			j = c;
		}
		out[j] = x;
	}
}

static int by_logit_desc(const void *a, const void *b) {
	float x = ((const llama_token_data *)a)->logit, y = ((const llama_token_data *)b)->logit;
	return (x < y) - (x > y);
}

// argmax is the first of the largest logits, as llama.cpp's greedy
// sampler picks: the maximum in 16 independent lanes (no dependency
// chain, and a loop the compiler vectorizes), then its index.
static int32_t argmax(const float *logits, int32_t n) {
	float lane[16], best = logits[0];
	for (int j = 0; j < 16; j++) {
		lane[j] = best;
	}
	int32_t i = 0;
	for (; i + 16 <= n; i += 16) {
		for (int j = 0; j < 16; j++) {
			lane[j] = logits[i + j] > lane[j] ? logits[i + j] : lane[j];
		}
	}
	for (; i < n; i++) {
		best = logits[i] > best ? logits[i] : best;
	}
	for (int j = 0; j < 16; j++) {
		best = lane[j] > best ? lane[j] : best;
	}
	int32_t tok = 0;
	while (tok < n - 1 && !(logits[tok] == best)) {
		tok++;
	}
	return tok;
}

int32_t tp_sampler_sample(struct tp_sampler *s, struct llama_context *ctx, int32_t idx) {
	const float *logits = llama_get_logits_ith(ctx, idx);
	if (!logits) {
		return -1;
	}
	const float *raw = logits;
	const int32_t n = s->n_vocab;
	if (s->n_bias > 0 || s->n_uniq > 0) {
		float *w = s->work;
		memcpy(w, logits, (size_t)n * sizeof(float));
		for (int32_t i = 0; i < s->n_bias; i++) {
			w[s->bias_tok[i]] += s->bias_val[i];
		}
		// llama.cpp's penalties: a positive logit is divided by the
		// repeat penalty, a negative one multiplied (so both lose), then
		// the frequency and presence penalties are subtracted.
		for (int32_t i = 0; i < s->n_uniq; i++) {
			int32_t t = s->uniq[i], c = s->count[t];
			float v = w[t];
			v = v <= 0 ? v * s->repeat : v / s->repeat;
			w[t] = v - (float)c * s->freq - (c > 0 ? s->present : 0.0f);
		}
		logits = w;
	}
	int32_t tok;
	if (!s->rest) {
		tok = argmax(logits, n);
	} else {
		if (s->greedy_grammar) {
			// The chain's greedy pick is the first largest logit the
			// grammar leaves. The grammar only sets logits to -inf, so
			// when it accepts the first largest of all (bias applied),
			// that is the pick: one candidate checked, not the whole
			// vocabulary. Else the chain runs on the raw logits (it
			// applies the bias itself).
			tok = argmax(logits, n);
			llama_token_data one = {tok, logits[tok], 0.0f};
			llama_token_data_array arr = {&one, 1, -1, false};
			llama_sampler_apply(llama_sampler_chain_get(s->rest, 0), &arr);
			if (!(isinf(one.logit) && one.logit < 0)) {
				tp_sampler_accept(s, tok);
				return tok;
			}
			logits = raw;
		}
		llama_token_data_array cur = {s->cand, (size_t)n, -1, false};
		if (s->top_k > 0 && s->top_k < n) {
			topk(logits, n, s->top_k, s->cand);
			cur.size = (size_t)s->top_k;
			cur.sorted = true;
		} else {
			for (int32_t i = 0; i < n; i++) {
				s->cand[i].id = i;
				s->cand[i].logit = logits[i];
				s->cand[i].p = 0.0f;
			}
			if (s->top_k >= n) { // llama.cpp's top-k sorts what it keeps
				qsort(s->cand, (size_t)n, sizeof *s->cand, by_logit_desc);
				cur.sorted = true;
			}
		}
		llama_sampler_apply(s->rest, &cur);
		if (cur.selected < 0 || cur.selected >= (int64_t)cur.size) {
			return -1;
		}
		tok = cur.data[cur.selected].id;
	}
	tp_sampler_accept(s, tok);
	return tok;
}

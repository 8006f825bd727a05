// Tadpole's sampling front end over llama.cpp's sampler chain (see
// sampling.c and sampler.go).
#pragma once

#include <stdint.h>
#include "llama.h"

struct tp_sampler;

// tp_sampler_new takes ownership of rest (may be NULL: greedy). top_k <= 0
// turns top-k off; last_n 0 turns the penalties off. bias_tok/bias_val are
// copied. greedy_grammar: rest is llama.cpp's chain grammar → logit bias
// → greedy, and bias_tok/bias_val are that chain's bias too (see
// tp_sampler_sample). It returns NULL when memory runs out.
struct tp_sampler *tp_sampler_new(int32_t n_vocab, struct llama_sampler *rest, int32_t top_k,
                                  int32_t last_n, float repeat, float freq, float present,
                                  int32_t n_bias, const int32_t *bias_tok, const float *bias_val,
                                  int32_t greedy_grammar);
// tp_sampler_sample picks a token from output idx of ctx's last batch and
// accepts it; -1 when the context has no such output.
int32_t tp_sampler_sample(struct tp_sampler *s, struct llama_context *ctx, int32_t idx);
void tp_sampler_accept(struct tp_sampler *s, int32_t token);
void tp_sampler_reset(struct tp_sampler *s);
void tp_sampler_free(struct tp_sampler *s);

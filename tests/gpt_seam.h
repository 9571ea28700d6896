/* tests/gpt_seam.h - the model's engine calls by name, pointed at a test's
   own functions. examples/gpt calls zero_fetch(e, t), zero_release,
   zero_param, zero_grad, zero_grad_ready and zero_engine_error; a test that
   runs the model with no engine defines pio_fetch, pio_release, pio_param,
   pio_grad, pio_ready and pio_error, then includes this file before the
   model's header (the names now mean its functions) and again after it (the
   names mean the engine's again). No include guard: each inclusion flips. */
#ifndef GPT_SEAM_ON
#define GPT_SEAM_ON
#define zero_fetch(e, t) pio_fetch(e, t)
#define zero_release(e, t) pio_release(e, t)
#define zero_param(e, t) pio_param(e, t)
#define zero_grad(e, t) pio_grad(e, t)
#define zero_grad_ready(e, t) pio_ready(e, t)
#define zero_engine_error(e) pio_error(e)
#else
#undef GPT_SEAM_ON
#undef zero_fetch
#undef zero_release
#undef zero_param
#undef zero_grad
#undef zero_grad_ready
#undef zero_engine_error
#endif

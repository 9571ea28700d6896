/* test_gpt_wire_plain.c - examples/gpt/gpt_wire.h's wiring on plain fp32
   buffers with no engine, against gpt_ref_loss_grad: test_gpt_wire.c's
   part b, built with its seam (GPT_WIRE_TEST_PLAIN: the engine calls'
   names pointed at plain buffers around gpt_wire.h's #include), which a
   translation unit that also runs the engine cannot have.

   Run alone: make test T=test_gpt_wire_plain */
#define GPT_WIRE_TEST_PLAIN 1
#include "test_gpt_wire.c"

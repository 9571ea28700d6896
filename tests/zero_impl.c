/* tests/zero_impl.c - zero.h's and zero_offload.h's implementation in a
   translation unit of its own. tests/run.sh compiles it once per compiler
   and set of flags and links it into every test that uses the API alone
   (those whose #define ZERO_IMPLEMENTATION stands inside
   #ifndef ZERO_TEST_SHARED_IMPL), instead of compiling the implementation
   again in each: the builds are most of make test's time. Built alone, each
   such test still carries the implementation itself. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"

// `paraplan execute --scale F` (host/execute/model_scaling.h): widths and lengths scaled and
// rounded as documented, structure kept; values worked out by hand.
#include "host/execute/model_scaling.h"

#include <gtest/gtest.h>

#include "host/core/errors.h"

namespace paraplan::host {
namespace {

pp_model llama2_7b() {
  pp_model model{};
  model.layers = 32, model.hidden = 4096, model.heads = 32, model.kv_heads = 32, model.head_dim = 128;
  model.ffn_hidden = 11008, model.ffn_type = PP_FFN_SWIGLU, model.vocab = 32000, model.seq_len = 4096;
  return model;
}

TEST(ModelScaling, Llama2_7BAtOneThirtySecond) {
  pp_model model = llama2_7b();
  scale_model(model, 1.0 / 32);
  EXPECT_EQ(model.head_dim, 4);      // 128 / 32
  EXPECT_EQ(model.hidden, 128);      // 32 heads x 4
  EXPECT_EQ(model.ffn_hidden, 320);  // 11008 / 32 = 344 = 5.375 x 64 -> 5 x 64
  EXPECT_EQ(model.vocab, 1024);      // 32000 / 32 = 1000 = 7.8 x 128 -> 8 x 128
  EXPECT_EQ(model.seq_len, 128);     // 4096 / 32
  // The structure stays.
  EXPECT_EQ(model.layers, 32);
  EXPECT_EQ(model.heads, 32);
  EXPECT_EQ(model.kv_heads, 32);
}

TEST(ModelScaling, MixtureOfExpertsKeepsItsExperts) {
  pp_model model = llama2_7b();
  model.kv_heads = 8, model.ffn_hidden = 14336, model.moe_experts = 8, model.moe_top_k = 2;
  model.moe_ffn_hidden = 14336, model.seq_len = 32768;
  scale_model(model, 1.0 / 16);
  EXPECT_EQ(model.moe_ffn_hidden, 896);  // 14336 / 16 = 896 = 14 x 64
  EXPECT_EQ(model.seq_len, 2048);        // 32768 / 16
  EXPECT_EQ(model.moe_experts, 8);
  EXPECT_EQ(model.moe_top_k, 2);
  EXPECT_EQ(model.kv_heads, 8);
}

TEST(ModelScaling, SmallestShapesStayValid) {
  pp_model model = llama2_7b();
  scale_model(model, 1e-4);
  EXPECT_EQ(model.head_dim, 1);  // never 0
  EXPECT_EQ(model.hidden, 32);
  EXPECT_EQ(model.ffn_hidden, 64);
  EXPECT_EQ(model.vocab, 128);
  EXPECT_EQ(model.seq_len, 64);
}

TEST(ModelScaling, HiddenThatIsNotHeadsTimesHeadDim) {
  pp_model model = llama2_7b();
  model.hidden = 5120, model.heads = 40, model.head_dim = 96;  // not 5120 / 40
  scale_model(model, 0.5);
  EXPECT_EQ(model.head_dim, 48);
  EXPECT_EQ(model.hidden, 2560);  // 2560 = 64 x 40, a multiple of the heads
}

TEST(ModelScaling, FactorOutsideZeroToOneIsAUsageError) {
  for (double factor : {0.0, -0.5, 1.5}) {
    pp_model model = llama2_7b();
    EXPECT_THROW(scale_model(model, factor), UsageError) << factor;
  }
  pp_model model = llama2_7b();
  scale_model(model, 1.0);
  EXPECT_EQ(model.hidden, 4096);
  EXPECT_EQ(model.vocab, 32000);  // 1 leaves every field as it is (no rounding)
}

}  // namespace
}  // namespace paraplan::host

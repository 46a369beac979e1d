// torch.randn reproduction against the outputs torch itself published (docs/reference/torch-randn.md):
// every value compared to the last bit.
#include "host/torch_randn.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

namespace rgbaq::host {
namespace {

// Published values are float32 printed as double: converting back is exact.
void expect_bits(const std::vector<float>& got, size_t offset, const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    const float w = static_cast<float>(want[i]);
    EXPECT_EQ(std::bit_cast<uint32_t>(got[offset + i]), std::bit_cast<uint32_t>(w))
        << "index " << offset + i << ": got " << got[offset + i] << ", torch " << w;
  }
}

TEST(TorchRandn, Seed42AllSixtyFourValues) {
  const std::vector<double> want = {
      1.9269152879714966,   1.4872840642929077,  0.9007171988487244,   -2.1055209636688232,
      0.6784184575080872,   -1.2345448732376099, -0.04306747764348984, -1.6046669483184814,
      -0.7521352767944336,  1.6487230062484741,  -0.3924786448478699,  -1.4036071300506592,
      -0.7278813123703003,  -0.5594301819801331, -0.7688388824462891,  0.7624453902244568,
      1.6423169374465942,   -0.1595974713563919, -0.4973975419998169,  0.439589262008667,
      -0.7581311464309692,  1.078317642211914,   0.8008005619049072,   1.680620551109314,
      1.27912437915802,     1.2964228391647339,  0.610466480255127,    1.334737777709961,
      -0.2316243201494217,  0.041759490966796875, -0.2515752911567688, 0.859858512878418,
      -1.3846737146377563,  -0.8712361454963684, -0.223365917801857,   1.7173614501953125,
      0.3188803195953369,   -0.42451897263526917, 0.3057209253311157,  -0.7745925188064575,
      -1.5575724840164185,  0.9956361055374146,  -0.8797858357429504,  -0.6011420488357544,
      -1.2741512060165405,  2.1227850914001465,  -1.234653115272522,   -0.4879138767719269,
      -0.9138230085372925,  -0.6581372618675232, 0.07802387326955795,  0.5258087515830994,
      -0.48799172043800354, 1.1913690567016602,  -0.8140076398849487,  -0.7359927892684937,
      -1.4032478332519531,  0.03600366786122322, -0.06347727030515671, 0.6756148934364319,
      -0.0978068932890892,  1.8445940017700195,  -1.184537410736084,   1.3835493326187134};
  expect_bits(torch_randn(42, 64), 0, want);
}

TEST(TorchRandn, Seed0FirstTwelveValuesAnyLength) {
  const std::vector<double> want = {-1.1258398294448853, -1.152360200881958,   -0.2505785822868347,
                                    -0.4338788092136383, 0.8487103581428528,   0.6920091509819031,
                                    -0.31601276993751526, -2.1152193546295166, 0.32227492332458496,
                                    -1.2633347511291504, 0.34998318552970886,  0.30813392996788025};
  for (size_t n : {32u, 48u, 64u * 16u * 16u}) expect_bits(torch_randn(0, n), 0, want);
}

TEST(TorchRandn, Seed0ValuesTwelveToTwentyThreeToFourDecimals) {
  const std::vector<double> want = {0.1198, 1.2377, 1.1168, -0.2473, -1.3527, -1.6959,
                                    0.5667, 0.7935, 0.5988, -1.5551, -0.3414, 1.8530};
  const auto got = torch_randn(0, 64);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[12 + i], want[i], 0.5e-4) << "index " << 12 + i;
}

TEST(TorchRandn, TailRuleSeed0TwentyFourValues) {
  // randn(6, 4): the last 16 values are redrawn from fresh uniforms (PyTorch issue #80202).
  const std::vector<double> want = {0.46809640526771545, -0.1577124446630478, 1.4436601400375366,
                                    0.26604941487312317, 0.16645534336566925, 0.8743818402290344,
                                    -0.14347384870052338, -0.1116093322634697, 0.9318265914916992,
                                    1.2590092420578003,  2.0049805641174316,  0.05373690277338028,
                                    0.6180566549301147,  -0.41280221939086914, -0.8410648107528687,
                                    -2.316041946411133};
  expect_bits(torch_randn(0, 24), 8, want);
}

TEST(TorchRandn, GeneratorIsStdMt19937OnTheLow32Bits) {
  // std::mt19937 is an independent implementation of the same engine.
  for (uint64_t seed : {0ull, 1ull, 42ull, 0xffffffffull, 0x1234567800000007ull, ~0ull}) {
    std::mt19937 ref(static_cast<uint32_t>(seed));
    TorchCpuGenerator gen(seed);
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(gen.next_u32(), ref()) << "seed " << seed << " draw " << i;
  }
}

TEST(TorchRandn, SeedsDifferingAboveBit32DrawTheSameNoise) {
  EXPECT_EQ(torch_randn(7, 64), torch_randn(7 + (1ull << 32), 64));
}

TEST(TorchRandn, UniformIsTwentyFourBitExact) {
  std::mt19937 ref(5);
  TorchCpuGenerator gen(5);
  for (int i = 0; i < 100; ++i) {
    const uint32_t r = ref();
    EXPECT_EQ(gen.next_uniform(), static_cast<float>(static_cast<double>(r & 0xffffff) / 16777216.0));
  }
}

TEST(TorchRandn, RejectsLengthsBelowSixteen) { EXPECT_THROW(torch_randn(0, 15), std::invalid_argument); }

}  // namespace
}  // namespace rgbaq::host

// Tests of calibration_fit: every expected value is worked out by hand in the comment above it.
#include "calibration_fit.h"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpi_executor {
namespace {

TEST(FitLine, PointsOnALineGiveItBack) {
  // y = 3 + 2x through four points.
  const std::vector<double> x{0, 1, 2, 4}, y{3, 5, 7, 11};
  const LineFit fit = fit_line(x, y);
  EXPECT_NEAR(fit.intercept, 3.0, 1e-12);
  EXPECT_NEAR(fit.slope, 2.0, 1e-12);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);
}

TEST(FitLine, ScatteredPointsByHand) {
  // x = 0, 1, 2; y = 1, 3, 2. Means 1 and 2; Σdx² = 2, Σdx·dy = (-1)(-1) + 0 + (1)(0) = 1:
  // slope 1/2, intercept 2 - 1/2 = 3/2. Residuals -1/2, 1, -1/2: 1.5 of Σdy² = 2, R² = 1/4.
  const std::vector<double> x{0, 1, 2}, y{1, 3, 2};
  const LineFit fit = fit_line(x, y);
  EXPECT_NEAR(fit.slope, 0.5, 1e-12);
  EXPECT_NEAR(fit.intercept, 1.5, 1e-12);
  EXPECT_NEAR(fit.r_squared, 0.25, 1e-12);
}

TEST(FitLine, RelativeWeightsFavourTheSmallPoints) {
  // x = 1, 2, 3; y = 1, 2, 4; weights 1/y² = 1, 1/4, 1/16, total 21/16.
  // Weighted means: x̄ = (1 + 2/4 + 3/16)/(21/16) = 27/21 = 9/7, ȳ = (16 + 8 + 4)/21 = 4/3.
  // Σw·dx² = (4 + 25/4 + 144/16)/49 = 19.25/49; Σw·dx·dy = 2/21 + 10/84 + 96/336 = 1/2.
  // slope = (1/2)/(19.25/49) = 14/11; intercept = 4/3 - (14/11)(9/7) = -10/33.
  // Ordinary least squares would give slope 3/2, intercept -2/3: pulled by the point at 4.
  const std::vector<double> x{1, 2, 3}, y{1, 2, 4};
  const LineFit relative = fit_line_relative(x, y);
  EXPECT_NEAR(relative.slope, 14.0 / 11.0, 1e-12);
  EXPECT_NEAR(relative.intercept, -10.0 / 33.0, 1e-12);
  const LineFit ordinary = fit_line(x, y);
  EXPECT_NEAR(ordinary.slope, 1.5, 1e-12);
  EXPECT_NEAR(ordinary.intercept, -2.0 / 3.0, 1e-12);
}

TEST(FitLine, RejectsWhatCannotBeFitted) {
  const std::vector<double> one{1}, same_x{2, 2}, y{1, 2}, negative{1, -1}, x{1, 2};
  EXPECT_THROW(fit_line(one, one), std::invalid_argument);
  EXPECT_THROW(fit_line(same_x, y), std::invalid_argument);
  EXPECT_THROW(fit_line_relative(x, negative), std::invalid_argument);
}

TEST(BusBandwidth, FactorsAsNcclTestsReportThem) {
  // all-reduce 2(n-1)/n: 1, 1.5, 1.75; the others (n-1)/n: 0.5, 0.75, 0.875; a send 1.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Communication::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Communication::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Communication::kAllReduce, 8), 1.75);
  for (Communication kind : {Communication::kAllGather, Communication::kReduceScatter, Communication::kAllToAll}) {
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(kind, 2), 0.5) << communication_name(kind);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(kind, 4), 0.75) << communication_name(kind);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(kind, 8), 0.875) << communication_name(kind);
  }
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Communication::kSend, 2), 1.0);
}

TEST(BusBandwidth, LatencyStepsOfTheRing) {
  EXPECT_DOUBLE_EQ(latency_steps(Communication::kAllReduce, 4), 6.0);  // 2(P-1)
  EXPECT_DOUBLE_EQ(latency_steps(Communication::kAllGather, 4), 3.0);  // P-1
  EXPECT_DOUBLE_EQ(latency_steps(Communication::kReduceScatter, 8), 7.0);
  EXPECT_DOUBLE_EQ(latency_steps(Communication::kAllToAll, 2), 1.0);
  EXPECT_DOUBLE_EQ(latency_steps(Communication::kSend, 2), 1.0);
}

// Timings as the ring model prices them: t = steps·α + factor·n/B.
std::vector<CommunicationSample> ring_samples(Communication kind, int group_size, double alpha, double bandwidth) {
  std::vector<CommunicationSample> samples;
  for (double bytes = 1024; bytes <= 4 << 20; bytes *= 4) {
    const double seconds =
        latency_steps(kind, group_size) * alpha + bus_bandwidth_factor(kind, group_size) * bytes / bandwidth;
    samples.push_back(CommunicationSample{kind, group_size, bytes, seconds});
  }
  return samples;
}

TEST(FitCommunication, RecoversAlphaAndBandwidthOfTheRing) {
  // All-reduce on 4 ranks, α = 2 µs, B = 10 GB/s: t = 6·2 µs + 1.5·n / 10 GB/s.
  // At 4 MiB: t = 12 µs + 629.1456 µs = 641.1456 µs; busbw = 1.5 · 4194304 B / t = 9.81283 GB/s.
  const std::vector<CommunicationSample> samples = ring_samples(Communication::kAllReduce, 4, 2e-6, 10e9);
  const CommunicationFit fit = fit_communication(Communication::kAllReduce, 4, samples);
  EXPECT_NEAR(fit.latency_s, 2e-6, 1e-12);
  EXPECT_NEAR(fit.bandwidth_bytes_per_s / 10e9, 1.0, 1e-9);
  EXPECT_NEAR(fit.line.r_squared, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(fit.largest_bytes, 4194304.0);
  EXPECT_NEAR(fit.bus_bandwidth_at_largest / 9.81283e9, 1.0, 1e-5);
}

TEST(FitCommunication, NegativeInterceptMeansNoLatency) {
  // Reduce-scatter on 2 ranks: 1 KiB in 0.1 µs, 1 MiB in 200 µs. Two points fix the line: slope
  // 199.9 µs / 1047552 B, intercept 0.1 µs - 1024 B · slope = -0.0954 µs < 0, so α = 0;
  // B = factor / slope = 0.5 · 1047552 B / 199.9 µs = 2.62019 GB/s.
  const std::vector<CommunicationSample> samples{{Communication::kReduceScatter, 2, 1024, 1e-7},
                                                 {Communication::kReduceScatter, 2, 1048576, 2e-4}};
  const CommunicationFit fit = fit_communication(Communication::kReduceScatter, 2, samples);
  EXPECT_EQ(fit.latency_s, 0.0);
  EXPECT_NEAR(fit.line.intercept, 1e-7 - 1024 * 1.999e-4 / 1047552, 1e-15);
  EXPECT_NEAR(fit.bandwidth_bytes_per_s / (0.5 * 1047552 / 1.999e-4), 1.0, 1e-9);
}

TEST(FitCommunication, OneFitPerKindAndGroupSize) {
  // All-gather on 8 ranks with α = 5 µs, B = 20 GB/s; a send with α = 1 µs, B = 8 GB/s.
  std::vector<CommunicationSample> samples = ring_samples(Communication::kAllGather, 8, 5e-6, 20e9);
  const std::vector<CommunicationSample> sends = ring_samples(Communication::kSend, 2, 1e-6, 8e9);
  samples.insert(samples.end(), sends.begin(), sends.end());
  const std::vector<CommunicationFit> fits = fit_communications(samples);
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0].kind, Communication::kAllGather);
  EXPECT_EQ(fits[0].group_size, 8);
  EXPECT_NEAR(fits[0].latency_s, 5e-6, 1e-12);
  EXPECT_NEAR(fits[0].bandwidth_bytes_per_s / 20e9, 1.0, 1e-9);
  EXPECT_EQ(fits[1].kind, Communication::kSend);
  EXPECT_NEAR(fits[1].latency_s, 1e-6, 1e-12);
  EXPECT_NEAR(fits[1].bandwidth_bytes_per_s / 8e9, 1.0, 1e-9);
}

TEST(FitTier, OneAlphaAndBandwidthForEveryKind) {
  // Every kind at 2 and 4 ranks, and a send, from the same α = 3 µs and B = 5 GB/s.
  std::vector<CommunicationSample> samples;
  for (Communication kind : {Communication::kAllReduce, Communication::kAllGather, Communication::kReduceScatter,
                             Communication::kAllToAll}) {
    for (int group_size : {2, 4}) {
      const std::vector<CommunicationSample> more = ring_samples(kind, group_size, 3e-6, 5e9);
      samples.insert(samples.end(), more.begin(), more.end());
    }
  }
  const std::vector<CommunicationSample> sends = ring_samples(Communication::kSend, 2, 3e-6, 5e9);
  samples.insert(samples.end(), sends.begin(), sends.end());
  const TierFit tier = fit_tier(samples);
  EXPECT_NEAR(tier.latency_s, 3e-6, 1e-12);
  EXPECT_NEAR(tier.bandwidth_bytes_per_s / 5e9, 1.0, 1e-9);
  EXPECT_NEAR(tier.relative_rms_error, 0.0, 1e-9);
}

TEST(FitTier, NegativeAlphaIsPinnedToZero) {
  // All-gather on 2 ranks: 1 KiB in 0.1 µs, 512 KiB in 100 µs. The free fit's line through them
  // would cross zero at a positive size; with α = 0 the relative fit of t = 0.5·n·β gives
  // β = Σv / Σv² for v = 0.5·n/t = 5.12e9 and 2.62144e9: B = Σv² / Σv = 4.3062e9 B/s (no sample
  // reaches the bandwidth regime, 1 MiB).
  const std::vector<CommunicationSample> samples{{Communication::kAllGather, 2, 1024, 1e-7},
                                            {Communication::kAllGather, 2, 524288, 1e-4}};
  const TierFit tier = fit_tier(samples);
  EXPECT_EQ(tier.latency_s, 0.0);
  const double v1 = 5.12e9, v2 = 2.62144e9;
  EXPECT_NEAR(tier.bandwidth_bytes_per_s / ((v1 * v1 + v2 * v2) / (v1 + v2)), 1.0, 1e-12);
}

TEST(FitTier, LargeTransfersSetTheBandwidth) {
  // Two kinds at 2 ranks, α = 1 µs: small messages at B = 8 GB/s, and at 4 MiB an all-gather at
  // 8 GB/s (0.5·4194304/8e9 = 262.144 µs + 1 µs) but a reduce-scatter at 2 GB/s (1048.576 µs
  // + 1 µs). B makes the large ones' total right: Σ 0.5·n = 4194304 B over Σ (t − α) =
  // 1310.72 µs: 3.2 GB/s, although most samples say 8.
  std::vector<CommunicationSample> samples;
  for (double bytes : {16.0, 1024.0, 65536.0})
    for (Communication kind : {Communication::kAllGather, Communication::kReduceScatter})
      samples.push_back({kind, 2, bytes, 1e-6 + 0.5 * bytes / 8e9});
  samples.push_back({Communication::kAllGather, 2, 4194304, 1e-6 + 262.144e-6});
  samples.push_back({Communication::kReduceScatter, 2, 4194304, 1e-6 + 1048.576e-6});
  const TierFit tier = fit_tier(samples);
  const double alpha = tier.latency_s;
  const double expected = 4194304.0 / (262.144e-6 + 1048.576e-6 + 2 * (1e-6 - alpha));
  EXPECT_NEAR(tier.bandwidth_bytes_per_s / expected, 1.0, 1e-12);
  EXPECT_NEAR(tier.bandwidth_bytes_per_s / 3.2e9, 1.0, 0.01);  // α is small next to the transfers
}

TEST(FitGemm, RecoversPeakAndHalfEfficiencySize) {
  // R = 50 GFLOP/s, F_half = 0.01 GFLOP: t = (F + 1e7)/5e10. 64³: F = 524288, t = 210.48576 µs.
  std::vector<GemmSample> samples;
  for (int64_t size : {64, 128, 256, 512, 1024}) {
    const double flops = 2.0 * size * size * size;
    samples.push_back(GemmSample{size, size, size, (flops + 1e7) / 5e10});
  }
  EXPECT_NEAR(samples[0].seconds, 210.48576e-6, 1e-15);
  const GemmFit fit = fit_gemm(samples);
  EXPECT_NEAR(fit.peak_flops_per_s / 5e10, 1.0, 1e-9);
  EXPECT_NEAR(fit.half_efficiency_flops / 1e7, 1.0, 1e-6);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-9);
  // A GEMM of F_half FLOPs runs at half the peak.
  EXPECT_NEAR(gemm_model_seconds(fit, 1e7), 2 * 1e7 / 5e10, 1e-12);
  // The fastest sample: 1024³ at 2147483648 / ((2147483648 + 1e7)/5e10) = 49.7685 GFLOP/s.
  EXPECT_NEAR(fit.best_flops_per_s / 49.7685e9, 1.0, 1e-5);
}

TEST(FitGemm, SmallGemmsFasterThanLargeMeanNoFixedCost) {
  // 128³ at 100 GFLOP/s, 1024³ at 50: the line's intercept is negative, so the rate is fitted
  // through the origin: R = Σr²/Σr = (1e22 + 2.5e21)/1.5e11 = 83.333 GFLOP/s, F_half = 0.
  const double small = 2.0 * 128 * 128 * 128, large = 2.0 * 1024 * 1024 * 1024;
  const std::vector<GemmSample> samples{{128, 128, 128, small / 100e9}, {1024, 1024, 1024, large / 50e9}};
  const GemmFit fit = fit_gemm(samples);
  EXPECT_NEAR(fit.peak_flops_per_s / (1.25e22 / 1.5e11), 1.0, 1e-12);
  EXPECT_EQ(fit.half_efficiency_flops, 0.0);
  EXPECT_NEAR(fit.best_flops_per_s, 100e9, 1.0);
}

MachineFigures example_figures() {
  MachineFigures figures;
  figures.name = "box \"7\"-4-ranks";
  figures.host = "box";
  figures.measured_at = "2026-11-30T12:00:00Z";
  figures.ranks = 4;
  figures.cores = 2;
  figures.gemm.peak_flops_per_s = 5e10;       // 0.05 TFLOP/s
  figures.gemm.half_efficiency_flops = 1.25e7;  // 0.0125 GFLOP
  figures.gemm.r_squared = 0.999;
  figures.gemm.best_flops_per_s = 4.9e10;
  figures.attention_efficiency = 0.6;
  figures.attention_method = "measured.";
  figures.memory_bandwidth_bytes_per_s = 8e9;
  figures.host_link_bandwidth_bytes_per_s = 6e9;
  figures.memory_capacity_bytes = 6e9;
  figures.tier = TierFit{1.5e-6, 3.2e9, 0.2};
  CommunicationFit fit;
  fit.kind = Communication::kAllReduce;
  fit.group_size = 4;
  fit.latency_s = 1.5e-6;
  fit.bandwidth_bytes_per_s = 3.2e9;
  fit.largest_bytes = 4 << 20;
  fit.bus_bandwidth_at_largest = 3e9;
  figures.communications = {fit};
  return figures;
}

double number(const toml::table& table, std::string_view path) {
  const toml::node_view<const toml::node> node = table.at_path(path);
  EXPECT_TRUE(node.is_floating_point()) << path << " should be written as a float";
  return node.value<double>().value_or(-1.0);
}

TEST(WriteProfileToml, ParsesBackWithEveryField) {
  const std::string text = write_profile_toml(example_figures());
  EXPECT_EQ(text.rfind("# Measured by `paraplan calibrate` on box at 2026-11-30T12:00:00Z with 4 MPI ranks.", 0), 0u)
      << text;
  EXPECT_NE(text.find("# Oversubscribed: 4 ranks on 2 cores"), std::string::npos) << text;
  const toml::table profile = toml::parse(text);
  EXPECT_EQ(profile["name"].value<std::string>(), "box \"7\"-4-ranks");
  EXPECT_EQ(profile["gpus_per_node"].value<int64_t>(), 4);
  // 5e10 FLOP/s = 0.05 TFLOP/s for every dtype the executor runs as fp32; no fp8.
  for (const char* key : {"compute.fp32_tflops", "compute.tf32_tflops", "compute.bf16_tflops", "compute.fp16_tflops"}) {
    EXPECT_DOUBLE_EQ(number(profile, key), 0.05) << key;
  }
  EXPECT_DOUBLE_EQ(number(profile, "compute.fp8_tflops"), 0.0);
  EXPECT_DOUBLE_EQ(number(profile, "memory.capacity_gb"), 6.0);
  EXPECT_DOUBLE_EQ(number(profile, "memory.bandwidth_gb_s"), 8.0);
  EXPECT_DOUBLE_EQ(number(profile, "memory.efficiency"), 1.0);
  EXPECT_DOUBLE_EQ(number(profile, "host_link.bandwidth_gb_s"), 6.0);
  EXPECT_DOUBLE_EQ(number(profile, "gemm.efficiency_max"), 1.0);
  EXPECT_DOUBLE_EQ(number(profile, "gemm.half_efficiency_gflop"), 0.0125);  // 1.25e7 FLOP
  EXPECT_DOUBLE_EQ(number(profile, "attention.efficiency"), 0.6);

  const toml::array* tiers = profile["tiers"].as_array();
  ASSERT_NE(tiers, nullptr);
  ASSERT_EQ(tiers->size(), 1u);
  const toml::table& tier = *tiers->get(0)->as_table();
  EXPECT_EQ(tier["name"].value<std::string>(), "shared-memory");
  EXPECT_EQ(tier["domain_size"].value<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(number(tier, "bandwidth_gb_s"), 3.2);  // 3.2e9 B/s
  EXPECT_DOUBLE_EQ(number(tier, "latency_us"), 1.5);      // 1.5e-6 s
  EXPECT_DOUBLE_EQ(number(tier, "efficiency"), 1.0);
}

TEST(WriteProfileToml, WholeNumbersStayFloatsAndFourDigitsAreKept) {
  MachineFigures figures = example_figures();
  figures.memory_capacity_bytes = 16e9;          // "16" would read back as an integer
  figures.memory_bandwidth_bytes_per_s = 12.34567e9;  // four significant digits: 12.35
  figures.host_link_bandwidth_bytes_per_s = 0;   // not measured: no [host_link] table
  const toml::table profile = toml::parse(write_profile_toml(figures));
  EXPECT_DOUBLE_EQ(number(profile, "memory.capacity_gb"), 16.0);
  EXPECT_DOUBLE_EQ(number(profile, "memory.bandwidth_gb_s"), 12.35);
  EXPECT_FALSE(profile.contains("host_link"));
}

TEST(WriteProfileToml, RefusesWhatTheReaderWouldReject) {
  MachineFigures figures = example_figures();
  figures.name = std::string(48, 'x');
  EXPECT_THROW(write_profile_toml(figures), std::invalid_argument);
  figures = example_figures();
  figures.attention_efficiency = 1.2;
  EXPECT_THROW(write_profile_toml(figures), std::invalid_argument);
  figures = example_figures();
  figures.tier.bandwidth_bytes_per_s = 0;
  EXPECT_THROW(write_profile_toml(figures), std::invalid_argument);
  figures = example_figures();
  figures.gemm.half_efficiency_flops = std::nan("");
  EXPECT_THROW(write_profile_toml(figures), std::invalid_argument);
}

}  // namespace
}  // namespace mpi_executor

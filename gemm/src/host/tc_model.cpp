// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/gemm/tc_model.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "mixsolve/formats/conversions.hpp"
#include "mixsolve/formats/split.hpp"

namespace mixsolve::gemm {

std::string to_string(TcScheme s) {
  switch (s) {
    case TcScheme::Fp16: return "fp16";
    case TcScheme::Bf16: return "bf16";
    case TcScheme::Tf32: return "tf32";
    case TcScheme::Markidis: return "markidis";
    case TcScheme::Halfhalf: return "halfhalf";
    case TcScheme::Tf32tf32: return "tf32tf32";
    case TcScheme::Fp16x3: return "fp16x3";
  }
  return "?";
}

namespace {

// Rounds x to FP32 toward zero.
float round_toward_zero(long double x) {
  float f = static_cast<float>(x);  // to nearest
  if (std::isfinite(f) && std::fabs(static_cast<long double>(f)) > std::fabs(x))
    f = std::nextafter(f, 0.0f);
  return f;
}

bool uses_tf32(TcScheme s) { return s == TcScheme::Tf32 || s == TcScheme::Tf32tf32; }

// hi and lo parts of v as FP32 values (lo is scaled by 2^11 for the halfhalf-type schemes).
void split_value(TcScheme s, float v, float& hi, float& lo) {
  using namespace formats;
  switch (s) {
    case TcScheme::Fp16: hi = to_f16_rn(v); lo = 0; return;
    case TcScheme::Bf16: hi = to_bf16_rn_host(v); lo = 0; return;
    case TcScheme::Tf32: hi = to_tf32_rna(v); lo = 0; return;
    case TcScheme::Markidis:
    case TcScheme::Fp16x3: {  // Fp16x3: v already scaled by its operand's power of two
      const HalfSplit p = split_markidis(v);
      hi = half_bits_to_float(p.hi); lo = half_bits_to_float(p.lo); return;
    }
    case TcScheme::Halfhalf: {
      const HalfSplit p = split_halfhalf(v);
      hi = half_bits_to_float(p.hi); lo = half_bits_to_float(p.lo); return;
    }
    case TcScheme::Tf32tf32: {
      const Tf32Split p = split_tf32tf32(v);
      hi = bits_float(p.hi); lo = bits_float(p.lo); return;
    }
  }
}

}  // namespace

float mma_step(const float* a, const float* b, int len, float c, TcRounding accumulation) {
  long double dot = 0;  // products of <= 11-bit significands are exact; the sum nearly so
  for (int i = 0; i < len; ++i) dot += static_cast<long double>(a[i]) * static_cast<long double>(b[i]);
  const long double sum = static_cast<long double>(round_toward_zero(dot)) + static_cast<long double>(c);
  return accumulation == TcRounding::RZ ? round_toward_zero(sum) : static_cast<float>(sum);
}

// The Fp16x3 scheme's power of two for one operand (1 for the other schemes): see
// formats::fp16x3_operand_shift. `value(i, p)` reads the operand.
template <class Value>
int operand_shift(const TcModel& model, std::int64_t rows, std::int64_t k, Value value) {
  if (model.scheme != TcScheme::Fp16x3) return 0;
  float max_abs = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const float v = std::fabs(value(i, p));
      if (std::isfinite(v) && v > max_abs) max_abs = v;
    }
  return formats::fp16x3_operand_shift(max_abs);
}

void tc_model_gemm(const TcModel& model, const GemmArgs<float>& args) {
  const std::int64_t m = args.m, n = args.n, k = args.k;
  auto a_at = [&](std::int64_t i, std::int64_t p) { return args.op_a == Op::N ? args.a[i + p * args.lda] : args.a[p + i * args.lda]; };
  auto b_at = [&](std::int64_t j, std::int64_t p) { return args.op_b == Op::N ? args.b[p + j * args.ldb] : args.b[j + p * args.ldb]; };
  const int shift_a = operand_shift(model, m, k, a_at), shift_b = operand_shift(model, n, k, b_at);
  const float scale_a = std::ldexp(1.0f, shift_a), scale_b = std::ldexp(1.0f, shift_b);
  // op(A) as rows of length k, op(B) as columns of length k: contiguous dot products.
  std::vector<float> a_hi(m * k), a_lo(m * k), b_hi(n * k), b_lo(n * k);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) split_value(model.scheme, a_at(i, p) * scale_a, a_hi[i * k + p], a_lo[i * k + p]);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t p = 0; p < k; ++p) split_value(model.scheme, b_at(j, p) * scale_b, b_hi[j * k + p], b_lo[j * k + p]);
  const int block = uses_tf32(model.scheme) ? 8 : 16;
  const TcRounding main_rounding = model.accumulation;
  // Fp16x3 undoes the operands' scaling in alpha, as the device's cuBLAS epilogue does.
  const float alpha = args.alpha * std::ldexp(1.0f, -(shift_a + shift_b));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      const float* ah = &a_hi[i * k];
      const float* al = &a_lo[i * k];
      const float* bh = &b_hi[j * k];
      const float* bl = &b_lo[j * k];
      float acc = 0, corr = 0;
      if (model.scheme == TcScheme::Fp16x3) {
        // One product of inner dimension 3k, [hi hi lo] x [hi; lo; hi], accumulated in that order.
        for (const auto& [sa, sb] : {std::pair{ah, bh}, std::pair{ah, bl}, std::pair{al, bh}})
          for (std::int64_t p = 0; p < k; p += block)
            acc = mma_step(sa + p, sb + p, static_cast<int>(k - p < block ? k - p : block), acc, main_rounding);
      } else {
        for (std::int64_t p = 0; p < k; p += block) {
          const int len = static_cast<int>(k - p < block ? k - p : block);
          switch (model.scheme) {
            case TcScheme::Fp16:
            case TcScheme::Bf16:
            case TcScheme::Tf32:
              acc = mma_step(ah + p, bh + p, len, acc, main_rounding);
              break;
            case TcScheme::Markidis:  // Ootomo & Yokota (2021) Listing 2 order: dA dB, dA B, A dB, A B
              acc = mma_step(al + p, bl + p, len, acc, main_rounding);
              acc = mma_step(al + p, bh + p, len, acc, main_rounding);
              acc = mma_step(ah + p, bl + p, len, acc, main_rounding);
              acc = mma_step(ah + p, bh + p, len, acc, main_rounding);
              break;
            case TcScheme::Halfhalf:
            case TcScheme::Tf32tf32:  // eq. (20): corrections inside the TC, main product per mode
              corr = mma_step(al + p, bh + p, len, corr, TcRounding::RZ);
              corr = mma_step(ah + p, bl + p, len, corr, TcRounding::RZ);
              acc = mma_step(ah + p, bh + p, len, acc, main_rounding);
              break;
            case TcScheme::Fp16x3: break;  // above
          }
        }
      }
      if (model.scheme == TcScheme::Halfhalf || model.scheme == TcScheme::Tf32tf32)
        acc += corr * formats::kInverseResidualScale;
      float& cij = args.c[i + j * args.ldc];
      cij = args.beta == 0.0f ? alpha * acc : alpha * acc + args.beta * cij;
    }
}

}  // namespace mixsolve::gemm

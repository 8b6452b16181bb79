// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// A host model of the tensor-core MMA (Ootomo & Yokota 2021, §3.2), so that the accuracy of every corrected
/// SGEMM variant can be studied and tested on a machine without a GPU.
///
/// One MMA step over a k-block (16 for FP16 inputs, 8 for TF32, as in mma.sync) computes
///     D = round_acc( RZ(sum_k a_k * b_k) + C )
/// where the products are exact, their sum is rounded toward zero to FP32 (as the tensor core
/// does), and the addition of the accumulator C is rounded toward zero (mma_rz, the hardware) or to
/// nearest (mma_rn, what adding outside the tensor core gives).
#pragma once

#include <string>

#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm {

/// How the model rounds or splits the operands, and which products it forms.
enum class TcScheme {
  /// A, B rounded to FP16; one product.
  Fp16,
  /// A, B rounded to BF16; one product.
  Bf16,
  /// A, B rounded to TF32 (RNA); one product.
  Tf32,
  /// Ootomo & Yokota (2021) eqs. (1)-(5): four products in the same accumulator, unscaled residuals.
  Markidis,
  /// Ootomo & Yokota (2021) eqs. (15)-(18), (20): main product + two corrections scaled by 2^-11.
  Halfhalf,
  /// The same with TF32 splits.
  Tf32tf32,
  /// cublas-fp16x3: operands scaled by powers of two (formats::fp16x3_operand_shift), Markidis
  /// split, hi*hi + hi*lo + lo*hi as one product of inner dimension 3k.
  Fp16x3,
             // Markidis split, hi*hi + hi*lo + lo*hi as one product of inner dimension 3k
};

/// Rounding of the accumulation in one MMA step: RZ, toward zero (mma_rz, inside the tensor
/// core); RN, to nearest (mma_rn, adding outside it).
enum class TcRounding { RZ, RN };

/// One configuration of the model: the host backends "model-<scheme>-rz" and "-rn".
struct TcModel {
  /// The operand rounding or split and the products formed.
  TcScheme scheme = TcScheme::Halfhalf;
  /// How the main product is added to its accumulator. For Halfhalf/Tf32tf32 the correction
  /// products always accumulate inside the tensor core (RZ), as in Ootomo & Yokota (2021) §3.5.
  TcRounding accumulation = TcRounding::RZ;
};

/// @param s a scheme.
/// @return its name in backend names: "fp16", "bf16", "tf32", "markidis", "halfhalf",
///         "tf32tf32" or "fp16x3".
std::string to_string(TcScheme s);

/// One MMA step: returns round_acc(RZ(sum_{i<len} a[i] * b[i]) + c).
/// The products and their sum are formed in long double before the RZ rounding to FP32.
/// @param a            len values (already rounded to the scheme's input format); read.
/// @param b            len values; read.
/// @param len          the k-block length (16 for FP16 inputs, 8 for TF32; less at the end).
/// @param c            the accumulator.
/// @param accumulation RZ or RN rounding of the addition of c.
/// @return the new accumulator D.
float mma_step(const float* a, const float* b, int len, float c, TcRounding accumulation);

/// C = alpha * op(A) op(B) + beta * C on host memory, every dot product computed by the model.
/// No argument checks and none of Backend::run's special cases (k == 0, alpha == 0): call it
/// through a "model-*" backend (Backend::run) for those. args.check_range is ignored.
/// @param model the scheme and accumulation rounding.
/// @param args  the GEMM, all pointers to host memory; C is written (not read when beta == 0).
void tc_model_gemm(const TcModel& model, const GemmArgs<float>& args);

}  // namespace mixsolve::gemm

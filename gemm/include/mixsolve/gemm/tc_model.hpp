// SPDX-License-Identifier: BSD-3-Clause
// A host model of the tensor-core MMA (seed 000 §3.2), so that the accuracy of every corrected
// SGEMM variant can be studied and tested on a machine without a GPU.
//
// One MMA step over a k-block (16 for FP16 inputs, 8 for TF32, as in mma.sync) computes
//     D = round_acc( RZ(sum_k a_k * b_k) + C )
// where the products are exact, their sum is rounded toward zero to FP32 (as the tensor core
// does), and the addition of the accumulator C is rounded toward zero (mma_rz, the hardware) or to
// nearest (mma_rn, what adding outside the tensor core gives).
#pragma once

#include <string>

#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm {

enum class TcScheme {
  Fp16,      // A, B rounded to FP16; one product
  Bf16,      // A, B rounded to BF16; one product
  Tf32,      // A, B rounded to TF32 (RNA); one product
  Markidis,  // seed 000 eqs. (1)-(5): four products in the same accumulator, unscaled residuals
  Halfhalf,  // seed 000 eqs. (15)-(18), (20): main product + two corrections scaled by 2^-11
  Tf32tf32,  // the same with TF32 splits
  Fp16x3,    // cublas-fp16x3: operands scaled by powers of two (formats::fp16x3_operand_shift),
             // Markidis split, hi*hi + hi*lo + lo*hi as one product of inner dimension 3k
};

enum class TcRounding { RZ, RN };

struct TcModel {
  TcScheme scheme = TcScheme::Halfhalf;
  // How the main product is added to its accumulator. For Halfhalf/Tf32tf32 the correction
  // products always accumulate inside the tensor core (RZ), as in seed 000 §3.5.
  TcRounding accumulation = TcRounding::RZ;
};

std::string to_string(TcScheme s);

// One MMA step: returns round_acc(RZ(sum_{i<len} a[i] * b[i]) + c).
float mma_step(const float* a, const float* b, int len, float c, TcRounding accumulation);

// C = alpha * op(A) op(B) + beta * C on host memory, every dot product computed by the model.
void tc_model_gemm(const TcModel& model, const GemmArgs<float>& args);

}  // namespace mixsolve::gemm

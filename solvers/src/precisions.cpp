// SPDX-License-Identifier: BSD-3-Clause
#include "precisions.hpp"

#include <cmath>
#include <string>

#include "mixsolve/core/error.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::solvers_detail {

// Unit roundoffs: FP32-stored factors of FP32 accuracy (FP32, and the corrected tensor-core
// updates, which gemm/ measured as accurate as SGEMM) 2^-24; TF32 and FP16 updates 2^-11; BF16
// 2^-8. Range scaling: FP16's normal range is 2^-14 to 65504; BF16 and fp16x3 (whose GEMM scales
// its operands by powers of two itself) keep FP32's, and scaling in FP64, before A is rounded to
// FP32, also lets entries beyond FP32's range factorize. The host backends are the bit-exact
// models of the device products (truncating tensor-core accumulation: "-rz"). Ozaki's unit
// roundoff is that of SolveOptions::ozaki_bits' default (unit_roundoff() takes the bits asked
// for); its updates on the device are dgemm-auto's, on the host the emulation's bit-exact model.
const std::vector<PrecisionInfo>& factorization_precisions() {
  static const std::vector<PrecisionInfo> table = {
      {Precision::FP64, "fp64", 0x1p-53, false, "cublas-dgemm", "host-fp64", true, false},
      {Precision::FP32, "fp32", 0x1p-24, false, "cublas-sgemm", "host-fp32", false, false},
      {Precision::TF32, "tf32", 0x1p-11, false, "cublas-tf32", "model-tf32-rz", false, false},
      {Precision::FP16, "fp16", 0x1p-11, true, "cublas-fp16", "model-fp16-rz", false, false},
      {Precision::BF16, "bf16", 0x1p-8, true, "cublas-bf16", "model-bf16-rz", false, false},
      {Precision::Halfhalf, "halfhalf", 0x1p-24, false, "halfhalf", "model-halfhalf-rn", false, false},
      {Precision::Tf32tf32, "tf32tf32", 0x1p-24, false, "tf32tf32", "model-tf32tf32-rn", false, false},
      {Precision::Fp16x3, "fp16x3", 0x1p-24, true, "cublas-fp16x3", "model-fp16x3-rz", false, true},
      {Precision::Ozaki, "ozaki", 0x1p-40, false, "dgemm-auto", "host-ozaki2-int8", true, false},
  };
  return table;
}

double unit_roundoff(Precision p, int ozaki_bits) {
  return p == Precision::Ozaki ? std::ldexp(1.0, -ozaki_bits) : precision_info(p).unit_roundoff;
}

const PrecisionInfo& precision_info(Precision p) {
  for (const PrecisionInfo& info : factorization_precisions())
    if (info.precision == p) return info;
  throw InvalidArgument("precision " + to_string(p) + " is not a factorization precision");
}

const gemm::Backend& device_update_backend(Precision p) {
  return gemm::find_backend(precision_info(p).device_update);
}

const gemm::Backend& host_update_backend(Precision p) { return gemm::find_backend(precision_info(p).host_update); }

}  // namespace mixsolve::solvers_detail

// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/core/convert.hpp"

#include <string>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve {

namespace {
__global__ void convert_kernel(const float* src, std::int64_t lds, double* dst, std::int64_t ldd, std::int64_t rows,
                               std::int64_t cols) {
  const std::int64_t total = rows * cols;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    dst[i + j * ldd] = static_cast<double>(src[i + j * lds]);
  }
}
}  // namespace

void convert(const MatrixView<const float>& src, const MatrixView<double>& dst, CUstream_st* stream) {
  detail::check_view("convert", "src", src);
  detail::check_view("convert", "dst", dst);
  if (src.rows != dst.rows || src.cols != dst.cols)
    throw InvalidArgument("convert: src is " + std::to_string(src.rows) + " x " + std::to_string(src.cols) +
                          " but dst is " + std::to_string(dst.rows) + " x " + std::to_string(dst.cols));
  if (src.memory != dst.memory) throw InvalidArgument("convert: src and dst must be in the same memory space");
  if (src.empty()) return;
  if (src.memory == Memory::Host) {
    for (std::int64_t j = 0; j < src.cols; ++j)
      for (std::int64_t i = 0; i < src.rows; ++i) dst(i, j) = src(i, j);
    return;
  }
  const std::int64_t blocks = (src.rows * src.cols + 255) / 256;
  convert_kernel<<<unsigned(blocks < 8192 ? blocks : 8192), 256, 0, stream>>>(src.data, src.ld, dst.data, dst.ld,
                                                                              src.rows, src.cols);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

}  // namespace mixsolve

// SPDX-License-Identifier: BSD-3-Clause
// Device generation of the application families (mixsolve/matgen/application_matrices.hpp): the
// per-index arrays are prepared on the host (prepare_elements, the same code as the host path) and
// copied over, then one elementwise kernel evaluates application_element for every (i, j).
// rankdef's X Y^T is a cuBLAS DGEMM of factors drawn on the device by fill_random.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "application_elements.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/application_matrices.hpp"

namespace mixsolve {

namespace {

using matgen_detail::ElementData;

// Thread (x) per row, columns strided over the grid's y dimension: consecutive threads write
// consecutive addresses of a column.
__global__ void application_kernel(ElementData d, double* a, std::int64_t lda, bool accumulate) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= d.n) return;
  for (std::int64_t j = blockIdx.y; j < d.n; j += gridDim.y) {
    const double v = matgen_detail::application_element(d, i, j);
    double* out = a + i + j * lda;
    *out = accumulate ? *out + v : v;
  }
}

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    MIXSOLVE_CUBLAS_CHECK(cublasCreate(&handle_));
    MIXSOLVE_CUBLAS_CHECK(cublasSetStream(handle_, stream));
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() { cublasDestroy(handle_); }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

void generate_application_matrix_on_device(const ApplicationSpec& spec, const MatrixView<double>& a,
                                           CUstream_st* stream) {
  const char* where = "generate_application_matrix_on_device";
  detail::check_view(where, "a", a);
  if (a.rows != a.cols)
    throw InvalidArgument(std::string(where) + ": a is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ", not square");
  if (a.memory != Memory::Device)
    throw InvalidArgument(std::string(where) + ": a is a host matrix (generate_application_matrix)");
  const std::int64_t n = a.rows;
  matgen_detail::PreparedElements prepared = matgen_detail::prepare_elements(spec, n, where);
  if (n == 0) return;
  ElementData d = prepared.data;
  DeviceBuffer<double> arrays[matgen_detail::kArrayCount];
  for (int k = 0; k < matgen_detail::kArrayCount; ++k) {
    if (prepared.arrays[k].empty()) continue;
    arrays[k] = DeviceBuffer<double>(prepared.arrays[k].size());
    arrays[k].copy_from_host(prepared.arrays[k], stream);
    d.arrays[k] = arrays[k].data();
  }
  DeviceBuffer<std::int64_t> sparse_columns(prepared.sparse_columns.size());
  if (!prepared.sparse_columns.empty()) {
    sparse_columns.copy_from_host(prepared.sparse_columns, stream);
    d.sparse_columns = sparse_columns.data();
  }

  bool accumulate = false;
  if (spec.family == ApplicationFamily::RankDeficient) {
    const std::int64_t r = matgen_detail::rankdef_rank(spec, n);
    DeviceBuffer<double> x(n * r), y(n * r);
    fill_random(device_view(x.data(), n, r, n), matgen_detail::rankdef_factor(spec, 0), stream);
    fill_random(device_view(y.data(), n, r, n), matgen_detail::rankdef_factor(spec, 1), stream);
    if (r == 0) {
      MIXSOLVE_CUDA_CHECK(cudaMemset2DAsync(a.data, a.ld * sizeof(double), 0, n * sizeof(double), n, stream));
    } else {
      const CublasHandle blas(stream);
      const double one = 1.0, zero = 0.0;
      MIXSOLVE_CUBLAS_CHECK(cublasSetPointerMode(blas.get(), CUBLAS_POINTER_MODE_HOST));
      MIXSOLVE_CUBLAS_CHECK(cublasDgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_T, int(n), int(n), int(r), &one, x.data(),
                                        int(n), y.data(), int(n), &zero, a.data, int(a.ld)));
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));  // before x, y and the handle go
    }
    if (spec.perturbation == 0) {
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      return;
    }
    accumulate = true;
  }
  const dim3 block(256);
  const dim3 grid(unsigned((n + 255) / 256), unsigned(std::min<std::int64_t>(n, 8192)));
  application_kernel<<<grid, block, 0, stream>>>(d, a.data, a.ld, accumulate);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));  // the arrays go out of scope
}

}  // namespace mixsolve

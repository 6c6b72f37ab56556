#include "kernels.h"

#include <cblas.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstring>

extern "C" void openblas_set_num_threads(int threads);

namespace mpi_executor {

void prepare_rank_process() {
  openblas_set_num_threads(1);
  mallopt(M_MMAP_MAX, 0);             // every allocation from the heap, whatever its size
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // and the heap not returned to the system
}

float* Kernels::scratch(std::vector<float>& buffer, size_t elements) {
  // Values stay finite and non-zero: denormals or NaNs would change the speed of what we time.
  if (buffer.size() < elements) buffer.resize(elements, 0.5f);
  return buffer.data();
}

void Kernels::gemm(size_t m, size_t n, size_t k) {
  if (m == 0 || n == 0 || k == 0) return;
  const float* a = scratch(a_, m * k);
  const float* b = scratch(b_, k * n);
  float* c = scratch(c_, m * n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c, static_cast<int>(n));
}

void Kernels::attention_head(size_t m, size_t n, size_t k) {
  if (m == 0 || n == 0 || k == 0) return;
  const float* q = scratch(a_, std::max(m * k, n * k));
  const float* kv = scratch(b_, n * k);
  float* scores = scratch(c_, m * n + m * k);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              1.0f, q, static_cast<int>(k), kv, static_cast<int>(k), 0.0f, scores, static_cast<int>(n));
  // Keep the scores bounded so the second product sees ordinary numbers.
  const float scale = 1.0f / static_cast<float>(n * k);
  for (size_t i = 0; i < m * n; ++i) scores[i] *= scale;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(k), static_cast<int>(n),
              1.0f, scores, static_cast<int>(n), kv, static_cast<int>(k), 0.0f, scores + m * n, static_cast<int>(k));
}

void Kernels::stream(double bytes) {
  const size_t elements = static_cast<size_t>(std::max(0.0, bytes) / (3.0 * sizeof(float)));
  if (elements == 0) return;
  const float* x = scratch(a_, elements);
  const float* y = scratch(b_, elements);
  float* z = scratch(c_, elements);
  for (size_t i = 0; i < elements; ++i) z[i] = x[i] + 0.5f * y[i];
}

void Kernels::copy(double bytes) {
  const size_t elements = static_cast<size_t>(std::max(0.0, bytes) / (2.0 * sizeof(float)));
  if (elements == 0) return;
  std::memcpy(scratch(c_, elements), scratch(a_, elements), elements * sizeof(float));
}

void Kernels::run(const pp_op& op, double share, double times) {
  const double work = share * times;
  if (work <= 0) return;
  const auto size = [](double value) { return static_cast<size_t>(std::llround(std::max(value, 0.0))); };
  switch (op.kind) {
    case PP_OP_GEMM: {
      const double count = op.count > 0 ? op.count : 1.0;
      const double forward = 2.0 * op.m * op.n * op.k * count;
      if (forward <= 0) return;
      const double products = op.flops / forward * work;  // whole (m, n, k) products per instance
      const double whole = std::floor(products + 1e-9), part = products - whole;
      for (double c = 0; c < count; ++c) {
        for (double p = 0; p < whole; ++p) gemm(size(op.m), size(op.n), size(op.k));
        if (part > 1e-6) gemm(size(op.m), size(op.n * part), size(op.k));
      }
      return;
    }
    case PP_OP_ATTENTION: {
      const double heads = op.count > 0 ? op.count : 1.0;
      if (op.m <= 0 || op.k <= 0) return;
      const double keys = op.flops * work / (4.0 * op.m * op.k * heads);
      for (double h = 0; h < heads; ++h) attention_head(size(op.m), size(keys), size(op.k));
      return;
    }
    case PP_OP_MEMORY: stream(op.bytes * work); return;
    case PP_OP_HOST_TRANSFER: copy(op.bytes * work); return;
    default: return;  // communication is not a kernel
  }
}

}  // namespace mpi_executor

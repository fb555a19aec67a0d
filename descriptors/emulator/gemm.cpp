#include "descriptors/emulator/gemm.h"

// Parallelism belongs to the emulator's TBB tasks; Eigen must never split a
// product itself (it would only with OpenMP, which we do not enable, but the
// define makes the single-threaded kernel explicit).
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>

namespace tdmsim::emu {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstView = Eigen::Map<const RowMajor, Eigen::Unaligned, Eigen::OuterStride<>>;
using View = Eigen::Map<RowMajor, Eigen::Unaligned, Eigen::OuterStride<>>;

Eigen::Index idx(std::size_t v) { return static_cast<Eigen::Index>(v); }

}  // namespace

void gemm_abt(const float* a, std::size_t lda, const float* w, std::size_t ldw, std::size_t m,
              std::size_t n, std::size_t k, float* c, std::size_t ldc) {
  const ConstView av(a, idx(m), idx(k), Eigen::OuterStride<>(idx(lda)));
  const ConstView wv(w, idx(n), idx(k), Eigen::OuterStride<>(idx(ldw)));
  View cv(c, idx(m), idx(n), Eigen::OuterStride<>(idx(ldc)));
  cv.noalias() = av * wv.transpose();
}

}  // namespace tdmsim::emu

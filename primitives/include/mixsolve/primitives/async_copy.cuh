// SPDX-License-Identifier: BSD-3-Clause
// Asynchronous global-to-shared copies (PTX cp.async, sm_80 and later). Every wrapper is a
// compiler memory barrier ("memory" clobber): the compiler keeps ordinary shared-memory loads and
// stores on the side of an issue, commit or wait where the code puts them, so a kernel needs no
// reasoning about which of them the hardware orders.
#pragma once

namespace mixsolve::primitives {

// The shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes from global `src` to shared `dst` (16-byte aligned both), bypassing L1 (.cg);
// bytes past `valid_bytes` (0..16) are zero-filled and not read.
__device__ __forceinline__ void copy_async_16(unsigned dst, const void* src, int valid_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid_bytes) : "memory");
}

// Copies kBytes (4, 8 or 16) through L1 (.ca, allowed for every size); bytes past `valid_bytes`
// are zero-filled.
template <int kBytes>
__device__ __forceinline__ void copy_async_small(unsigned dst, const void* src, int valid_bytes = kBytes) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(dst), "l"(src), "n"(kBytes), "r"(valid_bytes)
               : "memory");
}

// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are still in flight. Other
// threads' copies are visible only after a barrier that follows.
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

}  // namespace mixsolve::primitives

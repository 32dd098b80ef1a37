// The calibration's kernels, in hand-written PTX so that building needs no
// nvcc (PTX ISA 6.0 for sm_50 and later: any driver since CUDA 9 JIT-compiles
// it for its GPU; `ptxas -arch=sm_90` accepts it).
//
// gpushare_spin(u64 ns) is the workload's own (lib/kernels/spin_ptx.h); with
// 0 it is an empty kernel, for the launch cost.
//
// gpushare_gpucheck_slices(u64 ns, u64 threshold_ns, u64 out, u64 capacity)
// spins for ns nanoseconds too, and records each jump of %globaltimer larger
// than threshold_ns (a time the kernel did not run) as a pair (from, to) at
// out[3 + 2i], out[4 + 2i], at most `capacity` pairs; then it writes the
// number of pairs to out[0], its first reading to out[1] and its last to
// out[2]. Run with one thread (slices.h explains the analysis).
#pragma once

#include "kernels/spin_ptx.h"

namespace gpushare::gpucheck {

inline constexpr char kSlicesEntry[] = R"(
.visible .entry gpushare_gpucheck_slices(
	.param .u64 slices_ns,
	.param .u64 slices_threshold_ns,
	.param .u64 slices_out,
	.param .u64 slices_capacity
)
{
	.reg .pred 	%p<4>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [slices_ns];
	ld.param.u64 	%rd2, [slices_threshold_ns];
	ld.param.u64 	%rd3, [slices_out];
	ld.param.u64 	%rd4, [slices_capacity];
	cvta.to.global.u64 	%rd3, %rd3;
	mov.u64 	%rd5, %globaltimer;
	mov.u64 	%rd6, %rd5;
	mov.u64 	%rd7, 0;
$L_loop:
	mov.u64 	%rd8, %globaltimer;
	sub.u64 	%rd9, %rd8, %rd6;
	setp.gt.u64 	%p1, %rd9, %rd2;
	setp.lt.u64 	%p2, %rd7, %rd4;
	and.pred 	%p3, %p1, %p2;
	@!%p3 bra 	$L_next;
	shl.b64 	%rd10, %rd7, 4;
	add.u64 	%rd10, %rd10, %rd3;
	st.global.u64 	[%rd10+24], %rd6;
	st.global.u64 	[%rd10+32], %rd8;
	add.u64 	%rd7, %rd7, 1;
$L_next:
	mov.u64 	%rd6, %rd8;
	sub.u64 	%rd11, %rd8, %rd5;
	setp.lt.u64 	%p1, %rd11, %rd1;
	@%p1 bra 	$L_loop;
	st.global.u64 	[%rd3], %rd7;
	st.global.u64 	[%rd3+8], %rd5;
	st.global.u64 	[%rd3+16], %rd6;
	ret;
}
)";

inline constexpr auto kCalibrateModule =
    kernels::ptx_module(kernels::kPtxModuleHeader, kernels::kPtxSpinEntry, kSlicesEntry);
inline constexpr const char* kCalibratePtx = kCalibrateModule.data();

}  // namespace gpushare::gpucheck

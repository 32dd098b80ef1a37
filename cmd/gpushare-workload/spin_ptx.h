// The PTX of the gpushare_spin kernel, written by hand so that building
// needs no nvcc: it spins on %globaltimer until the number of nanoseconds
// in its one u64 parameter has passed. PTX ISA 6.0 for sm_50 and later is
// JIT-compiled by any driver since CUDA 9 for whatever GPU it runs on;
// `ptxas -arch=sm_75` (and sm_90, sm_100) accepts it. The simulated driver
// reads only the .entry name and takes the duration from the parameter.
#pragma once

namespace gpushare::workload {

inline constexpr char kSpinKernelName[] = "gpushare_spin";

inline constexpr char kSpinPtx[] = R"(//
// gpushare_spin(u64 ns): busy-wait for ns nanoseconds of %globaltimer.
//
.version 6.0
.target sm_50
.address_size 64

.visible .entry gpushare_spin(
	.param .u64 gpushare_spin_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [gpushare_spin_param_0];
	mov.u64 	%rd2, %globaltimer;
$L_spin:
	mov.u64 	%rd3, %globaltimer;
	sub.u64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L_spin;
	ret;
}
)";

}  // namespace gpushare::workload

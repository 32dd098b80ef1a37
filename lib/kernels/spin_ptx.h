// The PTX of the gpushare_spin kernel, the one home of the kernels that the
// workload, the test clients and the real-GPU calibration share. Written by
// hand so that building needs no nvcc: it spins on %globaltimer until the
// number of nanoseconds in its one u64 parameter has passed (0: an empty
// kernel). PTX ISA 6.0 for sm_50 and later is JIT-compiled by any driver
// since CUDA 9 for whatever GPU it runs on; `ptxas -arch=sm_75` (and sm_90,
// sm_100) accepts it. The simulated driver reads only the .entry name and
// takes the duration from the parameter.
//
// A module is its header and its entries, joined at compile time
// (ptx_module), so a module with more kernels (the calibration's) holds the
// same gpushare_spin text.
#pragma once

#include <array>
#include <cstddef>

namespace gpushare::kernels {

inline constexpr char kSpinKernelName[] = "gpushare_spin";

inline constexpr char kPtxModuleHeader[] = R"(//
.version 6.0
.target sm_50
.address_size 64
)";

inline constexpr char kPtxSpinEntry[] = R"(
// gpushare_spin(u64 ns): busy-wait for ns nanoseconds of %globaltimer.
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

/// The pieces joined into one NUL-terminated module text, at compile time.
template <std::size_t... Sizes>
constexpr auto ptx_module(const char (&... pieces)[Sizes]) {
  std::array<char, (Sizes + ...) - sizeof...(Sizes) + 1> text{};
  std::size_t at = 0;
  auto append = [&](const char* piece, std::size_t size) {
    for (std::size_t i = 0; i + 1 < size; ++i) text[at++] = piece[i];
  };
  (append(pieces, Sizes), ...);
  text[at] = '\0';
  return text;
}

/// A module holding gpushare_spin alone.
inline constexpr auto kSpinModule = ptx_module(kPtxModuleHeader, kPtxSpinEntry);
inline constexpr const char* kSpinPtx = kSpinModule.data();

}  // namespace gpushare::kernels

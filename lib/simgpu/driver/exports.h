// This library's own address of a driver entry point, by exported name
// (e.g. "cuMemAlloc_v2"); nullptr for names the driver does not export.
#pragma once

namespace gpushare::simgpu::driver {

void* export_address(const char* symbol);

}  // namespace gpushare::simgpu::driver

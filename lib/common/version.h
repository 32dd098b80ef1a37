#pragma once

namespace gpushare {

/// The project's version, e.g. "0.1.0", from CMake's project(VERSION).
const char* version();

}  // namespace gpushare

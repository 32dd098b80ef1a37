// Where the coordinator's socket is, and whether one is listening there.
// Plain C-style code (no allocation, no exceptions): the interposer's client
// uses it, and so do gpushare-ctl and gpushare-run.
//
// The socket (design.md, "Socket"):
//   1. $GPUSHARE_SOCKET when set and non-empty;
//   2. /run/gpushare/gpushare.sock when it exists (a node-wide coordinator);
//   3. $XDG_RUNTIME_DIR/gpushare/gpushare.sock when XDG_RUNTIME_DIR is set;
//   4. /tmp/gpushare-UID/gpushare.sock (the directory mode 0700, owned by UID).
#pragma once

#include <cstddef>

namespace gpushare::coord {

inline constexpr const char* kNodeSocketPath = "/run/gpushare/gpushare.sock";

/// Which rule chose the path.
enum class SocketSource { kEnvironment, kNode, kRuntimeDir, kTmp };

/// Writes the socket path into `buffer` (NUL-terminated). Returns false when
/// it does not fit, or does not fit a unix socket address (107 bytes).
/// `getenv_fn` is getenv in production; tests pass their own.
bool default_socket_path(char* buffer, std::size_t size, SocketSource* source = nullptr,
                         const char* (*getenv_fn)(const char*) = nullptr);

/// Whether `socket_path` lies in a per-user default directory (rules 3 and
/// 4 above: $XDG_RUNTIME_DIR/gpushare or /tmp/gpushare-UID), which must be
/// private to the user however the path was given.
bool in_per_user_directory(const char* socket_path,
                           const char* (*getenv_fn)(const char*) = nullptr);

/// The directory part of a socket path, into `buffer`. False when it does not fit.
bool socket_directory(const char* socket_path, char* buffer, std::size_t size);

enum class SocketProbe {
  kLive,       ///< a coordinator accepted the connection
  kAbsent,     ///< no file at the path
  kStale,      ///< a socket file nobody listens on (a coordinator died)
  kNotSocket,  ///< something else is at the path
  kError,      ///< another failure (permissions, path too long, ...)
};

/// Tests whether a coordinator is listening at `path`: connects (a unix
/// connect never waits for the peer to accept) and closes. When live and
/// `peer_pid` is non-null, stores the listener's pid. Never blocks.
SocketProbe probe_socket(const char* path, int* peer_pid = nullptr);

/// A short name for a probe result ("live", "absent", ...).
const char* probe_name(SocketProbe probe);

}  // namespace gpushare::coord

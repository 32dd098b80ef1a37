// Where the coordinator's socket is, and whether one is listening there.
// Plain C-style code (no allocation, no exceptions): the interposer's client
// uses it, and so do gpushare-ctl and gpushare-run.
//
// The socket (docs/design.md, "Socket"):
//   1. $GPUSHARE_SOCKET when set and non-empty;
//   2. /run/gpushare/gpushare.sock when it exists (a node-wide coordinator);
//   3. $XDG_RUNTIME_DIR/gpushare/gpushare.sock when XDG_RUNTIME_DIR is set;
//   4. /tmp/gpushare-UID/gpushare.sock (the directory mode 0700, owned by UID).
#pragma once

#include <sys/types.h>

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
/// connect never waits for the peer to accept) and closes. When live, stores
/// the listener's pid and uid where asked (0 and (uid_t)-1 when the backlog
/// is full and they cannot be known). Never blocks.
SocketProbe probe_socket(const char* path, int* peer_pid = nullptr, uid_t* peer_uid = nullptr);

/// A short name for a probe result ("live", "absent", ...).
const char* probe_name(SocketProbe probe);

// ---- trust -----------------------------------------------------------------
// Whoever listens on a socket path this process would use can answer it:
// another user on the machine may create /tmp/gpushare-UID first and run a
// coordinator of their own there. So every client checks, before trusting
// anything it reads, that the coordinator runs as this user or as root
// (SO_PEERCRED names the process that called listen()), and refuses a
// per-user directory that is not private to this user.

/// A coordinator may be trusted when it runs as this user or as root.
bool trusted_uid(uid_t uid);

/// Whether the peer of the connected unix socket `fd` may be trusted.
/// `peer_uid` (optional) receives its uid, or (uid_t)-1 when unknown.
bool peer_is_trusted(int fd, uid_t* peer_uid = nullptr);

enum class DirectoryTrust {
  kPrivate,       ///< a directory (not a link) owned by this user or root, mode 0700 or stricter
  kAbsent,        ///< nothing there yet: it will be created, private
  kForeign,       ///< owned by another user
  kNotPrivate,    ///< group or others may enter or write
  kNotDirectory,  ///< a symbolic link or another kind of file
  kError,         ///< lstat failed otherwise
};

/// Checks the per-user directory `directory` (lstat: a link is refused).
/// `owner` (optional) receives its owner's uid.
DirectoryTrust check_private_directory(const char* directory, uid_t* owner = nullptr);

/// A short phrase for a directory check ("owned by another user", ...).
const char* directory_trust_name(DirectoryTrust trust);

/// Both checks for a socket path before connecting: when the path lies in
/// a per-user default directory, that directory must be kPrivate. Writes a
/// reason into `why` (may be null) on refusal.
bool socket_directory_trusted(const char* socket_path, char* why, std::size_t why_size,
                              const char* (*getenv_fn)(const char*) = nullptr);

}  // namespace gpushare::coord

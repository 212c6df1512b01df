//! Where a unix socket server listens, and who may reach it. `--listen unix://PATH` serves the
//! websocket protocol over a unix domain socket (`websocket::serve_unix`), as the reference's
//! `codex app-server --listen unix://PATH` does, so that local clients (every editor window,
//! the proxies) share one server without a TCP port anyone on the machine could reach.
//!
//! What this module guarantees about the socket file:
//! - It is created with mode 0600, under its final name only once that mode is set (bound
//!   under a temporary name, then renamed), in a directory other users cannot write into.
//! - One server per path: a lock file beside the socket (`PATH.lock`, holding the owner's pid)
//!   is held while the server runs. A live server's socket is never replaced: a second server
//!   is refused with the owner's pid. A stale socket (its server died) is replaced.
//! - A socket address holds at most [`MAX_SOCKET_PATH_BYTES`] bytes. A longer path gets a short
//!   one in a private directory (`$XDG_RUNTIME_DIR/tandem`, or `/tmp/tandem-UID`) and a
//!   symbolic link at the long path; [`connect_path`] follows it for clients.
//! - The file, and the link, are removed when the listener is dropped, if they are still ours.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{
    DirBuilderExt as _, FileTypeExt as _, MetadataExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use tokio::net::UnixListener;

/// The longest socket path a `sockaddr_un` holds on Linux (108 bytes with the final NUL).
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// Why a unix socket cannot be served at a path.
#[derive(Debug, thiserror::Error)]
pub enum UnixSocketError {
    /// Another server is serving the path.
    #[error(
        "{path} is served by a running server{}; stop it (tandem app-server daemon stop, or \
         kill that pid) or listen on another path",
        owner_text(*.owner)
    )]
    InUse {
        /// The socket path.
        path: PathBuf,
        /// The owner's process id, when known.
        owner: Option<i32>,
    },
    /// Something other than a socket (or a link to one) is at the path.
    #[error("{0} exists and is not a unix socket; remove it or listen on another path")]
    NotASocket(PathBuf),
    /// The socket's directory lets other users replace the socket.
    #[error(
        "other users can write into {0}, so they could replace the socket; listen on a path in \
         a directory only you can write (e.g. under $XDG_RUNTIME_DIR or $TANDEM_HOME)"
    )]
    UnsafeDirectory(PathBuf),
    /// The private directory for a short path belongs to someone else.
    #[error(
        "{0} is not a directory owned by this user with mode 0700; remove it, or set \
         XDG_RUNTIME_DIR to a private directory"
    )]
    ForeignDirectory(PathBuf),
    /// A file system operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn owner_text(owner: Option<i32>) -> String {
    owner.map_or_else(String::new, |pid| format!(" (pid {pid})"))
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> UnixSocketError {
    let path = path.to_owned();
    move |source| UnixSocketError::Io {
        action,
        path,
        source,
    }
}

/// A bound unix socket, served by `websocket::serve_unix`. Dropping it removes the socket
/// file (and the link at a long path) if they are still this listener's, and releases the
/// lock.
#[derive(Debug)]
pub struct UnixSocketListener {
    pub(crate) listener: UnixListener,
    /// The path clients were given (the link, for a long path).
    path: PathBuf,
    /// Where the socket file is.
    socket: PathBuf,
    /// The socket file's inode, to recognise it at cleanup.
    inode: u64,
    /// Held while the listener lives (`PATH.lock`); released when dropped.
    _lock: File,
}

impl UnixSocketListener {
    /// The path clients connect to (as given to [`bind`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the socket file is: the given path, or the short path it links to.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }
}

impl Drop for UnixSocketListener {
    fn drop(&mut self) {
        if fs::symlink_metadata(&self.socket).is_ok_and(|meta| meta.ino() == self.inode) {
            let _ = fs::remove_file(&self.socket);
        }
        if self.path != self.socket
            && fs::read_link(&self.path).is_ok_and(|target| target == self.socket)
        {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The path a client connects to for `path`: itself, or for a path longer than a socket
/// address holds, the short path its link names.
pub fn connect_path(path: &Path) -> io::Result<PathBuf> {
    if path.as_os_str().len() <= MAX_SOCKET_PATH_BYTES {
        return Ok(path.to_owned());
    }
    let target = fs::read_link(path).map_err(|error| {
        io::Error::new(
            error.kind(),
            format!(
                "{} is longer than the {MAX_SOCKET_PATH_BYTES} bytes a unix socket address holds \
                 and is not a link to a shorter one: {error}",
                path.display()
            ),
        )
    })?;
    Ok(match path.parent() {
        Some(parent) if target.is_relative() => parent.join(target),
        _ => target,
    })
}

/// The pid of the Tandem server serving `path` now (the holder of its lock), or `None` when
/// none does (for `tandem app-server daemon status` and `stop`).
pub fn owner(path: &Path) -> Option<i32> {
    let socket = connect_path(path).ok()?;
    let mut file = File::open(lock_path(&socket)).ok()?;
    // A shared lock is refused exactly while a server holds the exclusive one.
    if file.try_lock_shared().is_ok() {
        let _ = file.unlock();
        return None;
    }
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Binds a unix socket at `path` (created with mode 0600; see the module doc for the rules).
pub async fn bind(path: &Path) -> Result<UnixSocketListener, UnixSocketError> {
    let socket = socket_location(path)?;
    let directory = socket.parent().unwrap_or(Path::new("/")).to_owned();
    prepare_directory(&directory)?;
    if socket != path
        && let Some(parent) = path.parent()
    {
        prepare_directory(parent)?;
    }
    let lock = take_lock(&socket)?;
    // The lock says no Tandem server holds the path; a server that takes no lock (another
    // program, the reference) may still be serving it.
    if let Some(owner) = live_owner(&socket).await? {
        return Err(UnixSocketError::InUse {
            path: path.to_owned(),
            owner,
        });
    }
    match fs::symlink_metadata(&socket) {
        Ok(meta) if meta.file_type().is_socket() => {
            tracing::info!(path = %socket.display(), "replacing the stale socket of a server that is gone");
            fs::remove_file(&socket).map_err(io_error("remove the stale socket", &socket))?;
        }
        Ok(_) => return Err(UnixSocketError::NotASocket(socket)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error("inspect", &socket)(error)),
    }
    // Bound under a temporary name and renamed once private, so the socket is never
    // reachable under its name with the umask's mode.
    let staging = staging_path(&socket);
    let _ = fs::remove_file(&staging);
    let listener = UnixListener::bind(&staging).map_err(io_error("bind", &staging))?;
    let private = fs::set_permissions(&staging, fs::Permissions::from_mode(0o600))
        .and_then(|()| fs::rename(&staging, &socket));
    if let Err(error) = private {
        let _ = fs::remove_file(&staging);
        return Err(io_error("make private and place the socket", &socket)(
            error,
        ));
    }
    let inode = fs::symlink_metadata(&socket)
        .map_err(io_error("inspect", &socket))?
        .ino();
    if socket != path {
        place_link(path, &socket)?;
    }
    Ok(UnixSocketListener {
        listener,
        path: path.to_owned(),
        socket,
        inode,
        _lock: lock,
    })
}

/// The temporary name `socket` is bound under before it is made private: short, so that it
/// fits a socket address wherever `socket` does (see [`fits`]).
fn staging_path(socket: &Path) -> PathBuf {
    socket.with_file_name(format!(".{}.s", std::process::id()))
}

/// Whether a socket can be bound at `path`: it and its staging name fit a socket address.
fn fits(path: &Path) -> bool {
    path.as_os_str().len() <= MAX_SOCKET_PATH_BYTES
        && staging_path(path).as_os_str().len() <= MAX_SOCKET_PATH_BYTES
}

/// Where the socket file goes for `path`: `path` itself when short enough, or a short path
/// named by a digest of `path` in a private directory.
fn socket_location(path: &Path) -> Result<PathBuf, UnixSocketError> {
    if fits(path) {
        return Ok(path.to_owned());
    }
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    let name: String = digest[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let directory = short_directory()?;
    Ok(directory.join(format!("{name}.sock")))
}

/// The private directory of short socket paths: `$XDG_RUNTIME_DIR/tandem` (the runtime
/// directory is the user's own, mode 0700 by the spec), else `/tmp/tandem-UID`, created 0700
/// and refused if someone else made it first.
fn short_directory() -> Result<PathBuf, UnixSocketError> {
    let uid = current_uid();
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && runtime.is_absolute()
        && fs::metadata(&runtime).is_ok_and(|meta| meta.is_dir() && meta.uid() == uid)
    {
        let directory = runtime.join("tandem");
        if directory.as_os_str().len() + 38 <= MAX_SOCKET_PATH_BYTES {
            create_private(&directory)?;
            return Ok(directory);
        }
    }
    let directory = PathBuf::from(format!("/tmp/tandem-{uid}"));
    create_private(&directory)?;
    Ok(directory)
}

/// Creates `directory` with mode 0700 unless it exists; either way it must be this user's
/// and private, or someone else could read or replace the sockets in it.
fn create_private(directory: &Path) -> Result<(), UnixSocketError> {
    match fs::DirBuilder::new().mode(0o700).create(directory) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(io_error("create", directory)(error)),
    }
    let meta = fs::symlink_metadata(directory).map_err(io_error("inspect", directory))?;
    if !meta.is_dir() || meta.uid() != current_uid() || meta.mode() & 0o077 != 0 {
        return Err(UnixSocketError::ForeignDirectory(directory.to_owned()));
    }
    Ok(())
}

/// Creates the socket's directory (mode 0700) if missing, and refuses one that other users
/// can write into without the sticky bit (they could swap the socket for their own).
fn prepare_directory(directory: &Path) -> Result<(), UnixSocketError> {
    if !directory.exists() {
        fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(directory)
            .map_err(io_error("create", directory))?;
    }
    let meta = fs::metadata(directory).map_err(io_error("inspect", directory))?;
    let sticky = meta.mode() & 0o1000 != 0;
    if meta.mode() & 0o022 != 0 && !sticky {
        return Err(UnixSocketError::UnsafeDirectory(directory.to_owned()));
    }
    Ok(())
}

/// Takes `SOCKET.lock` (an advisory lock held while the server runs) and writes this pid
/// into it; a held lock means a live Tandem server, named by the pid it wrote.
fn take_lock(socket: &Path) -> Result<File, UnixSocketError> {
    let lock_path = lock_path(socket);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(io_error("open the lock file", &lock_path))?;
    if file.try_lock().is_err() {
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        return Err(UnixSocketError::InUse {
            path: socket.to_owned(),
            owner: text.trim().parse().ok(),
        });
    }
    file.set_len(0)
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .map_err(io_error("write the lock file", &lock_path))?;
    Ok(file)
}

/// Whether something answers on `socket`, and if so its pid (`SO_PEERCRED`).
async fn live_owner(socket: &Path) -> Result<Option<Option<i32>>, UnixSocketError> {
    match tokio::net::UnixStream::connect(socket).await {
        Ok(stream) => Ok(Some(stream.peer_cred().ok().and_then(|cred| cred.pid()))),
        // Nothing listens (a stale socket, or none at all).
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            ) =>
        {
            Ok(None)
        }
        // Something else is at the path (a file): the caller reports it.
        Err(_) => Ok(None),
    }
}

/// Points the long path at the socket: a symbolic link, replacing an old link (never a file).
fn place_link(path: &Path, socket: &Path) -> Result<(), UnixSocketError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() || meta.file_type().is_socket() => {
            fs::remove_file(path).map_err(io_error("replace the old link", path))?;
        }
        Ok(_) => return Err(UnixSocketError::NotASocket(path.to_owned())),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error("inspect", path)(error)),
    }
    std::os::unix::fs::symlink(socket, path).map_err(io_error("link the socket at", path))
}

fn current_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_socket_is_private_and_removed_with_its_listener() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = bind(&path).await.unwrap();
        let meta = fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o777, 0o600);
        drop(listener);
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn a_live_socket_is_refused_with_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let first = bind(&path).await.unwrap();
        let refused = bind(&path).await.unwrap_err();
        let pid = i32::try_from(std::process::id()).unwrap();
        assert!(
            matches!(&refused, UnixSocketError::InUse { owner: Some(owner), .. } if *owner == pid),
            "{refused:?}"
        );
        assert!(refused.to_string().contains(&format!("pid {pid}")));
        assert!(
            tokio::net::UnixStream::connect(&path).await.is_ok(),
            "the first still serves"
        );
        drop(first);
    }

    #[tokio::test]
    async fn a_stale_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        // A server that died leaves its socket file, with nothing listening behind it.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let listener = bind(&path).await.unwrap();
        assert!(tokio::net::UnixStream::connect(&path).await.is_ok());
        drop(listener);
    }

    #[tokio::test]
    async fn a_server_without_our_lock_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let _other = UnixListener::bind(&path).unwrap();
        let refused = bind(&path).await.unwrap_err();
        assert!(
            matches!(refused, UnixSocketError::InUse { .. }),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn a_file_at_the_path_is_never_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        fs::write(&path, "mine").unwrap();
        let refused = bind(&path).await.unwrap_err();
        assert!(
            matches!(refused, UnixSocketError::NotASocket(_)),
            "{refused:?}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "mine");
    }

    #[tokio::test]
    async fn a_long_path_links_to_a_short_socket() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("d".repeat(60)).join("e".repeat(60));
        // A path that fits only without its staging name goes the short way too: one of
        // exactly the most bytes, whose staging name (`.PID.s` for `s`) is longer whatever
        // the pid (a fixed length failed once pids had wrapped round to three digits).
        let short_name_dir = dir
            .path()
            .join("f".repeat(MAX_SOCKET_PATH_BYTES - 3 - dir.path().as_os_str().len()));
        let almost = short_name_dir.join("s");
        assert_eq!(almost.as_os_str().len(), MAX_SOCKET_PATH_BYTES);
        let listener = bind(&almost).await.unwrap();
        assert_ne!(listener.socket_path(), almost);
        assert!(tokio::net::UnixStream::connect(&almost).await.is_ok());
        drop(listener);
        let path = deep.join("app-server.sock");
        assert!(path.as_os_str().len() > MAX_SOCKET_PATH_BYTES);
        let listener = bind(&path).await.unwrap();
        let socket = listener.socket_path().to_owned();
        assert!(socket.as_os_str().len() <= MAX_SOCKET_PATH_BYTES);
        assert_eq!(connect_path(&path).unwrap(), socket);
        assert!(
            tokio::net::UnixStream::connect(connect_path(&path).unwrap())
                .await
                .is_ok()
        );
        drop(listener);
        assert!(!socket.exists());
        assert!(
            fs::symlink_metadata(&path).is_err(),
            "the link is removed too"
        );
    }

    #[tokio::test]
    async fn a_directory_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let refused = bind(&open.join("s.sock")).await.unwrap_err();
        assert!(
            matches!(refused, UnixSocketError::UnsafeDirectory(_)),
            "{refused:?}"
        );
    }
}

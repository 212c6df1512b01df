//! What the `fs/*` requests other than the watches do to the file system, as blocking
//! functions over `std::fs` (the caller runs them on a blocking task): reading with the byte
//! bound, writing, creating directories, metadata, listing, removing and copying. Errors keep
//! the reference app-server's wording (an OS error as the OS words it, -32603; a refused
//! request with its own sentence, -32600), see [`FsError`].

use std::fs;
use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;

use base64::Engine as _;
use tandem_protocol::{
    AbsolutePathBuf, FsCopyParams, FsCreateDirectoryParams, FsGetMetadataResponse,
    FsReadDirectoryEntry, FsReadDirectoryResponse, FsReadFileResponse, FsRemoveParams,
    FsWriteFileParams,
};

use super::FsError;

/// `fs/readFile`: the contents of a regular file of at most `max_bytes` bytes, base64.
pub(super) fn read_file(
    path: &AbsolutePathBuf,
    max_bytes: u64,
) -> Result<FsReadFileResponse, FsError> {
    let metadata = fs::metadata(path)?;
    if !metadata.is_file() {
        return Err(FsError::NotAFile { path: path.clone() });
    }
    let too_large = |size: u64| FsError::TooLarge {
        path: path.clone(),
        size,
        max_bytes,
    };
    if metadata.len() > max_bytes {
        return Err(too_large(metadata.len()));
    }
    // The file may grow between the stat and the read: never read past the bound.
    let mut data = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    fs::File::open(path)?
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut data)?;
    let read = u64::try_from(data.len()).unwrap_or(u64::MAX);
    if read > max_bytes {
        return Err(too_large(read));
    }
    Ok(FsReadFileResponse {
        data_base64: base64::engine::general_purpose::STANDARD.encode(&data),
    })
}

/// `fs/writeFile`: creates or truncates the file and writes the decoded bytes.
pub(super) fn write_file(params: &FsWriteFileParams) -> Result<(), FsError> {
    let data = base64::engine::general_purpose::STANDARD
        .decode(params.data_base64.as_bytes())
        .map_err(|source| FsError::InvalidBase64 { source })?;
    fs::write(&params.path, data)?;
    Ok(())
}

/// `fs/createDirectory`: with parents (and an existing directory accepted) unless
/// `recursive: false`.
pub(super) fn create_directory(params: &FsCreateDirectoryParams) -> Result<(), FsError> {
    if params.recursive.unwrap_or(true) {
        fs::create_dir_all(&params.path)?;
    } else {
        fs::create_dir(&params.path)?;
    }
    Ok(())
}

/// Milliseconds since the Unix epoch, `0` when the time is unavailable or before it.
fn unix_ms(time: io::Result<SystemTime>) -> i64 {
    time.ok()
        .and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok())
        .and_then(|since| i64::try_from(since.as_millis()).ok())
        .unwrap_or(0)
}

/// `fs/getMetadata`: kinds through symbolic links, whether the path itself is one, times.
pub(super) fn get_metadata(path: &AbsolutePathBuf) -> Result<FsGetMetadataResponse, FsError> {
    let metadata = fs::metadata(path)?;
    let is_symlink = fs::symlink_metadata(path)?.file_type().is_symlink();
    Ok(FsGetMetadataResponse {
        is_directory: metadata.is_dir(),
        is_file: metadata.is_file(),
        is_symlink,
        created_at_ms: unix_ms(metadata.created()),
        modified_at_ms: unix_ms(metadata.modified()),
    })
}

/// `fs/readDirectory`: the direct children, sorted by name. An entry whose link target is
/// missing is listed as neither file nor directory.
pub(super) fn read_directory(path: &AbsolutePathBuf) -> Result<FsReadDirectoryResponse, FsError> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(path)? {
        let entry = entry?;
        let (is_directory, is_file) = match fs::metadata(entry.path()) {
            Ok(metadata) => (metadata.is_dir(), metadata.is_file()),
            Err(_) => (false, false),
        };
        entries.push(FsReadDirectoryEntry {
            file_name: entry.file_name().to_string_lossy().into_owned(),
            is_directory,
            is_file,
        });
    }
    entries.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(FsReadDirectoryResponse { entries })
}

/// `fs/remove`: a file or link (the link, not its target), or a directory (its contents too
/// unless `recursive: false`); a missing path is accepted unless `force: false`.
pub(super) fn remove(params: &FsRemoveParams) -> Result<(), FsError> {
    let metadata = match fs::symlink_metadata(&params.path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound && params.force.unwrap_or(true) => {
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    if metadata.is_dir() {
        if params.recursive.unwrap_or(true) {
            fs::remove_dir_all(&params.path)?;
        } else {
            fs::remove_dir(&params.path)?;
        }
    } else {
        fs::remove_file(&params.path)?;
    }
    Ok(())
}

/// `fs/copy`: a link as a link, a file's contents (over an existing file), or with
/// `recursive` a directory tree merged into the destination.
pub(super) fn copy(params: &FsCopyParams) -> Result<(), FsError> {
    let source = params.source_path.as_path();
    let destination = params.destination_path.as_path();
    let metadata = fs::symlink_metadata(source)?;
    if metadata.is_dir() {
        if !params.recursive {
            return Err(FsError::CopyDirectoryNeedsRecursive);
        }
        if is_same_or_inside(source, destination) {
            return Err(FsError::CopyIntoItself);
        }
        return copy_tree(source, destination);
    }
    if !metadata.file_type().is_symlink() && is_same_file(source, destination) {
        // `std::fs::copy` would truncate the file before reading it.
        return Err(FsError::CopyOntoItself);
    }
    copy_entry(source, destination, &metadata)
}

/// Copies one non-directory entry.
fn copy_entry(source: &Path, destination: &Path, metadata: &fs::Metadata) -> Result<(), FsError> {
    if metadata.file_type().is_symlink() {
        let target = fs::read_link(source)?;
        copy_link(&target, destination)?;
    } else {
        fs::copy(source, destination)?;
    }
    Ok(())
}

#[cfg(unix)]
fn copy_link(target: &Path, destination: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, destination)
}

#[cfg(windows)]
fn copy_link(target: &Path, destination: &Path) -> io::Result<()> {
    if fs::metadata(target).is_ok_and(|metadata| metadata.is_dir()) {
        std::os::windows::fs::symlink_dir(target, destination)
    } else {
        std::os::windows::fs::symlink_file(target, destination)
    }
}

/// Copies a directory tree into `destination` (created if missing), links as links.
fn copy_tree(source: &Path, destination: &Path) -> Result<(), FsError> {
    match fs::create_dir(destination) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists && destination.is_dir() => {}
        Err(error) => return Err(error.into()),
    }
    for entry in fs::read_dir(source)? {
        let entry = entry?;
        let from = entry.path();
        let to = destination.join(entry.file_name());
        let metadata = fs::symlink_metadata(&from)?;
        if metadata.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            copy_entry(&from, &to, &metadata)?;
        }
    }
    Ok(())
}

/// Whether `inner` is `outer` or below it, as written and through symbolic links (the
/// nearest existing ancestor of `inner` resolved).
fn is_same_or_inside(outer: &Path, inner: &Path) -> bool {
    if inner.starts_with(outer) {
        return true;
    }
    let Ok(outer) = fs::canonicalize(outer) else {
        return false;
    };
    let mut existing = inner;
    let mut rest = Vec::new();
    loop {
        if let Ok(resolved) = fs::canonicalize(existing) {
            let resolved = rest
                .iter()
                .rev()
                .fold(resolved, |path, name| path.join(name));
            return resolved.starts_with(&outer);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return false,
        }
    }
}

/// Whether both paths exist and name the same file.
fn is_same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

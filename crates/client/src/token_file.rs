//! Reading a bearer token from a file, for both ends of a websocket connection: the server's
//! `--ws-token-file` and a client's `--token-file` ([`crate::WebSocketTarget::token_file`]).
//!
//! A token is a password. A file that other users may read (or change) gives it away, so it is
//! refused, as ssh refuses a private key others can read, rather than used in silence: one
//! check here, shared by every path that reads a token file, so the rule cannot drift apart.

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Why a token file was not used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be opened or read.
    #[error("cannot read the token file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What opening or reading it answered.
        #[source]
        source: std::io::Error,
    },
    /// Users other than the owner have permissions on the file.
    #[error(
        "the token file {} has mode {mode:04o}: users other than its owner may read it, so it \
         is refused; run `chmod 600 {}` to make it private",
        path.display(),
        path.display()
    )]
    OpenToOthers {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// The token in `path`, without surrounding whitespace; refused when the file grants any
/// permission to its group or to others (`mode & 0o077 != 0`).
///
/// The mode is taken from the opened file, not looked up by path beforehand, so the file that
/// was checked is the one that is read.
pub fn read_token_file(path: impl AsRef<Path>) -> Result<String, TokenFileError> {
    let path = path.as_ref();
    let unreadable = |source| TokenFileError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
    let mode = file.metadata().map_err(unreadable)?.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(TokenFileError::OpenToOthers {
            path: path.to_path_buf(),
            mode,
        });
    }
    let mut token = String::new();
    file.read_to_string(&mut token).map_err(unreadable)?;
    Ok(token.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_file_with_mode(dir: &Path, mode: u32) -> PathBuf {
        let path = dir.join(format!("token-{mode:o}"));
        std::fs::write(&path, "s3cret\n").expect("write the token");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    #[test]
    fn only_a_file_private_to_its_owner_is_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        for mode in [0o600, 0o400] {
            let path = token_file_with_mode(dir.path(), mode);
            assert_eq!(read_token_file(&path).expect("accepted"), "s3cret");
        }
        for mode in [0o640, 0o644, 0o666, 0o604, 0o610] {
            let path = token_file_with_mode(dir.path(), mode);
            let error = read_token_file(&path).expect_err("refused");
            assert!(
                matches!(error, TokenFileError::OpenToOthers { mode: found, .. } if found == mode),
                "{error:?}"
            );
            let message = error.to_string();
            for needed in [
                path.display().to_string(),
                format!("mode 0{mode:o}"),
                format!("chmod 600 {}", path.display()),
            ] {
                assert!(message.contains(&needed), "{needed:?} missing: {message}");
            }
        }
    }

    #[test]
    fn a_missing_file_names_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("absent");
        let error = read_token_file(&path).expect_err("missing");
        assert!(
            matches!(error, TokenFileError::Unreadable { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
    }
}

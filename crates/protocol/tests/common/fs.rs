//! fs29: samples of the `fs/*` methods and `fs/changed`.

use tandem_protocol::*;

use super::*;

fn path(text: &str) -> AbsolutePathBuf {
    AbsolutePathBuf::new(text).expect("absolute")
}

/// One `fs/*` request per method, ids 40 to 48.
pub(crate) fn fs_requests() -> Vec<ClientRequest> {
    use client_methods as m;
    vec![
        request::<m::FsReadFile>(
            40,
            FsReadFileParams {
                path: path("/home/dev/project/a.txt"),
            },
        ),
        request::<m::FsWriteFile>(
            41,
            FsWriteFileParams {
                path: path("/home/dev/project/b.txt"),
                data_base64: s("aGVsbG8="),
            },
        ),
        request::<m::FsCreateDirectory>(
            42,
            FsCreateDirectoryParams {
                path: path("/home/dev/project/out"),
                recursive: Some(false),
            },
        ),
        request::<m::FsGetMetadata>(
            43,
            FsGetMetadataParams {
                path: path("/home/dev"),
            },
        ),
        request::<m::FsReadDirectory>(44, FsReadDirectoryParams { path: path(CWD) }),
        request::<m::FsRemove>(
            45,
            FsRemoveParams {
                path: path("/home/dev/project/out"),
                recursive: Some(true),
                force: Some(false),
            },
        ),
        request::<m::FsCopy>(
            46,
            FsCopyParams {
                source_path: path("/home/dev/project/src"),
                destination_path: path("/home/dev/project/src2"),
                recursive: true,
            },
        ),
        request::<m::FsWatch>(
            47,
            FsWatchParams {
                path: path(CWD),
                watch_id: s("w-1"),
            },
        ),
        request::<m::FsUnwatch>(48, FsUnwatchParams { watch_id: s("w-1") }),
    ]
}

pub(crate) fn fs_read_file_response() -> FsReadFileResponse {
    FsReadFileResponse {
        data_base64: s("aGVsbG8="),
    }
}

pub(crate) fn fs_get_metadata_response() -> FsGetMetadataResponse {
    FsGetMetadataResponse {
        is_directory: false,
        is_file: true,
        is_symlink: true,
        created_at_ms: 0,
        modified_at_ms: 1_796_537_799_443,
    }
}

pub(crate) fn fs_read_directory_response() -> FsReadDirectoryResponse {
    FsReadDirectoryResponse {
        entries: vec![
            FsReadDirectoryEntry {
                file_name: s("a.txt"),
                is_directory: false,
                is_file: true,
            },
            FsReadDirectoryEntry {
                file_name: s("src"),
                is_directory: true,
                is_file: false,
            },
        ],
    }
}

pub(crate) fn fs_watch_response() -> FsWatchResponse {
    FsWatchResponse { path: path(CWD) }
}

pub(crate) fn fs_changed() -> ServerNotification {
    ServerNotification::FsChanged(FsChangedNotification {
        watch_id: s("w-1"),
        changed_paths: vec![
            path("/home/dev/project/a.txt"),
            path("/home/dev/project/src"),
        ],
    })
}

//! search29: samples of `fuzzyFileSearch` and `thread/shellCommand`.

use tandem_protocol::*;

use super::*;

/// One request per method, ids 50 and 51.
pub(crate) fn search_shell_requests() -> Vec<ClientRequest> {
    use client_methods as m;
    vec![
        request::<m::FuzzyFileSearch>(50, fuzzy_file_search_params()),
        request::<m::ThreadShellCommand>(51, thread_shell_command_params()),
    ]
}

pub(crate) fn fuzzy_file_search_params() -> FuzzyFileSearchParams {
    FuzzyFileSearchParams {
        query: s("main"),
        roots: vec![s("/home/dev/project")],
        cancellation_token: Some(s("picker-1")),
    }
}

pub(crate) fn fuzzy_file_search_response() -> FuzzyFileSearchResponse {
    FuzzyFileSearchResponse {
        files: vec![
            FuzzyFileSearchResult {
                root: s("/home/dev/project"),
                path: s("src/main.rs"),
                match_type: FuzzyFileSearchMatchType::File,
                file_name: s("main.rs"),
                score: 65_645,
                indices: Some(vec![4, 5, 6, 7]),
            },
            FuzzyFileSearchResult {
                root: s("/home/dev/project"),
                path: s("maindir"),
                match_type: FuzzyFileSearchMatchType::Directory,
                file_name: s("maindir"),
                score: 109,
                indices: Some(vec![0, 1, 2, 3]),
            },
        ],
    }
}

pub(crate) fn thread_shell_command_params() -> ThreadShellCommandParams {
    ThreadShellCommandParams {
        thread_id: s(THREAD_ID),
        command: s("git status --short | head"),
        timeout_ms: Some(30_000),
    }
}

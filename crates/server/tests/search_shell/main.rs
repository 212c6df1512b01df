//! `fuzzyFileSearch` and `thread/shellCommand` (issue 29, point 6), driven through the
//! in-process host as an embedder would: results and their order, `.gitignore`, the result
//! bound, a cancelled search answering at once, the user's command as a `userShell` item in a
//! turn of its own (output, failure, timeout, interruption, the store, a running turn), and
//! the `file_search_api` / `shell_command_api` switches. Real time throughout: the walk runs on
//! the blocking pool and the commands are real processes.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::client_methods::{ConfigValueWrite, FuzzyFileSearch};
use tandem_protocol::{
    ClientRequest, FuzzyFileSearchMatchType, FuzzyFileSearchResponse, JSONRPCErrorError, RequestId,
    RequestMethod, ServerNotification, error_codes,
};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::{initialize_params, within};

mod shell;

/// Upper bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn options(home: &Path, overrides: &[(&str, toml::Value)]) -> ServerOptions {
    let mut builder = ServerConfig::builder().tandem_home(home);
    for (key, value) in overrides {
        builder = builder.config_override(key, value.clone());
    }
    ServerOptions::load(builder).expect("options load")
}

async fn start(home: &Path, overrides: &[(&str, toml::Value)]) -> InProcessClientHandle {
    let options = options(home, overrides);
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(false),
    );
    within(PROMPT, "start", in_process::start(args))
        .await
        .expect("host starts")
}

fn request<M: RequestMethod<Request = ClientRequest>>(params: Value) -> ClientRequest {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    M::into_request(
        RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed)),
        params,
    )
}

async fn try_call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> Result<Value, JSONRPCErrorError> {
    within(PROMPT, M::METHOD, handle.request(request::<M>(params)))
        .await
        .expect("host answers")
}

async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> M::Response {
    let value = try_call::<M>(handle, params)
        .await
        .unwrap_or_else(|error| panic!("{} failed: {error:?}", M::METHOD));
    serde_json::from_value(value).expect("answer decodes")
}

/// The error of a request expected to fail, as `(code, message)`.
async fn fail<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> (i64, String) {
    match try_call::<M>(handle, params).await {
        Ok(value) => panic!("{} succeeded with {value}, expected an error", M::METHOD),
        Err(error) => (error.code, error.message),
    }
}

/// The notifications up to and including the next `turn/completed`.
async fn until_turn_completed(handle: &mut InProcessClientHandle) -> Vec<ServerNotification> {
    let mut notes = Vec::new();
    let wait = async {
        while let Some(event) = handle.next_event().await {
            if let InProcessServerEvent::ServerNotification(note) = event {
                let done = matches!(note, ServerNotification::TurnCompleted(_));
                notes.push(note);
                if done {
                    return true;
                }
            }
        }
        false
    };
    match tokio::time::timeout(PROMPT, wait).await {
        Ok(true) => notes,
        outcome => panic!("no turn/completed ({outcome:?}); got {notes:#?}"),
    }
}

async fn shutdown(mut handle: InProcessClientHandle) {
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("clean shutdown");
}

fn tree(files: &[String]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tree");
    for file in files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(path, b"").expect("file");
    }
    dir
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

// ---------------------------------------------------------------------------------------------
// fuzzyFileSearch
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_answers_the_best_matches_in_the_references_shape() {
    let home = tempfile::tempdir().expect("home");
    let files: Vec<String> = [
        "src/main.rs",
        "src/lib.rs",
        "docs/domain.md",
        "ignored/main.c",
    ]
    .iter()
    .map(|f| (*f).to_owned())
    .collect();
    let root = tree(&files);
    std::fs::write(root.path().join(".gitignore"), "ignored/\n").expect("gitignore");
    let other = tree(&["main".to_owned()]);
    let handle = start(home.path(), &[]).await;
    let roots = vec![p(root.path()), p(other.path())];
    let value = try_call::<FuzzyFileSearch>(&handle, json!({"query": "main", "roots": roots}))
        .await
        .expect("search");
    // The reference's member names, snake_case ones included.
    let first = &value["files"][0];
    assert_eq!(
        first,
        &json!({"root": p(other.path()), "path": "main", "match_type": "file",
                "file_name": "main", "score": first["score"], "indices": [0, 1, 2, 3]})
    );
    let answer: FuzzyFileSearchResponse = serde_json::from_value(value).expect("decodes");
    let paths: Vec<(&str, &str)> = answer
        .files
        .iter()
        .map(|f| (f.root.as_str(), f.path.as_str()))
        .collect();
    let root = p(root.path());
    assert_eq!(
        paths,
        vec![
            (p(other.path()).as_str(), "main"),
            (root.as_str(), "src/main.rs"),
            (root.as_str(), "docs/domain.md"),
        ],
        "the exact name, then a name matching at a word start, then inside a word; ignored/ \
         is .gitignored"
    );
    let scores: Vec<u32> = answer.files.iter().map(|f| f.score).collect();
    assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");

    // Directories are results too; nothing for an empty query or no usable root.
    let answer: FuzzyFileSearchResponse =
        call::<FuzzyFileSearch>(&handle, json!({"query": "docs", "roots": [root]})).await;
    assert_eq!(answer.files[0].path, "docs");
    assert_eq!(
        answer.files[0].match_type,
        FuzzyFileSearchMatchType::Directory
    );
    for params in [
        json!({"query": "", "roots": [root]}),
        json!({"query": "main", "roots": []}),
        json!({"query": "main", "roots": ["relative", "/no/such/root"]}),
    ] {
        let answer: FuzzyFileSearchResponse = call::<FuzzyFileSearch>(&handle, params).await;
        assert!(answer.files.is_empty(), "{answer:?}");
    }
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_bounded_to_fifty() {
    let home = tempfile::tempdir().expect("home");
    let files: Vec<String> = (0..120)
        .map(|n| format!("d{}/file{n}.txt", n % 4))
        .collect();
    let root = tree(&files);
    let handle = start(home.path(), &[]).await;
    let answer: FuzzyFileSearchResponse =
        call::<FuzzyFileSearch>(&handle, json!({"query": "file", "roots": [p(root.path())]})).await;
    assert_eq!(
        answer.files.len(),
        tandem_server::server::fuzzy_search::MAX_RESULTS
    );
    assert_eq!(answer.files.len(), 50);
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_search_with_the_same_token_cancels_the_earlier_one_which_answers_empty() {
    let home = tempfile::tempdir().expect("home");
    // Large enough that the first walk is still running when the second request arrives
    // (sent right behind it, in the same task).
    let files: Vec<String> = (0..20_000)
        .map(|n| format!("p{}/m{}/file_{n}.rs", n % 20, n % 7))
        .collect();
    let root = tree(&files);
    let handle = start(home.path(), &[]).await;
    let params = |query: &str| json!({"query": query, "roots": [p(root.path())], "cancellationToken": "picker"});
    let first = handle.request(request::<FuzzyFileSearch>(params("file")));
    let second = handle.request(request::<FuzzyFileSearch>(params("file_1999")));
    let (first, second) = within(PROMPT, "both searches", async {
        tokio::join!(first, second)
    })
    .await;
    let first: FuzzyFileSearchResponse =
        serde_json::from_value(first.expect("host").expect("first")).expect("decodes");
    let second: FuzzyFileSearchResponse =
        serde_json::from_value(second.expect("host").expect("second")).expect("decodes");
    assert!(
        first.files.is_empty(),
        "cancelled: {:?}",
        first.files.first()
    );
    assert!(
        second.files[0].file_name.starts_with("file_1999"),
        "{second:?}"
    );
    // Another token, or none, cancels nothing.
    let third = handle.request(request::<FuzzyFileSearch>(
        json!({"query": "file_7", "roots": [p(root.path())], "cancellationToken": "other"}),
    ));
    let fourth = handle.request(request::<FuzzyFileSearch>(
        json!({"query": "file_8", "roots": [p(root.path())]}),
    ));
    let (third, fourth) = within(PROMPT, "two searches", async {
        tokio::join!(third, fourth)
    })
    .await;
    assert_ne!(third.expect("host").expect("third")["files"], json!([]));
    assert_ne!(fourth.expect("host").expect("fourth")["files"], json!([]));
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_search_api_false_answers_method_not_found_and_a_config_write_applies() {
    let home = tempfile::tempdir().expect("home");
    let root = tree(&["a.txt".to_owned()]);
    let params = json!({"query": "a", "roots": [p(root.path())]});
    let handle = start(
        home.path(),
        &[("file_search_api", toml::Value::Boolean(false))],
    )
    .await;
    let (code, message) = fail::<FuzzyFileSearch>(&handle, params.clone()).await;
    assert_eq!(code, error_codes::METHOD_NOT_FOUND);
    assert_eq!(
        message,
        "fuzzyFileSearch is disabled on this server (file_search_api = false in its config.toml)"
    );
    shutdown(handle).await;

    let home = tempfile::tempdir().expect("home");
    let handle = start(home.path(), &[]).await;
    call::<FuzzyFileSearch>(&handle, params.clone()).await;
    call::<ConfigValueWrite>(
        &handle,
        json!({"keyPath": "file_search_api", "value": false, "mergeStrategy": "replace"}),
    )
    .await;
    let (code, _) = fail::<FuzzyFileSearch>(&handle, params).await;
    assert_eq!(code, error_codes::METHOD_NOT_FOUND);
    let (code, message) = fail::<ConfigValueWrite>(
        &handle,
        json!({"keyPath": "shell_command_api", "value": "no", "mergeStrategy": "replace"}),
    )
    .await;
    assert_eq!(code, error_codes::INVALID_REQUEST);
    assert!(message.contains("shell_command_api"), "{message}");
    shutdown(handle).await;
}

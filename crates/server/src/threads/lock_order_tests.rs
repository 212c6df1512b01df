//! The lock order between the loaded set and a thread's state (`ThreadService::loaded`): a
//! thread's state may be held while the loaded set is taken, never the other way round. The
//! idle unload takes them in that order; a shutdown that took them the other way deadlocked
//! both runtime workers when a client left as the server shut down
//! (`app_server_postgres_restart`, one run in thirty), and the server never exited on SIGTERM.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::json;
use tandem_host::MessageProcessor;
use tandem_host::in_process::{self, InProcessStartArgs};
use tandem_protocol::client_methods::ThreadStart;
use tandem_protocol::{RequestId, RequestMethod};
use tandem_test_support::initialize_params;

use crate::{ServerConfig, ServerOptions, TandemServer};

/// Bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(30);

/// The shutdown holds a thread's state while the test plays the idle unload: holding that
/// state, it asks for the loaded set, which must be free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_never_holds_the_loaded_set_while_it_waits_for_a_thread() {
    let home = tempfile::tempdir().expect("home");
    let options =
        ServerOptions::load(ServerConfig::builder().tandem_home(home.path())).expect("options");
    let server: Arc<OnceLock<Arc<TandemServer>>> = Arc::default();
    let slot = Arc::clone(&server);
    let args = InProcessStartArgs::new(
        move |outgoing| {
            let built = Arc::new(TandemServer::new(outgoing, options));
            let _ = slot.set(Arc::clone(&built));
            built as Arc<dyn MessageProcessor>
        },
        initialize_params(true),
    );
    let mut handle = tokio::time::timeout(PROMPT, in_process::start(args))
        .await
        .expect("bounded")
        .expect("host starts");
    let request = ThreadStart::into_request(
        RequestId::Integer(1),
        serde_json::from_value(json!({})).expect("params"),
    );
    let started = tokio::time::timeout(PROMPT, handle.request(request))
        .await
        .expect("bounded")
        .expect("host")
        .expect("thread/start");
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let threads = Arc::clone(server.get().expect("built").thread_service());
    let thread = threads.loaded(&thread_id).expect("loaded");

    let state = thread.state();
    // The shutdown blocks on the thread's state, held here.
    let shutdown = {
        let threads = Arc::clone(&threads);
        crate::lock_waits::spawn_until_blocked(PROMPT, move || threads.shutdown().len())
    };
    assert!(threads.is_stopping());
    let (answer, answered) = std::sync::mpsc::channel();
    let probe = {
        let threads = Arc::clone(&threads);
        let thread_id = thread_id.clone();
        std::thread::spawn(move || {
            let _ = answer.send(threads.loaded(&thread_id).is_some());
        })
    };
    let found = answered.recv_timeout(Duration::from_secs(5));
    drop(state);
    probe.join().expect("probe");
    assert_eq!(shutdown.join().expect("shutdown"), 0, "no turn was running");
    assert_eq!(
        found,
        Ok(true),
        "the loaded set was held while the shutdown waited for a thread's state"
    );
    tokio::time::timeout(PROMPT, handle.shutdown())
        .await
        .expect("bounded")
        .expect("host shuts down");
}

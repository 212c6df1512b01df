//! The conformance scenarios of the app-server issue, written against `tandem-client`
//! (issue 9, acceptance 1): one list of scenarios, each body written once, run against every
//! backend of the client — the in-process reference server, the `tandem` binary as a spawned
//! child over stdio, and the binary as a websocket server — with one set of expected results.
//!
//! The expected results are the JSON suite's (`tests/tests/conformance`, whose shapes and
//! normalizer this suite shares): typed replies and events are serialized and compared as
//! normalized JSON, so a member that differs on one backend fails here too. The client performs
//! the handshake itself, so the handshake rules are exercised through `ClientOptions`
//! (opt-outs, experimental gating) and through what a client can still send afterwards; steps
//! that need malformed frames or duplicate ids have no client counterpart and stay in the
//! JSON suite.
//!
//! [`client_suite!`] turns the list below into one `#[tokio::test]` per scenario and backend,
//! named `<backend>::<scenario>`:
//!
//! ```text
//! cargo test -p tandem-e2e --test client_conformance                  # everything
//! cargo test -p tandem-e2e --test client_conformance child::          # one backend
//! cargo test -p tandem-e2e --test client_conformance idle_unload      # one scenario
//! ```

mod events;
mod harness;
// Shared with the JSON suite, which uses every item; this suite uses most of them.
#[allow(dead_code)]
#[path = "../conformance/normalize.rs"]
mod normalize;
mod scenarios;
#[allow(dead_code)]
#[path = "../conformance/shapes.rs"]
mod shapes;

/// One `#[tokio::test]` per scenario in each backend's module. Real processes run in most
/// scenarios, so time is never paused.
macro_rules! client_suite {
    (
        backends { $( $backend:ident => $variant:ident; )* }
        scenarios $scenarios:tt
    ) => {
        $( backend_tests!($backend, $variant, $scenarios); )*
    };
}

/// The tests of one backend: a module named after it, one test per scenario.
macro_rules! backend_tests {
    ($backend:ident, $variant:ident, { $( $scenario:path => $name:ident, )* }) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    $scenario(crate::harness::Backend::$variant).await;
                }
            )*
        }
    };
}

client_suite! {
    backends {
        in_process => InProcess;
        child => Child;
        websocket => WebSocket;
        unix_socket => UnixSocket;
    }
    scenarios {
        crate::scenarios::handshake::the_client_performs_the_handshake => the_client_performs_the_handshake,
        crate::scenarios::handshake::opted_out_notifications_are_not_sent => opted_out_notifications_are_not_sent,
        crate::scenarios::handshake::experimental_api_is_gated => experimental_api_is_gated,
        crate::scenarios::errors::error_codes_and_messages => error_codes_and_messages,
        crate::scenarios::errors::overload_is_answered_and_retried => overload_is_answered_and_retried,
        crate::scenarios::turns::turn_streams_an_agent_message => turn_streams_an_agent_message,
        crate::scenarios::turns::dynamic_tool_call_answered_by_a_handler => dynamic_tool_call_answered_by_a_handler,
        crate::scenarios::turns::approval_declined_and_question_answered => approval_declined_and_question_answered,
        crate::scenarios::threads::thread_list_read_fork_name_delete => thread_list_read_fork_name_delete,
        crate::scenarios::threads::attachment_replies_arrive_before_their_updates => attachment_replies_arrive_before_their_updates,
        crate::scenarios::threads::idle_unload_then_resume => idle_unload_then_resume,
        crate::scenarios::processes::streamed_process_with_stdin_resize_kill_and_exit => streamed_process_with_stdin_resize_kill_and_exit,
        crate::scenarios::processes::paused_reader_still_gets_every_byte => paused_reader_still_gets_every_byte,
    }
}

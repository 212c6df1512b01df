//! The conformance suite (issue 8): one list of scenarios with one set of expected results,
//! run against every transport — the in-process host, the `tandem` binary over stdio and over
//! a websocket — so that "the same behaviour everywhere" is a test.
//!
//! Each scenario is an `async fn(Transport)` in `scenarios/`, written once against the JSON
//! level [`driver::Driver`]. [`conformance_suite!`] turns the list below into one test per
//! scenario and transport, named `<transport>::<scenario>`, so a failure names both:
//!
//! ```text
//! cargo test -p tandem-e2e --test conformance                  # everything
//! cargo test -p tandem-e2e --test conformance in_process::     # one transport
//! cargo test -p tandem-e2e --test conformance idle_unload      # one scenario, all transports
//! ```
//!
//! The stdio and websocket tests build the `tandem` binary themselves (see
//! `tandem_test_support::binary`).

mod driver;
mod in_process_driver;
mod normalize;
mod scenarios;
mod session;
mod shapes;
mod wire;

/// One `#[tokio::test]` per scenario in each transport's module. Real processes run in most
/// scenarios, so time is never paused.
macro_rules! conformance_suite {
    (
        transports { $( $transport:ident => $variant:ident $attrs:tt; )* }
        scenarios $scenarios:tt
    ) => {
        $( transport_tests!($transport, $variant, $attrs, $scenarios); )*
    };
}

/// The tests of one transport: a module named after it, one test per scenario, each carrying
/// the transport's attributes.
macro_rules! transport_tests {
    ($transport:ident, $variant:ident, $attrs:tt, { $( $scenario:path => $name:ident, )* }) => {
        mod $transport {
            $(
                with_attributes! {
                    $attrs
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $name() {
                        $scenario(crate::session::Transport::$variant).await;
                    }
                }
            )*
        }
    };
}

/// `item` with the attributes of the braced list in front of it.
macro_rules! with_attributes {
    ({ $( #[$attribute:meta] )* } $item:item) => {
        $( #[$attribute] )*
        $item
    };
}

conformance_suite! {
    transports {
        in_process => InProcess {};
        stdio => Stdio {};
        websocket => WebSocket {};
        unix_socket => UnixSocket {};
    }
    scenarios {
        crate::scenarios::handshake::initialize_rules => initialize_rules,
        crate::scenarios::handshake::initialized_in_every_form => initialized_in_every_form,
        crate::scenarios::handshake::opted_out_notifications_are_not_sent => opted_out_notifications_are_not_sent,
        crate::scenarios::handshake::experimental_api_is_gated => experimental_api_is_gated,
        crate::scenarios::errors::error_codes_and_messages => error_codes_and_messages,
        crate::scenarios::errors::malformed_frames_are_answered => malformed_frames_are_answered,
        crate::scenarios::errors::overload_is_answered_while_the_writer_is_full => overload_is_answered_while_the_writer_is_full,
        crate::scenarios::turns::turn_streams_an_agent_message => turn_streams_an_agent_message,
        crate::scenarios::turns::dynamic_tool_call_answered_by_the_client => dynamic_tool_call_answered_by_the_client,
        crate::scenarios::turns::approval_declined_and_question_answered => approval_declined_and_question_answered,
        crate::scenarios::threads::thread_list_read_fork_name_delete => thread_list_read_fork_name_delete,
        crate::scenarios::paging::history_pages_by_cursor => history_pages_by_cursor,
        crate::scenarios::paging::initial_turns_page_needs_experimental_api => initial_turns_page_needs_experimental_api,
        crate::scenarios::threads::attachment_replies_arrive_before_their_updates => attachment_replies_arrive_before_their_updates,
        crate::scenarios::threads::idle_unload_then_resume => idle_unload_then_resume,
        crate::scenarios::processes::streamed_process_with_stdin_resize_kill_and_exit => streamed_process_with_stdin_resize_kill_and_exit,
        crate::scenarios::processes::paused_reader_still_gets_every_byte => paused_reader_still_gets_every_byte,
        crate::scenarios::thread_ops::archive_and_unarchive => archive_and_unarchive,
        crate::scenarios::thread_ops::compaction_turn_and_summary => compaction_turn_and_summary,
        crate::scenarios::thread_ops::revert_and_rollback => revert_and_rollback,
        crate::scenarios::thread_ops::attachment_list_pages => attachment_list_pages,
        crate::scenarios::models::model_list_and_account_read => model_list_and_account_read,
        crate::scenarios::models::config_writes_are_read_back => config_writes_are_read_back,
        crate::scenarios::models::image_input_is_stored_and_acknowledged => image_input_is_stored_and_acknowledged,
        crate::scenarios::models::token_usage_follows_each_model_request => token_usage_follows_each_model_request,
        crate::scenarios::command_exec::command_exec_buffered => command_exec_buffered,
        crate::scenarios::command_exec::command_exec_streamed => command_exec_streamed,
        crate::scenarios::replay::resume_from_a_cursor_replays_what_followed => resume_from_a_cursor_replays_what_followed,
        crate::scenarios::replay::stale_cursors_answer_a_gap_and_the_whole_thread => stale_cursors_answer_a_gap_and_the_whole_thread,
        crate::scenarios::replay::a_client_that_reconnects_gets_what_it_missed => a_client_that_reconnects_gets_what_it_missed,
        crate::scenarios::idempotency::retried_turn_start_starts_one_turn => retried_turn_start_starts_one_turn,
        crate::scenarios::idempotency::retried_thread_start_and_fork_create_one_thread => retried_thread_start_and_fork_create_one_thread,
        crate::scenarios::approvals_shared::approval_waits_for_a_resuming_subscriber => approval_waits_for_a_resuming_subscriber,
        crate::scenarios::fs::fs_methods_errors_and_a_watch => fs_methods_errors_and_a_watch,
        crate::scenarios::search_shell::fuzzy_search_and_a_shell_command => fuzzy_search_and_a_shell_command,
        // reason29:
        crate::scenarios::plan_reasoning::plan_and_reasoning_from_the_scripted_agent => plan_and_reasoning_from_the_scripted_agent,
        crate::scenarios::plan_reasoning::plan_and_reasoning_from_a_model_provider => plan_and_reasoning_from_a_model_provider,
        crate::scenarios::file_changes::file_change_approved_then_turn_diff => file_change_approved_then_turn_diff,
        crate::scenarios::file_changes::file_change_declined_or_unparsable => file_change_declined_or_unparsable,
        // mcp30:
        crate::scenarios::mcp::mcp_servers_status_calls_and_reload => mcp_servers_status_calls_and_reload,
    }
}

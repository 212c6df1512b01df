//! Feeds arbitrary bytes to the patch parser and applier. The input is the patch text, then
//! optionally a NUL byte and the contents every file with an even-length path has (files with an
//! odd-length path do not exist). Nothing may panic; a parsed patch must print back to text that
//! parses to the same changes; an applied update must leave a file that is empty or ends with a
//! line ending; and every outcome must render as a unified diff.

#![no_main]

use std::convert::Infallible;

use libfuzzer_sys::fuzz_target;
use tandem_patch::{AppliedChange, FileChange, Limits, Patch, apply_with, parse};

/// The patch with its hunks' patch-text line numbers cleared: reprinting renumbers them.
fn without_lines(mut patch: Patch) -> Patch {
    for change in &mut patch.changes {
        if let FileChange::Update { hunks, .. } = change {
            for hunk in hunks {
                hunk.line = 0;
            }
        }
    }
    patch
}

fuzz_target!(|data: &[u8]| {
    let (text, contents) = match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], Some(&data[at + 1..])),
        None => (data, None),
    };
    let text = String::from_utf8_lossy(text);
    let Ok(patch) = parse(&text) else { return };

    let printed = patch.to_string();
    let reparsed = parse(&printed).expect("a printed patch parses");
    assert_eq!(without_lines(reparsed), without_lines(patch.clone()), "{printed}");

    let contents = contents.map(|bytes| String::from_utf8_lossy(bytes).into_owned());
    // Small files keep each run fast; the bound's own error path is exercised too.
    let limits = Limits {
        max_file_bytes: 1 << 16,
        ..Limits::default()
    };
    let applied = apply_with(&patch, &limits, |path| {
        Ok::<_, Infallible>(contents.clone().filter(|_| path.len() % 2 == 0))
    });
    let Ok(changes) = applied else { return };
    for change in &changes {
        if let AppliedChange::Update { new_contents, .. } = change {
            assert!(new_contents.is_empty() || new_contents.ends_with('\n'));
        }
        let _ = change.unified_diff();
    }
});

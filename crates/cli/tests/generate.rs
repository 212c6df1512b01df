//! `tandem app-server generate-json-schema` and `generate-ts` write exactly the checked-in
//! bindings under `docs/protocol/`, with and without `--experimental`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (PathBuf::from(path.file_name().unwrap()), bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn generators_write_the_checked_in_bindings() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol");
    let scratch =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("generate-{}", std::process::id()));
    for (command, experimental, checked_in) in [
        ("generate-json-schema", false, "json-schema"),
        ("generate-json-schema", true, "json-schema-experimental"),
        ("generate-ts", false, "typescript"),
        ("generate-ts", true, "typescript-experimental"),
    ] {
        let out = scratch.join(checked_in);
        let _ = std::fs::remove_dir_all(&out);
        let mut tandem = Command::new(env!("CARGO_BIN_EXE_tandem"));
        tandem.args(["app-server", command, "--out"]).arg(&out);
        if experimental {
            tandem.arg("--experimental");
        }
        let status = tandem.status().expect("run tandem");
        assert!(status.success(), "{command} failed: {status}");
        let generated = files(&out);
        assert!(!generated.is_empty());
        assert!(
            generated == files(&docs.join(checked_in)),
            "`tandem app-server {command}` differs from docs/protocol/{checked_in}"
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

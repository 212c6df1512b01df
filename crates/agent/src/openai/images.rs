//! Image input on its way to the model: the user's `image` (already a `data:` URL) and
//! `localImage` (a file read here, bounded in size, and sent as a `data:` URL) become
//! [`UserPart::Image`]s of the conversation, which each wire writes in its own form.
//!
//! A local image is read each time a conversation is built, not when the turn starts: the
//! turn stores only the path (as the reference app-server does), so a file that is gone, too
//! large or not an image is reported to the model as a text note in its place (and logged),
//! rather than failing every later turn of the thread.

use std::path::Path;

use base64::Engine as _;
use tandem_protocol::{ImageDetail, SharedText, UserInput};

/// The largest local image file sent to a model, in bytes: OpenAI's own per-image limit.
/// The file is read into memory and grows by a third as base64, so this bounds what one
/// image costs.
pub(crate) const MAX_LOCAL_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// One part of a user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UserPart {
    /// Text (the user's own, shared with the turn, unless several were joined).
    Text(SharedText),
    /// An image as a `data:` URL, ready to send.
    Image {
        url: SharedText,
        detail: Option<ImageDetail>,
    },
    /// An image file not read yet ([`resolve_local_images`] turns it into one of the above).
    LocalImage {
        path: String,
        detail: Option<ImageDetail>,
    },
}

/// The parts of user input, in order: consecutive texts joined by a newline (as the text of
/// one message), each image a part of its own. Unsupported kinds never get this far.
pub(crate) fn user_parts(input: &[UserInput]) -> Vec<UserPart> {
    let mut parts: Vec<UserPart> = Vec::new();
    for input in input {
        match input {
            UserInput::Text { text } => match parts.last_mut() {
                Some(UserPart::Text(previous)) => {
                    *previous = format!("{previous}\n{text}").into();
                }
                _ => parts.push(UserPart::Text(text.clone())),
            },
            UserInput::Image { url, detail } => parts.push(UserPart::Image {
                url: url.clone(),
                detail: *detail,
            }),
            UserInput::LocalImage { path, detail } => parts.push(UserPart::LocalImage {
                path: path.clone(),
                detail: *detail,
            }),
            UserInput::Unsupported { .. } => {}
        }
    }
    parts
}

/// Reads every [`UserPart::LocalImage`] of `parts` into a [`UserPart::Image`], or a text note
/// saying why it could not be sent.
pub(crate) async fn resolve_local_images(parts: &mut [UserPart]) {
    for part in parts.iter_mut() {
        let UserPart::LocalImage { path, detail } = part else {
            continue;
        };
        *part = match read_as_data_url(Path::new(path.as_str())).await {
            Ok(url) => UserPart::Image {
                url: url.into(),
                detail: *detail,
            },
            Err(reason) => {
                tracing::warn!(%path, %reason, "local image not sent to the model");
                UserPart::Text(
                    format!("[the image file {path} could not be attached: {reason}]").into(),
                )
            }
        };
    }
}

/// The file at `path` as a `data:` URL, if it is an image of a known type within
/// [`MAX_LOCAL_IMAGE_BYTES`]; else why not.
async fn read_as_data_url(path: &Path) -> Result<String, String> {
    let metadata = tokio::fs::metadata(path)
        .await
        .map_err(|error| format!("cannot read it: {error}"))?;
    if !metadata.is_file() {
        return Err("it is not a regular file".to_owned());
    }
    if metadata.len() > MAX_LOCAL_IMAGE_BYTES {
        return Err(format!(
            "it holds {} bytes, more than the {MAX_LOCAL_IMAGE_BYTES} an image may have",
            metadata.len()
        ));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|error| format!("cannot read it: {error}"))?;
    // Checked again: the file may have grown between the two calls.
    if bytes.len() as u64 > MAX_LOCAL_IMAGE_BYTES {
        return Err(format!(
            "it holds more than the {MAX_LOCAL_IMAGE_BYTES} bytes an image may have"
        ));
    }
    let media_type = media_type(&bytes).ok_or_else(|| {
        "it is not a PNG, JPEG, GIF or WebP image (checked by its first bytes)".to_owned()
    })?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(format!("data:{media_type};base64,{encoded}"))
}

/// The media type of an image by its signature: the formats OpenAI-compatible vision models
/// take. The extension is not trusted: a mislabelled file would be refused by the provider
/// and fail the whole request.
fn media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn texts_join_and_images_keep_their_place() {
        let parts = user_parts(&[
            UserInput::text("a"),
            UserInput::text("b"),
            UserInput::LocalImage {
                path: "/x.png".into(),
                detail: None,
            },
            UserInput::text("c"),
        ]);
        assert_eq!(
            parts,
            vec![
                UserPart::Text("a\nb".into()),
                UserPart::LocalImage {
                    path: "/x.png".into(),
                    detail: None
                },
                UserPart::Text("c".into()),
            ]
        );
    }

    #[tokio::test]
    async fn local_images_become_data_urls_or_notes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let png = dir.path().join("pic.png");
        std::fs::write(&png, PNG).expect("write");
        let text = dir.path().join("notes.png");
        std::fs::write(&text, b"not an image").expect("write");
        let huge = dir.path().join("huge.png");
        let file = std::fs::File::create(&huge).expect("create");
        file.set_len(MAX_LOCAL_IMAGE_BYTES + 1).expect("grow");
        let missing = dir.path().join("missing.png");
        let mut parts: Vec<UserPart> = [&png, &text, &huge, &missing]
            .iter()
            .map(|path| UserPart::LocalImage {
                path: path.display().to_string(),
                detail: Some(ImageDetail::High),
            })
            .collect();
        resolve_local_images(&mut parts).await;
        let encoded = base64::engine::general_purpose::STANDARD.encode(PNG);
        assert_eq!(
            parts[0],
            UserPart::Image {
                url: format!("data:image/png;base64,{encoded}").into(),
                detail: Some(ImageDetail::High)
            }
        );
        for (part, why) in parts[1..]
            .iter()
            .zip(["not a PNG", "more than", "cannot read"])
        {
            assert!(
                matches!(part, UserPart::Text(note) if note.contains("could not be attached") && note.contains(why)),
                "{part:?}"
            );
        }
    }
}

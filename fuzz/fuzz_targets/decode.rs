//! Feeds arbitrary bytes to both wire decoders. Decoding must not panic; whatever decodes must
//! re-encode to bytes that decode to an equal message; a request-shaped object must get exactly
//! one answer; and a reply a client is told to send must name the server request it answers.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tandem_protocol::wire::{
    ClientMessage, DecodeError, decode_client_message, decode_server_message,
    encode_client_message, encode_server_message,
};

fuzz_target!(|frame: &[u8]| {
    let client = decode_client_message(frame);
    if let Ok(message) = &client {
        let mut out = Vec::new();
        encode_client_message(message, &mut out).expect("a decoded client message encodes");
        let again = decode_client_message(&out).expect("an encoded client message decodes");
        assert_eq!(&again, message, "{}", String::from_utf8_lossy(&out));
    }
    if let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(frame)
        && object.contains_key("id")
        && object.contains_key("method")
    {
        assert!(
            matches!(
                client,
                Ok(ClientMessage::Request(_)) | Err(DecodeError::Reply(_))
            ),
            "request-shaped frame left unanswered: {client:?}"
        );
    }

    match decode_server_message(frame) {
        Ok(message) => {
            let mut out = Vec::new();
            encode_server_message(&message, &mut out).expect("a decoded server message encodes");
            let again = decode_server_message(&out).expect("an encoded server message decodes");
            assert_eq!(again, message, "{}", String::from_utf8_lossy(&out));
        }
        Err(DecodeError::Reply(reply)) => {
            assert!(reply.id.is_some(), "a client reply needs an id: {reply:?}");
        }
        Err(DecodeError::Ignore(_)) => {}
    }
});

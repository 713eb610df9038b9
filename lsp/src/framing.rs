//! The server's guard on its input: LSP frames (`Content-Length: N\r\n\r\n` and N bytes of
//! JSON) read from the client are passed on to the protocol layer only when they are well
//! formed — a header with a valid length, a body that is a JSON object (valid UTF-8, no lone
//! surrogate escapes). A malformed one is reported on standard error and skipped, and the
//! reading resumes at the next header, so no message a client (or a broken pipe) sends can end
//! the server.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message body accepted (a whole `.wsp` file rarely comes near it).
pub const MAX_BODY: usize = 64 << 20;

/// The longest header line read before giving up on it.
const MAX_HEADER_LINE: usize = 8 << 10;

/// What became of one frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A well-formed message body.
    Message(Vec<u8>),
    /// A malformed frame, skipped: why.
    Skipped(String),
    /// The input ended.
    End,
}

/// Reads the next frame from `input`. After a malformed header it skips to the next line
/// that starts a header; after a malformed body it is already at the next frame.
pub async fn next_frame<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<Frame> {
    let mut length: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        let n = (&mut *input)
            .take(MAX_HEADER_LINE as u64)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Ok(if saw_header {
                Frame::Skipped("the input ended inside a header".into())
            } else {
                Frame::End
            });
        }
        if line.last() != Some(&b'\n') {
            // An overlong line: drop the rest of it.
            let mut rest = Vec::new();
            input.read_until(b'\n', &mut rest).await?;
            return Ok(Frame::Skipped(format!(
                "a header line longer than {MAX_HEADER_LINE} bytes"
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let mut text = text.trim_end_matches(['\r', '\n']);
        // Left-overs of a frame whose length was wrong run into the next header: resume at
        // the header.
        if let Some(i) = text.to_ascii_lowercase().find("content-length:") {
            text = &text[i..];
        }
        if text.is_empty() {
            if !saw_header {
                // Blank lines between frames: skip them.
                continue;
            }
            break;
        }
        saw_header = true;
        if !line.ends_with(b"\r\n") {
            return Ok(Frame::Skipped(format!(
                "a header line not ended by \\r\\n: {text:?}"
            )));
        }
        match text.split_once(':') {
            Some((k, v)) if k.trim().eq_ignore_ascii_case("content-length") => {
                let v = v.trim();
                length = Some(match v.parse::<usize>() {
                    Ok(n) if n <= MAX_BODY => Ok(n),
                    Ok(n) => Err(format!(
                        "a Content-Length of {n} bytes, more than the {MAX_BODY} accepted"
                    )),
                    Err(_) => Err(format!("a Content-Length that is not a length: {v:?}")),
                });
            }
            Some(_) => {}
            None => {
                return Ok(Frame::Skipped(format!(
                    "a header line without `:`: {text:?}"
                )))
            }
        }
    }
    let n = match length {
        Some(Ok(n)) => n,
        Some(Err(why)) => return Ok(Frame::Skipped(why)),
        None => return Ok(Frame::Skipped("a header without Content-Length".into())),
    };
    let mut body = vec![0u8; n];
    if let Err(e) = input.read_exact(&mut body).await {
        return if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Ok(Frame::Skipped(format!(
                "the input ended inside a message body of {n} bytes"
            )))
        } else {
            Err(e)
        };
    }
    Ok(match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(v) => match not_json_rpc(&v) {
            None => Frame::Message(body),
            Some(why) => Frame::Skipped(why.into()),
        },
        Err(e) => Frame::Skipped(format!("a message that is not valid JSON: {e}")),
    })
}

/// Why `v` is not a JSON-RPC 2.0 request, notification or response, if it is not.
fn not_json_rpc(v: &serde_json::Value) -> Option<&'static str> {
    use serde_json::Value;
    let Value::Object(o) = v else {
        return Some("a message that is not a JSON object");
    };
    if o.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Some("a message without \"jsonrpc\": \"2.0\"");
    }
    if let Some(id) = o.get("id") {
        if !(id.is_number() || id.is_string() || id.is_null()) {
            return Some("a message whose id is not a number or a string");
        }
    }
    match o.get("method") {
        Some(Value::String(_)) => match o.get("params") {
            // `null` is not structured, but clients send it for "no params".
            None | Some(Value::Object(_)) | Some(Value::Array(_)) | Some(Value::Null) => None,
            Some(_) => Some("a message whose params are not an object or an array"),
        },
        Some(_) => Some("a message whose method is not a string"),
        None if o.contains_key("id") && (o.contains_key("result") || o.contains_key("error")) => {
            None
        }
        None => Some("a message that is neither a request, a notification nor a response"),
    }
}

/// Passes the well-formed frames of `input` on to `output` (re-framed), reporting each skipped
/// one to `log`, until the input ends or `output` is closed.
pub async fn guard<R, W>(mut input: R, mut output: W, log: impl Fn(&str))
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        match next_frame(&mut input).await {
            Ok(Frame::Message(body)) => {
                let head = format!("Content-Length: {}\r\n\r\n", body.len());
                if output.write_all(head.as_bytes()).await.is_err()
                    || output.write_all(&body).await.is_err()
                    || output.flush().await.is_err()
                {
                    return;
                }
            }
            Ok(Frame::Skipped(why)) => log(&why),
            Ok(Frame::End) => return,
            Err(e) => {
                log(&format!("reading the input failed: {e}"));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut r = tokio::io::BufReader::new(input);
        let mut out = Vec::new();
        loop {
            match next_frame(&mut r)
                .await
                .expect("in-memory reads do not fail")
            {
                Frame::End => return out,
                f => out.push(f),
            }
        }
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[tokio::test]
    async fn good_frames_pass_and_bad_ones_are_skipped_without_losing_the_next() {
        let good = r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
        let ok = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let cases: Vec<(String, &str)> = vec![
            (frame(r#"{"text":"\ud800"}"#), "not valid JSON"),
            (frame(r#"{"jsonrpc":"#), "not valid JSON"),
            (frame("[1,2,3]"), "not a JSON object"),
            (frame("{}"), "without \"jsonrpc\""),
            (
                frame(r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#),
                "id is not",
            ),
            (
                frame(r#"{"jsonrpc":"2.0","method":"x","params":3}"#),
                "params are not",
            ),
            (frame(r#"{"jsonrpc":"2.0","id":3}"#), "neither a request"),
            ("Content-Length: -5\r\n\r\n".to_string(), "not a length"),
            ("Content-Length: 12\n\n".to_string(), "not ended by"),
            (
                "Content-Type: x\r\n\r\n".to_string(),
                "without Content-Length",
            ),
            ("garbage\r\n\r\n".to_string(), "without `:`"),
            (
                format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1),
                "more than the",
            ),
        ];
        for (bad, why) in cases {
            let input = format!("{bad}{}", frame(good));
            let got = frames(input.as_bytes()).await;
            assert!(
                matches!(&got[0], Frame::Skipped(w) if w.contains(why)),
                "{bad:?}: {got:?}"
            );
            assert_eq!(
                got.last(),
                Some(&Frame::Message(good.as_bytes().to_vec())),
                "{bad:?}: the next frame is read"
            );
        }
        // A length shorter than the body: the rest runs into the next header, which is found.
        let input = format!("Content-Length: {}\r\n\r\n{ok}xx{}", ok.len(), frame(good));
        let got = frames(input.as_bytes()).await;
        assert_eq!(
            got.first(),
            Some(&Frame::Message(ok.as_bytes().to_vec())),
            "{got:?}"
        );
        assert_eq!(
            got.last(),
            Some(&Frame::Message(good.as_bytes().to_vec())),
            "{got:?}"
        );
        // A body cut short by the end of the input.
        let got = frames(b"Content-Length: 50\r\n\r\n{}").await;
        assert!(matches!(&got[0], Frame::Skipped(w) if w.contains("ended inside a message")));
    }

    #[tokio::test]
    async fn the_guard_re_frames_what_it_passes() {
        let ok = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let input = format!("{}{}", frame("[]"), frame(ok));
        let mut out = Vec::new();
        let logged = std::sync::Mutex::new(Vec::new());
        guard(tokio::io::BufReader::new(input.as_bytes()), &mut out, |w| {
            logged
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(w.to_string())
        })
        .await;
        assert_eq!(String::from_utf8_lossy(&out), frame(ok));
        assert_eq!(logged.into_inner().map(|l| l.len()).unwrap_or(0), 1);
    }
}

//! A kind's list-then-watch stream, as kube's `watcher` (list in pages, then watch from the
//! list's resource version, resume from the last one seen, list again after a 410), with
//! the same events and errors, so [`super::watch`] reads either. It is Lookout's own for
//! what an idle watch holds: kube's keeps an 8 KiB line buffer per watch and its list
//! request's future inline in the stream — twelve watches a cluster, ~180 KiB of every
//! cluster before its first object. Here a watch holds the response body and, only while a
//! line spans two frames, that line's bytes; lists and the watch's start are boxed while
//! they run.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use hyper::body::Body as _;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::core::{ObjectList, Status};
use kube::runtime::watcher::{Error, Event};
use kube::{Api, Client};
use tokio_util::bytes::Bytes;

use super::kinds::Object;

/// How long a watch may stay silent beyond the timeout it asked the server for before it is
/// taken for dead and started again (kube's watcher allows the same).
const IDLE_MARGIN: Duration = Duration::from_secs(5);
/// The server-side timeout of a watch (kube's default).
const WATCH_TIMEOUT: u32 = 290;

/// What the stream reads.
pub(super) struct Source {
    pub api: Api<Object>,
    pub client: Client,
    /// The kind's collection (`/apis/cert-manager.io/v1/certificates`).
    pub url_path: String,
    pub field_selector: Option<String>,
    pub page_size: u32,
}

/// The watch of a kind: `Init`, its objects, `InitDone`, then changes, with errors in
/// between (the caller backs off after one; the stream recovers on the next poll).
pub(super) fn watcher(source: Source) -> impl Stream<Item = Result<Event<Object>, Error>> + Send {
    let source = Arc::new(source);
    futures::stream::unfold(State::Empty, move |state| {
        let source = source.clone();
        async move {
            let (item, next) = step(&source, state).await;
            Some((item, next))
        }
    })
}

enum State {
    Empty,
    /// Listing: the rest of the page read last, and where the list goes on.
    Page {
        next: Option<String>,
        objects: VecDeque<Object>,
        version: Option<String>,
    },
    /// Listed (or a watch ended): watch from `version`.
    Listed {
        version: String,
    },
    Watching {
        version: String,
        events: Events,
    },
}

/// One step: an event or an error to hand out, and the state after it.
async fn step(source: &Source, mut state: State) -> (Result<Event<Object>, Error>, State) {
    loop {
        state = match state {
            State::Empty => {
                let page = State::Page {
                    next: None,
                    objects: VecDeque::new(),
                    version: None,
                };
                return (Ok(Event::Init), page);
            }
            State::Page {
                next,
                mut objects,
                version,
            } => {
                if let Some(object) = objects.pop_front() {
                    let page = State::Page {
                        next,
                        objects,
                        version,
                    };
                    return (Ok(Event::InitApply(object)), page);
                }
                if let (None, Some(version)) = (&next, &version) {
                    let version = version.clone();
                    return (Ok(Event::InitDone), State::Listed { version });
                }
                let mut params = ListParams::default().limit(source.page_size);
                if let Some(fields) = &source.field_selector {
                    params = params.fields(fields);
                }
                params.continue_token = next;
                match Box::pin(source.api.list(&params)).await {
                    Ok(list) => match page(list) {
                        Some(page) => page,
                        // Nothing to watch from, and no page to read next.
                        None => return (Err(Error::NoResourceVersion), State::Empty),
                    },
                    Err(e) => return (Err(Error::InitialListFailed(e)), State::Empty),
                }
            }
            State::Listed { version } => match Box::pin(start(source, &version)).await {
                Ok(events) => State::Watching { version, events },
                Err(e) => return (Err(Error::WatchStartFailed(e)), State::Listed { version }),
            },
            State::Watching {
                mut version,
                mut events,
            } => {
                let silence = Duration::from_secs(u64::from(WATCH_TIMEOUT)) + IDLE_MARGIN;
                let next = tokio::time::timeout(silence, events.next())
                    .await
                    .unwrap_or(None);
                match next {
                    // Ended (or silent too long): watch again from where it was.
                    None => State::Listed { version },
                    Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                        match revision(&o) {
                            Some(v) => version = v,
                            None => return (Err(Error::NoResourceVersion), State::Empty),
                        }
                        return (Ok(Event::Apply(o)), State::Watching { version, events });
                    }
                    Some(Ok(WatchEvent::Deleted(o))) => {
                        match revision(&o) {
                            Some(v) => version = v,
                            None => return (Err(Error::NoResourceVersion), State::Empty),
                        }
                        return (Ok(Event::Delete(o)), State::Watching { version, events });
                    }
                    Some(Ok(WatchEvent::Bookmark(b))) => State::Watching {
                        version: b.metadata.resource_version,
                        events,
                    },
                    Some(Ok(WatchEvent::Error(e))) => {
                        // 410 Gone: the version is too old to resume from; list again.
                        let next = if e.code == 410 {
                            State::Empty
                        } else {
                            State::Watching { version, events }
                        };
                        return (Err(Error::WatchError(e)), next);
                    }
                    Some(Err(e)) => {
                        return (
                            Err(Error::WatchFailed(e)),
                            State::Watching { version, events },
                        )
                    }
                }
            }
        }
    }
}

/// An object's resource version, when it has one.
fn revision(o: &Object) -> Option<String> {
    o.metadata
        .resource_version
        .clone()
        .filter(|v| !v.is_empty())
}

/// The state after reading a page of a list; None when the page says neither where the list
/// goes on nor which version it is (the stream reports it and lists again after its backoff
/// rather than asking again at once).
fn page(list: ObjectList<Object>) -> Option<State> {
    let version = list.metadata.resource_version.filter(|v| !v.is_empty());
    let next = list.metadata.continue_.filter(|c| !c.is_empty());
    if version.is_none() && next.is_none() {
        return None;
    }
    Some(State::Page {
        next,
        objects: list.items.into(),
        version,
    })
}

/// Starts a watch from `version`.
async fn start(source: &Source, version: &str) -> Result<Events, kube::Error> {
    let mut params = WatchParams::default().timeout(WATCH_TIMEOUT);
    if let Some(fields) = &source.field_selector {
        params = params.fields(fields);
    }
    let mut request = kube::core::Request::new(&source.url_path)
        .watch(&params, version)
        .map_err(kube::Error::BuildRequest)?;
    // One JSON document per line, as the server writes it (kube asks the same: its
    // decompression does not handle a gzip member per event).
    request.headers_mut().insert(
        http::header::ACCEPT_ENCODING,
        http::HeaderValue::from_static("identity"),
    );
    let response = source.client.send(request.map(Into::into)).await?;
    let status = response.status();
    let mut body = response.into_body();
    if status.is_client_error() || status.is_server_error() {
        let mut text = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            if let Ok(data) = frame?.into_data() {
                text.extend_from_slice(&data);
            }
        }
        let status = serde_json::from_slice::<Status>(&text).unwrap_or_else(|_| {
            let text = String::from_utf8_lossy(&text);
            Status::failure(text.trim(), "Failed to parse error data").with_code(status.as_u16())
        });
        return Err(kube::Error::Api(Box::new(status)));
    }
    Ok(Events {
        body,
        lines: Lines::default(),
    })
}

/// The events of a watch's response, a JSON document per line.
struct Events {
    body: kube::client::Body,
    lines: Lines,
}

impl Events {
    /// The next event; None when the response ended.
    async fn next(&mut self) -> Option<Result<WatchEvent<Object>, kube::Error>> {
        loop {
            while let Some(line) = self.lines.next_line() {
                if let Some(event) = decode(&line) {
                    return Some(event);
                }
            }
            let frame = std::future::poll_fn(|cx| Pin::new(&mut self.body).poll_frame(cx)).await;
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.lines.feed(data);
                    }
                }
                // A response cut short ends the watch; it is resumed (as kube does).
                Some(Err(e)) if cut_short(&e) => {
                    tracing::debug!(error = %e, "the watch's response ended early; resuming");
                    return None;
                }
                Some(Err(e)) => {
                    return Some(Err(kube::Error::ReadEvents(std::io::Error::other(e))));
                }
                // A last line without its newline.
                None => return decode(&self.lines.rest()),
            }
        }
    }
}

/// Lines out of a response's frames: a line within one frame is read where it lies; only a
/// line that spans frames is copied, and only until it is complete.
#[derive(Default)]
struct Lines {
    /// What is left of the frame read last.
    chunk: Bytes,
    /// The start of a line that continues in the next frame; empty (and without an
    /// allocation) between lines.
    partial: Vec<u8>,
}

impl Lines {
    fn feed(&mut self, data: Bytes) {
        debug_assert!(self.chunk.is_empty());
        self.chunk = data;
    }

    /// The next complete line (without its newline), if the frames so far hold one: a
    /// slice of the frame, or the joined line when it spanned frames.
    fn next_line(&mut self) -> Option<Bytes> {
        if self.chunk.is_empty() {
            return None;
        }
        let Some(end) = self.chunk.iter().position(|b| *b == b'\n') else {
            self.partial.extend_from_slice(&self.chunk);
            // Let go of the frame.
            self.chunk = Bytes::new();
            return None;
        };
        let line = self.chunk.split_to(end + 1).slice(..end);
        if self.chunk.is_empty() {
            self.chunk = Bytes::new();
        }
        if self.partial.is_empty() {
            return Some(line);
        }
        self.partial.extend_from_slice(&line);
        Some(Bytes::from(std::mem::take(&mut self.partial)))
    }

    /// What is left once the response ended.
    fn rest(&mut self) -> Vec<u8> {
        let mut rest = std::mem::take(&mut self.partial);
        rest.extend_from_slice(&self.chunk);
        self.chunk = Bytes::new();
        rest
    }
}

/// A line of a watch: an event, the API server's error, or nothing (a blank line, or a line
/// cut short at the end of the response).
fn decode(line: &[u8]) -> Option<Result<WatchEvent<Object>, kube::Error>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<WatchEvent<Object>>(line) {
        Ok(event) => Some(Ok(event)),
        Err(e) if e.is_eof() => None,
        Err(e) => Some(Err(match serde_json::from_slice::<Status>(line) {
            Ok(status) => kube::Error::Api(Box::new(status)),
            Err(_) => kube::Error::SerdeError(e),
        })),
    }
}

/// Whether a body error is the connection ending mid-response (an unexpected EOF anywhere in
/// its causes), after which the watch is resumed rather than reported.
fn cut_short(e: &kube::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
            || c.to_string().contains("unexpected EOF")
        {
            return true;
        }
        cause = c.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines come out whole however the frames cut them, and nothing is held between lines.
    #[test]
    fn lines_are_whole_however_the_frames_cut_them() {
        let text = b"{\"a\":1}\n{\"b\":22}\n\n{\"c\":333}\n{\"d\":4}";
        for cut in 1..text.len() {
            let mut lines = Lines::default();
            let mut out = Vec::new();
            for frame in text.chunks(cut) {
                lines.feed(Bytes::copy_from_slice(frame));
                while let Some(line) = lines.next_line() {
                    out.push(String::from_utf8(line.to_vec()).unwrap());
                }
            }
            out.push(String::from_utf8(lines.rest()).unwrap());
            assert_eq!(
                out,
                ["{\"a\":1}", "{\"b\":22}", "", "{\"c\":333}", "{\"d\":4}"],
                "frames of {cut}"
            );
            assert_eq!(
                lines.partial.capacity(),
                0,
                "nothing held after the last line"
            );
        }
    }

    /// A list page without a version nor a continue token is an error, not a list asked
    /// for again at once (and again, without a pause).
    #[test]
    fn a_page_without_a_version_is_an_error() {
        let list = |v: serde_json::Value| serde_json::from_value::<ObjectList<Object>>(v).unwrap();
        let bare = list(serde_json::json!({"metadata": {}, "items": []}));
        assert!(page(bare).is_none());
        let versioned =
            list(serde_json::json!({"metadata": {"resourceVersion": "3"}, "items": []}));
        assert!(
            matches!(page(versioned), Some(State::Page { version: Some(v), next: None, .. }) if v == "3")
        );
        let more = list(
            serde_json::json!({"metadata": {"continue": "k"}, "items": [{"metadata": {"name": "a"}}]}),
        );
        assert!(
            matches!(page(more), Some(State::Page { version: None, next: Some(_), objects, .. }) if objects.len() == 1)
        );
    }

    #[test]
    fn a_line_is_an_event_the_servers_error_or_nothing() {
        let added = br#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"},"spec":{}}}"#;
        match decode(added) {
            Some(Ok(WatchEvent::Added(o))) => {
                assert_eq!(o.metadata.name.as_deref(), Some("a"));
                assert_eq!(revision(&o).as_deref(), Some("7"));
            }
            other => panic!("{other:?}"),
        }
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        assert!(matches!(decode(gone), Some(Ok(WatchEvent::Error(s))) if s.code == 410));
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no","reason":"Forbidden","code":403}"#;
        assert!(matches!(decode(status), Some(Err(kube::Error::Api(s))) if s.code == 403));
        assert!(decode(b"  ").is_none());
        assert!(
            decode(br#"{"type":"ADDED","obj"#).is_none(),
            "cut short at the end"
        );
        assert!(matches!(
            decode(b"{]"),
            Some(Err(kube::Error::SerdeError(_)))
        ));
    }
}

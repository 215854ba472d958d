//! The lookout application against kubesim over HTTP, with a real SQLite file, started the
//! One integration-test binary, in modules.

mod binary;
mod helpers;
mod history;
mod http;
mod watch;

//! One error object everywhere: the same bad request answered by `ckeep --json`, by
//! `ckeep serve` over HTTP and by `ckeep mcp` over stdio carries the same `{"error": {"code",
//! "message", "hint"}}` (HTTP adds its request id), as the engine's table says.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};

use crate::{agent, ckeep, ok, run};

/// A `ckeep mcp` child and the JSON-RPC lines it answers, spoken as an MCP client does.
pub(crate) struct Mcp {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Mcp {
    pub(crate) fn start(store: &std::path::Path) -> Self {
        let mut child = ckeep(store)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Self { child, input, output, next_id: 0 };
        let info = json!({"name": "errors-test", "version": "1"});
        let params =
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info});
        mcp.call("initialize", &params);
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// The answer to one request (notifications in between are skipped).
    fn call(&mut self, method: &str, params: &Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.output.read_line(&mut line).unwrap() > 0, "ckeep mcp ended");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    }

    /// A tool's error object: a tool result's content or a JSON-RPC error's data.
    /// A tool's answer that is not an error: its structured content.
    pub(crate) fn tool(&mut self, tool: &str, arguments: &Value) -> Value {
        let answer = self.call("tools/call", &json!({"name": tool, "arguments": arguments}));
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        answer["result"]["structuredContent"].clone()
    }

    fn tool_error(&mut self, tool: &str, arguments: &Value) -> Value {
        let answer = self.call("tools/call", &json!({"name": tool, "arguments": arguments}));
        match answer.get("result") {
            Some(result) => {
                assert_eq!(result["isError"], true, "{answer}");
                result["structuredContent"].clone()
            }
            None => answer["error"]["data"].clone(),
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_cli_http_and_mcp_answer_a_bad_request_with_the_same_error_object() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let file = dir.path().join("a.txt");
    std::fs::write(&file, "Owls hunt at night. Larks sing at dawn.").unwrap();
    ok(&store, &["add", file.to_str().unwrap(), "--chunker", "sentences"]);

    // Each bad request as the CLI, HTTP and MCP take it.
    let cases = [
        (
            vec!["search", " "],
            ("/search", json!({"query": " "})),
            ("search", json!({"query": " "})),
        ),
        (
            vec!["search", "owls", "--strategy", "chunker=words:50"],
            ("/search", json!({"query": "owls", "strategy": "chunker=words:50"})),
            ("search", json!({"query": "owls", "strategy": "chunker=words:50"})),
        ),
        (
            vec!["show", "no-such-doc"],
            ("/documents/no-such-doc", Value::Null),
            ("show", json!({"id": "no-such-doc"})),
        ),
    ];

    let (mut server, base) = crate::serve(&store);
    let http = agent();
    let mut mcp = Mcp::start(&store);
    let mut codes = Vec::new();
    for (cli, (route, body), (tool, arguments)) in cases {
        let mut args = vec!["--json"];
        args.extend(cli);
        let out = run(&store, &args);
        let from_cli: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut res = if body.is_null() {
            http.get(format!("{base}{route}")).call().unwrap()
        } else {
            http.post(format!("{base}{route}")).send_json(&body).unwrap()
        };
        let status = res.status().as_u16();
        let mut from_http: Value = res.body_mut().read_json().unwrap();
        let request_id = from_http["error"].as_object_mut().unwrap().remove("request_id");
        assert!(request_id.is_some(), "HTTP adds its request id: {from_http}");
        let from_mcp = mcp.tool_error(tool, &arguments);

        assert_eq!(from_cli, from_http, "{args:?}");
        assert_eq!(from_cli, from_mcp, "{args:?}");
        let code = from_cli["error"]["code"].as_str().unwrap().to_string();
        // The table's exit code and status for the code.
        let expected = match code.as_str() {
            "invalid_parameter" => (2, 422),
            "conflict" => (2, 409),
            "not_found" => (2, 404),
            other => panic!("unexpected code {other}"),
        };
        assert_eq!((out.status.code().unwrap(), status), expected, "{from_cli}");
        codes.push(code);
    }
    assert_eq!(codes, ["invalid_parameter", "conflict", "not_found"]);
    let _ = server.kill();
    let _ = server.wait();
}

//! The bench's workflow (`cargo run --release -p bench`, `workflow`): `N` `agent()` calls (1000,
//! the agent cap, unless given) in one `parallel`, at most 8 in flight, each one request through
//! the real client to `ANTHROPIC_BASE_URL`, run files in `.runtime/` of the current folder, every
//! progress line printed. The course's side of the comparison is `crates/bench/python/s16_fanout.py`.
//!
//! `ANTHROPIC_BASE_URL=http://127.0.0.1:PORT fanout [N]`

use std::process::ExitCode;
use std::sync::Arc;

use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
use agent_core::config::{AuthType, Config};
use agent_core::workspace::Workspace;
use serde_json::{Value, json};
use workflow::runner::{AgentRunner, RunnerFactory};
use workflow::runtime::{ScriptFn, WorkflowRegistry};
use workflow::{AgentCall, ApiAgentRunner, WorkflowMeta, WorkflowRuntime};

fn main() -> ExitCode {
    let calls: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(workflow::AGENT_CAP);
    let Ok(base_url) = std::env::var("ANTHROPIC_BASE_URL") else {
        eprintln!("fanout: set ANTHROPIC_BASE_URL to the server to call");
        return ExitCode::from(2);
    };
    let model = std::env::var("MODEL_ID").unwrap_or_else(|_| "x".to_owned());
    let config =
        Config { model: model.clone(), base_url, api_key: Some("bench".into()), auth: AuthType::ApiKey };
    let client = match AnthropicClient::new(&config, RetryPolicy::default(), Timeouts::default()) {
        Ok(client) => Arc::new(client),
        Err(e) => {
            eprintln!("fanout: {e}");
            return ExitCode::from(2);
        }
    };
    let workspace = match std::env::current_dir().and_then(Workspace::new) {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("fanout: {e}");
            return ExitCode::from(2);
        }
    };
    let runner: RunnerFactory = Arc::new(move || {
        Arc::new(ApiAgentRunner::new(Arc::clone(&client) as Arc<dyn agent_core::model::Model>, model.clone()))
            as Arc<dyn AgentRunner>
    });
    let fanout: ScriptFn = Arc::new(move |ctx, _args| {
        Box::pin(async move {
            let steps = (0..calls)
                .map(|i| {
                    ctx.agent(AgentCall::new(format!("Step {i}: answer briefly.")).label(format!("step-{i}")))
                })
                .collect();
            Ok(Value::Array(ctx.parallel(steps).await?))
        })
    });
    let mut registry = WorkflowRegistry::default();
    registry.register(
        WorkflowMeta { name: "fanout".into(), description: "N agent() calls at once".into(), phases: None },
        fanout,
    );
    let runtime = WorkflowRuntime::new(workspace, runner)
        .registry(registry)
        .reporter(Arc::new(|event: &workflow::state::WorkflowEvent| println!("{}", event.line())));
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        eprintln!("fanout: cannot start the async runtime");
        return ExitCode::from(2);
    };
    match rt.block_on(runtime.run_workflow(&json!("fanout"), None, None)) {
        Ok(out) if out["task"]["status"] == "completed" => ExitCode::SUCCESS,
        Ok(out) => {
            eprintln!("fanout: {}", out["result"]);
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("fanout: {e}");
            ExitCode::from(1)
        }
    }
}

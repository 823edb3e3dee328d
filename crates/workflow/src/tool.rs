//! The `Workflow` tool (course `WORKFLOW_TOOL`, `run_workflow_sync`): the model names a saved
//! workflow and passes its arguments; it never sends code. The call runs the whole workflow and
//! answers its result as Python's compact `json.dumps` writes it; a refused call answers
//! `Error: {message}`.

use std::sync::Arc;

use agent_core::dispatch::{Subject, ToolError, TypedTool};
use agent_core::messages::ToolSpec;
use serde_json::{Value, json};

use crate::runtime::WorkflowRuntime;

/// The tool's name.
pub const NAME: &str = "Workflow";

/// The tool's spec (course, exact): `name` required, `args` an object, `resume_from_run_id` a
/// string, nothing else.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: "Run a saved workflow by name. Pass input in args.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "args": {"type": "object"},
                "resume_from_run_id": {"type": "string"},
            },
            "required": ["name"],
            "additionalProperties": false,
        }),
    }
}

/// The `Workflow` tool over a [`WorkflowRuntime`].
#[derive(Clone)]
pub struct WorkflowTool {
    runtime: Arc<WorkflowRuntime>,
}

impl WorkflowTool {
    /// The tool running workflows with `runtime`.
    pub fn new(runtime: WorkflowRuntime) -> Self {
        Self { runtime: Arc::new(runtime) }
    }

    /// Runs one call's `input` and answers the `tool_result` text.
    ///
    /// # Errors
    /// [`ToolError::Failed`] with the course's message (shown as `Error: {message}`); an input
    /// with keys other than the three is refused naming them.
    pub async fn call(&self, input: &Value) -> Result<String, ToolError> {
        let Value::Object(map) = input else {
            return Err(ToolError::InvalidInput("the input must be an object with `name`".to_owned()));
        };
        if let Some(extra) =
            map.keys().find(|k| !matches!(k.as_str(), "name" | "args" | "resume_from_run_id"))
        {
            return Err(ToolError::InvalidInput(format!(
                "unexpected argument '{extra}' (Workflow takes name, args and resume_from_run_id)"
            )));
        }
        let Some(name) = map.get("name") else {
            return Err(ToolError::InvalidInput("missing field `name`".to_owned()));
        };
        let out = self
            .runtime
            .run_workflow(name, map.get("args"), map.get("resume_from_run_id"))
            .await
            .map_err(|e| ToolError::failed(e.0))?;
        Ok(pyjson::dumps(&out))
    }
}

impl TypedTool for WorkflowTool {
    type Args = Value;

    fn spec(&self) -> ToolSpec {
        spec()
    }

    fn subject(&self, args: &Value) -> Subject {
        args.get("name").and_then(Value::as_str).map_or(Subject::Nothing, |n| Subject::Text(n.to_owned()))
    }

    async fn run(self: Arc<Self>, input: Value) -> Result<String, ToolError> {
        self.call(&input).await
    }
}

/// Appends `Workflow` last to every request's tools (course `install_workflow_tool`: s15's pool
/// with `Workflow` after it). An extension rather than a tool of the dispatch map, so that it
/// comes after the MCP tools, which s15 adds to each request: put it after s15's extensions.
pub struct WorkflowExtension {
    tool: WorkflowTool,
}

impl WorkflowExtension {
    /// The extension adding `tool`.
    pub fn new(tool: WorkflowTool) -> Self {
        Self { tool }
    }
}

#[async_trait::async_trait]
impl agent_core::extension::Extension for WorkflowExtension {
    async fn before_request(
        &mut self,
        request: &mut agent_core::extension::RequestContext<'_>,
    ) -> Result<(), agent_core::error::ApiError> {
        request.tools.register(self.tool.clone());
        Ok(())
    }
}

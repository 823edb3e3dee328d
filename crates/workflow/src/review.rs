//! The course's saved workflow `review-changes`: four audits (correctness, security,
//! performance, style) run as a pipeline, each finding verified by its own adversarial agent,
//! and only the confirmed findings kept, most severe first.
//!
//! ```text
//!  phase Review ── pipeline(DIMENSIONS)
//!    item: audit(dimension) ──► verify: phase Verify, parallel(one verifier per finding)
//!  confirmed findings, sorted high → medium → low, `confirmed {n} real finding(s)`
//! ```

use serde_json::{Map, Value, json};

use crate::WorkflowInputError;
use crate::runtime::WorkflowMeta;
use crate::schema::py_truthy;
use crate::state::{AgentCall, ExecutionState, py_str, stage};

/// The review dimensions, one audit each.
pub const DIMENSIONS: [&str; 4] = ["correctness", "security", "performance", "style"];

/// The change `s16 demo` reviews (course `DEMO_CHANGES`).
pub const DEMO_CHANGES: &str = "def load_user(user_id):\n    query = f\"SELECT * FROM users WHERE id = {user_id}\"\n    return db.execute(query).fetchone()\n";

/// The workflow's metadata (course `SAMPLE_META`).
pub fn meta() -> WorkflowMeta {
    WorkflowMeta {
        name: "review-changes".to_owned(),
        description: "Review changed files across dimensions, verify each finding".to_owned(),
        phases: Some(vec!["Review".to_owned(), "Verify".to_owned()]),
    }
}

/// An audit's answer: `{"findings": [{"title", "severity": high|medium|low}]}`.
pub fn findings_schema() -> Value {
    json!({
        "type": "object", "required": ["findings"],
        "properties": {"findings": {"type": "array", "items": {
            "type": "object", "required": ["title", "severity"],
            "properties": {
                "title": {"type": "string"},
                "severity": {"type": "string", "enum": ["high", "medium", "low"]},
            }}}},
    })
}

/// A verifier's answer: `{"isReal": boolean, "reason": string}`.
pub fn verdict_schema() -> Value {
    json!({
        "type": "object", "required": ["isReal", "reason"],
        "properties": {"isReal": {"type": "boolean"}, "reason": {"type": "string"}},
    })
}

/// The workflow itself (course `sample_workflow`). `args.changes` is the change to review (a
/// string; blank reviews `No change context was supplied.`).
///
/// # Errors
/// `args.changes must be a string`; any agent call's error.
pub fn review_changes(
    ctx: ExecutionState,
    args: Value,
) -> futures_util::future::BoxFuture<'static, crate::Result<Value>> {
    Box::pin(async move {
        ctx.phase("Review");
        let changes = match args.get("changes") {
            None => "",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(WorkflowInputError::new("args.changes must be a string")),
        };
        let review_input = match pyjson::strip(changes) {
            "" => "No change context was supplied.".to_owned(),
            text => text.to_owned(),
        };

        let audit = {
            let (ctx, input) = (ctx.clone(), review_input.clone());
            stage(move |_value, dimension, _index| {
                let dimension = py_str(&dimension);
                let call = AgentCall::new(format!(
                    "Review this change context for {dimension} issues. Report only issues supported by the supplied text.\n\n{input}"
                ))
                .schema(findings_schema())
                .label(format!("audit:{dimension}"))
                .phase("Review");
                let found = ctx.agent(call);
                async move {
                    let out = found.await?;
                    Ok(
                        json!({"dimension": dimension, "findings": out.get("findings").cloned().unwrap_or(json!([]))}),
                    )
                }
            })
        };
        let verify = {
            let (ctx, input) = (ctx.clone(), review_input.clone());
            stage(move |audited, dimension, _index| {
                let (ctx, input) = (ctx.clone(), input.clone());
                async move {
                    ctx.phase("Verify");
                    let dimension = py_str(&dimension);
                    let findings =
                        audited.get("findings").and_then(Value::as_array).cloned().unwrap_or_default();
                    let verifiers = findings
                        .iter()
                        .map(|finding| {
                            let title = finding.get("title").map(py_str).unwrap_or_default();
                            ctx.agent(
                                AgentCall::new(format!(
                                    "Adversarially verify this {dimension} finding against the supplied change context.\n\nChange context:\n{input}\n\nFinding:\n{}",
                                    pyjson::dumps(finding)
                                ))
                                .schema(verdict_schema())
                                .label(format!("verify:{dimension}:{title}"))
                                .phase("Verify"),
                            )
                        })
                        .collect();
                    let verdicts = ctx.parallel(verifiers).await?;
                    let confirmed: Vec<Value> = findings
                        .into_iter()
                        .zip(verdicts)
                        .filter(|(_, v)| py_truthy(v) && v.get("isReal").is_some_and(py_truthy))
                        .map(|(f, _)| f)
                        .collect();
                    Ok(json!({"dimension": dimension, "confirmed": confirmed}))
                }
            })
        };

        let items = DIMENSIONS.iter().map(|d| json!(d)).collect();
        let results = ctx.pipeline(items, vec![audit, verify]).await?;
        let mut confirmed: Vec<Value> = Vec::new();
        for result in results.iter().filter(|r| py_truthy(r)) {
            for finding in result.get("confirmed").and_then(Value::as_array).into_iter().flatten() {
                let mut entry = Map::new();
                entry.insert("dimension".to_owned(), result.get("dimension").cloned().unwrap_or(Value::Null));
                for (k, v) in finding.as_object().into_iter().flatten() {
                    entry.insert(k.clone(), v.clone());
                }
                confirmed.push(Value::Object(entry));
            }
        }
        let rank = |f: &Value| match f.get("severity").and_then(Value::as_str) {
            Some("high") => 0,
            Some("medium") => 1,
            Some("low") => 2,
            _ => 3,
        };
        confirmed.sort_by_key(rank);
        ctx.log(&format!("confirmed {} real finding(s)", confirmed.len()));
        Ok(json!({"confirmed": confirmed}))
    })
}

/// The demo's result lines (course `run_demo`): `  [{severity:<6}] {dimension}: {title}` per
/// confirmed finding; none for a failed run.
pub fn result_lines(result: &Value) -> Vec<String> {
    result
        .get("confirmed")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|f| {
            let field = |k: &str| f.get(k).map(py_str).unwrap_or_default();
            format!("  [{:<6}] {}: {}", field("severity"), field("dimension"), field("title"))
        })
        .collect()
}

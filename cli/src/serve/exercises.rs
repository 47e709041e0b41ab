//! Exercises in the page: the book's exercises by name ([`Catalog`], rebuilt with the book), the
//! learner's last version (kept in `exercises/NAME.cu`, as `kernelbook check` keeps it), and the
//! grade, exactly as `kernelbook check` gives it: the same [`CheckPlan`], measured by the same
//! runner in its measuring child under the lab's time limits, the same verdict and table.

use super::App;
use super::gpu::Job;
use crate::cmd::check::{exercise_file, starter_kernel};
pub use crate::cmd::check_report::CheckReport;
use crate::output::notice;
use crate::project::Project;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kernelbook_core::KernelSource;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::RunError;
use kernelbook_runner::exercise::CheckPlan;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// An exercise of the book: its lab, the kernels it runs, its starter kernel.
#[derive(Debug, Clone)]
pub struct Exercise {
    pub lab: LabSpec,
    pub kernels: BTreeMap<String, KernelSource>,
    /// The starter kernel's name (the block the page makes editable) and source.
    pub kernel: String,
    pub starter: String,
}

/// The book's exercises by name: the only names the server accepts.
#[derive(Debug, Clone, Default)]
pub struct Catalog(BTreeMap<String, Exercise>);

impl Catalog {
    /// The exercises of `project`: its ready labs with an `[exercise]` section and a starter
    /// kernel in the book.
    pub fn of(project: &Project) -> Catalog {
        let exercises = project
            .labs
            .ready
            .values()
            .filter(|lab| lab.exercise.is_some())
            .filter_map(|lab| {
                let starter = starter_kernel(project, lab).ok()?;
                Some((
                    lab.name.clone(),
                    Exercise {
                        lab: lab.clone(),
                        kernels: project.kernels_for(lab),
                        kernel: starter.name.clone(),
                        starter: starter.source.clone(),
                    },
                ))
            })
            .collect();
        Catalog(exercises)
    }

    pub fn get(&self, name: &str) -> Option<&Exercise> {
        self.0.get(name)
    }

    #[cfg(test)]
    pub fn insert(&mut self, exercise: Exercise) {
        self.0.insert(exercise.lab.name.clone(), exercise);
    }
}

/// A body that carries the learner's kernel.
#[derive(Debug, Deserialize)]
pub struct Edit {
    source: String,
}

/// An error as the page shows it: `{"error": "..."}`.
fn error(status: StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

fn unknown(name: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "there is no exercise `{}` in this book",
            kernelbook_core::terminal::one_line(name)
        ),
    )
}

/// `GET /__kernelbook/api/exercises`: the exercises, which kernel block each starts from, and
/// the GPU they are graded on (or why none).
pub async fn list(State(app): State<Arc<App>>) -> Response {
    let catalog = app.catalog();
    let status = app.board.now();
    let exercises: Vec<_> = catalog
        .0
        .values()
        .map(
            |e| serde_json::json!({ "name": e.lab.name, "title": e.lab.title, "kernel": e.kernel }),
        )
        .collect();
    Json(serde_json::json!({
        "exercises": exercises,
        "gpu": status.gpu,
        "no_gpu": status.no_gpu,
    }))
    .into_response()
}

/// `GET /__kernelbook/api/exercises/NAME`: the learner's last version (the starter before
/// the first edit), and the starter.
pub async fn source(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    let Some(exercise) = app.catalog().get(&name).cloned() else {
        return unknown(&name);
    };
    let file = exercise_file(&app.root, &name);
    let (source, saved) = match tokio::fs::read_to_string(&file).await {
        Ok(source) => (source, true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => (exercise.starter.clone(), false),
        Err(err) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot read {}: {err}", file.display()),
            );
        }
    };
    Json(serde_json::json!({
        "source": source,
        "saved": saved,
        "starter": exercise.starter,
        "file": file.display().to_string(),
    }))
    .into_response()
}

/// `PUT /__kernelbook/api/exercises/NAME`: keeps the learner's version, so that closing the
/// tab loses nothing.
pub async fn save(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    Json(edit): Json<Edit>,
) -> Response {
    if app.catalog().get(&name).is_none() {
        return unknown(&name);
    }
    match keep(&app, &name, edit.source).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(response) => response,
    }
}

/// Writes the learner's `source` of exercise `name` to its file, whole or not at all (a temp
/// file renamed over it); returns the file.
async fn keep(app: &App, name: &str, source: String) -> Result<std::path::PathBuf, Response> {
    let file = exercise_file(&app.root, name);
    let target = file.clone();
    let written = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(&dir)?;
        temp.write_all(source.as_bytes())?;
        temp.persist(&target).map_err(|err| err.error)?;
        Ok(())
    })
    .await;
    match written {
        Ok(Ok(())) => Ok(file),
        Ok(Err(err)) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot keep your kernel in {}: {err}", file.display()),
        )),
        Err(err) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())),
    }
}

/// One check at a time: the GPU grades one kernel, and a second click waits for the first.
struct CheckTurn<'a>(&'a AtomicBool);

impl<'a> CheckTurn<'a> {
    fn take(flag: &'a AtomicBool) -> Option<CheckTurn<'a>> {
        (!flag.swap(true, Ordering::AcqRel)).then_some(CheckTurn(flag))
    }
}

impl Drop for CheckTurn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// `POST /__kernelbook/api/exercises/NAME/check`: keeps the learner's kernel, grades it on
/// the GPU and answers with a [`CheckReport`].
pub async fn check(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    Json(edit): Json<Edit>,
) -> Response {
    let Some(exercise) = app.catalog().get(&name).cloned() else {
        return unknown(&name);
    };
    let Some(_turn) = CheckTurn::take(&app.checking) else {
        return error(
            StatusCode::CONFLICT,
            "a check is already running: wait for its verdict".into(),
        );
    };
    let plan = {
        let file = exercise_file(&app.root, &name);
        match CheckPlan::new(&exercise.lab, &exercise.kernels, &edit.source, &file) {
            Ok(plan) => plan,
            Err(err) => return error(StatusCode::UNPROCESSABLE_ENTITY, err.to_string()),
        }
    };
    let file = match keep(&app, &name, edit.source).await {
        Ok(file) => file,
        Err(response) => return response,
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = Job::Check {
        plan: Box::new(plan),
        done: Box::new(move |result| {
            let _ = reply.send(result);
        }),
    };
    let stopped = || {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the GPU worker has stopped: restart `kernelbook serve`".into(),
        )
    };
    if app.gpu.send(job).is_err() {
        return stopped();
    }
    match answer.await {
        Err(_) => stopped(),
        Ok(Ok(checked)) => {
            notice(&format!(
                "kernelbook: checked `{name}` ({}): {}",
                file.display(),
                checked.verdict
            ));
            Json(CheckReport::new(&exercise.lab, &checked, &file)).into_response()
        }
        Ok(Err(RunError::Unavailable(why))) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot check `{name}` on this machine: {why}"),
        ),
        Ok(Err(err)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("checking `{name}` failed: {err}"),
        ),
    }
}

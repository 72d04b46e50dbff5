//! What `eval run` and `eval tune` share: loading the dataset the flags name, and running
//! strategies on it.

use anyhow::bail;
use ckeep_eval::dataset::Dataset;
use ckeep_eval::experiment::Comparison;
use ckeep_eval::{Metric, dataset, experiment};

use crate::flags::DatasetFlags;
use crate::output::Output;

/// The dataset `flags` name, with its left-out documents warned about (or, with `--strict`,
/// refused) and at least one judged query.
pub(crate) fn load_dataset(flags: &DatasetFlags, out: &Output) -> anyhow::Result<Dataset> {
    let files = flags.docs.as_deref().zip(flags.queries.as_deref());
    let mut data =
        dataset::load(flags.dataset.as_deref(), &flags.split, files, flags.relevance == "passage")?;
    if let Some(fields) = flags.fields {
        data.fields = fields;
    }
    if !data.skipped.is_empty() {
        let shown = data.skipped.iter().take(10).cloned().collect::<Vec<_>>().join("\n  ");
        let more = data.skipped.len().saturating_sub(10);
        let more = if more > 0 { format!("\n  … and {more} more") } else { String::new() };
        let what = format!(
            "{} document(s) with empty text, which no system can retrieve:\n  {shown}{more}",
            data.skipped.len()
        );
        if flags.strict {
            bail!(crate::UsageError(format!("{} has {what}", data.name)));
        }
        out.warn(format!("left out {what}\n(--strict refuses such a dataset)"));
    }
    if data.queries.is_empty() {
        bail!("{} has no judged queries", data.name);
    }
    Ok(data)
}

/// How the strategies of a comparison are run.
pub(crate) struct Runs<'a> {
    pub metrics: &'a [Metric],
    pub tokens: Option<&'a ckeep_embed::TokenCounter>,
    pub no_cache: bool,
}

/// Runs `strategies` on `data` (indexes in `--work-dir`, else a temporary directory), with a
/// progress bar.
pub(crate) fn compare(
    flags: &DatasetFlags,
    data: &Dataset,
    strategies: Vec<ckeep_engine::Strategy>,
    runs: &Runs<'_>,
    out: &Output,
) -> anyhow::Result<Comparison> {
    out.note(format!(
        "{}: {} documents, {} queries, {} strategies; fields {} unless a strategy names repr=",
        data.name,
        data.docs.len(),
        data.queries.len(),
        strategies.len(),
        if data.fields == ckeep_engine::Fields::TitleText { "title,text" } else { "text" }
    ));
    with_indexes(flags, strategies, runs.no_cache, out, |work, strategies, models, progress| {
        experiment::run(data, strategies, runs.metrics, work, models, runs.tokens, progress)
    })
}

/// Calls `job` with where indexes go (`--work-dir`, else a temporary directory removed on
/// exit), the strategies with `--model` given to those that need one, a model loader and a
/// progress bar: what every dataset experiment needs.
pub(crate) fn with_indexes<T>(
    flags: &DatasetFlags,
    mut strategies: Vec<ckeep_engine::Strategy>,
    no_cache: bool,
    out: &Output,
    job: impl FnOnce(
        &str,
        &[ckeep_engine::Strategy],
        experiment::ModelLoader<'_>,
        experiment::Progress<'_>,
    ) -> Result<T, ckeep_engine::Error>,
) -> anyhow::Result<T> {
    let tmp = tempfile::Builder::new().prefix("ckeep-eval-").tempdir()?;
    let tmp_path = tmp.path().display().to_string();
    let work: &str = flags.work_dir.as_deref().unwrap_or(&tmp_path);
    let bar = out.progress(0, "");
    let mut stage = String::new();
    let mut progress = |what: &str, done: u64, total: u64| {
        if what != stage {
            stage = what.to_string();
            bar.set_message(stage.clone());
            bar.set_length(total);
        }
        bar.set_position(done);
    };
    let model = flags.model.as_deref().map(|m| flags.precision.apply(m));
    experiment::default_model(&mut strategies, model.as_deref());
    let loaded = ckeep_engine::ModelSet::new(!no_cache);
    let mut models = |spec: &str| loaded.get(spec).map_err(ckeep_engine::Error::Embed);
    let result = job(work, &strategies, &mut models, &mut progress)?;
    bar.finish_and_clear();
    Ok(result)
}

//! Why a search found nothing, when the cause is not the query's words: an empty store, or a
//! filter no document passes. Every front end says so in the same words (`message`: the CLI's
//! warning, the JSON's `no_results`, Python's warning) instead of a bare "no results" that
//! reads like a miss.

use std::fmt::Write;

use serde::Serialize;

use ckeep_store::{MetadataFilter, StoreRead};

use crate::Result;

/// The cause of an empty result list that the query's words did not decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NoResults {
    /// What the cause is.
    pub reason: NoResultsReason,
    /// The cause in one line for people.
    pub message: String,
    /// Keys the filter names that no stored document has (a typo, most often).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_keys: Vec<String>,
    /// `[key, text]` pairs compared for equality with a text that starts like an operator
    /// (`year=>2020` asks for the text `>2020`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub texts_like_operators: Vec<[String; 2]>,
}

/// Why a search found nothing: the store is empty, or no document passes the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NoResultsReason {
    /// The store holds no documents (it was emptied, or nothing was added yet).
    EmptyStore,
    /// No document's metadata passes the filter.
    FilterMatchedNone,
}

impl NoResults {
    /// Why `store` gave nothing for a search with `filter` that let `passing` documents
    /// through (`None`: no filter); `None` when the query's words decided.
    pub(crate) fn find<S: StoreRead + ?Sized>(
        store: &S,
        filter: Option<&MetadataFilter>,
        passing: Option<usize>,
    ) -> Result<Option<Self>> {
        if store.document_count()? == 0 {
            return Ok(Some(Self {
                reason: NoResultsReason::EmptyStore,
                message: "the store has no documents: add some with `ckeep add PATH`".into(),
                unknown_keys: Vec::new(),
                texts_like_operators: Vec::new(),
            }));
        }
        let Some(filter) = filter.filter(|_| passing == Some(0)) else { return Ok(None) };
        let mut unknown_keys = Vec::new();
        for key in filter.keys() {
            let exists = serde_json::json!({ key.clone(): { "$exists": true } });
            let exists = MetadataFilter(exists.as_object().cloned().unwrap_or_default());
            if store.doc_keys_where(&exists)?.is_empty() {
                unknown_keys.push(key);
            }
        }
        let texts_like_operators: Vec<[String; 2]> =
            filter.texts_like_operators().into_iter().map(|(k, t)| [k, t]).collect();
        let mut message = "no document passes the filter".to_string();
        if !unknown_keys.is_empty() {
            let keys: Vec<String> = unknown_keys.iter().map(|k| format!("`{k}`")).collect();
            let _ = write!(message, "; no document has the key {}", keys.join(", "));
        }
        for [key, text] in &texts_like_operators {
            let _ = write!(
                message,
                "; `{key}` is compared with the text `{text}` (a comparison is written with the \
                 operator alone, as `{key}>=VALUE`)"
            );
        }
        Ok(Some(Self {
            reason: NoResultsReason::FilterMatchedNone,
            message,
            unknown_keys,
            texts_like_operators,
        }))
    }
}

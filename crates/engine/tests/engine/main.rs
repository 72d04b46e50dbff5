//! The engine's integration tests, as one test binary (each module one concern; the real
//! tier's tests are `#[ignore = "real tier …"]` here and run by `scripts/test.sh`).

mod ann;
mod answer;
mod corpus;
mod diversify;
mod filtered;
mod model_based;
mod more_models;
mod multilingual;
#[cfg(feature = "postgres")]
mod postgres;
mod quantized;
mod readers;
mod remove;
mod representations;
mod rerank;
mod segments;
mod store_seam;

//! mfu: honest model FLOPs utilization from the logs of finished training runs.
//!
//! The library is the whole product; the `mfu` binary is a thin command line over it. Data flows one way,
//! one stage per module:
//!
//! ```text
//! read (files, folders, globs, stdin) → columns (aliases, units, constants) → peaks (resolve once per
//! distinct device and precision) → compute (throughput, MFU) → write (Parquet, CSV, JSONL; atomically)
//! ```
//!
//! [`pipeline`] runs those stages over files for every front end (the `mfu` binary is one): options in,
//! outputs written, progress and warnings reported as data.
//!
//! [`peaks`] holds the dtype-aware table of dense peaks and the device-name matcher that never hands out a
//! wrong denominator; [`enrich::enrich_frame`] is the pipeline on one polars frame.

pub mod arrow_bridge;
pub mod audit;
pub mod columns;
pub mod compute;
pub mod conventions;
pub mod enrich;
pub mod flops;
pub mod goodput;
pub mod peaks;
pub mod pipeline;
pub mod plot;
pub mod read;
pub mod report;
pub mod stats;
pub mod store;
pub mod summary;
pub mod values;
pub mod vision_flops;
pub mod write;

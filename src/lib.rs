//! mfu: honest model FLOPs utilization from the logs of finished training runs.
//!
//! The library is the whole product; the `mfu` binary is a thin command line over it. Data flows one way:
//! read → map columns → resolve peaks → compute → write. [`peaks`] holds the dtype-aware table of dense
//! peaks and the device-name matcher that never hands out a wrong denominator.

pub mod peaks;

//! One integration-test binary, split by topic: the library's table checks, then one file per subcommand.

mod util;

mod architecture;
mod audit_lookups;
mod cmd_audit;
mod cmd_enrich;
mod cmd_goodput;
mod cmd_lookup;
mod cmd_peaks;
mod cmd_plot;
mod cmd_summary;
mod console;
mod evidence;
mod faults;
mod fidelity;
mod flops;
mod memory;
mod peak_table;
mod pipeline;
mod remote;
mod report;
mod shapes;
mod types;

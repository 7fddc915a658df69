//! The output flags a finished run's result goes to — `--save`, `--summary-export`,
//! `--report`, `--out` — declared once and flattened into `volley run` and
//! `volley coordinator`, so both spell and explain them alike.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Default, Clone)]
pub struct OutputFlags {
    /// Save the run result file (see docs/result-file.md)
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Write k6's end-of-test summary export JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub summary_export: Option<PathBuf>,
    /// Write the self-contained HTML report of the run to FILE at the end
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Stream the run to an output (repeatable): json=FILE, csv=FILE, junit=FILE,
    /// influxdb=http://host:8086/db, prometheus=http://host:9090/api/v1/write (docs/outputs.md)
    #[arg(short = 'o', long = "out", value_name = "KIND=WHERE")]
    pub out: Vec<String>,
}

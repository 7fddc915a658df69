//! The example suites of `examples/`, embedded so `volley demo` works from an installed
//! binary. They are written to the output directory before they run, because the runtime
//! loads a script and its `./lib` imports from disk.

/// One example suite.
pub(crate) struct Example {
    /// The script's file name without `.js`: the row in the table.
    pub name: &'static str,
    pub source: &'static str,
}

macro_rules! example {
    ($name:literal) => {
        Example {
            name: $name,
            source: include_str!(concat!("../../../examples/", $name, ".js")),
        }
    };
}

/// In the order of `docs/examples.md`: single scenarios first, the mixes last.
pub(crate) static EXAMPLES: [Example; 11] = [
    example!("auth-login"),
    example!("auth-refresh"),
    example!("folder-list"),
    example!("search"),
    example!("download"),
    example!("upload-direct"),
    example!("upload-chunked"),
    example!("batch-move"),
    example!("webdav-rw"),
    example!("mixed-ramp"),
    example!("soak-mixed"),
];

/// `examples/lib/`, which every example imports.
pub(crate) const LIB: [(&str, &str); 3] = [
    ("config.js", include_str!("../../../examples/lib/config.js")),
    ("api.js", include_str!("../../../examples/lib/api.js")),
    ("mix.js", include_str!("../../../examples/lib/mix.js")),
];

/// The intro's script (`volley demo` step 2), written for the built-in target.
pub(crate) const QUICKSTART: &str = include_str!("../../../examples/quickstart.js");

pub(crate) fn names() -> Vec<&'static str> {
    EXAMPLES.iter().map(|e| e.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_example_of_the_repository_is_in_the_tour() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter_map(|n| n.strip_suffix(".js").map(str::to_owned))
            // The intro's script, written for the built-in target.
            .filter(|n| n != "quickstart")
            .collect();
        on_disk.sort();
        let mut tour: Vec<String> = names().iter().map(|s| s.to_string()).collect();
        tour.sort();
        assert_eq!(on_disk, tour);
    }
}

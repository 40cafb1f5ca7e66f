//! `linerate completions` and `linerate man`: both made from the clap command itself, so a flag
//! added to the CLI is in the completion script and the manual page without a second list.

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use linerate_cli::{Cli, CompletionsArgs, ManArgs};

/// Prints the completion script for the shell, e.g. `linerate completions bash > /etc/bash_completion.d/linerate`.
pub fn completions(args: &CompletionsArgs) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "linerate", &mut script);
    // Rendered first and written through output::print: a reader that went away or a full disk
    // is an error line, where clap_complete writing to stdout itself would panic.
    crate::output::print(&String::from_utf8(script).context("completion script is not UTF-8")?)
}

/// Prints linerate.1 on stdout, or writes it and one page per command into `--dir`.
pub fn man(args: &ManArgs) -> Result<()> {
    match &args.dir {
        Some(dir) => write_pages(dir),
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .context("rendering the manual page")?;
            crate::output::print(&String::from_utf8(page).context("manual page is not UTF-8")?)
        }
    }
}

fn write_pages(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(crate::usage(format!(
            "--dir {}: not a directory",
            dir.display()
        )));
    }
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("writing the manual pages into {}", dir.display()))?;
    eprintln!("wrote the manual pages into {}", dir.display());
    Ok(())
}

//! The files a command writes its result to — JSON, CSV, a plot — reserved before it measures
//! (so a bad path costs no measurement), written together once it has a result, and the text
//! it prints: the same for a sweep, a sweep of several backends and an RFC 2544 run.

use std::path::{Path, PathBuf};

use crate::rfc2544::Rfc2544Result;
use crate::{
    BackendChoice, BackendSweeps, OutputFile, PlotFormat, ReportError, SweepResult,
    csv_repetitions, csv_summary, plot_backends, plot_sweep, render_table, repetitions_csv_path,
};

/// A result as the files and the table a command writes.
pub trait Written {
    fn json(&self) -> String;
    /// Each CSV file's text, in the order [`Outputs::reserve`] was given their paths.
    fn csv(&self) -> Vec<String>;
    /// Draws the plot at `path`; `Ok(false)`: there was nothing to plot.
    fn plot(&self, path: &Path) -> Result<bool, ReportError>;
    /// What stdout shows when the JSON does not go there.
    fn table(&self) -> String;
}

/// The line above a table that states what `--backend auto` chose, as `tx`'s report does.
pub fn choice_line(c: Option<&BackendChoice>) -> String {
    c.map_or_else(String::new, |c| {
        format!("backend {}: {}\n", c.backend, c.why)
    })
}

impl Written for SweepResult {
    fn json(&self) -> String {
        self.to_json()
    }

    fn csv(&self) -> Vec<String> {
        vec![csv_summary(self), csv_repetitions(self)]
    }

    fn plot(&self, path: &Path) -> Result<bool, ReportError> {
        plot_sweep(self, path).map(|()| true)
    }

    fn table(&self) -> String {
        format!(
            "{}{}",
            choice_line(self.context.backend_choice.as_ref()),
            render_table(self)
        )
    }
}

impl Written for BackendSweeps {
    fn json(&self) -> String {
        self.to_json()
    }

    fn csv(&self) -> Vec<String> {
        vec![self.csv_summary(), self.csv_repetitions()]
    }

    fn plot(&self, path: &Path) -> Result<bool, ReportError> {
        plot_backends(self, path).map(|()| true)
    }

    fn table(&self) -> String {
        self.render()
    }
}

impl Written for Rfc2544Result {
    fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    fn csv(&self) -> Vec<String> {
        vec![crate::rfc2544::csv(self)]
    }

    fn plot(&self, path: &Path) -> Result<bool, ReportError> {
        let panels = crate::rfc2544::panels(self);
        if panels.is_empty() {
            return Ok(false);
        }
        let title = format!(
            "linerate rfc2544: {} → {}",
            self.context.interface, self.context.rx
        );
        crate::plot_panels(path, &title, &panels).map(|()| true)
    }

    fn table(&self) -> String {
        format!(
            "{}{}",
            choice_line(self.context.backend_choice.as_ref()),
            crate::rfc2544::tables(self)
        )
    }
}

/// The CSV files of a sweep: the summary at `path`, the repetitions beside it.
pub fn sweep_csv_paths(path: &Path) -> Vec<PathBuf> {
    vec![path.to_owned(), repetitions_csv_path(path)]
}

/// A plot file: its format comes from the extension, and plotters writes it by path, so it must
/// be a regular file (drawn beside it, then renamed into place).
pub fn reserve_plot(path: &Path) -> Result<OutputFile, ReportError> {
    PlotFormat::from_path(path)?;
    let out = OutputFile::reserve(path)?;
    if !out.is_regular() {
        return Err(ReportError::Output {
            path: path.to_owned(),
            why: "a plot is written as a regular file, not to a device or pipe".into(),
        });
    }
    Ok(out)
}

/// Draws into a file [`reserve_plot`] reserved; an error names the user's file, not the
/// temporary one beside it.
pub fn draw(
    out: &mut OutputFile,
    plot: impl FnOnce(&Path) -> Result<bool, ReportError>,
) -> Result<bool, ReportError> {
    let user = out.path().to_owned();
    let path = out
        .draw_path()?
        .expect("reserve_plot takes regular files only")
        .to_owned();
    plot(&path).map_err(|e| match e {
        ReportError::Plot { message, .. } => ReportError::Plot {
            path: user,
            message,
        },
        other => other,
    })
}

/// The files a result goes to, reserved.
#[derive(Debug)]
pub struct Outputs {
    /// None: the JSON goes to stdout (`-`) or nowhere.
    json: Option<OutputFile>,
    json_stdout: bool,
    csv: Vec<OutputFile>,
    plot: Option<OutputFile>,
}

/// What writing the outputs did: the files written, in order, the text for stdout, and
/// whether the plot asked for had nothing to show.
#[derive(Debug)]
pub struct Wrote {
    pub files: Vec<PathBuf>,
    pub stdout: String,
    pub nothing_to_plot: bool,
}

impl Outputs {
    /// Reserves the JSON file (`-`: stdout), the CSV files and the plot; nothing at any path
    /// changes yet.
    pub fn reserve(
        json: Option<&Path>,
        csv: &[PathBuf],
        plot: Option<&Path>,
    ) -> Result<Self, ReportError> {
        let json_stdout = json == Some(Path::new("-"));
        Ok(Outputs {
            json: match json {
                Some(p) if !json_stdout => Some(OutputFile::reserve(p)?),
                _ => None,
            },
            json_stdout,
            csv: csv
                .iter()
                .map(|p| OutputFile::reserve(p))
                .collect::<Result<_, _>>()?,
            plot: plot.map(reserve_plot).transpose()?,
        })
    }

    /// Writes every file; returns what stdout shows (the JSON when it goes there, else the
    /// table).
    pub fn write(self, result: &dyn Written) -> Result<Wrote, ReportError> {
        let mut files = Vec::new();
        let json = result.json();
        if let Some(out) = self.json {
            files.push(out.path().to_owned());
            out.write(json.as_bytes())?;
        }
        if !self.csv.is_empty() {
            for (out, text) in self.csv.into_iter().zip(result.csv()) {
                files.push(out.path().to_owned());
                out.write(text.as_bytes())?;
            }
        }
        let mut nothing_to_plot = false;
        if let Some(mut out) = self.plot {
            if draw(&mut out, |p| result.plot(p))? {
                files.push(out.path().to_owned());
                out.commit()?;
            } else {
                nothing_to_plot = true;
            }
        }
        let stdout = if self.json_stdout {
            json
        } else {
            result.table()
        };
        Ok(Wrote {
            files,
            stdout,
            nothing_to_plot,
        })
    }
}

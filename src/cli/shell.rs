//! `agentsim completions SHELL` and `agentsim man`: the shell's completion
//! script and the manual page, generated from the same argument definitions
//! the parser uses, so they cannot drift from the commands.

use std::process::ExitCode;

use clap::CommandFactory;

use super::output::stdout_text;
use super::{Cli, Failure};

/// Arguments of `completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "SHELL")]
    shell: clap_complete::Shell,
}

/// Prints the completion script for `args.shell` (for example
/// `agentsim completions bash > ~/.local/share/bash-completion/completions/agentsim`).
pub fn completions(args: &CompletionsArgs) -> Result<ExitCode, Failure> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "agentsim", &mut script);
    stdout_text(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the manual page (roff) of `agentsim` and all its subcommands, for
/// `agentsim man > agentsim.1; man ./agentsim.1`.
pub fn man() -> Result<ExitCode, Failure> {
    let command = Cli::command();
    let mut page = Vec::new();
    let render = |page: &mut Vec<u8>, command: clap::Command| {
        clap_mangen::Man::new(command)
            .render(page)
            .map_err(|e| Failure::input(format!("cannot render the manual: {e}")))
    };
    render(&mut page, command.clone())?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("agentsim-{}", sub.get_name());
        render(&mut page, sub.clone().name(name))?;
    }
    stdout_text(&String::from_utf8_lossy(&page))?;
    Ok(ExitCode::SUCCESS)
}

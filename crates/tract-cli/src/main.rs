//! The `tract` binary.

fn main() -> std::process::ExitCode {
    tract_cli::run(std::env::args_os())
}

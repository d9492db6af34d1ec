//! Placeholder while the load generator is being written (issue 3).
#[derive(clap::Args, Debug)]
pub struct LoadArgs {}

pub fn run(_args: LoadArgs) -> anyhow::Result<i32> {
    anyhow::bail!("neurogc load is not built yet")
}

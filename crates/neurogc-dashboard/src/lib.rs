//! Placeholder while the dashboard is being written (issue 6).
#[derive(clap::Args, Debug)]
pub struct DashboardArgs {}

pub fn run(_args: DashboardArgs) -> anyhow::Result<i32> {
    anyhow::bail!("neurogc dashboard is not built yet")
}

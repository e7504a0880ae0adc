//! A persona made of an app and a list of user operations.

use crate::ctx::Ctx;
use crate::error::AppError;
use crate::persona::{exec, AppSpec, MedfsRow, Persona, UserOp};

/// An app and the user operations of one task (or several tasks in sequence).
#[derive(Clone, Debug)]
pub struct TaskPersona {
    pub name: String,
    pub description: String,
    pub calibration: String,
    pub app: &'static AppSpec,
    /// Operations run after installation and before recording: the app "used before".
    pub warmup: Vec<UserOp>,
    /// The recorded task.
    pub ops: Vec<UserOp>,
    pub target: Option<MedfsRow>,
}

impl Persona for TaskPersona {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn description(&self) -> String {
        self.description.clone()
    }
    fn calibration(&self) -> String {
        self.calibration.clone()
    }
    fn target(&self) -> Option<MedfsRow> {
        self.target
    }
    fn setup(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        self.app.install(ctx)?;
        run_ops(ctx, self.app, &self.warmup)
    }
    fn apps(&self) -> Vec<&'static AppSpec> {
        vec![self.app]
    }
    fn run(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        if ctx.db().is_err() {
            // Without setup (already installed), the app opens its databases first.
            self.app.open(ctx)?;
        }
        run_ops(ctx, self.app, &self.ops)
    }
}

/// Runs operations with their repetitions and think times.
pub fn run_ops(ctx: &mut Ctx, app: &AppSpec, ops: &[UserOp]) -> Result<(), AppError> {
    for op in ops {
        for _ in 0..op.repeat.max(1) {
            ctx.user_op(op.name, |ctx| exec(ctx, app, &op.steps))?;
            ctx.think(u64::from(op.think_ms) * flashstack_sim::NS_PER_MS);
        }
    }
    Ok(())
}

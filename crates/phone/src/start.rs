//! Starting a persona on a used phone: the personas' apps the phone holds were installed
//! and used while it aged, so their setup is skipped and the task runs on their aged data;
//! a persona whose app is not there is installed as on any phone (its setup runs), after
//! any other app's data under the same package is removed.

use flashstack_apps::AppSpec;
use flashstack_f2fs::FileKind;
use flashstack_sim::Nanos;
use flashstack_sqlvfs::{FileApi, FileError};
use flashstack_stack::Stack;

use crate::error::PhoneError;
use crate::image::PhoneHeader;

/// Whether a persona with `apps` runs without its setup on a phone with `header`: every
/// app was installed by aging. If not, the data directories of those apps present on the
/// phone are removed (their setup reinstalls them).
pub fn prepare_persona(
    stack: &mut Stack,
    header: &PhoneHeader,
    apps: &[&'static AppSpec],
) -> Result<bool, PhoneError> {
    let installed = !apps.is_empty()
        && apps
            .iter()
            .all(|a| header.persona_apps.iter().any(|n| n == a.name));
    if installed {
        return Ok(true);
    }
    for app in apps {
        remove_tree(stack, &app.data_dir())?;
    }
    Ok(false)
}

/// Deletes every file under `dir` (through the file API) and the directories (straight on
/// F2FS); a missing directory is not an error.
pub fn remove_tree(stack: &mut Stack, dir: &str) -> Result<(), PhoneError> {
    let stack_err = |e: FileError| PhoneError::Stack(e.to_string());
    let Ok(entries) = stack.with_fs(|fs| fs.readdir(dir)).map_err(stack_err)? else {
        return Ok(());
    };
    for e in entries {
        let path = format!("{dir}/{}", e.name);
        if e.kind == FileKind::Dir {
            remove_tree(stack, &path)?;
        } else {
            let now: Nanos = stack.now_ns();
            match stack.delete(now, &path, false) {
                Ok(_) | Err(FileError::NotFound(_)) => {}
                Err(e) => {
                    return Err(PhoneError::File {
                        op: "delete",
                        path,
                        source: e,
                    })
                }
            }
        }
    }
    let _ = stack.with_fs(|fs| fs.rmdir(dir));
    Ok(())
}

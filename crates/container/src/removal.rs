//! Removing a sandbox's containers: [`ContainerSandbox::close`] now, and when the last clone
//! is dropped (waited for, bounded), the protected paths swept and released after them.

use std::time::Duration;

use aibuddy_sandbox::SandboxError;
use bollard::query_parameters::RemoveContainerOptions;

use crate::engine::engine_error;
use crate::sandbox::ContainerSandbox;
use crate::state::{Created, Inner};

impl ContainerSandbox {
    /// Remove the containers now (force), if any were created. The sandbox is finished: a
    /// command after this fails at Execution saying so. Dropping the sandbox removes the
    /// containers too, in the background.
    pub async fn close(&self) -> Result<(), SandboxError> {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for id in [self.container_for(false), self.container_for(true)]
            .into_iter()
            .flatten()
        {
            let opts = RemoveContainerOptions {
                force: true,
                ..Default::default()
            };
            let bound = self.inner.opts.engine_timeout;
            let removed =
                tokio::time::timeout(bound, self.inner.docker.remove_container(&id, Some(opts)))
                    .await;
            match removed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(engine_error(
                        &self.inner.opts.endpoint,
                        format!("could not remove container {id}: {e}"),
                    ));
                }
                Err(_) => {
                    return Err(engine_error(
                        &self.inner.opts.endpoint,
                        format!("did not remove container {id} within {} s", bound.as_secs()),
                    ));
                }
            }
        }
        // Nothing runs in the project's mount any more: sweep and release the protected paths.
        if let Some(c) = self.inner.container.get() {
            c.release_guard();
        }
        Ok(())
    }
}

/// Removing containers when the sandbox goes away is waited for (at most this long), so a
/// process that ends right after leaves none behind.
const REMOVE_ON_DROP_WAIT: Duration = Duration::from_secs(5);

impl Drop for Inner {
    fn drop(&mut self) {
        let created: Vec<Created> = [self.container.take(), self.read_only.take()]
            .into_iter()
            .flatten()
            .collect();
        if created.is_empty() {
            return;
        }
        let ids: Vec<String> = created.iter().map(|c| c.id.clone()).collect();
        // A thread of its own with its own runtime and client: this may run on a runtime's
        // worker, or after the runtime that made the client has stopped.
        let endpoint = self.opts.endpoint.clone();
        let remover = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let Ok(docker) = crate::engine::connect(&endpoint, REMOVE_ON_DROP_WAIT) else {
                return;
            };
            rt.block_on(async {
                for id in ids {
                    let opts = RemoveContainerOptions {
                        force: true,
                        ..Default::default()
                    };
                    let removed = tokio::time::timeout(
                        REMOVE_ON_DROP_WAIT,
                        docker.remove_container(&id, Some(opts)),
                    )
                    .await;
                    match removed {
                        Ok(Ok(())) => {}
                        // Already gone (`close()` removed it).
                        Ok(Err(bollard::errors::Error::DockerResponseServerError {
                            status_code: 404,
                            ..
                        })) => {}
                        _ => tracing::warn!(container = %id, "container sandbox not removed"),
                    }
                }
            });
        });
        let _ = remover.join();
        // After the containers are gone: sweep and release the protected paths.
        for c in &created {
            c.release_guard();
        }
    }
}

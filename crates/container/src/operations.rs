//! The `Sandbox` operations of a [`ContainerSandbox`]: kind, capabilities, location and
//! confinement; the file operations on the mounted folder through the local adapter; `exec`
//! forwarded to `exec.rs`.

use std::path::Path;
use std::sync::Arc;

use aibuddy_sandbox::aibuddy_exec::{Confinement, ExecOutcome, ExecRequest, ExecSink};
use aibuddy_sandbox::api::*;
use aibuddy_sandbox::{Capabilities, Sandbox, SandboxError, SandboxKind};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::sandbox::ContainerSandbox;

#[async_trait]
impl Sandbox for ContainerSandbox {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Container
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            kind: SandboxKind::Container,
            ..self.inner.files.capabilities()
        }
    }

    fn root(&self) -> &Path {
        self.inner.files.root()
    }

    fn location(&self) -> String {
        let o = &self.inner.opts;
        let which = match self.container_id() {
            Some(id) => format!("container {}", &id[..id.len().min(12)]),
            None => "a container (created on first use)".to_string(),
        };
        if self.synced() {
            return format!(
                "container: {which} of image `{}` on engine {}, {}",
                o.image,
                o.endpoint.shown(),
                crate::sync::location_phrase(&o.workdir)
            );
        }
        format!(
            "container: {which} of image `{}` on engine {}, project bound at {}, no network of its own (egress only through the allow-list proxy)",
            o.image,
            o.endpoint.shown(),
            o.workdir
        )
    }

    fn exec_confinement(&self) -> Option<Confinement> {
        Some(Confinement::Container {
            engine: self.inner.opts.endpoint.shown(),
            image: self.inner.opts.image.clone(),
            container: self
                .container_id()
                .map(|id| id.chars().take(12).collect())
                .unwrap_or_default(),
            // Support, not a run: a command with the network on gets the proxy (not in sync
            // mode: nothing of this machine reaches the container).
            network_isolated: self.synced(),
            synced: self.synced(),
        })
    }

    fn scope(&self, given: &str) -> Result<String, SandboxError> {
        self.inner.files.scope(given)
    }

    async fn list(&self, req: ListRequest, c: CancellationToken) -> Result<Listing, SandboxError> {
        self.inner.files.list(req, c).await
    }

    async fn read(
        &self,
        req: ReadRequest,
        c: CancellationToken,
    ) -> Result<ReadOutcome, SandboxError> {
        self.inner.files.read(req, c).await
    }

    async fn preview_write(
        &self,
        req: WriteRequest,
        c: CancellationToken,
    ) -> Result<WritePlan, SandboxError> {
        self.inner.files.preview_write(req, c).await
    }

    async fn write(
        &self,
        req: WriteRequest,
        c: CancellationToken,
    ) -> Result<WriteOutcome, SandboxError> {
        self.inner.files.write(req, c).await
    }

    async fn preview_edit(
        &self,
        req: EditRequest,
        c: CancellationToken,
    ) -> Result<EditPlan, SandboxError> {
        self.inner.files.preview_edit(req, c).await
    }

    async fn edit(
        &self,
        req: EditRequest,
        c: CancellationToken,
    ) -> Result<EditOutcome, SandboxError> {
        self.inner.files.edit(req, c).await
    }

    async fn glob(
        &self,
        req: GlobRequest,
        c: CancellationToken,
    ) -> Result<GlobOutcome, SandboxError> {
        self.inner.files.glob(req, c).await
    }

    async fn grep(
        &self,
        req: GrepRequest,
        c: CancellationToken,
    ) -> Result<GrepOutcome, SandboxError> {
        self.inner.files.grep(req, c).await
    }

    async fn exec(
        &self,
        req: ExecRequest,
        cancel: CancellationToken,
        sink: Arc<dyn ExecSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        if self.synced() {
            return crate::sync::exec(self, req, cancel, sink).await;
        }
        crate::exec::run(self, req, cancel, sink).await
    }
}

//! A CRI v1 client of the tests' own: the calls the kubelet makes to a
//! container runtime's CRI endpoint (the RuntimeService's pod sandboxes
//! and containers, ExecSync, status; the ImageService's image status),
//! over gRPC on a unix socket, with the `k8s-cri` crate's generated types
//! and tonic. Blocking: each call runs on a current-thread tokio runtime
//! of the client's own, bounded by [`CALL_LIMIT`], and a failed call is
//! its gRPC status as one line.
//!
//! Not here: containerd's configuration or what a test expects of the
//! answers (`mod.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    ContainerConfig, ContainerStatus, CreateContainerRequest, ExecSyncRequest, ExecSyncResponse,
    ImageSpec, ImageStatusRequest, PodSandboxConfig, RemoveContainerRequest,
    RemovePodSandboxRequest, RunPodSandboxRequest, StartContainerRequest, StopContainerRequest,
    StopPodSandboxRequest, VersionRequest, VersionResponse,
};
use tonic::transport::{Channel, Endpoint, Uri};

/// The longest any one call may take (image unpacking and a sandbox's
/// start included); a call still unanswered then fails.
pub const CALL_LIMIT: Duration = Duration::from_secs(90);

/// A connection to one CRI endpoint.
pub struct CriClient {
    rt: tokio::runtime::Runtime,
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
}

/// Runs one call on the client's runtime, bounded by [`CALL_LIMIT`].
fn call<T>(
    rt: &tokio::runtime::Runtime,
    what: &str,
    fut: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, String> {
    match rt.block_on(async { tokio::time::timeout(CALL_LIMIT, fut).await }) {
        Ok(Ok(answer)) => Ok(answer.into_inner()),
        Ok(Err(status)) => Err(format!("{what}: {:?}: {}", status.code(), status.message())),
        Err(_) => Err(format!("{what}: no answer within {CALL_LIMIT:?}")),
    }
}

impl CriClient {
    /// Connects to the CRI endpoint on the unix socket `socket`.
    pub fn connect(socket: &Path) -> Result<CriClient, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let path: PathBuf = socket.to_path_buf();
        // The URI is required by the API and unused: every connection is
        // the unix socket's.
        let endpoint = Endpoint::from_static("http://[::]:50051");
        let channel = rt
            .block_on(
                endpoint.connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(TokioIo::new(stream))
                    }
                })),
            )
            .map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
        Ok(CriClient {
            rt,
            runtime: RuntimeServiceClient::new(channel.clone()),
            images: ImageServiceClient::new(channel),
        })
    }

    /// The runtime's name and version, and the CRI version it speaks.
    pub fn version(&mut self) -> Result<VersionResponse, String> {
        let req = VersionRequest {
            version: "v1".into(),
        };
        call(&self.rt, "Version", self.runtime.version(req))
    }

    /// The image's id when the runtime has it, `None` when it has not.
    pub fn image_id(&mut self, image: &str) -> Result<Option<String>, String> {
        let req = ImageStatusRequest {
            image: Some(ImageSpec {
                image: image.into(),
                ..Default::default()
            }),
            verbose: false,
        };
        let answer = call(&self.rt, "ImageStatus", self.images.image_status(req))?;
        Ok(answer.image.map(|i| i.id))
    }

    /// Starts a pod sandbox with the runtime handler `handler`; its id.
    pub fn run_pod_sandbox(
        &mut self,
        config: &PodSandboxConfig,
        handler: &str,
    ) -> Result<String, String> {
        let req = RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: handler.into(),
        };
        let answer = call(&self.rt, "RunPodSandbox", self.runtime.run_pod_sandbox(req))?;
        Ok(answer.pod_sandbox_id)
    }

    /// Creates a container in the pod `pod` (made with `pod_config`); its id.
    pub fn create_container(
        &mut self,
        pod: &str,
        config: &ContainerConfig,
        pod_config: &PodSandboxConfig,
    ) -> Result<String, String> {
        let req = CreateContainerRequest {
            pod_sandbox_id: pod.into(),
            config: Some(config.clone()),
            sandbox_config: Some(pod_config.clone()),
        };
        let answer = call(
            &self.rt,
            "CreateContainer",
            self.runtime.create_container(req),
        )?;
        Ok(answer.container_id)
    }

    pub fn start_container(&mut self, id: &str) -> Result<(), String> {
        let req = StartContainerRequest {
            container_id: id.into(),
        };
        call(
            &self.rt,
            "StartContainer",
            self.runtime.start_container(req),
        )
        .map(|_| ())
    }

    /// Runs `cmd` in the running container `id` and waits for it (at
    /// most `timeout_s` seconds, the runtime's bound).
    pub fn exec_sync(
        &mut self,
        id: &str,
        cmd: &[&str],
        timeout_s: i64,
    ) -> Result<ExecSyncResponse, String> {
        let req = ExecSyncRequest {
            container_id: id.into(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            timeout: timeout_s,
        };
        call(&self.rt, "ExecSync", self.runtime.exec_sync(req))
    }

    pub fn container_status(&mut self, id: &str) -> Result<ContainerStatus, String> {
        let req = k8s_cri::v1::ContainerStatusRequest {
            container_id: id.into(),
            verbose: false,
        };
        let answer = call(
            &self.rt,
            "ContainerStatus",
            self.runtime.container_status(req),
        )?;
        answer
            .status
            .ok_or_else(|| format!("ContainerStatus of {id}: no status in the answer"))
    }

    /// Stops the container `id`: SIGTERM, then SIGKILL after `grace_s`.
    pub fn stop_container(&mut self, id: &str, grace_s: i64) -> Result<(), String> {
        let req = StopContainerRequest {
            container_id: id.into(),
            timeout: grace_s,
        };
        call(&self.rt, "StopContainer", self.runtime.stop_container(req)).map(|_| ())
    }

    pub fn remove_container(&mut self, id: &str) -> Result<(), String> {
        let req = RemoveContainerRequest {
            container_id: id.into(),
        };
        call(
            &self.rt,
            "RemoveContainer",
            self.runtime.remove_container(req),
        )
        .map(|_| ())
    }

    pub fn stop_pod_sandbox(&mut self, pod: &str) -> Result<(), String> {
        let req = StopPodSandboxRequest {
            pod_sandbox_id: pod.into(),
        };
        call(
            &self.rt,
            "StopPodSandbox",
            self.runtime.stop_pod_sandbox(req),
        )
        .map(|_| ())
    }

    pub fn remove_pod_sandbox(&mut self, pod: &str) -> Result<(), String> {
        let req = RemovePodSandboxRequest {
            pod_sandbox_id: pod.into(),
        };
        call(
            &self.rt,
            "RemovePodSandbox",
            self.runtime.remove_pod_sandbox(req),
        )
        .map(|_| ())
    }

    /// The ids of every pod sandbox the runtime knows.
    pub fn pod_sandboxes(&mut self) -> Result<Vec<String>, String> {
        let req = k8s_cri::v1::ListPodSandboxRequest { filter: None };
        let answer = call(
            &self.rt,
            "ListPodSandbox",
            self.runtime.list_pod_sandbox(req),
        )?;
        Ok(answer.items.into_iter().map(|p| p.id).collect())
    }
}

//! Unit tests of [`crate::manager`].

mod send_tests {
    use super::super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<F: std::future::Future + Send>(_: F) {}

    #[tokio::test]
    async fn manager_and_call_future_can_cross_threads() {
        assert_send_sync::<McpManager>();
        let manager = McpManager::start(Vec::new(), McpHandlers::default(), McpOptions::default());
        assert_send(manager.call("mcp__x__y", Value::Null, CancellationToken::new(), None));
        assert_send(manager.wait_until_settled(Duration::from_millis(1)));
        assert!(manager.catalog().is_empty());
        manager.shutdown().await;
    }
}

mod restart_tests {
    use super::super::*;
    use crate::McpHandlers;
    use crate::options::McpOptions;

    fn fixture(name: &str) -> ServerConfig {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/misbehaving_server.py")
            .to_string_lossy()
            .into_owned();
        ServerConfig::stdio(name, "python3", vec![script])
    }

    fn state_of(manager: &McpManager, server: &str) -> Option<ServerState> {
        (manager.status().into_iter())
            .find(|s| s.server == server)
            .map(|s| s.state)
    }

    async fn connected(manager: &McpManager, server: &str) {
        let up = manager
            .wait_for(Duration::from_secs(20), |all| {
                all.iter()
                    .any(|s| s.server == server && s.state == ServerState::Connected)
            })
            .await;
        assert!(
            up,
            "{server} never connected: {:?}",
            state_of(manager, server)
        );
    }

    /// After a restart, the old supervisor's last words (what it writes when its connection
    /// ends: `client shut down`, no peer, no tools) come late, after the new connection is up,
    /// as when a restart stops waiting for it after 5 s or two restarts race. They are ignored:
    /// the new connection keeps its state, its tools and its calls.
    #[tokio::test]
    async fn an_old_supervisor_ending_late_leaves_the_new_connection_alone() {
        let manager = McpManager::start(
            vec![fixture("x")],
            McpHandlers::default(),
            McpOptions::default(),
        );
        connected(&manager, "x").await;
        let tools = manager.catalog().len();
        assert!(tools > 0);
        manager.restart("x").await.unwrap();
        connected(&manager, "x").await;
        assert_eq!(manager.catalog().len(), tools);

        // Exactly what the first supervisor (generation 0) writes when it ends.
        let applied = manager.shared.update_as("x", 0, true, |slot| {
            disconnected(
                slot,
                ServerState::Failed {
                    reason: "client shut down".into(),
                    retry_in_ms: None,
                },
            )
        });
        assert_eq!(state_of(&manager, "x"), Some(ServerState::Connected));
        assert_eq!(manager.catalog().len(), tools);
        assert!(!applied);
        let result = manager
            .call(
                "mcp__x__echo",
                serde_json::json!({"message": "hi"}),
                CancellationToken::new(),
                None,
            )
            .await
            .unwrap();
        assert_eq!(result.text(), "echo: hi");
        // The current supervisor's own writes still land.
        assert!(manager.shared.update_as("x", 1, false, |_| {}));
        manager.shutdown().await;
    }
}

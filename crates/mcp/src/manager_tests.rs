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
